/**
 * A synthetic but realistic calibration report for tests: matmul, add and gemv (f32 and q4) on
 * js, wasm, wasm-mt and webgpu, generated from a known cost model so tests can compare what they
 * derive from the report with the truth ({@linkcode syntheticTimeMs}).
 *
 * The figures resemble a 2-core x86 machine with Mesa llvmpipe: an end-to-end WebGPU run pays an
 * ~11 ms synchronisation, so the GPU wins end-to-end only on large matmuls, while device-resident
 * it wins from modest sizes.
 *
 * @module
 */
import {
  type Backend,
  type Complexity,
  CPU_BACKENDS,
  type Dtype,
  type Residency,
  type Shape,
} from "../kernels/types.ts";
import { NON_REPORT_FILES } from "../reports/index.ts";
import type {
  CostFit,
  Crossover,
  CrossoverPair,
  Figure,
  Measurement,
  Report,
  StabilityInfo,
  Threshold,
  Tuning,
} from "../core/schema.ts";

/** Launch overhead (µs), compute rate (GFLOP/s) and bandwidth (GB/s) of one synthetic series. */
interface Rates {
  readonly t0Us: number;
  readonly gflops: number;
  readonly gbps: number;
}

interface SyntheticOp {
  readonly op: string;
  readonly dtype: Dtype;
  readonly complexity: Complexity;
  readonly unit: string;
  readonly sizes: readonly number[];
  shape(size: number): Shape;
  flops(size: number): number;
  bytes(size: number): number;
  readonly variants: Readonly<Record<Backend, string>>;
  readonly rates: Readonly<Record<Backend | "webgpu-resident", Rates>>;
  /** Whether the data cannot tell the compute rate apart (memory-bound at every size). */
  readonly computeUnidentified: boolean;
}

const GEMV_COLS = 4096;

const SYNTHETIC_OPS: readonly SyntheticOp[] = [
  {
    op: "matmul",
    dtype: "f32",
    complexity: "matrix",
    unit: "n (M = K = N)",
    sizes: [16, 32, 64, 128, 256, 512],
    shape: (n) => ({ m: n, k: n, n }),
    flops: (n) => 2 * n ** 3,
    bytes: (n) => 12 * n * n,
    variants: {
      js: "default",
      wasm: "fma=true,kc=256,mr=4,nc=512,nr=8",
      "wasm-mt": "fma=true,kc=256,mr=4,nc=512,nr=8",
      webgpu: "tm=4,tn=4,vec4=true,wg=8x8",
    },
    rates: {
      js: { t0Us: 2, gflops: 0.5, gbps: 3 },
      wasm: { t0Us: 5, gflops: 3, gbps: 8 },
      "wasm-mt": { t0Us: 80, gflops: 5.5, gbps: 12 },
      webgpu: { t0Us: 11_500, gflops: 12, gbps: 1.8 },
      "webgpu-resident": { t0Us: 90, gflops: 14, gbps: 18 },
    },
    computeUnidentified: false,
  },
  {
    op: "add",
    dtype: "f32",
    complexity: "elementwise",
    unit: "elements",
    sizes: [1024, 16_384, 262_144, 4_194_304],
    shape: (n) => ({ n }),
    flops: (n) => n,
    bytes: (n) => 12 * n,
    variants: { js: "default", wasm: "default", "wasm-mt": "default", webgpu: "ept=4,wg=256" },
    rates: {
      js: { t0Us: 0.3, gflops: 1.5, gbps: 2.5 },
      wasm: { t0Us: 4, gflops: 8, gbps: 6 },
      "wasm-mt": { t0Us: 60, gflops: 12, gbps: 9 },
      webgpu: { t0Us: 11_000, gflops: 20, gbps: 1.5 },
      "webgpu-resident": { t0Us: 40, gflops: 20, gbps: 14 },
    },
    computeUnidentified: true,
  },
  ...(["f32", "q4"] as const).map((dtype): SyntheticOp => {
    const bytesPerWeight = dtype === "f32" ? 4 : 0.5 + 4 / 32;
    return {
      op: "gemv",
      dtype,
      complexity: "matrix",
      unit: `rows (cols = ${GEMV_COLS})`,
      sizes: [1, 8, 64, 512, 4096],
      shape: (rows) => ({ rows, cols: GEMV_COLS }),
      flops: (rows) => 2 * rows * GEMV_COLS,
      bytes: (rows) => rows * GEMV_COLS * bytesPerWeight + 4 * GEMV_COLS + 4 * rows,
      variants: { js: "unroll=4", wasm: "default", "wasm-mt": "default", webgpu: "wg=64" },
      rates: dtype === "f32"
        ? {
          js: { t0Us: 1, gflops: 0.8, gbps: 3 },
          wasm: { t0Us: 12, gflops: 5, gbps: 8 },
          "wasm-mt": { t0Us: 70, gflops: 9, gbps: 11 },
          webgpu: { t0Us: 11_500, gflops: 10, gbps: 1.6 },
          "webgpu-resident": { t0Us: 120, gflops: 12, gbps: 14 },
        }
        : {
          js: { t0Us: 1, gflops: 0.4, gbps: 2 },
          wasm: { t0Us: 25, gflops: 3, gbps: 6 },
          "wasm-mt": { t0Us: 70, gflops: 5.5, gbps: 9 },
          webgpu: { t0Us: 11_500, gflops: 8, gbps: 1.6 },
          "webgpu-resident": { t0Us: 120, gflops: 10, gbps: 12 },
        },
      computeUnidentified: false,
    };
  }),
];

