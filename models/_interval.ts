/**
 * Private: how a prediction's interval adds up its parts. Some parts were learned from the
 * calibration's own points left out in turn (the axis curve's held-out error, the shape model's
 * spread): each left-out point was measured at its own moment of the run, so those errors already
 * hold the run's window-to-window noise and its drift within the run. Adding that drift again
 * counted it twice: on the 2-vCPU AMD EPYC VM, 90 % intervals covered 95.4–97.5 % of five of eight
 * `bench:regret` truths, and 96.7–100 % off the axis. What a learned part does not hold is how far a
 * later run moves as a whole (the between-run drift), so only that adds to it, and the whole drift
 * stays the floor: an interval is never narrower than the machine's own movement.
 *
 * ```ts
 * import { learnedHalfWidth } from "./_interval.ts";
 * const half = learnedHalfWidth({ axis: 0.05, shape: 0.2, offAxisModel: true }, {
 *   z: 1.645,
 *   sigma: 0.1,
 *   betweenSigma: 0.05,
 * });
 * console.log(half.toFixed(3)); // "0.216"
 * ```
 *
 * @module
 */
import type { Backend } from "../kernels/types.ts";
import type { Report, StabilityInfo } from "../core/schema.ts";
import { median } from "../core/stats.ts";

/** Half-widths (ln) of the parts of a prediction that were learned from left-out points. */
export interface LearnedParts {
  /** The axis curve's held-out error at this size, ln(1 + error). */
  readonly axis: number;
  /** The shape model's spread at this shape (0 without one). */
  readonly shape: number;
  /**
   * Whether the shape model prices this shape off the axis: its residuals were taken against the
   * axis curve at their work, so its left-out errors already hold the axis curve's error there,
   * and the wider of the two stands rather than their sum.
   */
  readonly offAxisModel: boolean;
  /** A variant priced through another's ratio: that ratio's spread. */
  readonly variant?: number;
  /** An alignment class between the measured ones: its spread. */
  readonly align?: number;
  /** Beyond every measured size: the held-out error compounded per doubling of work. */
  readonly extrapolation?: number;
}

/** A prediction's run-to-run drift, σ of ln time, at the interval's z. */
export interface DriftParts {
  /** z of the stated level's two-sided normal interval. */
  readonly z: number;
  /** The whole drift: within the calibration and between runs. */
  readonly sigma: number;
  /** Its between-run part alone. */
  readonly betweenSigma: number;
}

/**
 * The half-width (ln) of an interval learned from left-out points, with the run-to-run drift.
 *
 * @param parts The learned parts.
 * @param drift The drift.
 * @returns ln(upper / prediction).
 * @example
 * ```ts
 * import { learnedHalfWidth } from "./_interval.ts";
 * // Nothing learned: the drift alone, at z.
 * console.log(learnedHalfWidth({ axis: 0, shape: 0, offAxisModel: false }, { z: 2, sigma: 0.1, betweenSigma: 0 })); // 0.2
 * ```
 */
export function learnedHalfWidth(parts: LearnedParts, drift: DriftParts): number {
  const axisAndShape = parts.offAxisModel
    ? Math.max(parts.axis, parts.shape)
    : Math.hypot(parts.axis, parts.shape);
  const model = Math.hypot(axisAndShape, parts.variant ?? 0, parts.align ?? 0) +
    (parts.extrapolation ?? 0);
  return withDrift(model, drift);
}

/**
 * A learned half-width (ln) with the between-run drift added, never below the whole drift.
 *
 * @param learned The half-width learned from left-out points.
 * @param drift The drift.
 * @returns ln(upper / prediction).
 * @example
 * ```ts
 * import { withDrift } from "./_interval.ts";
 * console.log(withDrift(0.3, { z: 1, sigma: 0.1, betweenSigma: 0.4 })); // 0.5
 * ```
 */
export function withDrift(learned: number, drift: DriftParts): number {
  return Math.max(Math.hypot(learned, drift.z * drift.betweenSigma), drift.z * drift.sigma);
}

/**
 * A backend's drift within a calibration as the report's times hold it: the median of the drift
 * within each run its times pool (this one's `driftSigma`, and those of the latest `runs` − 1
 * earlier runs that recorded one). A pooled report's times are the geometric means of several
 * runs, and the moment-to-moment movement a program meets later is the machine's usual one, not
 * the last run's alone: on the 2-vCPU AMD EPYC VM one run's two-thread wasm probe (add f32 65536,
 * 8–20 µs) split between two levels while the second core was busy (σ 26.5 % against 6.3 % the run
 * before), every wasm-mt interval of that report came out ×2.62 wide at the median, and its
 * `bench:regret` truth right after fell inside them all (100 %, against a 90 % level). A run that
 * kept its own times (a first run, new kernels, `--fresh`) holds its own drift whatever earlier
 * runs did: the median over the machine's earlier runs gave such a report on that VM js 6.1 %
 * where its own probes had moved 13 % between two levels (a whole softmax job measured ×1.5 slow),
 * and its js intervals held 62.5 % of a truth taken right after (90 % stated).
 *
 * @param stability The report's stability section, if any.
 * @param backend The backend.
 * @param runs How many runs the report's times pool at most ({@linkcode pooledRuns}).
 * @returns σ of ln time; 0 when no run recorded one.
 * @example
 * ```ts
 * import { typicalRunDrift } from "./_interval.ts";
 * const stability = {
 *   driftSigma: { "wasm-mt": 0.265 },
 *   earlierRuns: [
 *     { date: "2026-11-28T13:41:34Z", medianMs: {}, driftSigma: { "wasm-mt": 0.063 } },
 *     { date: "2026-11-28T15:08:15Z", medianMs: {}, driftSigma: { "wasm-mt": 0.071 } },
 *   ],
 * };
 * console.log(typicalRunDrift(stability, "wasm-mt", 3)); // 0.071
 * console.log(typicalRunDrift(stability, "wasm-mt", 1)); // 0.265
 * console.log(typicalRunDrift(undefined, "wasm-mt", 1)); // 0
 * ```
 */
export function typicalRunDrift(
  stability: Pick<StabilityInfo, "driftSigma" | "earlierRuns"> | undefined,
  backend: Backend,
  runs: number,
): number {
  if (stability === undefined) return 0;
  const pooled = runs > 1 ? (stability.earlierRuns ?? []).slice(-(runs - 1)) : [];
  const sigmas = [stability.driftSigma, ...pooled.map((r) => r.driftSigma)]
    .flatMap((d) => d?.[backend] === undefined ? [] : [d[backend]!]);
  return sigmas.length === 0 ? 0 : median(sigmas);
}

const pooledRunsOf = new WeakMap<object, number>();

/**
 * How many calibration runs a report's times pool at most (`Measurement.runs`, set by
 * `calibrate/pool.ts`): 1 when its run kept its own measurements.
 *
 * @param report The report.
 * @returns At least 1.
 * @example
 * ```ts
 * import { pooledRuns } from "./_interval.ts";
 * console.log(pooledRuns({ measurements: [] })); // 1
 * ```
 */
export function pooledRuns(report: Pick<Report, "measurements">): number {
  let runs = pooledRunsOf.get(report);
  if (runs === undefined) {
    runs = report.measurements.reduce((most, m) => Math.max(most, m.runs ?? 1), 1);
    pooledRunsOf.set(report, runs);
  }
  return runs;
}
