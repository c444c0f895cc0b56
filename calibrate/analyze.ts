/**
 * From raw measurements to the report's derived tables: cost-model fits, crossovers, the tuning
 * table, the seeds-shaped threshold table and peak rates. Pure: no GPU, no I/O.
 *
 * @module
 */
import {
  type Backend,
  CPU_BACKENDS,
  type Dtype,
  FULL_TILES,
  type OpSpec,
  type Residency,
  variantFromId,
} from "../kernels/types.ts";
import { OPS } from "../kernels/catalog.ts";
import type { CostFit, Crossover, Figure, Measurement, Threshold, Tuning } from "../core/schema.ts";
import {
  type BackendCurve,
  type CrossoverInput,
  findCrossovers,
  refineBrackets,
} from "./crossover.ts";
import { type CostPoint, fitCostModels, type Series } from "./fit.ts";

type Ok = Extract<Measurement, { state: "ok" }>;

/** Runs moving at least this many bytes are taken to stream from memory, not cache. */
const OUT_OF_CACHE_BYTES = 32 * 2 ** 20;
const RESIDENCIES: readonly Residency[] = ["end-to-end", "device-resident"];

function okOnly(measurements: readonly Measurement[]): Ok[] {
  return measurements.filter((m): m is Ok => m.state === "ok");
}

/**
 * The successful measurements of the sweep: fits, crossovers and tuning describe the op's axis;
 * off-axis shapes (`offAxis`, see `calibrate/shapes.ts`) only teach predictions how proportions
 * change time.
 */
function okOnAxis(measurements: readonly Measurement[]): Ok[] {
  return measurements.filter((m): m is Ok => m.state === "ok" && m.offAxis !== true);
}

/**
 * Whether a WebGPU measurement's output tiles were partly empty: calibrate times such sizes to
 * price partial tiles beside the fit (`models/_tiles.ts`), and a fit drawn through them would
 * mix that cost into the rate.
 */
function partialTiles(m: Ok): boolean {
  const utilisation = OPS.find((op) => op.name === m.op)?.impls.webgpu?.utilisation;
  if (m.backend !== "webgpu" || utilisation === undefined) return false;
  try {
    return utilisation(m.shape, variantFromId(m.variant)) < FULL_TILES;
  } catch {
    return false;
  }
}

/**
 * Fits a cost model per (op, dtype, backend, variant, residency) series with at least two sizes
 * (WebGPU sizes whose output tiles are partly empty left out), keeping the best variant of each
 * (op, dtype, backend, residency).
 *
 * @param measurements Raw measurements.
 * @returns The fits.
 * @example
 * ```ts
 * import { fitAll } from "./analyze.ts";
 * console.log(fitAll([]).length); // 0
 * ```
 */
export function fitAll(measurements: readonly Measurement[]): CostFit[] {
  const series = new Map<string, { meta: Series["meta"]; points: CostPoint[] }>();
  for (const m of okOnAxis(measurements)) {
    if (partialTiles(m)) continue;
    const key = `${m.op}|${m.dtype}|${m.backend}|${m.variant}|${m.residency}`;
    let s = series.get(key);
    if (!s) {
      s = {
        meta: {
          op: m.op,
          dtype: m.dtype,
          backend: m.backend,
          variant: m.variant,
          residency: m.residency,
        },
        points: [],
      };
      series.set(key, s);
    }
    // Noisy points count less: weight by the inverse of their relative CI (floored at 1 %).
    s.points.push({
      size: m.size,
      flops: m.flops,
      bytes: m.bytes,
      ms: m.wall.median,
      weight: 1 / Math.max(m.wall.relCi, 0.01),
    });
  }
  // A variant timed only at the search anchors must not stand for a backend whose grid variant
  // covers the whole range: per (op, dtype, backend, residency) only the best-covered series
  // (at least three quarters as many sizes as the best) compete for the fit.
  const all = [...series.values()];
  const groupOf = (m: Series["meta"]) => `${m.op}|${m.dtype}|${m.backend}|${m.residency}`;
  const mostSizes = new Map<string, number>();
  for (const s of all) {
    const sizes = new Set(s.points.map((p) => p.size)).size;
    mostSizes.set(groupOf(s.meta), Math.max(mostSizes.get(groupOf(s.meta)) ?? 0, sizes));
  }
  return fitCostModels(
    all.filter((s) =>
      new Set(s.points.map((p) => p.size)).size >= 0.75 * mostSizes.get(groupOf(s.meta))!
    ),
  );
}

