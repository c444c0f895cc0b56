/**
 * How sure a per-kernel decode estimate is: a stated-level band around the sum of a step's kernel
 * predictions, built from each prediction's own interval (`predictTime()`'s, at its level).
 *
 * Each kernel's interval has two parts (see `TimePrediction.driftSigma`): the machine's run-to-run
 * drift, which moves every launch on the device together, and what the cost model does not know
 * at that shape. So the band adds the drift once, as the launches' time-weighted drift, and the
 * shape parts by how they are tied: launches predicted by one cost model (an op at a dtype and a
 * variant) err together, so within such a group they add up; different cost models err apart, so
 * groups add in quadrature. The chain factor's own uncertainty multiplies in. Summing every
 * kernel's interval end instead (as if all erred together) covered 44 of 44 validated decodes of
 * eleven lavapipe reports, at a median width of ×2.58: honest, but wider than what the estimate
 * knows.
 *
 * ```ts
 * import { kernelSumBand } from "./interval.ts";
 * const launch = (name: string, variant: string) => ({
 *   name, op: "gemv", dtype: "f32", variant, launches: 4, ms: 0.2,
 *   interval: [0.1, 0.4] as const, level: 0.9, driftSigma: 0.2,
 * });
 * const band = kernelSumBand([launch("q_proj", "a"), launch("up_proj", "b")]);
 * console.log(typeof band === "string" ? band : band.halfWidth.toFixed(2)); // "0.54"
 * ```
 *
 * @module
 */
import { normalQuantile } from "../../core/numeric.ts";
import type { Figure } from "../../core/schema.ts";

/** The level a decode estimate's interval is stated at. */
export const DECODE_INTERVAL_LEVEL = 0.9;

/** z of a two-sided normal interval at `level`. */
const zOf = (level: number) => normalQuantile(0.5 + level / 2);

/**
 * One kernel of a step as priced: how many launches, the time of one and its interval.
 *
 * @example
 * ```ts
 * import type { PricedLaunches } from "./interval.ts";
 * const k: PricedLaunches = {
 *   name: "q_proj", op: "gemv", dtype: "q4", variant: "rpw=4", launches: 4, ms: 0.2,
 *   interval: [0.15, 0.3],
 * };
 * ```
 */
export interface PricedLaunches {
  readonly name: string;
  readonly op: string;
  readonly dtype: string;
  readonly variant: string;
  readonly launches: number;
  /** Predicted ms of one launch. */
  readonly ms: number;
  /** Where one launch's time should lie with probability `level`. */
  readonly interval: readonly [number, number];
  /** The interval's level; 0.9 when absent. */
  readonly level?: number;
  /** The drift part of the interval, σ of ln time; absent, the whole interval is drift. */
  readonly driftSigma?: number;
}

/**
 * A band in ln time around a step's kernel sum, at {@linkcode DECODE_INTERVAL_LEVEL}: the sum
 * should lie within `sum × e^(±halfWidth)`.
 *
 * @example
 * ```ts
 * import type { KernelSumBand } from "./interval.ts";
 * const widen = (b: KernelSumBand, ms: number) => [ms * Math.exp(-b.halfWidth), ms * Math.exp(b.halfWidth)];
 * ```
 */
export interface KernelSumBand {
  /** Half-width in ln time, at {@linkcode DECODE_INTERVAL_LEVEL}. */
  readonly halfWidth: number;
  /** Its parts as σ of ln time: drift shared by every launch, the cost models' own, the factor's. */
  readonly sigmas: Readonly<{ drift: number; models: number; factor: number }>;
}

/**
 * The band around a step's kernel sum (pure: testable without a GPU), or why there is none (a
 * kernel without a finite, positive interval around its time).
 *
 * @param kernels The step's priced kernels.
 * @param factor The factor the sum is multiplied by (the step probe's chain factor), whose 95 %
 *   interval widens the band; none, or one without an interval, adds nothing.
 * @returns The band, or the reason.
 * @example
 * ```ts
 * import { kernelSumBand } from "./interval.ts";
 * const k = { name: "lm_head", op: "gemv", dtype: "f32", variant: "v", launches: 1, ms: 1, interval: [0.5, 2] as const };
 * const band = kernelSumBand([k]);
 * console.log(typeof band === "string" ? band : band.halfWidth.toFixed(3)); // "0.693"
 * ```
 */
export function kernelSumBand(
  kernels: readonly PricedLaunches[],
  factor?: Figure,
): KernelSumBand | string {
  if (kernels.length === 0) return "the step has no priced kernels";
  let total = 0;
  let drift = 0;
  const groups = new Map<string, number>();
  for (const k of kernels) {
    const [lo, hi] = k.interval;
    if (!(lo > 0 && Number.isFinite(hi) && lo <= k.ms && hi >= k.ms)) {
      return `kernel ${k.name}'s time has no finite interval around it (${lo}–${hi} ms)`;
    }
    const sigma = Math.max(Math.log(hi / k.ms), Math.log(k.ms / lo)) / zOf(k.level ?? 0.9);
    const shared = Math.min(sigma, k.driftSigma ?? sigma);
    const own = Math.sqrt(sigma * sigma - shared * shared);
    const ms = k.launches * k.ms;
    total += ms;
    drift += ms * shared;
    const key = `${k.op}|${k.dtype}|${k.variant}`;
    groups.set(key, (groups.get(key) ?? 0) + ms * own);
  }
  const models = Math.hypot(...groups.values()) / total;
  const sigmas = { drift: drift / total, models, factor: factorSigma(factor) };
  return {
    halfWidth: zOf(DECODE_INTERVAL_LEVEL) * Math.hypot(sigmas.drift, sigmas.models, sigmas.factor),
    sigmas,
  };
}

/** σ of ln of a factor from its 95 % interval; 0 without one. */
function factorSigma(factor: Figure | undefined): number {
  const [lo, hi] = factor?.ci ?? [0, 0];
  const v = factor?.value;
  if (!(v && lo > 0 && hi >= v && lo <= v)) return 0;
  return Math.max(Math.log(hi / v), Math.log(v / lo)) / zOf(0.95);
}
