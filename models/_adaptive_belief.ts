/**
 * Private: what `AdaptiveSelector` believes about the backends of one bucket, and how an observed
 * time changes it. Pure arithmetic on ln(ms), testable without a selector.
 *
 * The belief is a joint Normal over the backends' current mean ln times (a local-level Kalman
 * filter). It starts from the report's predictions, with a component the backends share — this
 * machine, now, may be uniformly faster or slower than the report — so the first times observed on
 * one backend move the others too. It widens a little with every observation in the bucket (old
 * observations are forgotten at a bounded rate) and narrows where observations land. Each
 * backend's observation noise is estimated from its successive observations, and innovations are
 * clipped so one stall moves the belief little. A two-sided CUSUM of each backend's standardised
 * innovations detects a change of level (another process took a core): that backend's belief is
 * reset wide, so its mean reaches the new level within a few observations, and the others are
 * widened to their drift, so they are worth checking again.
 *
 * @module
 */
import type { Backend } from "../kernels/types.ts";
import type { ProvenanceTag } from "../reports/schema.ts";

/** Noise sd of ln(observed ms) assumed before two observations say otherwise (±25 %). */
export const NOISE_PRIOR_SD = 0.25;
/** Smallest noise sd believed: a repeatable kernel is still ±2 % call to call. */
const NOISE_FLOOR_SD = 0.02;
/** Smallest weight of a new squared difference in the noise estimate (a 32-sample memory). */
const NOISE_MIN_WEIGHT = 1 / 32;
/** Innovations are clipped (Huber) at this many predictive sds: one stall moves the mean little. */
const HUBER_C = 2.5;
/** A successive difference counts at most this many sds in the noise estimate. */
const DIFF_CLIP = 3;
/** CUSUM allowance per observation, in predictive sds: shifts under 1 sd are left to forgetting. */
const CUSUM_K = 1;
/**
 * CUSUM alarm level: a shift of ≥ 3.5 sds is caught in 2 observations, of 2 sds in about 5, and
 * Gaussian noise raises a false alarm about once in 7000 observations (a false alarm costs a few
 * noisy estimates, and possibly a detour until exploration brings the backend back).
 */
const CUSUM_H = 4;
/** One observation adds at most this to the CUSUM, so a single stall never raises an alarm. */
const CUSUM_Z_CLIP = 3.5;
/** Widest variance kept (sd e^5 ≈ ×150 either way), so the arithmetic stays finite. */
const MAX_VARIANCE = 25;

/**
 * A report's prediction as a prior, in ln(ms): its mean, and the sd of the backend's own error
 * (the part not shared with the other backends).
 *
 * @example
 * ```ts
 * import type { ArmPrior } from "./_adaptive_belief.ts";
 * const p: ArmPrior = { ms: 0.04, sd: 0.2, provenance: "fitted" };
 * ```
 */
export interface ArmPrior {
  readonly ms: number;
  readonly sd: number;
  readonly provenance: ProvenanceTag;
}

/**
 * What is kept about one backend beside its place in the joint belief. Mutable: the selector
 * owns it and updates it in place, synchronously.
 *
 * @example
 * ```ts
 * import type { Arm } from "./_adaptive_belief.ts";
 * function settled(a: Arm) { return a.observations > 10 && a.changes === 0; }
 * ```
 */
export interface Arm {
  readonly backend: Backend;
  /** Estimated variance of one observation's ln ms around the mean. */
  noise: number;
  /** Variance the arm is widened to at least when its bucket detects a change (its drift). */
  readonly changeFloor: number;
  /** Last observation, ln ms (NaN before the first), for the noise estimate. */
  last: number;
  observations: number;
  /** Two-sided CUSUM of standardised innovations. */
  up: number;
  down: number;
  /** Changes of level detected on this arm. */
  changes: number;
  /** Explorations chosen but not yet recorded, and the cost reserved for them, ms. */
  pending: number;
  pendingMs: number;
  readonly priorMs: number | null;
  readonly priorProvenance: ProvenanceTag | null;
}

/**
 * One backend of a new bucket: its prior (or null to start knowing nothing) and its drift sd.
 *
 * @example
 * ```ts
 * import type { ArmSetup } from "./_adaptive_belief.ts";
 * const s: ArmSetup = { backend: "wasm", prior: null, driftSd: 0.15, shared: true };
 * ```
 */
export interface ArmSetup {
  readonly backend: Backend;
  readonly prior: ArmPrior | null;
  /** Sd the arm is widened to at least when a change is detected in its bucket. */
  readonly driftSd: number;
  /** Whether its prior error includes the part the bucket's backends share (they share cores). */
  readonly shared: boolean;
}