/**
 * The best (lowest median) measurement per size of one backend at one residency.
 *
 * @param measurements Raw measurements.
 * @param op Op name.
 * @param dtype Dtype.
 * @param backend Backend.
 * @param residency Residency (CPU backends are always end-to-end and serve both).
 * @returns Sizes ascending with their best measurement.
 * @example
 * ```ts
 * import { bestPerSize } from "./analyze.ts";
 * console.log(bestPerSize([], "add", "f32", "js", "end-to-end")); // []
 * ```
 */
export function bestPerSize(
  measurements: readonly Measurement[],
  op: string,
  dtype: Dtype,
  backend: Backend,
  residency: Residency,
): Ok[] {
  const wanted: Residency = backend === "webgpu" ? residency : "end-to-end";
  const best = new Map<number, Ok>();
  for (const m of okOnAxis(measurements)) {
    if (m.op !== op || m.dtype !== dtype || m.backend !== backend || m.residency !== wanted) {
      continue;
    }
    const prev = best.get(m.size);
    if (!prev || m.wall.median < prev.wall.median) best.set(m.size, m);
  }
  return [...best.values()].sort((a, b) => a.size - b.size);
}

function curvesFor(
  measurements: readonly Measurement[],
  fits: readonly CostFit[],
  op: OpSpec,
  dtype: Dtype,
  residency: Residency,
): BackendCurve[] {
  const curves: BackendCurve[] = [];
  for (const backend of [...CPU_BACKENDS, "webgpu"] as const) {
    const points = bestPerSize(measurements, op.name, dtype, backend, residency);
    if (points.length === 0) continue;
    const fit = fits.find((f) =>
      f.op === op.name && f.dtype === dtype && f.backend === backend &&
      f.residency === (backend === "webgpu" ? residency : "end-to-end")
    ) ?? null;
    curves.push({
      backend,
      fit,
      points: points.map((m) => ({
        size: m.size,
        ms: m.wall.median,
        ci: [m.wall.median - m.wall.ciHalfWidth, m.wall.median + m.wall.ciHalfWidth] as const,
        flops: m.flops,
        bytes: m.bytes,
      })),
    });
  }
  return curves;
}

function crossoverInput(
  op: OpSpec,
  dtype: Dtype,
  residency: Residency,
  curves: BackendCurve[],
  drift?: Drift,
): CrossoverInput {
  return {
    op: op.name,
    dtype,
    residency,
    unit: op.axis.unit,
    curves,
    ...(drift ? { drift } : {}),
    work: (size) => {
      // Roots and bootstrap replicates land between integer sizes; shapes are integral.
      const shape = op.axis.shape(Math.max(op.axis.min, Math.round(size)));
      return { flops: op.flops(shape), bytes: op.bytes(shape, dtype) };
    },
  };
}

/** Per backend, the relative run-to-run drift of its curves (`calibrate/stability.ts`). */
type Drift = Readonly<Partial<Record<Backend, number>>>;

/**
 * Crossovers of every op and dtype measured, for both residencies.
 *
 * @param measurements Raw measurements.
 * @param fits Fits from {@linkcode fitAll}.
 * @param ops The ops (for axes and work).
 * @param drift Per backend, the run's drift (standard deviation of ln time); when given, every
 * crossover also gets a `driftCi`.
 * @returns The crossovers.
 * @example
 * ```ts
 * import { allCrossovers } from "./analyze.ts";
 * console.log(allCrossovers([], [], []).length); // 0
 * ```
 */
