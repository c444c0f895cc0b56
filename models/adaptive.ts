/**
 * `AdaptiveSelector`: starts from a report's predictions and corrects them with the times the
 * application actually observes. It explores — runs a backend other than the one it believes
 * fastest — in proportion to that backend's chance of being the fastest, and only while the time
 * spent exploring stays under a stated share of the time spent, so exploring never costs more than
 * the budget the application granted it.
 *
 * @example
 * ```ts ignore
 * import { loadReport } from "../reports/load.ts";
 * import { AdaptiveSelector } from "./adaptive.ts";
 * const adaptive = new AdaptiveSelector(await loadReport("reports/latest.json"));
 * const key = { op: "add", shape: { n: 4096 }, dtype: "f32" } as const;
 * const { backend } = adaptive.choose(key);
 * const t0 = performance.now();
 * // ... run add on `backend` ...
 * adaptive.record(key, backend, performance.now() - t0);
 * ```
 *
 * @module
 */
import { seededRng } from "../kernels/_random.ts";
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  BACKENDS,
  CPU_BACKENDS,
  type Dtype,
  type OpSpec,
  type Residency,
  type Rng,
  type Shape,
} from "../kernels/types.ts";
import { median } from "../core/stats.ts";
import type { ProvenanceTag, Report } from "../core/schema.ts";
import {
  type ArmPrior,
  type ArmSetup,
  BucketBelief,
  forgetRate,
  NOISE_PRIOR_SD,
} from "./_adaptive_belief.ts";
import { predictTime } from "./predict.ts";
import { pooledRuns, typicalRunDrift } from "./_interval.ts";

/** Defaults of {@linkcode AdaptiveOptions}, in one place. */
export const ADAPTIVE_DEFAULTS = {
  alpha: 1 / 16,
  explorationBudget: 0.03,
  maxBuckets: 1024,
  seed: 0x5eed,
} as const;

/**
 * Shortest duration believed, ms (1 ns): a zero reading from a coarse clock becomes this instead
 * of breaking the log-space average.
 */
export const MIN_OBSERVED_MS = 1e-6;

/**
 * Sd of ln time by which a backend's speed drifts on a machine, when the report does not say
 * (its `stability.driftSigma`, the median over the runs it pools): it widens every prior, and a
 * backend's belief is widened to at least this when its bucket detects that the machine changed.
 */
export const DEFAULT_DRIFT_SD = 0.15;

/**
 * Sd of the prior error the CPU backends of a bucket share (they run on the same cores): this
 * machine, now, may run them uniformly faster or slower than the report says (another machine's
 * report, a loaded machine, single calls against batched medians) by about ×1.6 either way. The
 * first times observed on one of them move the others' estimates by that shared part.
 */
export const SHARED_PRIOR_SD = 0.5;

/**
 * Sd of ln time by which one backend's single call may sit from the report's batched median,
 * beyond the report's interval and drift and apart from what all backends share: per-call costs
 * the report's batches amortise (a worker hand-off, a promise, a cold cache) differ by backend and
 * can dominate a tiny kernel.
 */
export const CALL_PRIOR_SD = 0.5;

/**
 * Share of the budget an exploration earns from each ms recorded: the rest, a quarter of the
 * budget, pays for the allowance a span of calls may inherit from the calls before it (see
 * `CARRY_CALLS`).
 */
const EARN_SHARE = 0.75;
/**
 * Calls whose time bounds the allowance carried over: unused allowance is kept only up to the
 * budget's share of the time recorded over about the last this many calls (a sum that decays by
 * 1/1200 a call). So over any span of calls, exploring takes at most
 * `budget × (0.75 × the span's time + the time of the 1,200 calls before it)` — within the budget
 * whenever the span takes at least 4 times as long as the 1,200 calls before it (each half of
 * the bench's 10,000-call loop) — plus what an exploration took beyond the cost set aside for it
 * (a stall). A loop whose first half needed no exploring cannot spend its savings in the second,
 * and the carry still funds an exploration costing 10× a call of a workload that is a quarter
 * of the mix (finding the fastest backend of a report its first observations contradicted).
 */
