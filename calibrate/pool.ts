/**
 * A calibration that replaces its machine's report pools with it: each case both runs measured
 * takes the geometric mean of the runs' medians, so the report describes the machine over the host
 * states of several runs rather than the one minute each point was measured in.
 *
 * On a 2-vCPU AMD EPYC VM, one process timing the same wasm kernels for a minute saw σ of ln time
 * 0.08–0.18 from window to window, ×1.2–1.6 between the 10th and 90th percentile, states that
 * came and went within seconds and, some days, for minutes; one calibration's points are each
 * one draw of that. Six calibrations of that VM, scored with `bench:regret`'s re-scoring against
 * ten held-out truths taken over four hours, averaged 70.4–80.6 % of predictions within ±25 % each;
 * every pair of them pooled this way averaged 77.7–81.0 %, above the better of the two in four
 * pairs of six, and the noisiest run (70.4 %) pooled with the best (80.6 %) gave 80.5 %.
 *
 * Pooling is safe only when both runs measured the same kernels: the replaced report must be of
 * this machine (fingerprint) and mode, complete, and made by the same gpucal commit (a report
 * without a commit, from gpucal imported by URL, is not pooled with). `--fresh` turns it off.
 *
 * ```ts
 * import { poolMeasurements } from "./pool.ts";
 * console.log(poolMeasurements([], []).pooled); // 0
 * ```
 *
 * @module
 */
import type { Measurement, Report } from "../core/schema.ts";
import type { SampleStats } from "../core/result.ts";
import { measurementKey } from "./plan_state.ts";

/** Most earlier runs one new run is averaged against: the latest run weighs at least a quarter. */
const MAX_EARLIER_WEIGHT = 3;

/** What a run is, for deciding whether to pool with a report. */
export interface RunIdentity {
  readonly fingerprint: string;
  readonly mode: string;
  /** The gpucal checkout's commit; null when unknown (imported by URL). */
  readonly commit: string | null;
}

/**
 * Why this run may not pool with `earlier`, or null when it may.
 *
 * @param earlier The report the run replaces.
 * @param run This run.
 * @returns The reason, or null.
 * @example
 * ```ts ignore
 * import { poolRefusal } from "./pool.ts";
 * import { loadReport } from "../reports/load.ts";
 * const earlier = await loadReport("reports/llvmpipe-vulkan-x86_64-1ec2aa7f.json");
 * console.log(poolRefusal(earlier, { fingerprint: earlier.fingerprint, mode: "default", commit: null }));
 * // "the gpucal commit of one of the two runs is unknown, so their kernels may differ"
 * ```
 */
export function poolRefusal(earlier: Report, run: RunIdentity): string | null {
  const p = earlier.provenance;
  if (earlier.fingerprint !== run.fingerprint) return "it is of another machine or adapter";
  if ((p.mode ?? (p.quick ? "quick" : "default")) !== run.mode) {
    return `it was calibrated in another mode (${p.mode ?? "unknown"})`;
  }
  if (!p.complete || p.stopReason !== "finished") return "it is not a complete, finished run";
  if (run.commit === null || earlier.gpucal.commit === null) {
    return "the gpucal commit of one of the two runs is unknown, so their kernels may differ";
  }
  if (earlier.gpucal.commit !== run.commit) {
    return `it was made by another gpucal commit (${earlier.gpucal.commit.slice(0, 7)}), whose ` +
      `kernels may differ`;
  }
  return null;
}

/**
 * This run's measurements, each case that `earlier` also measured (same op, dtype, backend,
 * variant, residency and shape, both ok) at the geometric mean of the two medians: this run weighs
 * 1/(n + 1) against an earlier median that pooled n runs (n at most
 * {@linkcode MAX_EARLIER_WEIGHT}). The window statistics are this run's, scaled to the pooled
 * median; its confidence half-width is at least half the two medians' disagreement. Cases only one
 * run measured stay as this run measured them (this run's cases only).
 *
 * @param measurements This run's measurements.
 * @param earlier The replaced report's measurements.
 * @returns The measurements and how many were pooled.
 * @example
 * ```ts
 * import { poolMeasurements } from "./pool.ts";
 * const { measurements, pooled } = poolMeasurements([], []);
 * console.log(measurements.length, pooled); // 0 0
 * ```
 */
export function poolMeasurements(
  measurements: readonly Measurement[],
  earlier: readonly Measurement[],
): { measurements: Measurement[]; pooled: number } {
  const before = new Map(earlier.map((m) => [measurementKey(m), m]));
  let pooled = 0;
  const out = measurements.map((m): Measurement => {
    const old = before.get(measurementKey(m));
    if (m.state !== "ok" || old?.state !== "ok") return m;
    const n = Math.min(old.runs ?? 1, MAX_EARLIER_WEIGHT);
    const lnNew = Math.log(m.wall.median);
    const lnOld = Math.log(old.wall.median);
    const median = Math.exp((lnNew + n * lnOld) / (n + 1));
    const f = median / m.wall.median;
    const wall = scaledStats(m.wall, f);
    const disagreement = median * Math.expm1(Math.abs(lnNew - lnOld) / 2);
    const ciHalfWidth = Math.max(wall.ciHalfWidth, disagreement);
    pooled++;
    return {
      ...m,
      wall: { ...wall, ciHalfWidth, relCi: ciHalfWidth / median },
      ...(m.gpu ? { gpu: scaledStats(m.gpu, f) } : {}),
      gflops: m.gflops / f,
      gbps: m.gbps / f,
      runs: (old.runs ?? 1) + 1,
    };
  });
  return { measurements: out, pooled };
}

/**
 * Sample statistics with every time multiplied by `f` (their relative spread kept).
 *
 * @param s The statistics.
 * @param f The factor.
 * @returns The scaled statistics.
 * @example
 * ```ts
 * import { scaledStats } from "./pool.ts";
 * const s = { n: 5, median: 2, p10: 1, p90: 3, mad: 0.5, min: 1, max: 3, ciHalfWidth: 0.4, relCi: 0.2 };
 * console.log(scaledStats(s, 2).median, scaledStats(s, 2).relCi); // 4 0.2
 * ```
 */
export function scaledStats(s: SampleStats, f: number): SampleStats {
  return {
    ...s,
    median: s.median * f,
    p10: s.p10 * f,
    p90: s.p90 * f,
    mad: s.mad * f,
    min: s.min * f,
    max: s.max * f,
    ciHalfWidth: s.ciHalfWidth * f,
  };
}