/**
 * The forgetting per observation, relative to the noise, whose steady-state Kalman gain is
 * `alpha`: a backend observed every call weighs a new observation by `alpha`.
 *
 * @param alpha Steady-state weight of a new observation, (0, 1].
 * @returns Process variance per observation, as a share of the observation noise.
 * @example
 * ```ts
 * import { forgetRate } from "./_adaptive_belief.ts";
 * console.log(forgetRate(0.5)); // 0.5
 * ```
 */
export function forgetRate(alpha: number): number {
  return alpha >= 1 ? MAX_VARIANCE : alpha ** 2 / (1 - alpha);
}

/**
 * The joint belief over one bucket's backends.
 *
 * @example
 * ```ts
 * import { BucketBelief } from "./_adaptive_belief.ts";
 * const b = new BucketBelief([
 *   { backend: "wasm", prior: { ms: 1, sd: 0.1, provenance: "fitted" }, driftSd: 0.1, shared: true },
 *   { backend: "js", prior: { ms: 4, sd: 0.1, provenance: "fitted" }, driftSd: 0.1, shared: true },
 * ], 0.5, 1 / 240);
 * b.observe(0, Math.log(2)); // wasm took 2 ms: js is now believed slower than 4 ms too
 * console.log(Math.exp(b.mean(1)) > 4); // true
 * ```
 */
export class BucketBelief {
  readonly arms: Arm[] = [];
  readonly #mean: number[] = [];
  /** Covariance rows; a backend nothing is known about has a zero row and a NaN mean. */
  readonly #cov: number[][] = [];
  readonly #forget: number;
  #observations = 0;

  /**
   * @param setups The backends, their priors and drift.
   * @param sharedSd Sd of the prior error the `shared` backends share (the machine's speed
   *   against the report's).
   * @param forget Process variance per observation, relative to the noise ({@linkcode forgetRate}).
   */
  constructor(setups: readonly ArmSetup[], sharedSd: number, forget: number) {
    this.#forget = forget;
    for (const s of setups) this.add(s);
    const shared = sharedSd ** 2;
    setups.forEach((a, i) => {
      if (a.prior === null) return;
      this.#cov[i]![i] = Math.min(MAX_VARIANCE, a.prior.sd ** 2 + (a.shared ? shared : 0));
      setups.forEach((b, j) => {
        if (j !== i && a.shared && b.shared && b.prior !== null) this.#cov[i]![j] = shared;
      });
    });
  }

  /** Observations recorded in the bucket: the clock by which beliefs are forgotten. */
  get observations(): number {
    return this.#observations;
  }

