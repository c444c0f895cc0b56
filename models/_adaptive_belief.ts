/**
 * Private: what `AdaptiveSelector` believes about the backends of one bucket, and how an observed
 * time changes it. Pure arithmetic on ln(ms), testable without a selector.
 *
 * The belief is a joint Normal (a Kalman filter) over each backend's persistent level and a
 * transient deviation from it; a backend's mean ln time is their sum. It starts from the report's
 * predictions, the CPU backends' levels sharing a component — this machine, now, may run them all
 * faster or slower than the report — so the first times observed on one move the others too.
 * A backend's first call in a bucket may pay one-time costs (a JIT's first tier, a pipeline's
 * compile): slower than believed, it is held and counted after the backend's next call, so a cold
 * start is not taken for the machine. A backend's first counted observation far outside its prior
 * says the report misdescribes this machine, and widens the priors of the backends not yet
 * observed. Levels widen a little with every
 * observation in the bucket (old observations are forgotten at a bounded rate, part of it shared
 * by the CPU backends; a backend no longer run fades back to its drift's width) and narrow where
 * observations land. Each backend's observation noise is estimated from its successive
 * observations, and innovations are clipped, so one stall moves the belief little. A change of
 * level (another process took a core) is detected by a two-sided CUSUM on each observation's
 * clipped z-score (a stall counts as a few sds, so 4 in a row do not add up to a change; a
 * backend jumping between two modes counts both in its noise, so its slow calls add up only when
 * they come more often than they did), the median of the last 9 calls confirming an upward
 * change once the sum is past 9, or alone a downward one. The belief is then widened by the jump, mostly as a transient, so the estimate reaches
 * the new level at once and the choice switches, while the transient decays — a burst is forgotten
 * once it is over, even for a backend nobody runs meanwhile — and a change that lasts is confirmed
 * into the level when the backend is next tried. The other backends are widened to their drift, so they are worth checking again.
 *
 * @module
 */
import type { Backend } from "../kernels/types.ts";
import type { ProvenanceTag } from "../core/schema.ts";
import { median } from "../core/stats.ts";

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
/**
 * Allowance of the change detector (a two-sided CUSUM on each observation's clipped z-score against
 * the estimate): a z under this adds nothing, so noise alone drifts the sums back to 0.
 */
const CUSUM_SLACK = 0.5;
/**
 * Most one observation adds to a CUSUM sum, in sds: a stall counts as a few sds, not as its size,
 * so 4 stalls in a row add 7 — under `CUSUM_LIMIT`, with 3 to spare for the noise before them.
 */
const CUSUM_CLIP = 2.25;
/**
 * A change is declared when a CUSUM sum passes this. A shift of 2.5 sds or more is caught in 6
 * observations of the backend (10 / (2.25 − 0.5)), 2 sds in 7; a backend whose times jump between
 * two modes (wasm-mt's worker waiting for a busy core) counts both modes in its noise, so the
 * slow mode adds little and must come more often than it does to add up: unlike a window's median,
 * which a run of 5 slow calls in 9 moves, the sums weigh every observation.
 */
const CUSUM_LIMIT = 10;
/**
 * Noise sd above which a backend's level forgets no faster: the steady forgetting is a share of
 * the noise variance up to this, so a backend whose times jump between two modes averages over
 * more calls (its estimate would otherwise wander by a fifth of its spread and cross a near-tie's),
 * and a real change is the CUSUM's to catch.
 */
const FORGET_NOISE_CAP = NOISE_PRIOR_SD;
/**
 * Observations the quick test judges: a backend's last 9. Their median moves only once 5 of them
 * moved, so a stall of up to 4 calls in a row is not taken for a change.
 */