function findOp(op: string, dtype: Dtype): SyntheticOp {
  const spec = SYNTHETIC_OPS.find((s) => s.op === op && s.dtype === dtype);
  if (spec === undefined) {
    throw new RangeError(
      `No synthetic series for ${op} ${dtype}: use matmul f32, add f32, gemv f32 or gemv q4`,
    );
  }
  return spec;
}

function ratesOf(spec: SyntheticOp, backend: Backend, residency: Residency): Rates {
  return backend === "webgpu" && residency === "device-resident"
    ? spec.rates["webgpu-resident"]
    : spec.rates[backend];
}

function modelMs(spec: SyntheticOp, rates: Rates, size: number): number {
  const computeMs = spec.flops(size) / (rates.gflops * 1e6);
  const memoryMs = spec.bytes(size) / (rates.gbps * 1e6);
  return rates.t0Us / 1000 + Math.max(computeMs, memoryMs);
}

/**
 * The true time behind the synthetic report: `t0 + max(flops / F, bytes / B)`, ms.
 *
 * @param op `"matmul"`, `"add"` or `"gemv"`.
 * @param dtype `"f32"`, or `"q4"` for gemv.
 * @param backend The backend.
 * @param residency Where the data lives; CPU backends ignore it.
 * @param size The size in the op's axis units.
 * @returns Milliseconds per run.
 * @throws {RangeError} For an op and dtype the synthetic report does not have.
 * @example
 * ```ts
 * import { syntheticTimeMs } from "./_fixtures.ts";
 * console.log(syntheticTimeMs("add", "f32", "webgpu", "end-to-end", 1024) > 11); // true
 * ```
 */
export function syntheticTimeMs(
  op: string,
  dtype: Dtype,
  backend: Backend,
  residency: Residency,
  size: number,
): number {
  const spec = findOp(op, dtype);
  return modelMs(spec, ratesOf(spec, backend, residency), size);
}

/** Small deterministic wobble, so measured medians are not exactly on the model. */
function wobble(seq: number): number {
  return 1 + 0.03 * Math.sin(seq * 12.9898);
}

function series(): Array<{ backend: Backend; residency: Residency }> {
  return [
    ...CPU_BACKENDS.map((backend) => ({ backend, residency: "end-to-end" as const })),
    { backend: "webgpu", residency: "end-to-end" },
    { backend: "webgpu", residency: "device-resident" },
  ];
}