export function allCrossovers(
  measurements: readonly Measurement[],
  fits: readonly CostFit[],
  ops: readonly OpSpec[],
  drift?: Drift,
): Crossover[] {
  const out: Crossover[] = [];
  for (const op of ops) {
    for (const dtype of op.dtypes) {
      for (const residency of RESIDENCIES) {
        const curves = curvesFor(measurements, fits, op, dtype, residency);
        if (!curves.some((c) => CPU_BACKENDS.includes(c.backend)) && dtype === "f16") {
          out.push(...f16AgainstF32Cpu(measurements, fits, op, residency, curves, drift));
          continue;
        }
        if (curves.length < 2) continue;
        const found = findCrossovers(crossoverInput(op, dtype, residency, curves, drift));
        // CPU curves are residency-free: report their pairs once, under end-to-end.
        out.push(...found.filter((c) => residency === "end-to-end" || c.pair === "cpu→webgpu"));
      }
    }
  }
  return out;
}

/**
 * No CPU backend computes in f16, so an f16 problem's CPU alternative is the same problem in f32:
 * the GPU's f16 curve against the CPU's f32 measurements, raw medians only (the CPU fits are of
 * f32 work and would be evaluated at f16 bytes). The reason says so.
 */
function f16AgainstF32Cpu(
  measurements: readonly Measurement[],
  fits: readonly CostFit[],
  op: OpSpec,
  residency: Residency,
  gpuCurves: readonly BackendCurve[],
  drift: Drift | undefined,
): Crossover[] {
  const gpu = gpuCurves.filter((c) => c.backend === "webgpu");
  const cpu = curvesFor(measurements, fits, op, "f32", residency)
    .filter((c) => CPU_BACKENDS.includes(c.backend))
    .map((c) => ({ ...c, fit: null }));
  if (gpu.length === 0 || cpu.length === 0) return [];
  const note = "the CPU side runs the problem in f32 (no CPU backend computes in f16)";
  return findCrossovers(crossoverInput(op, "f16", residency, [...cpu, ...gpu], drift))
    .filter((c) => c.pair === "cpu→webgpu")
    .map((c) => ({ ...c, reason: c.reason ? `${c.reason}; ${note}` : note }));
}

/**
 * Sizes to measure next so each crossover of `op` at `dtype` is bracketed within ±10 %.
 *
 * @param measurements Raw measurements so far.
 * @param op The op.
 * @param dtype The dtype.
 * @returns Sizes with the two backends to measure there and the residency.
 * @example
 * ```ts
 * import { nextRefinementSizes } from "./analyze.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * console.log(nextRefinementSizes([], getOp("add"), "f32")); // []
 * ```
 */
export function nextRefinementSizes(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
): { size: number; backends: Backend[]; residency: Residency }[] {
  const fits = fitAll(measurements.filter((m) => m.op === op.name && m.dtype === dtype));
  const wanted: { size: number; backends: Backend[]; residency: Residency }[] = [];
  for (const residency of RESIDENCIES) {
    const curves = curvesFor(measurements, fits, op, dtype, residency);
    if (curves.length < 2) continue;
    // Only the sizes matter here: no bootstrap interval.
    const found = findCrossovers({ ...crossoverInput(op, dtype, residency, curves), bootstrap: 0 })
      .filter((c) => residency === "end-to-end" || c.pair === "cpu→webgpu");
    for (const c of found) {
      const pairCurves = curves.filter((k) => k.backend === c.from || k.backend === c.to);
      const sizes = pairCurves.flatMap((k) => k.points.map((p) => p.size))
        .filter((s) => pairCurves.every((k) => k.points.some((p) => p.size === s)));
      for (const size of refineBrackets(sizes, [c], { min: op.axis.min, max: op.axis.max })) {
        wanted.push({ size, backends: [c.from, c.to], residency });
      }
    }
  }
  return wanted;
}