const CHANGE_WINDOW = 9;
/**
 * The quick test: the window's median this many predictive sds above the estimate, with the upward
 * CUSUM sum past `CUSUM_CONFIRM`, declares a change before the sum reaches `CUSUM_LIMIT` (below
 * the estimate, the median alone does: a stall never makes a call faster). The median alone
 * chased noise upward: a backend whose times jump between two modes has 5 slow calls in 9 now and
 * then, its median then sits on the slow mode, and it was left aside for a hundred calls; the sum
 * says whether the slow calls came more often than they do.
 */
const CHANGE_SDS = 1.5;
/**
 * Four stalled calls add at most 4 × (`CUSUM_CLIP` − `CUSUM_SLACK`) = 7 to the sum: at 8, one
 * ordinary call after them 1.5 sds high confirmed a change, and a selector took a 4-call stall of
 * wasm for one in 3–4 of 12 seeded loops; at 9 it takes two such calls (1 in 16).
 */
const CUSUM_CONFIRM = 9;
/** Observations kept of a rising CUSUM run (the new level is their mean): a bound on state. */
const RUN_MAX = 32;
/**
 * Share of the steady forgetting that the shared backends (the CPU ones) take together with the
 * others that use as many cores: the machine's speed drifts for all of them, so the times observed
 * on one keep moving the others' estimates a little. One-core backends (wasm, js) share it among
 * themselves and all-core ones (wasm-mt) theirs: another process on one core slows wasm-mt ×2 and
 * leaves wasm near where it was, and a common component across the two made wasm's steady times
 * hold wasm-mt's estimate back. Replayed on two recorded closed loops over six seeds each, the
 * drift scenario's last-half regret went from 2.8–7.1 % to 1.9–4.0 % on one, and the wrong
 * prior's share of fastest picks from 87–91 % to 87–92 % on the other.
 */
const SHARED_CHANGE = 0.5;
/**
 * Share of a detected change taken as lasting (added to the backend's level); the rest is taken as
 * transient and decays. A change that does last is confirmed by the observations that follow.
 */
const PERSISTENT_SHARE = 0.25;
/**
 * Factor by which a transient deviation shrinks per observation in the bucket: it halves in about
 * 22 observations, so a backend left aside during a burst is believed back near its usual level
 * about a hundred calls later, and retried if it is then the best.
 */
const TRANSIENT_DECAY = 1 - 1 / 32;
/**
 * Factor by which a level's variance grows per observation in the bucket, up to its `fadeTo`:
 * what was learnt of a backend that is no longer run fades (e-fold in 256 observations), so a
 * backend left believed a little slower is drawn again in time, while one far slower stays
 * undrawn.
 */
const FADE = 1 + 1 / 256;
/**
 * A level no longer observed fades back to its drift this many sds wide: what can change while a
 * backend is not run is the machine, not the report's error, which its observations settled. A
 * backend within that of the best is retried now and then; one left far slower is not (fading
 * back to the prior's width had every backend within ×2–3 of the best drawn again and again, on
 * a budget the near-ties needed).
 */
const FADE_DRIFT_SDS = 2;
/**
 * A backend's first counted observation this many predictive sds from its prior contradicts the report:
 * the backends not yet observed have their prior widened (`BucketBelief`'s conflict rule).
 */
