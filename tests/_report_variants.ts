/**
 * Variants of the synthetic report for comparison tests: a moved GPU crossover and small,
 * within-noise jitter on every figure.
 *
 * @module
 */
import type { Figure, Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";
import { scaledStats } from "../calibrate/pool.ts";

/**
 * The synthetic report with the end-to-end matmul f32 CPU→WebGPU crossover (and its interval)
 * multiplied by `factor`.
 *
 * @param factor How far the crossover moves, e.g. 2.
 * @returns A fresh report.
 * @example
 * ```ts
 * import { movedGpuCrossover } from "./_report_variants.ts";
 * console.log(movedGpuCrossover(2).fingerprint); // "3f9a1c0d5e7b2a64"
 * ```
 */
export function movedGpuCrossover(factor: number): Report {
  const report = syntheticReport();
  const c = report.crossovers.find((c) =>
    c.op === "matmul" && c.pair === "cpu→webgpu" && c.residency === "end-to-end"
  );
  if (c?.size == null || c.ci === null) throw new RangeError("Fixture has no matmul GPU crossover");
  c.size *= factor;
  c.ci = [c.ci[0] * factor, c.ci[1] * factor];
  return report;
}

function jitterFigure(f: Figure, k: number): void {
  if (f.value === null) return;
  f.value *= k;
  if (f.ci) f.ci = [f.ci[0] * k, f.ci[1] * k];
}

/**
 * The synthetic report with every crossover, fitted rate and system figure scaled by a
 * deterministic factor within ±`amplitude` (default 3 %), as a re-run on a quiet machine would.
 *
 * @param amplitude Largest relative change.
 * @returns A fresh report.
 * @example
 * ```ts
 * import { jittered } from "./_report_variants.ts";
 * console.log(jittered().crossovers.length > 0); // true
 * ```
 */
export function jittered(amplitude = 0.03): Report {
  const report = syntheticReport();
  let i = 0;
  const next = () => 1 + amplitude * Math.sin(++i * 7.31);
  for (const c of report.crossovers) {
    const k = next();
    if (c.size !== null) c.size *= k;
    if (c.ci !== null) c.ci = [c.ci[0] * k, c.ci[1] * k];
  }
  for (const f of report.fits) {
    if (f.gflops !== null) f.gflops *= next();
    if (f.gbps !== null) f.gbps *= next();
  }
  for (const f of systemFigures(report)) jitterFigure(f, next());
  return report;
}

/**
 * Every figure of a report's `system` section: round trip, dispatch, transfers, compile, peaks.
 *
 * @param report A report.
 * @returns The figures, the report's own objects (mutating them mutates the report).
 */
export function systemFigures(report: Report): Figure[] {
  const s = report.system;
  return [
    s.dispatchRoundTripMs,
    s.perDispatchUs,
    s.uploadGBps,
    s.readbackGBps,
    s.copyGBps,
    s.compileMs,
    ...Object.values(s.peakGflops),
    ...Object.values(s.peakGbps),
  ].filter((f): f is Figure => f !== undefined);
}

/**
 * The synthetic report with one series `factor`× slower: every measured time of it multiplied,
 * its measured and fitted rates divided.
 *
 * @param report The report to change (in place, and returned).
 * @param series Op, dtype, backend and residency of the series.
 * @param factor How much slower, e.g. 2.
 * @returns The same report.
 * @example
 * ```ts
 * import { slowedSeries } from "./_report_variants.ts";
 * import { syntheticReport } from "./_fixtures.ts";
 * const r = slowedSeries(syntheticReport(), {
 *   op: "add", dtype: "f32", backend: "wasm", residency: "end-to-end",
 * }, 2);
 * console.log(r.measurements.length > 0); // true
 * ```
 */
export function slowedSeries(
  report: Report,
  series: { op: string; dtype: string; backend: string; residency: string },
  factor: number,
): Report {
  const mine = (m: { op: string; dtype: string; backend: string; residency: string }) =>
    m.op === series.op && m.dtype === series.dtype && m.backend === series.backend &&
    m.residency === series.residency;
  report.measurements = report.measurements.map((m) =>
    m.state === "ok" && mine(m)
      ? {
        ...m,
        wall: { ...m.wall, median: m.wall.median * factor },
        gflops: m.gflops / factor,
        gbps: m.gbps / factor,
      }
      : m
  );
  report.fits = report.fits.map((f) =>
    mine(f)
      ? {
        ...f,
        gflops: f.gflops === null ? null : f.gflops / factor,
        gbps: f.gbps === null ? null : f.gbps / factor,
      }
      : f
  );
  return report;
}

/**
 * The synthetic report's matmul f32 wasm series, as {@linkcode slowedSeries} takes it.
 *
 * @example
 * ```ts
 * import { MATMUL_WASM } from "./_report_variants.ts";
 * console.log(MATMUL_WASM.backend); // "wasm"
 * ```
 */
export const MATMUL_WASM = {
  op: "matmul",
  dtype: "f32",
  backend: "wasm",
  residency: "end-to-end",
} as const;

/**
 * The synthetic report as a CPU-only machine would write it: no adapter, no WebGPU rows, and
 * WebGPU figures missing with the reason.
 *
 * @param overrides Top-level fields to replace (shallow), as for `syntheticReport`.
 * @returns A fresh report.
 * @example
 * ```ts
 * import { cpuOnlyReport } from "./_report_variants.ts";
 * console.log(cpuOnlyReport().adapter); // null
 * ```
 */
export function cpuOnlyReport(overrides: Partial<Report> = {}): Report {
  const report = syntheticReport();
  const missing = (f: Figure): Figure => ({
    value: null,
    unit: f.unit,
    tag: "measured",
    reason: "No WebGPU adapter",
  });
  const { webgpu: _, ...peakGbps } = report.system.peakGbps;
  return {
    ...report,
    adapter: null,
    measurements: report.measurements.filter((m) => m.backend !== "webgpu"),
    fits: report.fits.filter((f) => f.backend !== "webgpu"),
    crossovers: report.crossovers.filter((c) => c.pair !== "cpu→webgpu"),
    tuning: report.tuning.filter((t) => t.backend !== "webgpu"),
    thresholds: report.thresholds.map((t) => ({ ...t, gpuAbove: missing(t.gpuAbove) })),
    system: {
      ...report.system,
      dispatchRoundTripMs: missing(report.system.dispatchRoundTripMs),
      perDispatchUs: missing(report.system.perDispatchUs),
      uploadGBps: missing(report.system.uploadGBps),
      readbackGBps: missing(report.system.readbackGBps),
      copyGBps: missing(report.system.copyGBps),
      compileMs: missing(report.system.compileMs),
      peakGbps,
    },
    ...overrides,
  };
}

/**
 * The report with every correct measurement of the given backends `factor`× slower: wall and GPU
 * times multiplied (their relative intervals kept), rates divided. Crossovers and fits are left
 * as they are, as when every median in a report file is edited.
 *
 * @param report The report to change (in place, and returned).
 * @param backends The backends to slow down.
 * @param factor How much slower, e.g. 2.
 * @returns The same report.
 * @example
 * ```ts
 * import { slowedBackends } from "./_report_variants.ts";
 * import { syntheticReport } from "./_fixtures.ts";
 * const r = slowedBackends(syntheticReport(), ["webgpu"], 2);
 * console.log(r.measurements.length > 0); // true
 * ```
 */
export function slowedBackends(
  report: Report,
  backends: readonly string[],
  factor: number,
): Report {
  report.measurements = report.measurements.map((m) =>
    m.state === "ok" && backends.includes(m.backend)
      ? {
        ...m,
        wall: scaledStats(m.wall, factor),
        ...(m.gpu ? { gpu: scaledStats(m.gpu, factor) } : {}),
        gflops: m.gflops / factor,
        gbps: m.gbps / factor,
      }
      : m
  );
  return report;
}

/**
 * The report with every measurement's relative 95 % interval set to `relCi`, as on a noisy
 * machine where one figure alone cannot tell a 20 % move from noise.
 *
 * @param report The report to change (in place, and returned).
 * @param relCi Relative half-width, e.g. 0.15.
 * @returns The same report.
 * @example
 * ```ts
 * import { withRelCi } from "./_report_variants.ts";
 * import { syntheticReport } from "./_fixtures.ts";
 * console.log(withRelCi(syntheticReport(), 0.15).measurements.length > 0); // true
 * ```
 */
export function withRelCi(report: Report, relCi: number): Report {
  report.measurements = report.measurements.map((m) =>
    m.state === "ok" ? { ...m, wall: { ...m.wall, relCi, ciHalfWidth: m.wall.median * relCi } } : m
  );
  return report;
}

/**
 * Stability probes of every backend, `count` of them, each backend's ln time wandering by ±`sigma`
 * on its own (not in common with the others), times `factor` (a host that was slower all run).
 *
 * @param sigma Spread of each backend's probe against the others, ln units.
 * @param factor Common-mode slowdown of every probe.
 * @param count Probes.
 * @returns A `stability` section.
 * @example
 * ```ts
 * import { probesWith } from "./_report_variants.ts";
 * console.log(probesWith(0.05).probes.length); // 9
 * ```
 */
export function probesWith(
  sigma: number,
  factor = 1,
  count = 9,
): NonNullable<Report["stability"]> {
  const base = { webgpu: 0.2, wasm: 0.015, "wasm-mt": 0.012, js: 0.06 } as const;
  const probes = Array.from({ length: count }, (_, i) => ({
    atS: 10 * i,
    ms: Object.fromEntries(
      Object.entries(base).map(([b, ms], j) => [
        b,
        ms * factor * Math.exp(sigma * Math.sin(1.7 * i + 2.3 * j)),
      ]),
    ),
  }));
  return {
    op: "add",
    dtype: "f32",
    shape: { n: 65536 },
    residency: "device-resident",
    probes,
    driftSigma: { webgpu: sigma, wasm: sigma, "wasm-mt": sigma, js: sigma },
  };
}

/**
 * The synthetic report with add f32 on wasm-mt measured `ratio` × wasm at every size, and its
 * wasm→wasm-mt crossover (with interval) at `size`.
 *
 * @param ratio wasm-mt's time over wasm's at every size.
 * @param size Where the report puts the crossover.
 * @returns A fresh report.
 * @example
 * ```ts
 * import { nearlyEqualBackends } from "./_report_variants.ts";
 * console.log(nearlyEqualBackends(1.04, 1000).crossovers.length > 0); // true
 * ```
 */
export function nearlyEqualBackends(ratio: number, size: number): Report {
  const report = syntheticReport();
  const wasm = new Map(
    report.measurements.filter((m) => m.op === "add" && m.backend === "wasm" && m.state === "ok")
      .map((m) => [m.size, m]),
  );
  report.measurements = report.measurements.map((m) => {
    const twin = wasm.get(m.size);
    if (m.op !== "add" || m.backend !== "wasm-mt" || m.state !== "ok" || twin?.state !== "ok") {
      return m;
    }
    return { ...m, wall: { ...m.wall, median: twin.wall.median * ratio } };
  });
  const c = report.crossovers.find((c) =>
    c.op === "add" && c.dtype === "f32" && c.pair === "wasm→wasm-mt" && c.residency === "end-to-end"
  );
  if (c === undefined) throw new RangeError("Fixture has no add wasm→wasm-mt crossover");
  c.from = "wasm";
  c.to = "wasm-mt";
  c.size = size;
  c.ci = [size * 0.95, size * 1.05];
  return report;
}