/**
 * The tuning table: at every size where several variants of a backend were measured, the best and
 * the runner-up; each row covers the sizes from the geometric midpoint with its lower neighbour to
 * the one with its upper neighbour.
 *
 * @param measurements Raw measurements.
 * @param ops The ops (for axis units and ranges).
 * @returns The rows.
 * @example
 * ```ts
 * import { tuningTable } from "./analyze.ts";
 * console.log(tuningTable([], [])); // []
 * ```
 */
export function tuningTable(
  measurements: readonly Measurement[],
  ops: readonly OpSpec[],
): Tuning[] {
  const groups = new Map<string, Map<number, Map<string, number>>>();
  for (const m of okOnAxis(measurements)) {
    const key = `${m.op}|${m.dtype}|${m.backend}|${m.residency}`;
    const bySize = groups.get(key) ?? new Map<number, Map<string, number>>();
    groups.set(key, bySize);
    const variants = bySize.get(m.size) ?? new Map<string, number>();
    bySize.set(m.size, variants);
    variants.set(m.variant, Math.min(variants.get(m.variant) ?? Infinity, m.wall.median));
  }
  const rows: Tuning[] = [];
  for (const [key, bySize] of groups) {
    const [opName, dtype, backend, residency] = key.split("|") as [
      string,
      Dtype,
      Backend,
      Residency,
    ];
    const op = ops.find((o) => o.name === opName);
    if (!op) continue;
    const sizes = [...bySize.keys()].filter((s) => bySize.get(s)!.size >= 2).sort((a, b) => a - b);
    sizes.forEach((size, i) => {
      const ranked = [...bySize.get(size)!].sort((a, b) => a[1] - b[1]);
      const [best, runnerUp] = ranked;
      const lower = i === 0 ? op.axis.min : Math.sqrt(sizes[i - 1]! * size);
      const upper = i === sizes.length - 1 ? op.axis.max : Math.sqrt(sizes[i + 1]! * size);
      rows.push({
        op: opName,
        dtype,
        backend,
        residency,
        sizeMin: lower,
        sizeMax: upper,
        unit: op.axis.unit,
        best: { variant: best![0], ms: best![1] },
        runnerUp: runnerUp ? { variant: runnerUp[0], ms: runnerUp[1] } : null,
        tag: "measured",
      });
    });
  }
  return rows;
}

const THRESHOLD_OPS: readonly { complexity: Threshold["complexity"]; ops: readonly string[] }[] = [
  { complexity: "elementwise", ops: ["add", "fma", "mul"] },
  { complexity: "reduction", ops: ["sum", "dot", "softmax"] },
  { complexity: "matrix", ops: ["matmul", "gemv"] },
];

function crossoverFigure(c: Crossover | undefined, what: string): Figure {
  if (!c) return { value: null, unit: "", tag: "measured", reason: `${what}: not measured` };
  if (c.size === null) {
    return { value: null, unit: c.unit, tag: c.tag, reason: c.reason ?? `${what}: none in range` };
  }
  return {
    value: c.size,
    unit: c.unit,
    tag: c.tag,
    ...(c.ci ? { ci: c.ci } : {}),
    source: `${c.op} ${c.dtype} ${c.pair} ${c.residency}`,
  };
}

/**
 * The seeds' table, measured: per complexity class (first op of the class that was calibrated,
 * f32), the size above which SIMD beats scalar and the size above which the GPU beats the best
 * CPU backend, end-to-end and device-resident.
 *
 * @param crossovers Crossovers from {@linkcode allCrossovers}.
 * @returns The rows.
 * @example
 * ```ts
 * import { thresholdTable } from "./analyze.ts";
 * console.log(thresholdTable([])); // []
 * ```
 */
