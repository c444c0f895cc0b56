/**
 * Whether a model needs more than one device, and if so how to split it: every candidate plan
 * (one device, tensor parallel, pipeline parallel over 2…N devices) is costed with the measured
 * rates by {@linkcode estimateTokensPerSec}, checked against each device's memory, and one is
 * chosen with a sentence saying why.
 *
 * @module
 */
import type { Interconnect } from "./comm.ts";
import {
  ARGMAX_PAIR_BYTES,
  type DeviceRates,
  estimateTokensPerSec,
  MissingRateError,
  type TokensPerSecEstimate,
} from "./estimate.ts";
import {
  activationBytes,
  formatBytes,
  type KvDtype,
  type MemoryBreakdown,
  memoryBreakdown,
  positiveInteger,
  type Quant,
} from "./memory.ts";
import type { ModelSpec } from "./presets.ts";
import type { ParallelPlan, Strategy } from "./shards.ts";

export type { Interconnect };

/**
 * Options of {@linkcode planSharding}.
 *
 * @example
 * ```ts
 * import type { ShardingOptions } from "./sharding.ts";
 * const o: ShardingOptions = { context: 4096, batch: 1, objective: "fastest-decode" };
 * ```
 */
export interface ShardingOptions {
  /** Tokens per sequence the KV cache holds. */
  readonly context: number;
  /** Sequences decoded together. */
  readonly batch: number;
  /** Prompt length for the prefill estimate; `context` when absent. */
  readonly promptTokens?: number;
  /** KV cache element type; `defaultKvDtype(quant)` when absent. */
  readonly kvDtype?: KvDtype;
  /**
   * How to choose among plans that fit. `"fewest-devices"` (default): the fewest devices, then the
   * fastest decode — spare devices are better spent on more replicas than on a wider split.
   * `"fastest-decode"`: the highest decode tokens/s whatever the device count.
   */
  readonly objective?: "fewest-devices" | "fastest-decode";
}

/**
 * One costed plan.
 *
 * @example
 * ```ts
 * import type { ShardingCandidate } from "./sharding.ts";
 * const fast = (c: ShardingCandidate) => c.fits ? c.estimate?.decodeTokensPerSec ?? 0 : 0;
 * ```
 */
export interface ShardingCandidate {
  /** How the model is split. */
  readonly strategy: Strategy;
  /** Device names, in plan order. */
  readonly devices: readonly string[];
  /** The plan, ready for `estimateTokensPerSec(…, { plan })`. */
  readonly plan: ParallelPlan;
  /** Layers per device, in plan order (every layer on every device for tensor parallel). */
  readonly layers: readonly number[];
  /** Whether every device holds its share. */
  readonly fits: boolean;
  /** Why it does not fit or cannot be built; null when it fits. */
  readonly problem: string | null;
  /** Payload per decode step: the all-reduced buffers (tensor parallel) or the activations sent across stage boundaries (pipeline). */
  readonly commBytesPerToken: number;
  /** Communication time per decode step, ms. */
  readonly commMsPerToken: number;
  /** The estimate; null when the split itself is impossible (e.g. heads not divisible). */
  readonly estimate: TokensPerSecEstimate | null;
}

/**
 * The planner's answer.
 *
 * @example
 * ```ts
 * import type { ShardingPlan } from "./sharding.ts";
 * const say = (p: ShardingPlan) => `${p.chosen.strategy}: ${p.explanation}`;
 * ```
 */
export interface ShardingPlan {
  /** Model name. */
  readonly model: string;
  /** Weight quantisation. */
  readonly quant: Quant;
  /** Memory of the whole model on one device. */
  readonly memory: MemoryBreakdown;
  /** Every plan considered, one-device first. */
  readonly candidates: readonly ShardingCandidate[];
  /** The plan to use. */
  readonly chosen: ShardingCandidate;
  /** One sentence saying why. */
  readonly explanation: string;
}

/**
 * No plan fits: the model needs more memory than the devices have (together, or in any split).
 *
 * @example
 * ```ts
 * import { ShardingError } from "./sharding.ts";
 * const e = new ShardingError("Too big", 10e9, 8e9);
 * console.log(e instanceof RangeError, e.needBytes); // true 10000000000
 * ```
 */