function measurements(): Measurement[] {
  const out: Measurement[] = [];
  for (const spec of SYNTHETIC_OPS) {
    for (const { backend, residency } of series()) {
      const rates = ratesOf(spec, backend, residency);
      for (const size of spec.sizes) {
        const seq = out.length;
        const median = modelMs(spec, rates, size) * wobble(seq);
        const flops = spec.flops(size);
        const bytes = spec.bytes(size);
        const wall = {
          n: 30,
          median,
          p10: median * 0.97,
          p90: median * 1.06,
          mad: median * 0.015,
          min: median * 0.95,
          max: median * 1.2,
          ciHalfWidth: median * 0.012,
          relCi: 0.012,
        };
        out.push({
          state: "ok",
          op: spec.op,
          shape: spec.shape(size),
          dtype: spec.dtype,
          backend,
          variant: spec.variants[backend],
          residency,
          size,
          seq,
          wall,
          ...(backend === "webgpu" && residency === "device-resident"
            ? { gpu: { ...wall, median: median * 0.9, p10: median * 0.88, p90: median * 0.93 } }
            : {}),
          compileMs: backend === "webgpu" ? 140 : backend === "js" ? 0.2 : 9,
          maxRelError: spec.dtype === "q4" ? 2e-4 : 3e-7,
          flops,
          bytes,
          gflops: flops / (median * 1e6),
          gbps: bytes / (median * 1e6),
          noisy: false,
        });
      }
    }
  }
  const matmul = findOp("matmul", "f32");
  out.push({
    state: "unsupported",
    op: "matmul",
    shape: matmul.shape(64),
    dtype: "f16",
    backend: "wasm",
    variant: "default",
    residency: "end-to-end",
    size: 64,
    seq: out.length,
    reason: "WebAssembly has no f16 arithmetic: use f32",
  });
  out.push({
    state: "failed",
    op: "add",
    shape: { n: 1024 },
    dtype: "f32",
    backend: "webgpu",
    variant: "ept=8,wg=1024",
    residency: "end-to-end",
    size: 1024,
    seq: out.length,
    error: "Wrong answer: max relative error 0.5 over tolerance 1e-6 at index 1023",
    maxRelError: 0.5,
  });
  return out;
}

function fits(): CostFit[] {
  return SYNTHETIC_OPS.flatMap((spec) =>
    series().map(({ backend, residency }) => {
      const rates = ratesOf(spec, backend, residency);
      const computeBound = spec.sizes.every((s) =>
        spec.flops(s) / rates.gflops >= spec.bytes(s) / rates.gbps
      );
      return {
        op: spec.op,
        dtype: spec.dtype,
        backend,
        variant: spec.variants[backend],
        residency,
        t0Us: rates.t0Us,
        gflops: spec.computeUnidentified ? null : rates.gflops,
        gbps: computeBound ? null : rates.gbps,
        points: spec.sizes.length,
        sizeRange: [spec.sizes[0]!, spec.sizes.at(-1)!],
        rmsLogError: 0.021,
        cvMape: spec.sizes.length >= 4 ? 0.034 : null,
        cvMaxError: spec.sizes.length >= 4 ? 0.071 : null,
      };
    })
  );
}

/** Where `slower - faster` changes sign between `lo` and `hi`, by bisection in log space. */
function bisect(diff: (size: number) => number, lo: number, hi: number): number {
  for (let i = 0; i < 60; i++) {
    const mid = Math.sqrt(lo * hi);
    if (Math.sign(diff(mid)) === Math.sign(diff(lo))) lo = mid;
    else hi = mid;
  }
  return Math.sqrt(lo * hi);
}

function crossover(
  spec: SyntheticOp,
  pair: CrossoverPair,
  residency: Residency,
  from: readonly Backend[],
  to: Backend,
): Crossover {
  const bestFrom = (size: number) =>
    from.reduce((best, b) => {
      const ms = modelMs(spec, ratesOf(spec, b, residency), size);
      return ms < best.ms ? { backend: b, ms } : best;
    }, { backend: from[0]!, ms: Infinity });
  const toMs = (size: number) => modelMs(spec, ratesOf(spec, to, residency), size);
  const diff = (size: number) => toMs(size) - bestFrom(size).ms;
  const lo = spec.sizes[0]! / 8;
  const hi = spec.sizes.at(-1)! * 8;
  const base = { op: spec.op, dtype: spec.dtype, residency, pair, to, unit: spec.unit, others: [] };
  if (diff(hi) >= 0 || diff(lo) <= 0) {
    const reason = diff(hi) >= 0
      ? `${to} never wins up to ${spec.sizes.at(-1)} ${spec.unit} ${residency}`
      : `${to} already wins at ${spec.sizes[0]} ${spec.unit} ${residency}`;
    return {
      ...base,
      from: bestFrom(spec.sizes.at(-1)!).backend,
      size: null,
      ci: null,
      fromFit: null,
      fromRaw: null,
      tag: "fitted",
      reason,
    };
  }
  const size = bisect(diff, lo, hi);
  const measured = size >= spec.sizes[0]! && size <= spec.sizes.at(-1)!;
  return {
    ...base,
    from: bestFrom(size).backend,
    size,
    ci: [size * 0.85, size * 1.15],
    fromFit: size,
    fromRaw: measured ? size * 1.04 : null,
    tag: measured ? "measured" : "extrapolated",
    reason: null,
  };
}

