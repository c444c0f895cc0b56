/**
 * `AdaptiveSelector`: starts from a report's predictions and corrects them with the times the
 * application actually observes, exploring a bounded share of the time so a wrong prior is found
 * out.
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
  type Dtype,
  type OpSpec,
  type Residency,
  type Rng,
  type Shape,
} from "../kernels/types.ts";
import type { ProvenanceTag, Report } from "../reports/schema.ts";
import { indexReport, predictSeries } from "./_index.ts";

/** Defaults of {@linkcode AdaptiveOptions}, in one place. */
export const ADAPTIVE_DEFAULTS = {
  alpha: 0.2,
  epsilon: 0.1,
  explorationBudget: 0.15,
  maxBuckets: 1024,
  seed: 0x5eed,
} as const;

/**
 * Shortest duration believed, ms (1 ns): a zero reading from a coarse clock becomes this instead
 * of breaking the log-space average.
 */
export const MIN_OBSERVED_MS = 1e-6;

/**
 * Which workload a choice or an observation is about. Sizes fall in log2 buckets: shapes whose
 * size on the op's axis shares ⌊log2 size⌋ share estimates.
 *
 * @example
 * ```ts
 * import type { AdaptiveKey } from "./adaptive.ts";
 * const k: AdaptiveKey = { op: "matmul", shape: { m: 256, k: 256, n: 256 }, dtype: "f32" };
 * const custom: AdaptiveKey = { op: "my-kernel", size: 1 << 16 }; // ops outside the catalog
 * ```
 */