export class ShardingError extends RangeError {
  /** Bytes the model needs on one device. */
  readonly needBytes: number;
  /** Bytes of all devices together. */
  readonly haveBytes: number;

  /**
   * @param message What does not fit.
   * @param needBytes Bytes the model needs.
   * @param haveBytes Bytes all devices have.
   */
  constructor(message: string, needBytes: number, haveBytes: number) {
    super(message);
    this.name = "ShardingError";
    this.needBytes = needBytes;
    this.haveBytes = haveBytes;
  }
}

/**
 * Builds the link two devices use when their only path is through the host: a readback on one
 * (its sync round trip, then its readback bandwidth) and an upload on the other. Bandwidth is
 * 1 / (1 / readback + 1 / upload), latency the sync round trip.
 *
 * @param rates The devices' rates (the same kind of device on both ends).
 * @returns The interconnect, its source naming the measured figures.
 * @throws {MissingRateError} when a host-link or sync figure has no value.
 * @example
 * ```ts
 * import { hostInterconnect } from "./sharding.ts";
 * import type { RateFigure } from "./estimate.ts";
 * const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });
 * const link = hostInterconnect({
 *   name: "llvmpipe", memoryBytes: 8e9, matmulGflops: {}, gemvGBps: {},
 *   perDispatchUs: fig(60, "us"), syncRoundTripMs: fig(11, "ms"),
 *   hostLinkGBps: { upload: fig(2, "GB/s"), readback: fig(2, "GB/s") },
 * });
 * console.log(link.gbps, link.latencyUs); // 1 11000
 * ```
 */
export function hostInterconnect(rates: DeviceRates): Interconnect {
  const value = (path: string, fig: { value: number | null; reason?: string }) => {
    if (fig.value === null || !(fig.value > 0)) {
      throw new MissingRateError(
        rates.name,
        path,
        `has no usable value (${fig.reason ?? fig.value})`,
      );
    }
    return fig.value;
  };
  const up = value("hostLinkGBps.upload", rates.hostLinkGBps.upload);
  const down = value("hostLinkGBps.readback", rates.hostLinkGBps.readback);
  const sync = value("syncRoundTripMs", rates.syncRoundTripMs);
  return {
    kind: "host",
    gbps: 1 / (1 / up + 1 / down),
    latencyUs: sync * 1000,
    source: `${rates.name} hostLinkGBps.readback ${down} GB/s then .upload ${up} GB/s, ` +
      `syncRoundTripMs ${sync} ms`,
  };
}

/** Splits layers over stages in proportion to device memory (largest remainder), at least one each. */
function splitLayers(layers: number, memories: readonly number[]): number[] {
  const total = memories.reduce((a, b) => a + b, 0);
  const spare = layers - memories.length;
  const exact = memories.map((m) => (spare * m) / total);
  const counts = exact.map((x) => 1 + Math.floor(x));
  let left = layers - counts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r);
  for (const { i } of order) {
    if (left === 0) break;
    counts[i]! += 1;
    left -= 1;
  }
  return counts;
}

function candidate(
  model: ModelSpec,
  quant: Quant,
  devices: readonly DeviceRates[],
  plan: ParallelPlan,
  opts: ShardingOptions,
): ShardingCandidate {
  const names = devices.map((d) => d.name);
  const actBytes = activationBytes(quant);
  const layers = plan.strategy === "pipeline-parallel"
    ? [...plan.layersPerStage]
    : devices.map(() => model.layers);
  const commBytesPerToken = plan.strategy === "tensor-parallel"
    ? 2 * model.layers * model.hidden * opts.batch * actBytes + opts.batch * ARGMAX_PAIR_BYTES
    : plan.strategy === "pipeline-parallel"
    ? (plan.layersPerStage.length - 1) * model.hidden * opts.batch * actBytes
    : 0;
  let estimate: TokensPerSecEstimate;
  try {
    estimate = estimateTokensPerSec(model, quant, devices, {
      context: opts.context,
      batch: opts.batch,
      plan,
      ...(opts.promptTokens !== undefined ? { promptTokens: opts.promptTokens } : {}),
      ...(opts.kvDtype !== undefined ? { kvDtype: opts.kvDtype } : {}),
    });
  } catch (e) {
    if (e instanceof MissingRateError || !(e instanceof RangeError)) throw e;
    return {
      strategy: plan.strategy,
      devices: names,
      plan,
      layers,
      fits: false,
      problem: e.message,
      commBytesPerToken,
      commMsPerToken: 0,
      estimate: null,
    };
  }
  const misfit = estimate.memory.find((m) => !m.fit.fits);
  return {
    strategy: plan.strategy,
    devices: names,
    plan,
    layers,
    fits: !misfit,
    problem: misfit ? `${misfit.device}: ${misfit.fit.message}` : null,
    commBytesPerToken,
    commMsPerToken: estimate.perTokenMs.commMs,
    estimate,
  };
}