const CONFLICT_SDS = 2;
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
  /** Whether its errors and changes have a part the bucket's shared backends share. */
  readonly shared: boolean;
  /** How many cores it runs on: its steady changes are shared with the arms of as many. */
  readonly cores: "one" | "all";
  /** Estimated variance of one observation's ln ms around the mean. */
  noise: number;
  /** Variance the arm is widened to at least when its bucket detects a change (its drift). */
  readonly changeFloor: number;
  /**
   * Variance its level fades back to when it is no longer observed: its drift's, `FADE_DRIFT_SDS`
   * wide (its prior's when narrower, or when a conflict widened its prior before it was observed).
   */
  fadeTo: number;
  /** Variance of its prior's own error (the part not shared), ln ms²; 0 without a prior. */
  readonly ownPriorVariance: number;
  /** Last observation, ln ms (NaN before the first), for the noise estimate. */
  last: number;
  observations: number;
  /**
   * Observations folded into the belief: all but a first call slower than believed, which may
   * have paid one-time costs.
   */
  counted: number;
  /** A first call slower than believed, ln ms, held until the next (NaN when none). */
  held: number;
  /** The last `CHANGE_WINDOW` observations, ln ms, oldest first. */
  readonly recent: number[];
  /** The CUSUM sums of upward and downward shifts, in sds. */
  up: number;
  down: number;
  /**
   * The observations since each sum last left 0 (at most `RUN_MAX`, latest kept), ln ms: where a
   * change started, so their mean is the new level.
   */
  readonly upRun: number[];
  readonly downRun: number[];
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
 * const s: ArmSetup = { backend: "wasm", prior: null, driftSd: 0.15, shared: true, cores: "one" };
 * ```
 */
export interface ArmSetup {
  readonly backend: Backend;
  readonly prior: ArmPrior | null;
  /** Sd the arm is widened to at least when a change is detected in its bucket. */
  readonly driftSd: number;
  /** Whether its prior error includes the part the bucket's backends share (they share cores). */
  readonly shared: boolean;
  /** How many cores it runs on (one when absent): its steady changes follow the arms of as many. */
  readonly cores?: "one" | "all";
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
 * The joint belief over one bucket's backends, a linear-Gaussian state: per backend a persistent
 * level `L` (its prior; a random walk, the shared backends' levels correlated) and a transient
 * deviation `d`; a backend's mean ln time is `L + d`. Transients come only from detected changes
 * and decay by `TRANSIENT_DECAY` per observation in the bucket: a burst of load is forgotten once
 * it is over, even for a backend nobody runs meanwhile, while a change that lasts is carried into
 * `L` by the observations that confirm it when the backend is tried again.
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
  /** State means: `L` and `d` of backend `a` at 2a and 2a + 1. */
  readonly #x: number[] = [];
  /** State covariance rows. A backend nothing is known about has zero rows and a NaN level. */
  readonly #p: number[][] = [];
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
      const li = level(i);
      this.#p[li]![li] = Math.min(MAX_VARIANCE, a.prior.sd ** 2 + (a.shared ? shared : 0));
      this.arms[i]!.fadeTo = Math.min(this.#p[li]![li]!, (FADE_DRIFT_SDS * a.driftSd) ** 2);
      setups.forEach((b, j) => {
        if (j !== i && a.shared && b.shared && b.prior !== null) this.#p[li]![level(j)] = shared;
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
      shared: setup.shared,
      cores: setup.cores ?? "one",
      noise: NOISE_PRIOR_SD ** 2,
      changeFloor: setup.driftSd ** 2,
      fadeTo: NOISE_PRIOR_SD ** 2,
      ownPriorVariance: setup.prior === null ? 0 : Math.min(MAX_VARIANCE, setup.prior.sd ** 2),
      last: NaN,
      observations: 0,
      counted: 0,
      held: NaN,
      recent: [],
      up: 0,
      down: 0,
      upRun: [],
      downRun: [],
      changes: 0,
      pending: 0,
      pendingMs: 0,
      priorMs: setup.prior?.ms ?? null,
      priorProvenance: setup.prior?.provenance ?? null,
    });
    this.#x.push(setup.prior === null ? NaN : Math.log(setup.prior.ms), 0);
    for (const row of this.#p) row.push(0, 0);
    const n = this.#x.length;
    this.#p.push(new Array<number>(n).fill(0), new Array<number>(n).fill(0));
    return k;
  }

  /** True when backend `i` has a mean: a prior or an observation. */
  isKnown(i: number): boolean {
    return !Number.isNaN(this.#x[level(i)]!);
  }

  /** Mean ln ms of backend `i` (NaN when nothing is known). */
  mean(i: number): number {
    let m = 0;
    for (const s of this.#terms(i)) m += this.#x[s]!;
    return m;
  }

  /** Variance of backend `i`'s mean ln ms. */
  variance(i: number): number {
    return this.#covariance(i, i);
  }

  /**
   * Folds one observation of backend `i` into the belief: change detection first (so a detected
   * change widens the belief before the update), then the clipped Kalman update, then `i`'s noise
   * estimate.
   *
   * @param i The backend observed.
   * @param x The observation, ln ms.
   * @returns Whether a change of level was detected.
   */
  observe(i: number, x: number): boolean {
    this.#observations++;
    this.#advance();
    const arm = this.arms[i]!;
    const cold = arm.observations === 0;
    arm.observations++;
    if (!this.isKnown(i)) {
      this.#x[level(i)] = x;
      this.#p[level(i)]![level(i)] = arm.noise;
      arm.last = x;
      arm.counted++;
      return false;
    }
    // A backend's first call in the bucket may pay what later calls do not (a JIT's first tier, a
    // pipeline's compile, pages touched for the first time). Slower than believed, it is held
    // until the backend's next call, and counted after it, as any later call is: counted at once,
    // a stalled first js call (60 ms against a 5.3 ms prior) raised the part the CPU backends
    // share, and with it wasm, which was never run to correct it (wasm stayed believed ×1.7
    // slower than it ran after 300 calls of wasm-mt), and js, believed at 28 ms, was never run
    // again either. Faster than believed, it is evidence at once: no one-time cost makes a call
    // faster.
    if (cold && x >= this.mean(i)) {
      arm.held = x;
      return false;
    }
    const held = arm.held;
    arm.held = NaN;
    const changed = this.#fold(i, x);
    return Number.isNaN(held) ? changed : this.#fold(i, held) || changed;
  }

  /** Counts observation `x` of known backend `i`: see {@linkcode BucketBelief.observe}. */
  #fold(i: number, x: number): boolean {
    const arm = this.arms[i]!;
    // A backend's first counted observation is what says how far off the report is for it (a tiny
    // kernel's single call can take 10× its batched median): taken whole when faster than
    // believed, clipped like any other when slower, since a stall only ever makes a call slower.
    const first = arm.counted === 0;
    arm.counted++;
    if (first) this.#conflict(i, x);
    const run = first ? null : this.#cusum(i, x);
    if (run !== null) {
      // Where the new level is: the run's mean, or the last calls' median when it is further (a
      // backend now jumping between two modes is believed at its slow one until it shows it is not,
      // so it is not retried at once).
      const runMean = run.reduce((sum, y) => sum + y, 0) / run.length;
      const towards = Math.sign(runMean - this.mean(i));
      const level = towards * Math.max(towards * runMean, towards * median(arm.recent));
      const jump = level - this.mean(i);
      this.#shock(i, jump ** 2);
      this.#update(i, jump, this.variance(i) + arm.noise / run.length);
      resetCusum(arm);
      arm.changes++;
    } else {
      const innovation = x - this.mean(i);
      const predictive = this.variance(i) + arm.noise;
      const limit = HUBER_C * Math.sqrt(predictive);
      this.#update(
        i,
        Math.max(first ? -Infinity : -limit, Math.min(limit, innovation)),
        predictive,
      );
      updateNoise(arm, x);
    }
    arm.last = x;
    return run !== null;
  }

  /**
   * One joint draw of the means of the backends `indices` (all known).
   *
   * @param indices Backends to draw.
   * @param normal A standard-normal generator.
   * @returns The drawn mean ln ms, in the order of `indices`.
   */
  sample(indices: readonly number[], normal: () => number): number[] {
    const lower = cholesky(indices.map((a) => indices.map((b) => this.#covariance(a, b))));
    const z = indices.map(() => normal());
    return indices.map((a, r) => {
      let x = this.mean(a);
      for (let c = 0; c <= r; c++) x += lower[r]![c]! * z[c]!;
      return x;
    });
  }

  /**
   * A prior contradicted: when backend `i`'s first counted observation `x` lies over `CONFLICT_SDS`
   * predictive sds from its prior (the report misdescribes this machine — another machine's
   * report, say), the backends not yet observed have their own prior variance scaled by
   * (z / `CONFLICT_SDS`)², since a report wrong about one backend here is likely wrong about the
   * others: the ranking it gave them stops keeping them from being drawn.
   */
  #conflict(i: number, x: number): void {
    const z2 = (x - this.mean(i)) ** 2 / (this.variance(i) + this.arms[i]!.noise);
    const widen = z2 / CONFLICT_SDS ** 2 - 1;
    if (!(widen > 0)) return;
    this.arms.forEach((other, j) => {
      if (j === i || other.counted > 0 || !this.isKnown(j)) return;
      const lj = level(j);
      this.#p[lj]![lj]! += widen * other.ownPriorVariance;
      this.#cap(lj);
      other.fadeTo = Math.max(other.fadeTo, this.#p[lj]![lj]!);
    });
  }

  /**
   * Adds observation `x` of backend `i` to its CUSUM sums (its z-score against the estimate and
   * one observation's predictive sd, clipped at `CUSUM_CLIP`, less `CUSUM_SLACK`).
   *
   * @returns The observations of the run that took a sum past `CUSUM_LIMIT`; null when none did.
   */
  #cusum(i: number, x: number): number[] | null {
    const arm = this.arms[i]!;
    const sd = Math.sqrt(this.variance(i) + arm.noise);
    const z = Math.max(-CUSUM_CLIP, Math.min(CUSUM_CLIP, (x - this.mean(i)) / sd));
    arm.up = Math.max(0, arm.up + z - CUSUM_SLACK);
    arm.down = Math.max(0, arm.down - z - CUSUM_SLACK);
    extendRun(arm.upRun, arm.up, x);
    extendRun(arm.downRun, arm.down, x);
    arm.recent.push(x);
    if (arm.recent.length > CHANGE_WINDOW) arm.recent.shift();
    const judged = arm.recent.length >= (CHANGE_WINDOW + 1) / 2;
    const moved = judged ? (median(arm.recent) - this.mean(i)) / sd : 0;
    if (arm.up > CUSUM_LIMIT || (moved > CHANGE_SDS && arm.up > CUSUM_CONFIRM)) {
      return [...arm.upRun];
    }
    // A stall only ever makes a call slower: a backend that got faster needs no confirmation
    // (and a false alarm is cheap, the backend believed faster being run and observed at once).
    if (arm.down > CUSUM_LIMIT || (moved < -CHANGE_SDS && arm.downRun.length > 0)) {
      return [...arm.downRun];
    }
    return null;
  }

  /** The state entries whose sum is backend `i`'s mean. */
  #terms(i: number): number[] {
    return [level(i), transient(i)];
  }

  #covariance(a: number, b: number): number {
    let c = 0;
    for (const u of this.#terms(a)) for (const v of this.#terms(b)) c += this.#p[u]![v]!;
    return c;
  }

  /**
   * One observation's worth of time: transients decay by `TRANSIENT_DECAY`, and every known
   * level forgets — process variance `forget · noise`, `SHARED_CHANGE` of it common to the shared
   * backends that run on as many cores.
   */
  #advance(): void {
    for (const t of this.arms.map((_, a) => transient(a))) {
      this.#x[t]! *= TRANSIENT_DECAY;
      for (let j = 0; j < this.#p.length; j++) {
        this.#p[t]![j]! *= TRANSIENT_DECAY;
        this.#p[j]![t]! *= TRANSIENT_DECAY;
      }
    }
    this.arms.forEach((arm, a) => this.isKnown(a) && this.#fade(level(a), arm.fadeTo));
    const zeros = () => new Array<number>(this.#x.length).fill(0);
    const own = zeros();
    const common = { one: zeros(), all: zeros() };
    this.arms.forEach((arm, a) => {
      if (!this.isKnown(a)) return;
      const q = this.#forget * Math.min(arm.noise, FORGET_NOISE_CAP ** 2);
      const shared = arm.shared ? SHARED_CHANGE : 0;
      common[arm.cores][level(a)] = Math.sqrt(shared * q);
      own[level(a)] = (1 - shared) * q;
    });
    this.#addChange(common.one, own);
    this.#addChange(common.all, zeros());
  }

  /**
   * A change on `i` of squared size `jump`: it is added as variance, so the next updates follow
   * it — `PERSISTENT_SHARE` of it to `i`'s level, the rest to its transient, so most of a burst
   * decays once it is over. Every other known backend's level is widened to at least its drift.
   */
  #shock(i: number, jump: number): void {
    const own = new Array<number>(this.#x.length).fill(0);
    own[level(i)] = PERSISTENT_SHARE * jump;
    own[transient(i)] = (1 - PERSISTENT_SHARE) * jump;
    this.arms.forEach((arm, j) => {
      if (j === i || !this.isKnown(j)) return;
      own[level(j)] = Math.max(0, arm.changeFloor - this.#p[level(j)]![level(j)]!);
    });
    this.#addChange(new Array<number>(this.#x.length).fill(0), own);
  }

  /**
   * Adds the covariance of a change, `common · commonᵀ + diag(own)` over the state. Adding a
   * covariance keeps the belief positive semi-definite.
   */
  #addChange(common: readonly number[], own: readonly number[]): void {
    common.forEach((x, a) => {
      const row = this.#p[a]!;
      if (x !== 0) common.forEach((y, b) => (row[b]! += x * y));
      row[a]! += own[a]!;
    });
    common.forEach((_, a) => this.#cap(a));
  }

  /**
   * Grows state `a`'s variance by `FADE`, up to `limit`, scaling its covariances alike (a
   * congruence, so the belief stays positive semi-definite).
   */
  #fade(a: number, limit: number): void {
    const v = this.#p[a]![a]!;
    if (!(v > 0 && v < limit)) return;
    const f = Math.sqrt(Math.min(FADE, limit / v));
    for (let b = 0; b < this.#p.length; b++) {
      this.#p[a]![b]! *= f;
      this.#p[b]![a]! *= f;
    }
  }

  /**
   * Caps state `a`'s variance at `MAX_VARIANCE`, scaling its covariances alike (a congruence,
   * so the belief stays positive semi-definite).
   */
  #cap(a: number): void {
    const v = this.#p[a]![a]!;
    if (v <= MAX_VARIANCE) return;
    const f = Math.sqrt(MAX_VARIANCE / v);
    for (let b = 0; b < this.#p.length; b++) {
      this.#p[a]![b]! *= f;
      this.#p[b]![a]! *= f;
    }
  }

  /** Kalman update on an observation of backend `i`: innovation `e`, predictive variance `s`. */
  #update(i: number, e: number, s: number): void {
    const terms = this.#terms(i);
    const column = this.#p.map((row) => terms.reduce((sum, t) => sum + row[t]!, 0));
    column.forEach((c, a) => {
      if (Number.isNaN(this.#x[a]!)) return;
      this.#x[a]! += (c / s) * e;
      const row = this.#p[a]!;
      column.forEach((d, b) => (row[b]! -= (c * d) / s));
    });
  }
}

/** State index of backend `a`'s level. */
function level(a: number): number {
  return 2 * a;
}

/** State index of backend `a`'s transient deviation. */
function transient(a: number): number {
  return 2 * a + 1;
}

/** Adds `x` to a CUSUM run while its sum is above 0; empties it when the sum is back at 0. */
function extendRun(run: number[], sum: number, x: number): void {
  if (sum === 0) {
    run.length = 0;
    return;
  }
  run.push(x);
  if (run.length > RUN_MAX) run.shift();
}

/** Starts an arm's change detection afresh, after a change. */
function resetCusum(arm: Arm): void {
  arm.up = 0;
  arm.down = 0;
  arm.upRun.length = 0;
  arm.downRun.length = 0;
  arm.recent.length = 0;
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