function crossovers(): Crossover[] {
  return SYNTHETIC_OPS.flatMap((spec) => [
    crossover(spec, "js→wasm", "end-to-end", ["js"], "wasm"),
    crossover(spec, "wasm→wasm-mt", "end-to-end", ["wasm"], "wasm-mt"),
    crossover(spec, "cpu→webgpu", "end-to-end", CPU_BACKENDS, "webgpu"),
    crossover(spec, "cpu→webgpu", "device-resident", CPU_BACKENDS, "webgpu"),
  ]);
}

function crossoverFigure(c: Crossover | undefined): Figure {
  if (c === undefined) {
    return { value: null, unit: "", tag: "measured", reason: "not measured" };
  }
  const source = `${c.pair} crossover of ${c.op} ${c.dtype} ${c.residency}`;
  if (c.size === null) {
    return { value: null, unit: c.unit, tag: c.tag, source, reason: c.reason ?? "no crossover" };
  }
  return { value: c.size, unit: c.unit, tag: c.tag, source, ...(c.ci ? { ci: c.ci } : {}) };
}

function thresholds(all: readonly Crossover[]): Threshold[] {
  return SYNTHETIC_OPS.flatMap((spec) =>
    (["end-to-end", "device-resident"] as const).map((residency) => {
      const find = (pair: CrossoverPair, r: Residency) =>
        all.find((c) =>
          c.op === spec.op && c.dtype === spec.dtype && c.pair === pair && c.residency === r
        );
      return {
        complexity: spec.complexity,
        op: spec.op,
        dtype: spec.dtype,
        residency,
        // SIMD is a CPU choice and CPU backends are always end-to-end.
        simdAbove: crossoverFigure(find("js→wasm", "end-to-end")),
        gpuAbove: crossoverFigure(find("cpu→webgpu", residency)),
      };
    })
  );
}

function tuning(): Tuning[] {
  const matmul = findOp("matmul", "f32");
  const add = findOp("add", "f32");
  return [
    {
      op: "matmul",
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
      sizeMin: 256,
      sizeMax: 512,
      unit: matmul.unit,
      best: { variant: matmul.variants.webgpu, ms: 19.3 },
      runnerUp: { variant: "tm=2,tn=4,vec4=true,wg=8x8", ms: 24.8 },
      tag: "measured",
    },
    {
      op: "matmul",
      dtype: "f32",
      backend: "wasm",
      residency: "end-to-end",
      sizeMin: 128,
      sizeMax: 512,
      unit: matmul.unit,
      best: { variant: matmul.variants.wasm, ms: 89.5 },
      runnerUp: { variant: "fma=false,kc=256,mr=4,nc=512,nr=8", ms: 97.1 },
      tag: "measured",
    },
    {
      op: "add",
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
      sizeMin: 262_144,
      sizeMax: 4_194_304,
      unit: add.unit,
      best: { variant: add.variants.webgpu, ms: 3.6 },
      runnerUp: null,
      tag: "measured",
    },
  ];
}

function figure(value: number, unit: string, source: string, spread = 0.05): Figure {
  return {
    value,
    unit,
    tag: "measured",
    ci: [value * (1 - spread), value * (1 + spread)],
    source,
  };
}

/**
 * A report's `stability` section with no probes and the given drift per backend (the drift probe
 * case is the one calibrate uses).
 *
 * @param driftSigma σ of ln time per backend within the run.
 * @returns The section.
 * @example
 * ```ts
 * import { syntheticReport, syntheticStability } from "./_fixtures.ts";
 * const r = { ...syntheticReport(), stability: syntheticStability({ wasm: 0.05 }) };
 * ```
 */
export function syntheticStability(
  driftSigma: StabilityInfo["driftSigma"],
): StabilityInfo {
  return {
    op: "add",
    dtype: "f32",
    shape: { n: 65536 },
    residency: "device-resident",
    probes: [],
    driftSigma: { ...driftSigma },
  };
}