const CARRY_CALLS = 1200;
/** Smallest drift sd used, whatever the report says (a 0 would freeze a prior). */
const MIN_DRIFT_SD = 0.05;
/**
 * Factor by which the budget's headroom for a stall shrinks with each exploration that does not
 * stall: a loaded machine stalls again soon, a quiet one gets its full budget back.
 */
const HEADROOM_DECAY = 0.9;
/** Standard-normal quantile of a two-sided 90 % interval: a report's prediction interval. */
const Z90 = 1.645;
/**
 * Explorations a workload may make on the budget of every workload before its own: the first ones
 * are what corrects a wrong prior, and a new workload has not yet run long enough to fund them.
 * After them a workload explores within its own share of the time, so cheap workloads exploring
 * often cannot take the slack a costly one needs (a 0.3 ms kernel's near-tie waited 1,155 calls
 * for one 1.25 ms exploration while 2 µs kernels explored).
 */
const OPENING_EXPLORATIONS = 2;

/**
 * Which workload a choice or an observation is about. Sizes fall in log2 buckets: shapes whose
 * every dimension shares its ⌊log2⌋ share estimates (softmax 512×1024 and 1024×1024 do not, though
 * their size on the op's axis, 1024 columns, is the same).
 *
 * @example
 * ```ts
 * import type { AdaptiveKey } from "./adaptive.ts";
 * const k: AdaptiveKey = { op: "matmul", shape: { m: 256, k: 256, n: 256 }, dtype: "f32" };
 * const custom: AdaptiveKey = { op: "my-kernel", size: 1 << 16 }; // ops outside the catalog
 * ```
 */
export interface AdaptiveKey {
  /** Op name; a catalog op or any other name. */
  readonly op: string;
  /** The shape; catalog ops give their size (and report priors) from it. */
  readonly shape?: Shape;
  /** The size, when there is no shape (ops outside the catalog). */
  readonly size?: number;
  /** `f32` when absent. */
  readonly dtype?: Dtype;
  /** `end-to-end` when absent. */
  readonly residency?: Residency;
}

/**
 * Options of {@linkcode AdaptiveSelector}.
 *
 * @example
 * ```ts
 * import type { AdaptiveOptions } from "./adaptive.ts";
 * const o: AdaptiveOptions = { backends: ["wasm", "webgpu"], explorationBudget: 0.02, seed: 7 };
 * ```
 */
export interface AdaptiveOptions {
  /** Backends to choose among; default: those the report predicts for the key, else all. */
  readonly backends?: readonly Backend[];
  /**
   * Weight of a new observation once a backend has been observed for a while (0, 1]: the rate at
   * which old observations are forgotten. A level shift is caught faster than this by change
   * detection.
   */
  readonly alpha?: number;
  /** @deprecated Ignored: exploration is Thompson sampling under `explorationBudget`. */
  readonly epsilon?: number;
  /**
   * Most time spent exploring, as a share of the time recorded, [0, 1]: an exploration is made
   * only when its cost (the upper end of one call's 90 % range around the backend's estimate)
   * fits in an allowance that earns three quarters of this share of every ms recorded and carries
   * over at most this share of about the last 1,200 calls' time — so any span of calls taking 4×
   * as long as the 1,200 before it explores within this share — and (after its first two
   * explorations) within this share of the workload's own time. An exploration that takes longer
   * (a stall during the call, an estimate far too low) can take it over by the excess; exploring
   * then waits until the allowance is back, with headroom kept for such an excess.
   */
  readonly explorationBudget?: number;
  /** Most buckets kept; the least recently used is dropped beyond it. */
  readonly maxBuckets?: number;
  /** Seed of the exploration draws (same seed, same calls → same choices). */
  readonly seed?: number;
}

/**
 * One choice.
 *
 * @example
 * ```ts
 * import type { AdaptiveChoice } from "./adaptive.ts";
 * function wasExploring(c: AdaptiveChoice) { return c.explored; }
 * ```
 */
export interface AdaptiveChoice {
  /** The backend chosen. */
  readonly backend: Backend;
  /** True when this is an exploration, not the current best estimate. */
  readonly explored: boolean;
  /** The chosen backend's current estimate, ms; null when nothing is known yet. */
  readonly estimateMs: number | null;
}