export interface AdaptiveKey {
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
 * const o: AdaptiveOptions = { backends: ["wasm", "webgpu"], epsilon: 0.05, seed: 7 };
 * ```
 */
export interface AdaptiveOptions {
  /** Backends to choose among; default: those the report predicts for the key, else all. */
  readonly backends?: readonly Backend[];
  /** Weight of a new observation in the exponentially weighted log-time average (0, 1]. */
  readonly alpha?: number;
  /** Probability of exploring when the budget allows, [0, 1]. */
  readonly epsilon?: number;
  /** Most explorations per bucket, as a fraction of its choices, [0, 1]. */
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
  readonly backend: Backend;
  /** Current estimate (geometric, exponentially weighted), ms; null when nothing is known. */
  readonly ms: number | null;
  /** Observations recorded. */
  readonly observations: number;
  /** The report's prediction the estimate started from, ms; null without one. */
  readonly priorMs: number | null;
  readonly priorProvenance: ProvenanceTag | null;
}

/**
 * The state of one bucket.
 *
 * @example
 * ```ts
 * import type { BucketEstimates } from "./adaptive.ts";
 * function best(b: BucketEstimates) { return b.arms[0]?.backend; }
 * ```
 */
export interface BucketEstimates {
  /** ⌊log2 size⌋. */
  readonly bucket: number;
  readonly choices: number;
  readonly explorations: number;
  /** Every backend, fastest estimate first (unknown last). */
  readonly arms: readonly ArmEstimate[];
}

interface Arm {
  readonly backend: Backend;
  /** ln ms; NaN when nothing is known. */
  logMs: number;
  observations: number;
  readonly priorMs: number | null;
  readonly priorProvenance: ProvenanceTag | null;
}

interface Bucket {
  readonly bucket: number;
  readonly arms: Arm[];
  choices: number;
  explorations: number;
}

/**
 * Chooses backends from a report's predictions and corrects them online.
 *
 * Per (op, log2 size bucket, dtype, residency) and backend it keeps an exponentially weighted
 * average of ln(observed ms), started from the report's prediction counted as one observation;
 * early observations are averaged (step 1/n) until the step reaches `alpha`, so a wrong prior is
 * forgotten quickly and later drift is tracked. Exploration is ε-greedy with a budget: with
 * probability `epsilon`, and only while a bucket's explorations stay under `explorationBudget` of
 * its choices, it tries the least-observed other backend (backends never observed and without a
 * prior first). Draws come from a seeded generator, so runs are reproducible. Memory is bounded: at
 * most `maxBuckets` buckets, least recently used dropped first.
 *
 * Concurrency: every method is synchronous and updates state without awaiting, so async callers
 * interleaving `choose()` → `await run()` → `record()` cannot tear an update; observations may
 * arrive in any order and need not follow their own `choose()`.
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
  readonly #alpha: number;
  readonly #epsilon: number;
  readonly #budget: number;
  readonly #maxBuckets: number;
  readonly #rng: Rng;
  readonly #buckets = new Map<string, Bucket>();

  /**
   * @param report The report whose predictions are the priors, or null to learn from scratch.
   * @param options Exploration, averaging, memory and seed.
   * @throws {RangeError} when an option is out of range.
   */
  constructor(report: Report | null, options: AdaptiveOptions = {}) {
    this.#report = report;
    if (options.backends !== undefined && options.backends.length === 0) {
      throw new RangeError(`Option "backends" is empty: pass at least one backend or omit it`);
    }
    this.#backends = options.backends ?? null;
    this.#alpha = inRange("alpha", options.alpha ?? ADAPTIVE_DEFAULTS.alpha, 1e-6, 1);
    this.#epsilon = inRange("epsilon", options.epsilon ?? ADAPTIVE_DEFAULTS.epsilon, 0, 1);
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
   * Chooses a backend for a workload: the best current estimate, or (within the exploration
   * budget) another backend to learn about.
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
    const bucket = this.#bucket(key);
    bucket.choices++;
    const greedy = bestArm(bucket.arms);
    const untried = bucket.arms.some((a) => Number.isNaN(a.logMs));
    // Beyond the budget, each backend nothing is known about may still be tried once.
    const mayExplore = bucket.arms.length > 1 &&
      (bucket.explorations + 1 <= this.#budget * bucket.choices ||
        (untried && bucket.explorations < bucket.arms.length));
    if (mayExplore && (untried || this.#rng() < this.#epsilon)) {
      const arm = this.#leastObserved(bucket.arms, greedy);
      bucket.explorations++;
      return { backend: arm.backend, explored: true, estimateMs: estimateOf(arm) };
    }
    return { backend: greedy.backend, explored: false, estimateMs: estimateOf(greedy) };
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
    const bucket = this.#bucket(key);
    let arm = bucket.arms.find((a) => a.backend === backend);
    if (arm === undefined) {
      arm = { backend, logMs: NaN, observations: 0, priorMs: null, priorProvenance: null };
      bucket.arms.push(arm);
    }
    const x = Math.log(Math.max(observedMs, MIN_OBSERVED_MS));
    if (Number.isNaN(arm.logMs)) arm.logMs = x;
    else {
      const seen = arm.observations + (arm.priorMs === null ? 0 : 1);
      arm.logMs += Math.max(this.#alpha, 1 / (seen + 1)) * (x - arm.logMs);
    }
    arm.observations++;
  }

  /**
   * The current estimates of a workload's bucket.
   *
   * @param key The workload.
   * @returns Every backend's estimate, fastest first.
   * @throws {RangeError} when the key has no size.
   * @example
   * ```ts ignore
   * console.log(adaptive.estimates({ op: "add", shape: { n: 256 } }).arms);
   * ```
   */
  estimates(key: AdaptiveKey): BucketEstimates {
    const bucket = this.#bucket(key);
    const arms = bucket.arms.map((a): ArmEstimate => ({
      backend: a.backend,
      ms: estimateOf(a),
      observations: a.observations,
      priorMs: a.priorMs,
      priorProvenance: a.priorProvenance,
    })).sort((a, b) => (a.ms ?? Infinity) - (b.ms ?? Infinity));
    return {
      bucket: bucket.bucket,
      choices: bucket.choices,
      explorations: bucket.explorations,
      arms,
    };
  }

  #leastObserved(arms: readonly Arm[], greedy: Arm): Arm {
    let fewest = Infinity;
    const candidates: Arm[] = [];
    for (const a of arms) {
      if (a === greedy) continue;
      const weight = a.observations + (Number.isNaN(a.logMs) ? -1 : 0);
      if (weight < fewest) {
        fewest = weight;
        candidates.length = 0;
      }
      if (weight === fewest) candidates.push(a);
    }
    return candidates[Math.floor(this.#rng() * candidates.length)] ?? greedy;
  }

  #bucket(key: AdaptiveKey): Bucket {
    const dtype = key.dtype ?? "f32";
    const residency = key.residency ?? "end-to-end";
    const op = catalogOp(key.op);
    const size = sizeOf(key, op);
    const b = Math.floor(Math.log2(Math.max(size, 1)));
    const id = `${key.op}|${dtype}|${residency}|${b}`;
    const found = this.#buckets.get(id);
    if (found !== undefined) {
      this.#buckets.delete(id);
      this.#buckets.set(id, found);
      return found;
    }
    const shape = key.shape ?? (op === null ? null : op.axis.shape(Math.round(2 ** (b + 0.5))));
    const bucket: Bucket = {
      bucket: b,
      arms: this.#priors(op, shape, size, dtype, residency),
      choices: 0,
      explorations: 0,
    };
    this.#buckets.set(id, bucket);
    if (this.#buckets.size > this.#maxBuckets) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
    }
    return bucket;
  }

  #priors(
    op: OpSpec | null,
    shape: Shape | null,
    size: number,
    dtype: Dtype,
    residency: Residency,
  ): Arm[] {
    const priors = new Map<Backend, { ms: number; provenance: ProvenanceTag }>();
    const table = op === null || this.#report === null
      ? null
      : indexReport(this.#report).table(op.name, dtype, residency);
    if (table !== null && shape !== null) {
      const flops = table.op.flops(shape);
      const bytes = table.op.bytes(shape, dtype);
      for (const s of table.series) {
        const p = predictSeries(s, table.op.dims, size, shape, flops, bytes, null);
        if (p !== null) priors.set(s.backend, { ms: p.ms, provenance: p.provenance });
      }
    }
    const backends = this.#backends ?? (priors.size > 0 ? [...priors.keys()] : BACKENDS);
    return backends.map((backend): Arm => {
      const prior = priors.get(backend);
      return {
        backend,
        logMs: prior === undefined ? NaN : Math.log(prior.ms),
        observations: 0,
        priorMs: prior?.ms ?? null,
        priorProvenance: prior?.provenance ?? null,
      };
    });
  }
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

function estimateOf(arm: Arm): number | null {
  return Number.isNaN(arm.logMs) ? null : Math.exp(arm.logMs);
}

/** The arm with the lowest estimate; the first arm when none has one. */
function bestArm(arms: readonly Arm[]): Arm {
  let best = arms[0]!;
  for (const a of arms) {
    if (!Number.isNaN(a.logMs) && (Number.isNaN(best.logMs) || a.logMs < best.logMs)) best = a;
  }
  return best;
}