/**
 * Builds a small, valid, realistic report: 4 ops × dtypes (matmul f32, add f32, gemv f32, gemv q4)
 * on js, wasm, wasm-mt and webgpu (end-to-end and device-resident), with measurements from
 * {@linkcode syntheticTimeMs}, the fits that generated them, their crossovers and thresholds, a few
 * tuning rows and system figures with an 11.2 ms dispatch round trip.
 *
 * @param overrides Top-level fields to replace (shallow).
 * @returns A fresh report object (safe to mutate).
 * @example
 * ```ts
 * import { syntheticReport } from "./_fixtures.ts";
 * const r = syntheticReport({ slug: "other-machine" });
 * console.log(r.system.dispatchRoundTripMs.value); // 11.2
 * ```
 */
export function syntheticReport(overrides: Partial<Report> = {}): Report {
  const allCrossovers = crossovers();
  const base: Report = {
    schemaVersion: 1,
    gpucal: { version: "0.1.0", commit: "0123456789abcdef0123456789abcdef01234567" },
    provenance: {
      date: "2026-01-15T10:30:00.000Z",
      denoVersion: "2.9.6",
      command: ["deno", "task", "calibrate", "--budget", "600"],
      durationS: 512.4,
      complete: true,
      stopReason: "finished",
      budgetS: 600,
      quick: false,
      noisy: false,
      warnings: ["Software adapter (llvmpipe): GPU figures describe the CPU rasteriser"],
      resumedFrom: null,
    },
    machine: {
      cpuModel: "AMD EPYC 7763 64-Core Processor",
      cores: 2,
      memoryGiB: 7.8,
      os: "linux",
      osRelease: "6.8.0-1017-azure",
      arch: "x86_64",
    },
    adapter: {
      description: "llvmpipe (LLVM 19.1.7, 256 bits)",
      vendor: "mesa",
      architecture: "",
      device: "",
      backend: "vulkan",
      backendSource: "inferred",
      software: true,
      features: ["shader-f16", "timestamp-query"],
      limits: {
        maxStorageBufferBindingSize: 134_217_728,
        maxBufferSize: 2_147_483_648,
        maxComputeWorkgroupSizeX: 1024,
        maxComputeInvocationsPerWorkgroup: 1024,
        maxComputeWorkgroupStorageSize: 32_768,
      },
    },
    fingerprint: "3f9a1c0d5e7b2a64",
    slug: "llvmpipe-vulkan-x86_64-3f9a1c0d",
    measurements: measurements(),
    fits: fits(),
    crossovers: allCrossovers,
    tuning: tuning(),
    system: {
      dispatchRoundTripMs: figure(11.2, "ms", "empty submit + onSubmittedWorkDone, median of 60"),
      perDispatchUs: figure(85, "us", "1000 empty dispatches in one submit"),
      uploadGBps: figure(1.9, "GB/s", "writeBuffer 64 MiB"),
      readbackGBps: figure(1.6, "GB/s", "mapAsync read 64 MiB"),
      copyGBps: figure(9.5, "GB/s", "copyBufferToBuffer 64 MiB"),
      compileMs: figure(140, "ms", "median first dispatch of a new pipeline", 0.4),
      peakGflops: {
        f32: figure(14, "GFLOP/s", "matmul f32 webgpu n=512 device-resident"),
        f16: {
          value: null,
          unit: "GFLOP/s",
          tag: "measured",
          reason: "No f16 kernel was measured in this run",
        },
        q4: figure(10, "GFLOP/s", "gemv q4 webgpu rows=4096 device-resident"),
      },
      peakGbps: {
        js: figure(3, "GB/s", "gemv f32 js rows=4096"),
        wasm: figure(8, "GB/s", "gemv f32 wasm rows=4096"),
        "wasm-mt": figure(11, "GB/s", "gemv f32 wasm-mt rows=4096"),
        webgpu: figure(18, "GB/s", "matmul f32 webgpu n=512 device-resident"),
      },
    },
    thresholds: thresholds(allCrossovers),
  };
  return { ...base, ...overrides };
}

/**
 * The dataset's committed reports (`reports/*.json` without the index, the schema and the specs),
 * as paths from the gpucal root, sorted.
 */
export function datasetReportPaths(): string[] {
  const dir = new URL("../reports/", import.meta.url);
  return [...Deno.readDirSync(dir)]
    .filter((e) => e.isFile && e.name.endsWith(".json") && !NON_REPORT_FILES.includes(e.name))
    .map((e) => `reports/${e.name}`)
    .sort();
}
