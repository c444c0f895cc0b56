/**
 * Variants of the synthetic report for comparison tests: a moved GPU crossover and small,
 * within-noise jitter on every figure.
 *
 * @module
 */
import type { Figure, Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

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
