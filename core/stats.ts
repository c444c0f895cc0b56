/**
 * Robust statistics for timing samples: order statistics, a distribution-free confidence interval
 * for the median, and the stopping rule that decides when a measurement has enough samples.
 *
 * @module
 */
import type { SampleStats } from "./result.ts";
import type { Figure } from "./schema.ts";

/** Relative 95 % confidence half-width of the median that ends sampling early. */
export const TARGET_REL_CI = 0.02;
/** Fewest samples a measurement takes, whatever its spread. */
export const MIN_SAMPLES = 7;
/** Most samples a measurement takes, whatever its spread. */
export const MAX_SAMPLES = 200;

/**
 * The `q` quantile (0..1) of sorted values, linearly interpolated.
 *
 * @param sorted Values in ascending order (not checked).
 * @param q Quantile in [0, 1].
 * @returns The quantile, or NaN for no values.
 * @example
 * ```ts
 * import { quantile } from "./stats.ts";
 * console.log(quantile([1, 2, 3, 4], 0.5)); // 2.5
 * ```
 */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = Math.min(Math.max(q, 0), 1) * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo]!;
  return a + (sorted[hi]! - a) * (pos - lo);
}

/**
 * The median of unsorted values.
 *
 * @param values The values.
 * @returns The median, or NaN for no values.
 * @example
 * ```ts
 * import { median } from "./stats.ts";
 * console.log(median([5, 1, 3])); // 3
 * ```
 */
export function median(values: readonly number[]): number {
  return quantile([...values].sort((a, b) => a - b), 0.5);
}

/**
 * A robust standard deviation: 1.4826 × the median absolute deviation from `center` (the median
 * of the values by default), which is σ for normal data and shrugs off a few outliers.
 *
 * @param values The values.
 * @param center What the deviations are measured from.
 * @returns The robust σ, or NaN for no values.
 * @example
 * ```ts
 * import { robustSigma } from "./stats.ts";
 * console.log(robustSigma([1, 2, 3, 100])); // 1.4826
 * ```
 */
export function robustSigma(values: readonly number[], center = median(values)): number {
  return 1.4826 * median(values.map((v) => Math.abs(v - center)));
}

/**
 * Half-width of a 95 % confidence interval for the median of sorted values.
 *
 * Distribution-free: the interval between the order statistics at ranks n/2 ∓ 1.96·√n/2
 * (binomial normal approximation), interpolated. Timing samples are skewed and heavy-tailed, so no
 * normality is assumed. With fewer than 3 samples the whole range is the interval.
 *
 * @param sorted Samples in ascending order.
 * @returns The half-width (same unit as the samples).
 * @example
 * ```ts
 * import { medianCiHalfWidth } from "./stats.ts";
 * const flat = Array.from({ length: 20 }, () => 1);
 * console.log(medianCiHalfWidth(flat)); // 0
 * ```
 */
export function medianCiHalfWidth(sorted: readonly number[]): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  if (n < 3) return (sorted[n - 1]! - sorted[0]!) / 2;
  const spread = 1.96 * Math.sqrt(n) / 2;
  const lo = quantile(sorted, Math.max(0, (n / 2 - spread) / (n - 1)));
  const hi = quantile(sorted, Math.min(1, (n / 2 + spread) / (n - 1)));
  return (hi - lo) / 2;
}

/**
 * Summarises samples: median, p10, p90, MAD, extremes and the median's confidence half-width.
 *
 * @param samples Timing samples (any order).
 * @returns The summary.
 * @throws {RangeError} when there are no samples or one is not a finite number.
 * @example
 * ```ts
 * import { summarize } from "./stats.ts";
 * const s = summarize([1.0, 1.1, 0.9, 1.0, 5.0]);
 * console.log(s.median, s.max); // 1 5
 * ```
 */