/**
 * What is known about one backend in one bucket.
 *
 * @example
 * ```ts
 * import type { ArmEstimate } from "./adaptive.ts";
 * function line(a: ArmEstimate) { return `${a.backend}: ${a.ms} ms after ${a.observations}`; }
 * ```
 */
export interface ArmEstimate {
  /** The backend. */
  readonly backend: Backend;
  /** Current estimate (the posterior median), ms; null when nothing is known. */
  readonly ms: number | null;
  /** Sd of ln(ms) of the estimate (0.1 is about ±10 %); null when nothing is known. */
  readonly logSd: number | null;
  /** Estimated sd of one observation's ln(ms) around the estimate. */
  readonly noiseLogSd: number;
  /** Observations recorded. */
  readonly observations: number;
  /** Changes of level detected in this backend's times. */
  readonly changes: number;
  /** The report's prediction the estimate started from, ms; null without one. */
  readonly priorMs: number | null;
  /** Provenance of `priorMs`; null without one. */
  readonly priorProvenance: ProvenanceTag | null;
}

/**
 * The state of one bucket.
 *
 * @example
 * ```ts
 * import type { BucketEstimates } from "./adaptive.ts";
 * function share(b: BucketEstimates) { return b.exploredMs / b.spentMs; }
 * ```
 */
export interface BucketEstimates {
  /** ⌊log2 size⌋. */
  readonly bucket: number;
  /** Choices made in the bucket. */
  readonly choices: number;
  /** How many of them were explorations. */
  readonly explorations: number;
  /** Time recorded, ms. */
  readonly spentMs: number;
  /** The part of it recorded for explorations, ms. */
  readonly exploredMs: number;
  /** Changes of level detected in the bucket (each widened every backend's belief). */
  readonly changes: number;
  /** Every backend, fastest estimate first (unknown last). */
  readonly arms: readonly ArmEstimate[];
}

/**
 * What {@linkcode AdaptiveSelector.exploration} reports.
 *
 * @example
 * ```ts
 * import type { ExplorationAccount } from "./adaptive.ts";
 * function within(a: ExplorationAccount) { return a.exploredMs <= a.budget * a.spentMs; }
 * ```
 */
export interface ExplorationAccount {
  /** The `explorationBudget`: most time spent exploring, as a share of the time recorded. */
  readonly budget: number;
  /** Time recorded over every workload, ms. */
  readonly spentMs: number;
  /** The part of it recorded for explorations, ms. */
  readonly exploredMs: number;
}

interface Bucket {
  readonly bucket: number;
  readonly belief: BucketBelief;
  choices: number;
  explorations: number;
  spentMs: number;
  exploredMs: number;
  /** Cost set aside for this bucket's explorations chosen but not yet recorded, ms. */
  reservedMs: number;
  changes: number;
  /**
   * Work of the shape the bucket's priors were taken at: its belief is of times at that work, and
   * a workload's times are scaled by its own work over this (see {@linkcode AdaptiveSelector}).
   */
  readonly referenceWork: number;
}