function decodeRate(c: ShardingCandidate): number {
  return c.estimate?.decodeTokensPerSec ?? 0;
}

function tokS(c: ShardingCandidate): string {
  return `${decodeRate(c).toPrecision(3)} tokens/s`;
}

function explain(
  chosen: ShardingCandidate,
  candidates: readonly ShardingCandidate[],
  link: Interconnect,
  model: ModelSpec,
): string {
  const p = chosen.devices.length;
  const rival = candidates.find((c) =>
    c.devices.length === p && c.strategy !== chosen.strategy && c.strategy !== "none"
  );
  const linkText = `${link.gbps} GB/s ${link.kind} link`;
  if (chosen.strategy === "none") {
    const m = chosen.estimate?.memory[0];
    return `Fits on one device: no sharding needed (${chosen.devices[0]} holds ${
      formatBytes(m?.breakdown.totalBytes ?? 0)
    } of ${formatBytes(m?.fit.deviceBytes ?? 0)})`;
  }
  if (chosen.strategy === "tensor-parallel") {
    const versus = rival?.estimate
      ? `pipeline parallel's sequential stages (${tokS(chosen)} vs ${tokS(rival)})`
      : `pipeline parallel, which does not fit (${rival?.problem ?? "not considered"})`;
    return `Tensor parallel over ${p} devices: the ${linkText} makes two all-reduces per layer ` +
      `(${chosen.commMsPerToken.toPrecision(3)} ms per token) cheaper than ${versus}`;
  }
  if (!rival?.estimate) {
    return `Pipeline parallel over ${p} stages: tensor parallel over ${p} devices is not possible ` +
      `for "${model.name}" (${rival?.problem ?? `${model.heads} heads`})`;
  }
  return `Pipeline parallel over ${p} stages: on the ${linkText}, tensor parallel's ` +
    `${2 * model.layers + 1} all-reduces per token (${rival.commMsPerToken.toPrecision(3)} ms) ` +
    `cost more than splitting the weights saves (${tokS(chosen)} vs ${tokS(rival)})`;
}

/**
 * Plans how to run a model on a set of devices: on one device when it fits, otherwise tensor or
 * pipeline parallel over the fewest devices that hold it (largest devices first), choosing the
 * split with the higher estimated decode rate over the given interconnect.
 *
 * @param model The model.
 * @param quant The weight quantization.
 * @param devices Device kinds with their measured rates and how many of each there are.
 * @param interconnect The link between devices (see {@linkcode hostInterconnect} for host-only).
 * @param opts Context, batch, prompt length, KV dtype and objective.
 * @returns Every candidate, the chosen one, and why.
 * @throws {ShardingError} naming the sizes when the model does not fit all devices together, or
 *   no split fits.
 * @throws {MissingRateError} when a figure the estimate needs is missing.
 * @throws {RangeError} when context or batch is not a positive integer, or no devices are given.
 * @example
 * ```ts
 * import { planSharding } from "./sharding.ts";
 * import { getPreset } from "./presets.ts";
 * import type { RateFigure } from "./estimate.ts";
 * const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });
 * const rates = {
 *   name: "gpu16", memoryBytes: 16e9,
 *   matmulGflops: { f32: fig(20000, "GFLOP/s"), f16: fig(80000, "GFLOP/s") },
 *   gemvGBps: { f16: fig(800, "GB/s") },
 *   perDispatchUs: fig(5, "us"), syncRoundTripMs: fig(0.05, "ms"),
 *   hostLinkGBps: { upload: fig(25, "GB/s"), readback: fig(25, "GB/s") },
 * };
 * const plan = planSharding(getPreset("llama-3-8b"), "f16", [{ rates, count: 2 }],
 *   { kind: "nvlink", gbps: 300, latencyUs: 5 }, { context: 4096, batch: 1 });
 * console.log(plan.chosen.strategy); // "tensor-parallel"
 * ```
 */