export function summarize(samples: readonly number[]): SampleStats {
  if (samples.length === 0) throw new RangeError("Cannot summarize zero samples");
  for (const s of samples) {
    if (!Number.isFinite(s)) throw new RangeError(`Cannot summarize a non-finite sample: ${s}`);
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const med = quantile(sorted, 0.5);
  const deviations = sorted.map((x) => Math.abs(x - med)).sort((a, b) => a - b);
  const ciHalfWidth = medianCiHalfWidth(sorted);
  return {
    n: sorted.length,
    median: med,
    p10: quantile(sorted, 0.1),
    p90: quantile(sorted, 0.9),
    mad: quantile(deviations, 0.5),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    ciHalfWidth,
    // A zero median (e.g. coarse GPU timestamps) has no relative spread worth a JSON Infinity.
    relCi: med > 0 ? ciHalfWidth / med : ciHalfWidth > 0 ? 1 : 0,
  };
}

/**
 * Knobs of the stopping rule; defaults in {@linkcode DEFAULT_STOPPING}.
 *
 * @example
 * ```ts
 * import { DEFAULT_STOPPING, type StoppingRule } from "./stats.ts";
 * const quick: StoppingRule = { ...DEFAULT_STOPPING, budgetMs: 300 };
 * ```
 */
export interface StoppingRule {
  /** Stop once the median's relative 95 % CI half-width is at most this. */
  readonly targetRelCi: number;
  /** Never stop before this many samples (unless the budget is spent). */
  readonly minSamples: number;
  /** Always stop at this many samples. */
  readonly maxSamples: number;
  /** Stop once this much time went into sampling, ms. */
  readonly budgetMs: number;
}

/**
 * The default stopping rule: 2 % relative CI, 7 to 200 samples, 2 s per measurement.
 *
 * @example
 * ```ts
 * import { DEFAULT_STOPPING } from "./stats.ts";
 * console.log(DEFAULT_STOPPING.targetRelCi); // 0.02
 * ```
 */
export const DEFAULT_STOPPING: StoppingRule = {
  targetRelCi: TARGET_REL_CI,
  minSamples: MIN_SAMPLES,
  maxSamples: MAX_SAMPLES,
  budgetMs: 2000,
};

/**
 * Why sampling stops, or null to go on.
 *
 * @param samples Samples so far.
 * @param elapsedMs Time spent sampling so far, ms.
 * @param rule The stopping rule.
 * @returns `"converged"`, `"max-samples"`, `"budget"`, or null.
 * @example
 * ```ts
 * import { DEFAULT_STOPPING, stopReason } from "./stats.ts";
 * const steady = Array.from({ length: 10 }, () => 2);
 * console.log(stopReason(steady, 5, DEFAULT_STOPPING)); // "converged"
 * ```
 */
export function stopReason(
  samples: readonly number[],
  elapsedMs: number,
  rule: StoppingRule,
): "converged" | "max-samples" | "budget" | null {
  if (samples.length >= rule.maxSamples) return "max-samples";
  if (samples.length >= rule.minSamples) {
    const sorted = [...samples].sort((a, b) => a - b);
    const med = quantile(sorted, 0.5);
    if (med > 0 && medianCiHalfWidth(sorted) / med <= rule.targetRelCi) return "converged";
  }
  if (elapsedMs >= rule.budgetMs && samples.length >= Math.min(3, rule.minSamples)) return "budget";
  return null;
}

/**
 * Summarizes samples taken in several windows, minutes apart, of one case. The machine's speed
 * moves between windows by more than within one, so each window counts once: the median is the
 * median of the windows' medians (however many samples each took), and its confidence half-width
 * is at least half the range of those medians: two windows that disagree leave the case as unsure
 * as their disagreement. The other order statistics are of all samples together.
 *
 * @param windows Each window's samples (a window with no samples is ignored).
 * @returns The pooled summary.
 * @throws {RangeError} when no window has a sample, or a sample is not finite.
 * @example
 * ```ts
 * import { poolWindows } from "./stats.ts";
 * const s = poolWindows([[1.0, 1.0, 1.0, 1.0], [1.2, 1.2]]);
 * console.log(s.median.toFixed(2), s.ciHalfWidth.toFixed(2), s.n); // 1.10 0.10 6
 * ```
 */
export function poolWindows(windows: readonly (readonly number[])[]): SampleStats {
  const used = windows.filter((w) => w.length > 0);
  const all = summarize(used.flat());
  const medians = used.map((w) => median(w));
  const med = median(medians);
  const spread = (Math.max(...medians) - Math.min(...medians)) / 2;
  const ciHalfWidth = Math.max(all.ciHalfWidth, spread);
  return {
    ...all,
    median: med,
    ciHalfWidth,
    relCi: med > 0 ? ciHalfWidth / med : ciHalfWidth > 0 ? 1 : 0,
  };
}

/**
 * A measured figure from samples: their median, with its 95 % interval; with no samples, a null
 * figure whose reason is `emptyReason`.
 *
 * @param values The samples.
 * @param unit Their unit.
 * @param source How they were obtained (the count of samples is added).
 * @param emptyReason Why there are none, when there are none.
 * @returns The figure.
 * @example
 * ```ts
 * import { medianFigure } from "./stats.ts";
 * console.log(medianFigure([11.2, 11.9, 11.5], "ms", "round trip").value); // 11.5
 * ```
 */
export function medianFigure(
  values: readonly number[],
  unit: string,
  source: string,
  emptyReason = "Interrupted",
): Figure {
  if (values.length === 0) return { value: null, unit, tag: "measured", reason: emptyReason };
  const s = summarize(values);
  return {
    value: s.median,
    unit,
    tag: "measured",
    ci: [s.median - s.ciHalfWidth, s.median + s.ciHalfWidth],
    source: `${source}; median of ${s.n}`,
  };
}