/**
 * Chooses backends from a report's predictions and corrects them online.
 *
 * Belief: per (op, log2 bucket of every dimension, dtype, residency), a joint Normal over the
 * backends' mean ln(time). The report's prediction is the prior: its mean, and an sd combining its
 * 90 % interval (ln(hi/lo) / 3.29), the report's measured drift of that backend and
 * {@linkcode CALL_PRIOR_SD},
 * with {@linkcode SHARED_PRIOR_SD} common to the CPU backends. Each observation updates it
 * (Normal–Normal, with an observation noise estimated from the observations, innovations clipped
 * so one stall moves it little); the belief widens a little with every call, so a backend observed
 * every call weighs a new observation by about `alpha` and old observations are forgotten, with
 * state of a fixed size. A change of level (another process took a core) is detected by a CUSUM
 * on each observation's clipped z-score, so stalls of up to 4 calls in a row are not taken for
 * one, nor a backend whose times jump between two modes for one that changed; the estimate then
 * jumps to the new level and the choice switches (within 15 observations of a step to a slower
 * level in the synthetic tests, 50 of a step to half the calls 2.2× slower). Most of a jump is
 * held as a transient that decays (half-life about 22 observations of the bucket), so a backend
 * left aside during a burst of load is retried once the burst would be over; a change that lasts
 * is confirmed when it is.
 *
 * Choice: the backend with the lowest estimate, unless a Thompson draw (a joint sample of the
 * means, the lowest wins) picks another — which happens with that backend's posterior probability
 * of being fastest — and the exploration fits the time budget: this exploration's cost (the upper
 * end of one call's 90 % range around the estimate), the cost set aside for explorations not yet
 * recorded and headroom for the latest overshoot an exploration has had must fit in the allowance
 * (`EARN_SHARE` of `explorationBudget` of every ms recorded, less the explorations' time, carried
 * over up to the budget of about the last `CARRY_CALLS` calls' time, so every long enough span
 * keeps within the budget); and after a workload's first two explorations, its own explorations
 * must also stay within that share of its own time, so workloads explore in proportion to the time
 * they take. A backend the report prices far slower with a confident
 * interval is therefore never drawn, a near-tie is explored until its posterior settles, and a
 * backend that would cost more than the budget holds is not considered until the budget allows
 * it. Backends without a prior or an observation are each tried once, beyond the budget, since nothing else can
 * rank them. Draws come from a seeded generator, so runs are reproducible. Memory is bounded: at
 * most `maxBuckets` buckets, least recently used dropped first.
 *
 * Concurrency: every method is synchronous and updates state without awaiting, so async callers
 * interleaving `choose()` → `await run()` → `record()` cannot tear an update; observations may
 * arrive in any order and need not follow their own `choose()`. An exploration's recorded time is
 * the next one recorded for its backend in its bucket.
 *
 * @example
 * ```ts ignore
 * const adaptive = new AdaptiveSelector(report, { seed: 1 });
 * const key = { op: "matmul", shape: { m: 128, k: 128, n: 128 } };
 * adaptive.record(key, "wasm", 0.042); // sub-100 µs durations are fine
 * console.log(adaptive.estimates(key).arms[0]);
 * ```
 */