  /**
   * Adds a backend (first seen in `record()`), knowing nothing about it.
   *
   * @param setup The backend, its prior (used for its mean only) and drift.
   * @returns Its index.
   */
  add(setup: ArmSetup): number {
    const k = this.arms.length;
    this.arms.push({
      backend: setup.backend,
      noise: NOISE_PRIOR_SD ** 2,
      changeFloor: setup.driftSd ** 2,
      last: NaN,
      observations: 0,
      up: 0,
      down: 0,
      changes: 0,
      pending: 0,
      pendingMs: 0,
      priorMs: setup.prior?.ms ?? null,
      priorProvenance: setup.prior?.provenance ?? null,
    });
    this.#mean.push(setup.prior === null ? NaN : Math.log(setup.prior.ms));
    for (const row of this.#cov) row.push(0);
    this.#cov.push(new Array<number>(k + 1).fill(0));
    return k;
  }

  /** True when backend `i` has a mean: a prior or an observation. */
  isKnown(i: number): boolean {
    return !Number.isNaN(this.#mean[i]!);
  }

  /** Mean ln ms of backend `i` (NaN when nothing is known). */
  mean(i: number): number {
    return this.#mean[i]!;
  }

  /** Variance of backend `i`'s mean ln ms. */
  variance(i: number): number {
    return this.#cov[i]![i]!;
  }

  /**
   * Folds one observation of backend `i` into the belief: change detection first (so a detected
   * change widens the belief before the update), then the clipped Kalman update of every
   * backend's mean, then `i`'s noise estimate.
   *
   * @param i The backend observed.
   * @param x The observation, ln ms.
   * @returns Whether a change of level was detected.
   */
  observe(i: number, x: number): boolean {
    this.#observations++;
    this.#advance();
    const arm = this.arms[i]!;
    // A backend's first observation is what says how far off the report is for it (a tiny
    // kernel's single call can take 10× its batched median): it is taken whole, not clipped.
    const first = arm.observations === 0;
    arm.observations++;
    if (!this.isKnown(i)) {
      this.#mean[i] = x;
      this.#cov[i]![i] = arm.noise;
      arm.last = x;
      return false;
    }
    const innovation = x - this.#mean[i]!;
    const changed = !first &&
      detectChange(arm, innovation / Math.sqrt(this.#cov[i]![i]! + arm.noise));
    if (changed) this.#reset(i, innovation ** 2);
    const predictive = this.#cov[i]![i]! + arm.noise;
    const limit = first ? Infinity : HUBER_C * Math.sqrt(predictive);
    this.#update(i, Math.max(-limit, Math.min(limit, innovation)), predictive);
    if (!changed) updateNoise(arm, x);
    arm.last = x;
    return changed;
  }

  /**
   * One joint draw of the means of the backends `indices` (all known).
   *
   * @param indices Backends to draw.
   * @param normal A standard-normal generator.
   * @returns The drawn mean ln ms, in the order of `indices`.
   */
  sample(indices: readonly number[], normal: () => number): number[] {
    const lower = cholesky(indices.map((a) => indices.map((b) => this.#cov[a]![b]!)));
    const z = indices.map(() => normal());
    return indices.map((a, r) => {
      let x = this.#mean[a]!;
      for (let c = 0; c <= r; c++) x += lower[r]![c]! * z[c]!;
      return x;
    });
  }

  /** One observation's worth of forgetting on every known backend. */
  #advance(): void {
    this.arms.forEach((arm, i) => {
      if (!this.isKnown(i)) return;
      const row = this.#cov[i]!;
      row[i] = Math.min(MAX_VARIANCE, row[i]! + this.#forget * arm.noise);
    });
  }

  /**
   * After a change on `i`: its variance becomes at least the squared jump (so the next updates
   * follow it), every other known backend's at least its drift. Only diagonals grow, so the
   * covariance stays positive semi-definite.
   */
  #reset(i: number, jump: number): void {
    this.arms.forEach((arm, j) => {
      if (!this.isKnown(j)) return;
      const floor = j === i ? Math.max(jump, arm.changeFloor) : arm.changeFloor;
      this.#cov[j]![j] = Math.min(MAX_VARIANCE, Math.max(this.#cov[j]![j]!, floor));
    });
  }

  /** Kalman update on an observation of `i` with innovation `e` and predictive variance `s`. */
  #update(i: number, e: number, s: number): void {
    const column = this.#cov.map((row) => row[i]!);
    for (let a = 0; a < column.length; a++) {
      if (!this.isKnown(a)) continue;
      this.#mean[a]! += (column[a]! / s) * e;
      const row = this.#cov[a]!;
      for (let b = 0; b < column.length; b++) row[b]! -= (column[a]! * column[b]!) / s;
    }
  }
}

/** Advances the arm's CUSUM by standardised innovation `z`; true (and reset) on an alarm. */
function detectChange(arm: Arm, z: number): boolean {
  const step = Math.max(-CUSUM_Z_CLIP, Math.min(CUSUM_Z_CLIP, z));
  arm.up = Math.max(0, arm.up + step - CUSUM_K);
  arm.down = Math.max(0, arm.down - step - CUSUM_K);
  if (arm.up <= CUSUM_H && arm.down <= CUSUM_H) return false;
  arm.up = 0;
  arm.down = 0;
  arm.changes++;
  return true;
}

/**
 * Half the squared difference of successive observations estimates the noise variance whatever
 * the mean does (a level shift spoils one difference, not the estimate); clipped, so a stall
 * counts as a few sds, not as its full size.
 */
function updateNoise(arm: Arm, x: number): void {
  if (Number.isNaN(arm.last)) return;
  const half = (x - arm.last) ** 2 / 2;
  const sample = Math.min(half, DIFF_CLIP ** 2 * arm.noise);
  const weight = Math.max(NOISE_MIN_WEIGHT, 1 / arm.observations);
  arm.noise = Math.max(NOISE_FLOOR_SD ** 2, arm.noise + weight * (sample - arm.noise));
}

/** Lower Cholesky factor of a small covariance; pivots lost to rounding count as 0. */
function cholesky(m: readonly (readonly number[])[]): number[][] {
  const n = m.length;
  const l = m.map(() => new Array<number>(n).fill(0));
  for (let r = 0; r < n; r++) {
    for (let c = 0; c <= r; c++) {
      let sum = m[r]![c]!;
      for (let k = 0; k < c; k++) sum -= l[r]![k]! * l[c]![k]!;
      if (r === c) l[r]![c] = Math.sqrt(Math.max(0, sum));
      else l[r]![c] = l[c]![c]! > 0 ? sum / l[c]![c]! : 0;
    }
  }
  return l;
}