export function thresholdTable(crossovers: readonly Crossover[]): Threshold[] {
  const rows: Threshold[] = [];
  for (const { complexity, ops } of THRESHOLD_OPS) {
    const op = ops.find((name) => crossovers.some((c) => c.op === name && c.dtype === "f32"));
    if (!op) continue;
    for (const residency of RESIDENCIES) {
      const find = (pair: Crossover["pair"], r: Residency) =>
        crossovers.find((c) =>
          c.op === op && c.dtype === "f32" && c.pair === pair && c.residency === r
        );
      rows.push({
        complexity,
        op,
        dtype: "f32",
        residency,
        simdAbove: crossoverFigure(find("js→wasm", "end-to-end"), "SIMD over scalar"),
        gpuAbove: crossoverFigure(find("cpu→webgpu", residency), "GPU over CPU"),
      });
    }
  }
  return rows;
}

function peakFigure(candidates: readonly Ok[], rate: (m: Ok) => number, unit: string): Figure {
  const best = candidates.reduce<Ok | null>((b, m) => (!b || rate(m) > rate(b) ? m : b), null);
  if (!best) return { value: null, unit, tag: "measured", reason: "Nothing measured" };
  const { median, ciHalfWidth } = best.wall;
  const lo = rate(best) * median / (median + ciHalfWidth);
  const hi = rate(best) * median / (median - ciHalfWidth);
  // A time interval reaching down near zero bounds the rate by nothing worth printing.
  const bounded = median - ciHalfWidth > 0.1 * median;
  return {
    value: rate(best),
    unit,
    tag: "measured",
    ...(bounded ? { ci: [lo, hi] as [number, number] } : {}),
    source: `${best.op} ${best.dtype} ${best.backend} ${best.variant} ${
      Object.values(best.shape).join("x")
    } ${best.residency}`,
  };
}

/**
 * Peak matmul GFLOP/s per dtype and peak bandwidth per backend (bandwidth-bound ops only).
 *
 * @param measurements Raw measurements.
 * @param ops The ops (for their complexity class).
 * @returns The peaks.
 * @example
 * ```ts
 * import { peakRates } from "./analyze.ts";
 * console.log(peakRates([], []).peakGflops); // {}
 * ```
 */
export function peakRates(
  measurements: readonly Measurement[],
  ops: readonly OpSpec[],
): { peakGflops: Partial<Record<Dtype, Figure>>; peakGbps: Partial<Record<Backend, Figure>> } {
  const ok = okOnly(measurements);
  const peakGflops: Partial<Record<Dtype, Figure>> = {};
  for (const dtype of new Set(ok.filter((m) => m.op === "matmul").map((m) => m.dtype))) {
    peakGflops[dtype] = peakFigure(
      ok.filter((m) => m.op === "matmul" && m.dtype === dtype),
      (m) => m.gflops,
      "GFLOP/s",
    );
  }
  const bandwidthOps = new Set(
    ops.filter((o) => o.complexity !== "matrix" || o.name === "gemv").map((o) => o.name),
  );
  const peakGbps: Partial<Record<Backend, Figure>> = {};
  for (const backend of new Set(ok.map((m) => m.backend))) {
    const candidates = ok.filter((m) =>
      m.backend === backend && bandwidthOps.has(m.op) &&
      (backend !== "webgpu" || m.residency === "device-resident")
    );
    // Small operands stay in cache and flatter bandwidth: prefer runs that move ≥ 32 MiB.
    const outOfCache = candidates.filter((m) => m.bytes >= OUT_OF_CACHE_BYTES);
    if (candidates.length > 0) {
      peakGbps[backend] = peakFigure(
        outOfCache.length > 0 ? outOfCache : candidates,
        (m) => m.gbps,
        "GB/s",
      );
      if (outOfCache.length === 0) {
        const f = peakGbps[backend]!;
        peakGbps[backend] = { ...f, source: `${f.source ?? ""}; in cache: no run moved 32 MiB` };
      }
    }
  }
  return { peakGflops, peakGbps };
}