export class AdaptiveSelector {
  readonly #report: Report | null;
  readonly #backends: readonly Backend[] | null;
  readonly #forget: number;
  readonly #budget: number;
  readonly #maxBuckets: number;
  readonly #rng: Rng;
  readonly #buckets = new Map<string, Bucket>();
  /**
   * The time budget, over every bucket: time recorded, the part recorded for explorations; the
   * allowance (`EARN_SHARE` of the budget of every ms recorded, less every exploration's time,
   * kept under the budget of the last `CARRY_CALLS` calls' time, `recentMs`); the cost set aside
   * for explorations chosen but not yet recorded, and headroom for a stall: the most the latest
   * explorations' recorded times exceeded what was set aside for them (shrunk by `HEADROOM_DECAY`
   * with each exploration since, and as the carried allowance with every call, so a stall long
   * ago cannot hold exploring shut), so one more such stall does not take exploring over its
   * share.
   */
  readonly #account = {
    spentMs: 0,
    exploredMs: 0,
    allowanceMs: 0,
    recentMs: 0,
    reservedMs: 0,
    headroomMs: 0,
  };

  /**
   * Creates a selector whose priors are the report's predictions.
   *
   * @param report The report whose predictions are the priors, or null to learn from scratch.
   * @param options Forgetting, exploration budget, memory and seed.
   * @throws {RangeError} when an option is out of range.
   */
  constructor(report: Report | null, options: AdaptiveOptions = {}) {
    this.#report = report === null ? null : withoutRunToRunSpread(report);
    if (options.backends !== undefined && options.backends.length === 0) {
      throw new RangeError(`Option "backends" is empty: pass at least one backend or omit it`);
    }
    this.#backends = options.backends ?? null;
    const alpha = inRange("alpha", options.alpha ?? ADAPTIVE_DEFAULTS.alpha, 1e-6, 1);
    this.#forget = forgetRate(alpha);
    if (options.epsilon !== undefined) inRange("epsilon", options.epsilon, 0, 1);
    this.#budget = inRange(
      "explorationBudget",
      options.explorationBudget ?? ADAPTIVE_DEFAULTS.explorationBudget,
      0,
      1,
    );
    const max = options.maxBuckets ?? ADAPTIVE_DEFAULTS.maxBuckets;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`Cannot keep ${max} buckets: "maxBuckets" must be an integer ≥ 1`);
    }
    this.#maxBuckets = max;
    this.#rng = seededRng(options.seed ?? ADAPTIVE_DEFAULTS.seed);
  }

  /** Buckets currently kept. */
  get size(): number {
    return this.#buckets.size;
  }

  /**
   * The exploration budget's account over every workload recorded (evicted buckets included).
   *
   * @returns The budget share, the time recorded and the part of it recorded for explorations, ms.
   * @example
   * ```ts ignore
   * const { budget, spentMs, exploredMs } = adaptive.exploration();
   * console.log(`${(100 * exploredMs / spentMs).toFixed(1)} % exploring (budget ${100 * budget} %)`);
   * ```
   */
  exploration(): ExplorationAccount {
    return {
      budget: this.#budget,
      spentMs: this.#account.spentMs,
      exploredMs: this.#account.exploredMs,
    };
  }

  /**
   * Chooses a backend for a workload: the best current estimate, or (with its probability of
   * being fastest, and within the time budget) another backend to learn about.
   *
   * @param key The workload.
   * @returns The backend, whether it is an exploration, and its estimate.
   * @throws {RangeError} when the key has neither a shape of a catalog op nor a size.
   * @example
   * ```ts ignore
   * const { backend, explored } = adaptive.choose({ op: "add", shape: { n: 1 << 20 } });
   * ```
   */
  choose(key: AdaptiveKey): AdaptiveChoice {
    const { bucket, scale } = this.#bucket(key);
    bucket.choices++;
    const belief = bucket.belief;
    const greedy = bestArm(belief);
    const untried = this.#untried(belief);
    if (untried !== null) {
      if (greedy === null) return this.#exploit(belief, untried, scale);
      return this.#explore(bucket, untried, 0, scale);
    }
    if (greedy === null) return this.#exploit(belief, 0, scale);
    const drawn = this.#draw(bucket, greedy, scale);
    if (drawn !== null) return this.#explore(bucket, drawn.arm, drawn.costMs, scale);
    return this.#exploit(belief, greedy, scale);
  }

  /**
   * Records an observed duration of a workload on a backend.
   *
   * @param key The workload.
   * @param backend The backend it ran on (added to the bucket if new).
   * @param observedMs Its duration, ms; any finite value ≥ 0 (zero readings count as 1 ns).
   * @throws {RangeError} when the duration is negative or not finite, or the key has no size.
   * @example
   * ```ts ignore
   * adaptive.record({ op: "add", shape: { n: 256 } }, "js", 0.003);
   * ```
   */
  record(key: AdaptiveKey, backend: Backend, observedMs: number): void {
    if (!Number.isFinite(observedMs) || observedMs < 0) {
      throw new RangeError(
        `Cannot record a duration of ${observedMs} ms: pass a finite number of ms ≥ 0`,
      );
    }
    const { bucket, scale } = this.#bucket(key);
    const belief = bucket.belief;
    let i = belief.arms.findIndex((a) => a.backend === backend);
    if (i < 0) {
      i = belief.add({ backend, prior: null, driftSd: this.#driftSd(backend), shared: false });
    }
    const arm = belief.arms[i]!;
    const account = this.#account;
    bucket.spentMs += observedMs;
    account.spentMs += observedMs;
    account.recentMs = account.recentMs * (1 - 1 / CARRY_CALLS) + observedMs;
    account.headroomMs *= 1 - 1 / CARRY_CALLS;
    account.allowanceMs += EARN_SHARE * this.#budget * observedMs;
    if (arm.pending > 0) {
      const reserved = arm.pendingMs / arm.pending;
      arm.pending--;
      arm.pendingMs -= reserved;
      account.reservedMs = Math.max(0, account.reservedMs - reserved);
      bucket.reservedMs = Math.max(0, bucket.reservedMs - reserved);
      account.headroomMs = Math.max(observedMs - reserved, HEADROOM_DECAY * account.headroomMs);
      bucket.exploredMs += observedMs;
      account.exploredMs += observedMs;
      account.allowanceMs -= observedMs;
    }
    account.allowanceMs = Math.min(account.allowanceMs, this.#budget * account.recentMs);
    const x = Math.log(Math.max(observedMs, MIN_OBSERVED_MS) / scale);
    if (belief.observe(i, x)) bucket.changes++;
  }

  /**
   * The current estimates of a workload's bucket.
   *
   * @param key The workload.
   * @returns Every backend's estimate, fastest first, and the bucket's time accounts.
   * @throws {RangeError} when the key has no size.
   * @example
   * ```ts ignore
   * const b = adaptive.estimates({ op: "add", shape: { n: 256 } });
   * console.log(b.arms[0]?.backend, b.exploredMs / b.spentMs);
   * ```
   */
  estimates(key: AdaptiveKey): BucketEstimates {
    const { bucket, scale } = this.#bucket(key);
    const belief = bucket.belief;
    const arms = belief.arms.map((a, i): ArmEstimate => {
      const known = belief.isKnown(i);
      return {
        backend: a.backend,
        ms: known ? Math.exp(belief.mean(i)) * scale : null,
        logSd: known ? Math.sqrt(belief.variance(i)) : null,
        noiseLogSd: Math.sqrt(a.noise),
        observations: a.observations,
        changes: a.changes,
        priorMs: a.priorMs,
        priorProvenance: a.priorProvenance,
      };
    }).sort((a, b) => (a.ms ?? Infinity) - (b.ms ?? Infinity));
    return {
      bucket: bucket.bucket,
      choices: bucket.choices,
      explorations: bucket.explorations,
      spentMs: bucket.spentMs,
      exploredMs: bucket.exploredMs,
      changes: bucket.changes,
      arms,
    };
  }

  #exploit(belief: BucketBelief, i: number, scale: number): AdaptiveChoice {
    const known = belief.isKnown(i);
    return {
      backend: belief.arms[i]!.backend,
      explored: false,
      estimateMs: known ? Math.exp(belief.mean(i)) * scale : null,
    };
  }

  /** An exploration of backend `i`, with `costMs` set aside until its time is recorded. */
  #explore(bucket: Bucket, i: number, costMs: number, scale: number): AdaptiveChoice {
    const arm = bucket.belief.arms[i]!;
    bucket.explorations++;
    this.#account.reservedMs += costMs;
    bucket.reservedMs += costMs;
    arm.pending++;
    arm.pendingMs += costMs;
    return { ...this.#exploit(bucket.belief, i, scale), explored: true };
  }

  /** A backend nothing is known about and none is on its way for, chosen at random; else null. */
  #untried(belief: BucketBelief): number | null {
    const waiting: number[] = [];
    belief.arms.forEach((a, i) => {
      if (!belief.isKnown(i) && a.pending === 0) waiting.push(i);
    });
    return waiting.length === 0 ? null : waiting[Math.floor(this.#rng() * waiting.length)]!;
  }

  /**
   * One Thompson draw (a joint sample of the means; the lowest wins) among the greedy backend and
   * the others the budget can afford now: the winner when it is not the greedy one, with the cost
   * to set aside for it; else null. Nothing is drawn when no other backend is affordable, so the
   * generator only moves when it matters.
   */
  #draw(bucket: Bucket, greedy: number, scale: number): { arm: number; costMs: number } | null {
    const belief = bucket.belief;
    const candidates = [greedy];
    const costs = [0];
    belief.arms.forEach((_, i) => {
      if (i === greedy || !belief.isKnown(i)) return;
      const costMs = this.#costMs(belief, i) * scale;
      if (!this.#fits(bucket, costMs)) return;
      candidates.push(i);
      costs.push(costMs);
    });
    if (candidates.length === 1) return null;
    const draws = belief.sample(candidates, () => this.#normal());
    let winner = 0;
    draws.forEach((d, k) => {
      if (d < draws[winner]!) winner = k;
    });
    return winner === 0 ? null : { arm: candidates[winner]!, costMs: costs[winner]! };
  }

  /** The upper end of one call's 90 % range around backend `i`'s estimate at the bucket's work, ms. */
  #costMs(belief: BucketBelief, i: number): number {
    // One call's spread around the estimate, not the estimate's own uncertainty: that would price
    // exactly the backends worth learning about out of the budget (a wrong guess is paid for by
    // the headroom, and exploring waits until it is). A first call held as maybe cold is what the
    // next may cost again: a backend 50× slower than its prior is not tried a second time at the
    // prior's price.
    const arm = belief.arms[i]!;
    const seen = arm.recent.length > 0 ? [median(arm.recent)] : [];
    if (!Number.isNaN(arm.held)) seen.push(arm.held);
    return Math.exp(Math.max(belief.mean(i) + Z90 * Math.sqrt(arm.noise), ...seen));
  }

  /**
   * Whether an exploration of `bucket` costing `costMs` keeps the exploring within its budget: over
   * every workload, the allowance must hold it, what is set aside and headroom for a stall; and,
   * once the bucket has made its `OPENING_EXPLORATIONS`, within its own share of its own time.
   */
  #fits(bucket: Bucket, costMs: number): boolean {
    const a = this.#account;
    const all = a.reservedMs + a.headroomMs + costMs <= a.allowanceMs;
    if (!all || bucket.explorations < OPENING_EXPLORATIONS) return all;
    return bucket.exploredMs + bucket.reservedMs + costMs <=
      this.#budget * (bucket.spentMs + bucket.reservedMs + costMs);
  }

  /** A standard-normal draw (Box–Muller; 1 − u keeps the logarithm finite). */
  #normal(): number {
    const u = 1 - this.#rng();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.#rng());
  }

  #driftSd(backend: Backend): number {
    const stability = this.#report?.stability;
    const recorded = stability?.driftSigma[backend] === undefined
      ? undefined
      : typicalRunDrift(stability, backend, pooledRuns(this.#report!));
    return Math.max(MIN_DRIFT_SD, recorded ?? DEFAULT_DRIFT_SD);
  }

  /** The key's bucket, created on first use, and the key's work over the bucket's (`scaleOf`). */
  #bucket(key: AdaptiveKey): { bucket: Bucket; scale: number } {
    const dtype = key.dtype ?? "f32";
    const residency = key.residency ?? "end-to-end";
    const op = catalogOp(key.op);
    const size = sizeOf(key, op);
    const b = log2Bucket(size);
    const dims = Object.entries(key.shape ?? {}).map(([d, x]) => `${d}${log2Bucket(x)}`).sort();
    const id = `${key.op}|${dtype}|${residency}|${b}|${dims.join(",")}`;
    const found = this.#buckets.get(id);
    if (found !== undefined) {
      this.#buckets.delete(id);
      this.#buckets.set(id, found);
      return { bucket: found, scale: scaleOf(found, key, op, size) };
    }
    const shape = key.shape ?? (op === null ? null : op.axis.shape(Math.round(2 ** (b + 0.5))));
    const priors = op === null || shape === null
      ? new Map<Backend, ArmPrior>()
      : this.#priors(op, shape, dtype, residency);
    const backends = this.#backends ?? (priors.size > 0 ? [...priors.keys()] : BACKENDS);
    const setups = backends.map((backend): ArmSetup => ({
      backend,
      prior: priors.get(backend) ?? null,
      driftSd: this.#driftSd(backend),
      shared: CPU_BACKENDS.includes(backend),
      cores: backend === "wasm-mt" ? "all" : "one",
    }));
    const bucket: Bucket = {
      bucket: b,
      belief: new BucketBelief(setups, SHARED_PRIOR_SD, this.#forget),
      choices: 0,
      explorations: 0,
      spentMs: 0,
      exploredMs: 0,
      reservedMs: 0,
      changes: 0,
      referenceWork: workOf(key, op, shape, size),
    };
    this.#buckets.set(id, bucket);
    if (this.#buckets.size > this.#maxBuckets) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
    }
    return { bucket, scale: scaleOf(bucket, key, op, size) };
  }

  /**
   * The report's prediction of every backend it covers at this shape, as priors: the sd of a
   * prediction combines its interval's (read as a 90 % interval) with the backend's drift.
   */
  #priors(op: OpSpec, shape: Shape, dtype: Dtype, residency: Residency): Map<Backend, ArmPrior> {
    const priors = new Map<Backend, ArmPrior>();
    if (this.#report === null) return priors;
    for (const backend of BACKENDS) {
      let p;
      try {
        p = predictTime(this.#report, { op: op.name, shape, dtype, backend, residency });
      } catch (e) {
        if (e instanceof RangeError) continue;
        throw e;
      }
      if (!(p.ms > 0)) continue;
      const sd = Math.hypot(intervalSd(p.ms, p.interval), this.#driftSd(backend), CALL_PRIOR_SD);
      priors.set(backend, { ms: p.ms, sd, provenance: p.provenance });
    }
    return priors;
  }
}

/**
 * The report as the priors read it: with no spread between whole runs of the machine
 * (`stability.betweenRunSigma` zero for every backend, so `predictTime` assumes none either),
 * which widens every prediction's interval and which `SHARED_PRIOR_SD` already carries for the
 * CPU backends together; counted in each backend's own prior too, it would let one backend's
 * observations move the others less than they should. A report without a stability section has
 * nothing to set to zero: its predictions keep the spread `predictTime` assumes.
 */
function withoutRunToRunSpread(report: Report): Report {
  if (report.stability === undefined) return report;
  const none = Object.fromEntries(BACKENDS.map((b) => [b, 0]));
  return { ...report, stability: { ...report.stability, betweenRunSigma: none } };
}

/**
 * Sd of ln time of a prediction whose 90 % interval is `[lo, hi]`: ln(hi / lo) / (2 · 1.645), or
 * from the upper half alone when the lower end is 0; the observation-noise prior when the interval
 * says nothing.
 */
function intervalSd(ms: number, [lo, hi]: readonly [number, number]): number {
  const sd = lo > 0 ? Math.log(hi / lo) / (2 * Z90) : Math.log(hi / ms) / Z90;
  return Number.isFinite(sd) && sd >= 0 ? sd : NOISE_PRIOR_SD;
}

function inRange(name: string, value: number, lo: number, hi: number): number {
  if (!(value >= lo && value <= hi)) {
    throw new RangeError(`Option "${name}" is ${value}: pass a number in [${lo}, ${hi}]`);
  }
  return value;
}

function catalogOp(name: string): OpSpec | null {
  try {
    return getOp(name);
  } catch {
    return null;
  }
}

function sizeOf(key: AdaptiveKey, op: OpSpec | null): number {
  if (key.size !== undefined) {
    if (!Number.isFinite(key.size) || key.size < 0) {
      throw new RangeError(`Key size is ${key.size}: pass a finite size ≥ 0`);
    }
    return key.size;
  }
  if (op !== null && key.shape !== undefined) return op.axis.size(key.shape);
  throw new RangeError(
    `Key of op "${key.op}" has no size: pass "shape" for a catalog op or "size" for any op`,
  );
}

/**
 * A workload's work over its bucket's reference work: shapes that share a bucket share one belief
 * of times at the reference, each observation divided by this and each estimate multiplied by it.
 * Raw times mixed gemv 1500² and 2000² (×1.8 apart) and matmul 128³ and 224³ (×5.4) into one
 * estimate, whose spread hid the change a core taken makes: replayed, the selector switched those
 * gemvs to wasm 1700 calls after the drift.
 */
function scaleOf(bucket: Bucket, key: AdaptiveKey, op: OpSpec | null, size: number): number {
  const shape = key.shape ?? (op === null ? null : op.axis.shape(size));
  const ratio = workOf(key, op, shape, size) / bucket.referenceWork;
  return Number.isFinite(ratio) && ratio > 0 ? ratio : 1;
}

/**
 * How much work a workload is, for scaling times within a bucket: the op's flops at its shape (its
 * bytes when it has none), else its size.
 */
function workOf(key: AdaptiveKey, op: OpSpec | null, shape: Shape | null, size: number): number {
  if (op === null || shape === null) return Math.max(size, 1);
  const flops = op.flops(shape);
  return flops > 0 ? flops : Math.max(op.bytes(shape, key.dtype ?? "f32"), 1);
}

/** ⌊log2 x⌋ of a size (0 for sizes below 2). */
function log2Bucket(x: number): number {
  return Math.floor(Math.log2(Math.max(x, 1)));
}

/** The known backend with the lowest estimate; null when none is known. */
function bestArm(belief: BucketBelief): number | null {
  let best: number | null = null;
  belief.arms.forEach((_, i) => {
    if (belief.isKnown(i) && (best === null || belief.mean(i) < belief.mean(best))) best = i;
  });
  return best;
}