export function planSharding(
  model: ModelSpec,
  quant: Quant,
  devices: ReadonlyArray<{ readonly rates: DeviceRates; readonly count: number }>,
  interconnect: Interconnect,
  opts: ShardingOptions,
): ShardingPlan {
  const memory = memoryBreakdown(model, quant, {
    context: opts.context,
    batch: opts.batch,
    ...(opts.kvDtype !== undefined ? { kvDtype: opts.kvDtype } : {}),
  });
  const pool = devices
    .flatMap((d) =>
      Array.from({ length: positiveInteger(`count of ${d.rates.name}`, d.count) }, () => d.rates)
    )
    .sort((a, b) => b.memoryBytes - a.memoryBytes);
  if (pool.length === 0) {
    throw new RangeError("No devices given; pass at least one { rates, count }");
  }
  const have = pool.reduce((a, d) => a + d.memoryBytes, 0);
  if (memory.weightsBytes + memory.kvCacheBytes > have) {
    throw new ShardingError(
      `Model "${model.name}" at ${quant} needs ${formatBytes(memory.totalBytes)} (weights ${
        formatBytes(memory.weightsBytes)
      } + KV cache ${formatBytes(memory.kvCacheBytes)} + activations ${
        formatBytes(memory.activationsBytes)
      }) but all ${pool.length} device(s) together have ${formatBytes(have)}; use a smaller ` +
        `quantization, context or batch, or more devices`,
      memory.totalBytes,
      have,
    );
  }

  const singles = [...new Set(pool)].map((d) =>
    candidate(model, quant, [d], { strategy: "none" }, opts)
  );
  const best = (list: ShardingCandidate[]) =>
    list.reduce((a, b) =>
      (Number(b.fits) - Number(a.fits) || decodeRate(b) - decodeRate(a)) > 0 ? b : a
    );
  const candidates: ShardingCandidate[] = [best(singles)];
  for (let p = 2; p <= pool.length; p++) {
    const group = pool.slice(0, p);
    candidates.push(
      candidate(model, quant, group, { strategy: "tensor-parallel", ways: p, interconnect }, opts),
    );
    if (p <= model.layers) {
      const layersPerStage = splitLayers(model.layers, group.map((d) => d.memoryBytes));
      candidates.push(
        candidate(model, quant, group, {
          strategy: "pipeline-parallel",
          layersPerStage,
          interconnect,
        }, opts),
      );
    }
  }

  const fitting = candidates.filter((c) => c.fits);
  if (fitting.length === 0) {
    const why = candidates.map((c) => `${c.strategy} × ${c.devices.length}: ${c.problem}`).join(
      "; ",
    );
    throw new ShardingError(
      `Model "${model.name}" at ${quant} (${
        formatBytes(memory.totalBytes)
      }) fits no split of the ` +
        `${pool.length} device(s) (${formatBytes(have)} together): ${why}`,
      memory.totalBytes,
      have,
    );
  }
  const fastest = opts.objective === "fastest-decode";
  const chosen = fitting.reduce((a, b) => {
    const fewer = a.devices.length - b.devices.length;
    if (!fastest && fewer !== 0) return fewer > 0 ? b : a;
    return decodeRate(b) > decodeRate(a) ? b : a;
  });
  return {
    model: model.name,
    quant,
    memory,
    candidates,
    chosen,
    explanation: explain(chosen, candidates, interconnect, model),
  };
}
