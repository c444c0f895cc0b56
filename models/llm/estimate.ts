/**
 * Tokens per second of an LLM from measured device rates: the decode step kernel by kernel from
 * the device's cost models (or, without them, a roofline of gemv bandwidth and per-dispatch
 * cost), matmul throughput and the synchronisation round trip. Every term is a kernel at a shape
 * that follows from the architecture, or bytes or FLOPs divided by a measured rate; there are no
 * fudge factors, and every term names the figure it came from.
 *
 * Decode, one step (one token for each of `batch` sequences, at position `context`, the slowest
 * step of a full context), per kernel when the device rates carry cost models
 * ({@linkcode DeviceRates.kernelTime}, as `ratesFromReport` gives for WebGPU):
 *
 * - every launch of the step ({@linkcode KERNELS_PER_LAYER} × layers + {@linkcode MODEL_KERNELS},
 *   from `decode_kernels.ts`, the list the synthetic decode launches) is predicted at its own
 *   shape and dtype from the report's cost model of its catalog op, or of the catalog op that
 *   stands in for it (named in the sources); the projections sum to `weightsStreamMs`, the
 *   attention reads of the KV cache to `kvReadMs`, the rest to `dispatchMs`;
 * - without cost models (hand-made rates, CPU backends) a roofline instead: weights streamed at
 *   the gemv bandwidth, the KV cache at the gemv bandwidth of its dtype, and kernels per step ×
 *   the per-dispatch cost;
 * - the weight pass takes at least 2 × params × batch FLOPs at the matmul rate (except per kernel
 *   at batch 1, where each projection's cost model is its whole time);
 * - per kernel, the kernels' sum × the device's `chainFactor` (a step's kernels chained in decode
 *   order against each timed alone, measured by the report's step probe; 1 without one);
 * - sync: one round trip per step, plus the token ids up and down the host link; with the step
 *   probe's `stepHost`, its intercept is the round trip and each launch adds its slope;
 * - comm (sharded plans): see `comm.ts` and `shards.ts`.
 *
 * Prefill: 2 × streamed params × prompt tokens × batch FLOPs plus causal attention
 * (2 × headDim × n(n + 1) per head and layer) at the matmul rate, plus kernels × the
 * per-dispatch cost and the sync once for the whole prompt. Pipeline stages are not overlapped (no micro-batching).
 *
 * @module
 */
import { formatNumber } from "../../core/format.ts";
import type { Dtype, Shape } from "../../kernels/types.ts";
import { allReduceMs, describeLink, sendMs } from "./comm.ts";
import {
  type DecodeKernel,
  kernelDims,
  KERNELS_PER_LAYER,
  type KernelWork,
  MODEL_KERNELS,
} from "./decode_kernels.ts";
import {
  activationBytes,
  BYTES_PER_WEIGHT,
  defaultKvDtype,
  type FitCheck,
  fitCheck,
  KV_READ_DTYPE,
  kvCacheBytes,
  type KvDtype,
  type MemoryBreakdown,
  positiveInteger,
  type Quant,
  WEIGHT_DTYPE,
} from "./memory.ts";
import { DECODE_INTERVAL_LEVEL, kernelSumBand } from "./interval.ts";
import type { ModelSpec } from "./presets.ts";
import {
  type ParallelPlan,
  shardMemory,
  type ShardSlice,
  shardSlices,
  type Strategy,
} from "./shards.ts";
import type { Figure, ProvenanceTag as Provenance } from "../../core/schema.ts";

export { KERNELS_PER_LAYER, MODEL_KERNELS };

const PROVENANCE_ORDER: readonly Provenance[] = ["measured", "fitted", "extrapolated", "borrowed"];

/**
 * A rate with its provenance: a report's {@linkcode Figure}, read-only, so report figures pass
 * straight in.
 *
 * @example
 * ```ts
 * import type { RateFigure } from "./estimate.ts";
 * const f: RateFigure = { value: 9.5, unit: "GB/s", tag: "measured", source: "gemv q4 webgpu k=4096" };
 * ```
 */
export type RateFigure = Readonly<Figure>;

/**
 * What one device was measured to do, the estimates' only input about hardware.
 *
 * @example
 * ```ts
 * import type { DeviceRates, RateFigure } from "./estimate.ts";
 * const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });
 * const rates: DeviceRates = {
 *   name: "llvmpipe",
 *   memoryBytes: 8e9,
 *   matmulGflops: { f32: fig(40, "GFLOP/s") },
 *   gemvGBps: { f32: fig(6, "GB/s"), q4: fig(3, "GB/s") },
 *   perDispatchUs: fig(60, "us"),
 *   syncRoundTripMs: fig(11, "ms"),
 *   hostLinkGBps: { upload: fig(2, "GB/s"), readback: fig(1.5, "GB/s") },
 * };
 * ```
 */
export interface DeviceRates {
  /** Device name, for sources and plans. */
  readonly name: string;
  /** Memory the device can give the model, bytes. */
  readonly memoryBytes: number;
  /** Device-resident matmul throughput per operand dtype, GFLOP/s. */
  readonly matmulGflops: Readonly<{ f32?: RateFigure; f16?: RateFigure }>;
  /** Device-resident gemv (matrix · vector) bandwidth per weight dtype, GB/s. */
  readonly gemvGBps: Readonly<Partial<Record<Dtype, RateFigure>>>;
  /** Cost of one more dispatch inside a submit, µs. */
  readonly perDispatchUs: RateFigure;
  /** Submit-and-wait round trip, ms. */
  readonly syncRoundTripMs: RateFigure;
  /**
   * Host time to record one dispatch into the step's pass, µs: priced for the kernels whose
   * times are GPU time alone ({@linkcode KernelTime.gpuOnly}); wall-clock times hold it already.
   */
  readonly encodePerDispatchUs?: RateFigure;
  /** Host ↔ device copy bandwidth, GB/s. */
  readonly hostLinkGBps: Readonly<{ upload: RateFigure; readback: RateFigure }>;
  /**
   * GPU time of a step's kernels chained in decode order over the same kernels run one kernel
   * at a time, as cost models time them (×; the report's step probe): the per-kernel estimate's
   * kernel terms are multiplied by it. Without it they are summed as timed.
   */
  readonly chainFactor?: RateFigure;
  /**
   * The host's part of a synchronised step (the report's step probe): `fixedMs` is the step's
   * round trip in place of `syncRoundTripMs`, and every launch adds `perDispatchUs` (its
   * recording included, so `encodePerDispatchUs` is not charged as well).
   */
  readonly stepHost?: Readonly<{ fixedMs: RateFigure; perDispatchUs: RateFigure }>;
  /**
   * Predicts one kernel launch from the device's fitted cost models; when present the decode is
   * estimated kernel by kernel, otherwise by the roofline of the rates above.
   */
  readonly kernelTime?: KernelTimeModel;
}

/**
 * One launch to predict: a catalog op at a shape and dtype.
 *
 * @example
 * ```ts
 * import type { KernelTimeRequest } from "./estimate.ts";
 * const r: KernelTimeRequest = { op: "gemv", shape: { rows: 512, cols: 512 }, dtype: "q4" };
 * ```
 */
export interface KernelTimeRequest {
  /** Catalog op. */
  readonly op: string;
  /**
   * The kernel's own shape. Predictions learn how a shape's proportions change its time from the
   * off-axis shapes a calibration measures (a gemv with rows ≠ cols), so a rectangular projection
   * is priced as itself, not as the square of equal area.
   */
  readonly shape: Shape;
  /** Element type of the operand that sets it. */
  readonly dtype: Dtype;
}

/**
 * A predicted launch time with where it came from.
 *
 * @example
 * ```ts
 * import type { KernelTime } from "./estimate.ts";
 * const t: KernelTime = {
 *   ms: 1.6, interval: [1.2, 2.1], tag: "fitted", variant: "rpw=4,tpr=32", source: "cost model",
 * };
 * ```
 */
export interface KernelTime {
  /** Milliseconds per launch. */
  readonly ms: number;
  /** Where the true time should lie. */
  readonly interval: readonly [number, number];
  /** The probability the interval is stated for; 0.9 when absent. */
  readonly level?: number;
  /**
   * The part of the interval's width every launch on the device shares (the machine's run-to-run
   * drift), σ of ln time; absent, the whole width is taken as shared.
   */
  readonly driftSigma?: number;
  /** Where the time came from. */
  readonly tag: Provenance;
  /** The kernel variant predicted (the one a decode should run). */
  readonly variant: string;
  /** How it was obtained, for people. */
  readonly source: string;
  /**
   * True when `ms` is GPU time alone (timestamps), without the host's recording of the launch,
   * which the estimate then adds from `encodePerDispatchUs`.
   */
  readonly gpuOnly?: boolean;
}

/**
 * Predicts one launch on a device.
 *
 * @throws {RangeError} when the device has no data on the op at that dtype.
 * @example
 * ```ts
 * import type { KernelTimeModel } from "./estimate.ts";
 * const fixed: KernelTimeModel = () => ({
 *   ms: 0.3, interval: [0.2, 0.4], tag: "fitted", variant: "default", source: "example",
 * });
 * ```
 */
export type KernelTimeModel = (request: KernelTimeRequest) => KernelTime;

/**
 * One kernel of the decode step as the estimate priced it.
 *
 * @example
 * ```ts
 * import type { KernelEstimate } from "./estimate.ts";
 * const show = (k: KernelEstimate) => `${k.name} ×${k.launches}: ${k.ms.toFixed(2)} ms each`;
 * ```
 */
export interface KernelEstimate {
  /** The kernel's name in `decode_kernels.ts`. */
  readonly name: string;
  /** Launches per step on the device (layers × 1 for a layer kernel). */
  readonly launches: number;
  /** The catalog op it was predicted as. */
  readonly op: string;
  /** Shape it was predicted at. */
  readonly shape: Shape;
  /** Dtype it was predicted at. */
  readonly dtype: Dtype;
  /** Why another op stands in; null when the kernel is the op. */
  readonly standIn: string | null;
  /** The operand that set its dtype: the weights, the KV cache or the activations. */
  readonly reads: KernelWork["reads"];
  /** Predicted milliseconds per launch. */
  readonly ms: number;
  /** Where one launch's time should lie, with probability `level` (0.9 when absent). */
  readonly interval: KernelTime["interval"];
  /** The interval's level. */
  readonly level?: number;
  /** The part of the interval every launch on the device shares ({@linkcode KernelTime}). */
  readonly driftSigma?: number;
  /** Where the time came from. */
  readonly tag: Provenance;
  /** The variant predicted. */
  readonly variant: string;
  /** How it was obtained, for people. */
  readonly source: string;
}

/**
 * A rate the estimate needs is missing (null or absent) or unusable.
 *
 * @example
 * ```ts
 * import { MissingRateError } from "./estimate.ts";
 * const e = new MissingRateError("llvmpipe", "gemvGBps.q4", "not measured");
 * console.log(e instanceof RangeError); // true
 * ```
 */
export class MissingRateError extends RangeError {
  /** The device. */
  readonly device: string;
  /** The figure's path in {@linkcode DeviceRates}, e.g. `"gemvGBps.q4"`. */
  readonly figure: string;

  /**
   * @param device The device's name.
   * @param figure The figure's path.
   * @param why What is wrong with it.
   */
  constructor(device: string, figure: string, why: string) {
    super(
      `Cannot estimate on device "${device}": "${figure}" ${why}; calibrate it or choose a ` +
        `quantization whose kernels were measured`,
    );
    this.name = "MissingRateError";
    this.device = device;
    this.figure = figure;
  }
}

/**
 * Options of {@linkcode estimateTokensPerSec}.
 *
 * @example
 * ```ts
 * import type { EstimateOptions } from "./estimate.ts";
 * const o: EstimateOptions = { context: 4096, batch: 1, promptTokens: 512 };
 * ```
 */
export interface EstimateOptions {
  /** Tokens per sequence in the KV cache when the step runs. */
  readonly context: number;
  /** Sequences decoded together. */
  readonly batch: number;
  /** Prompt length for prefill; `context` when absent. */
  readonly promptTokens?: number;
  /** KV cache element type; `defaultKvDtype(quant)` when absent. */
  readonly kvDtype?: KvDtype;
  /** How the model is spread; `{ strategy: "none" }` when absent. */
  readonly plan?: ParallelPlan;
}

/**
 * One decode step, ms. The step's time is max(weightsStreamMs, matmulMs) + kvReadMs +
 * dispatchMs + encodeMs + syncMs + commMs (per kernel at batch 1, weightsStreamMs alone: the
 * projections' cost models already hold their arithmetic); for a tensor-parallel plan the device
 * terms are those of the slowest device, for a pipeline the sums over stages.
 *
 * @example
 * ```ts
 * import type { DecodeBreakdown } from "./estimate.ts";
 * const b: DecodeBreakdown = {
 *   method: "roofline", weightsStreamMs: 5, matmulMs: 0.1, kvReadMs: 0.5, dispatchMs: 1,
 *   encodeMs: 0, syncMs: 0.2, commMs: 0, totalMs: 6.7, bound: "bandwidth",
 * };
 * ```
 */
export interface DecodeBreakdown {
  /** How the device terms were obtained: kernel by kernel from cost models, or a roofline. */
  readonly method: "per-kernel" | "roofline";
  /** The projections (per kernel), or streamed weight bytes at the gemv bandwidth (roofline). */
  readonly weightsStreamMs: number;
  /** 2 × streamed params × batch at the matmul rate, the compute floor of the weight pass. */
  readonly matmulMs: number;
  /** The attention kernels reading the KV cache (per kernel), or its bytes at bandwidth. */
  readonly kvReadMs: number;
  /** Every other kernel (per kernel), or kernels × the per-dispatch cost (roofline). */
  readonly dispatchMs: number;
  /**
   * The host's part of the step's launches: every launch × the step probe's
   * `stepHost.perDispatchUs` when the rates have it; otherwise the recording of the launches
   * whose kernel times are GPU time alone (× `encodePerDispatchUs`), and zero where every time
   * is wall-clock (it holds the recording).
   */
  readonly encodeMs: number;
  /** Submit-and-wait synchronisation per step (the step probe's intercept when present). */
  readonly syncMs: number;
  /** Communication between devices per step. */
  readonly commMs: number;
  /** The whole step. */
  readonly totalMs: number;
  /** Whether the weight pass was set by the projections (bandwidth) or the matmul floor. */
  readonly bound: "bandwidth" | "compute";
}

/**
 * The prompt pass, ms: matmulMs + attentionMs + dispatchMs + syncMs + commMs.
 *
 * @example
 * ```ts
 * import type { PrefillBreakdown } from "./estimate.ts";
 * const b: PrefillBreakdown = { matmulMs: 80, attentionMs: 4, dispatchMs: 1, syncMs: 0.2, commMs: 0, totalMs: 85.2 };
 * ```
 */
export interface PrefillBreakdown {
  /** 2 × streamed params × prompt tokens × batch at the matmul rate. */
  readonly matmulMs: number;
  /** Causal attention over the prompt at the matmul rate. */
  readonly attentionMs: number;
  /** Kernels × the per-dispatch cost. */
  readonly dispatchMs: number;
  /** The one synchronisation of the pass. */
  readonly syncMs: number;
  /** Communication between devices. */
  readonly commMs: number;
  /** The whole pass. */
  readonly totalMs: number;
}

/**
 * Memory of one device in a plan and whether it fits.
 *
 * @example
 * ```ts
 * import type { DeviceMemory } from "./estimate.ts";
 * const spare = (m: DeviceMemory) => m.fit.headroomBytes;
 * ```
 */
export interface DeviceMemory {
  /** Device name. */
  readonly device: string;
  /** What the device holds, by part. */
  readonly breakdown: MemoryBreakdown;
  /** Whether it fits the device's memory. */
  readonly fit: FitCheck;
}

/**
 * What {@linkcode estimateTokensPerSec} predicts.
 *
 * @example
 * ```ts
 * import type { TokensPerSecEstimate } from "./estimate.ts";
 * const show = (e: TokensPerSecEstimate) => `${e.decodeTokensPerSec.toFixed(1)} tok/s`;
 * ```
 */
export interface TokensPerSecEstimate {
  /** Model name. */
  readonly model: string;
  /** Weight quantisation. */
  readonly quant: Quant;
  /** KV cache dtype. */
  readonly kvDtype: KvDtype;
  /** How the model is split over devices. */
  readonly strategy: Strategy;
  /** Device names in plan order. */
  readonly devices: readonly string[];
  /** KV cache length, tokens. */
  readonly context: number;
  /** Sequences decoded together. */
  readonly batch: number;
  /** Prompt length, tokens. */
  readonly promptTokens: number;
  /** Prompt tokens × batch per second of prefill. */
  readonly prefillTokensPerSec: number;
  /** Generated tokens per second over the batch: batch / step time. */
  readonly decodeTokensPerSec: number;
  /** Where the decode rate should lie, or why the estimate cannot say. */
  readonly decodeInterval: DecodeInterval;
  /** One decode step (which yields one token per sequence), by term. */
  readonly perTokenMs: DecodeBreakdown;
  /** The prompt pass, by term. */
  readonly prefillMs: PrefillBreakdown;
  /** Uploading the held weights over the host link (devices in parallel), ms. */
  readonly loadMs: number;
  /** {@linkcode KERNELS_PER_LAYER}.length. */
  readonly kernelsPerLayer: number;
  /** Kernel launches per decode step on the busiest device. */
  readonly kernelsPerStep: number;
  /** The slowest device's kernels as priced (empty for a roofline estimate). */
  readonly kernels: readonly KernelEstimate[];
  /** Memory per device, in plan order. */
  readonly memory: readonly DeviceMemory[];
  /** Which measured figure each term came from, one line per term and figure. */
  readonly sources: readonly string[];
  /** The weakest provenance among the figures used, never stronger than "fitted" (it is a model's prediction). */
  readonly tag: Provenance;
}

class Ledger {
  readonly #sources = new Set<string>();
  #weakest = 1;

  use(
    term: string,
    device: string,
    path: string,
    fig: RateFigure | undefined,
    units: readonly string[],
  ): number {
    if (!fig) throw new MissingRateError(device, path, "was not measured");
    if (fig.value === null) {
      throw new MissingRateError(device, path, `has no value (${fig.reason ?? "no reason given"})`);
    }
    if (!units.includes(fig.unit)) {
      throw new MissingRateError(device, path, `is in "${fig.unit}", expected "${units[0]}"`);
    }
    if (!(fig.value > 0) || !Number.isFinite(fig.value)) {
      throw new MissingRateError(device, path, `is ${fig.value}, expected a positive number`);
    }
    this.#weakest = Math.max(this.#weakest, PROVENANCE_ORDER.indexOf(fig.tag));
    this.#sources.add(
      `${term}: ${device} ${path} = ${formatNumber(fig.value)} ${fig.unit} (${fig.tag}${
        fig.source ? `; ${fig.source}` : ""
      })`,
    );
    return fig.value;
  }

  note(line: string): void {
    this.#sources.add(line);
  }

  /** Records a line that rests on a figure of provenance `tag`. */
  noteFigure(line: string, tag: Provenance): void {
    this.#weakest = Math.max(this.#weakest, PROVENANCE_ORDER.indexOf(tag));
    this.#sources.add(line);
  }

  get sources(): string[] {
    return [...this.#sources];
  }

  get tag(): Provenance {
    return PROVENANCE_ORDER[this.#weakest] ?? "borrowed";
  }
}

const GBPS = ["GB/s"] as const;
const GFLOPS = ["GFLOP/s"] as const;
const US = ["us", "µs"] as const;
const MS = ["ms"] as const;
const TIMES = ["x", "×"] as const;
/** Bytes of one token id (u32) on the host link. */
const TOKEN_ID_BYTES = 4;
/**
 * Bytes of one (max logit, index) pair: a tensor-parallel lm head ends with an all-reduce of
 * these to find the next token across the vocabulary slices.
 *
 * @example
 * ```ts
 * import { ARGMAX_PAIR_BYTES } from "./estimate.ts";
 * console.log(ARGMAX_PAIR_BYTES); // 8
 * ```
 */
export const ARGMAX_PAIR_BYTES = 8;

function matmulRate(ledger: Ledger, term: string, rates: DeviceRates, quant: Quant): number {
  const f16 = rates.matmulGflops.f16;
  if (quant !== "f32" && f16 && f16.value !== null) {
    return ledger.use(term, rates.name, "matmulGflops.f16", f16, GFLOPS);
  }
  if (quant !== "f32") {
    ledger.note(`${term}: ${rates.name} has no f16 matmul figure; f32 matmul rate used`);
  }
  return ledger.use(term, rates.name, "matmulGflops.f32", rates.matmulGflops.f32, GFLOPS);
}

function kvBandwidth(ledger: Ledger, rates: DeviceRates, kvDtype: KvDtype): number {
  const dtype = KV_READ_DTYPE[kvDtype];
  const fig = rates.gemvGBps[dtype];
  if (dtype !== "f32" && (!fig || fig.value === null)) {
    ledger.note(`kvReadMs: ${rates.name} has no ${dtype} gemv figure; f32 gemv bandwidth used`);
    return ledger.use("kvReadMs", rates.name, "gemvGBps.f32", rates.gemvGBps.f32, GBPS);
  }
  return ledger.use("kvReadMs", rates.name, `gemvGBps.${dtype}`, fig, GBPS);
}

/** The kernels one device launches per step, each with how many times. */
function stepKernels(
  layers: number,
  first: boolean,
  last: boolean,
): { kernel: DecodeKernel; launches: number }[] {
  const model = (stage: "first" | "last") =>
    MODEL_KERNELS.filter((k) => k.stage === stage).map((kernel) => ({ kernel, launches: 1 }));
  return [
    ...(first ? model("first") : []),
    ...(layers > 0 ? KERNELS_PER_LAYER.map((kernel) => ({ kernel, launches: layers })) : []),
    ...(last ? model("last") : []),
  ];
}

function shapeText(shape: Shape): string {
  return Object.values(shape).join("×");
}

/** One device's decode step by term: what the kernel-by-kernel and the roofline pricing give. */
interface StepTerms {
  readonly weightsStreamMs: number;
  readonly kvReadMs: number;
  readonly dispatchMs: number;
  readonly encodeMs: number;
  readonly kernels: KernelEstimate[];
}

/**
 * One launch's prediction; a KV cache read with no data at the cache's dtype is priced at f32, as
 * the roofline reads such a cache at the f32 gemv bandwidth.
 */
function predictAt(predict: KernelTimeModel, work: KernelWork, dtype: Dtype) {
  try {
    return predict({ op: work.op, shape: work.shape, dtype });
  } catch (e) {
    if (!(e instanceof RangeError) || work.reads !== "kv" || dtype === "f32") throw e;
    const t = predict({ op: work.op, shape: work.shape, dtype: "f32" });
    return { ...t, source: `no ${work.op} ${dtype} data, f32 used: ${t.source}` };
  }
}

/**
 * Prices every launch of a device's step with its cost model. A kernel the device's data cannot
 * price is charged the per-dispatch cost when it only touches activations, since such kernels are
 * launch-bound at decode sizes; a projection or attention read that cannot be priced makes the
 * whole step fall back to the roofline (null, with the reason in the ledger). Launches whose time
 * is GPU time alone are charged the host's recording of them too.
 */
function kernelTerms(
  ledger: Ledger,
  rates: DeviceRates,
  predict: KernelTimeModel,
  launches: readonly { kernel: DecodeKernel; launches: number }[],
  dims: ReturnType<typeof kernelDims>,
  dtypes: Readonly<Record<KernelWork["reads"], Dtype>>,
  context: number,
  batch: number,
): StepTerms | null {
  const kernels: KernelEstimate[] = [];
  const lines: { line: string; tag: Provenance }[] = [];
  const terms = { weights: 0, kv: 0, activations: 0 };
  let gpuOnlyLaunches = 0;
  for (const { kernel, launches: count } of launches) {
    const work = kernel.work(dims, context, batch);
    const dtype = dtypes[work.reads];
    const what = `${work.op} ${shapeText(work.shape)} ${dtype}`;
    let t: KernelTime;
    try {
      t = predictAt(predict, work, dtype);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      if (work.reads !== "activations") {
        ledger.note(
          `decode: ${rates.name} cannot price kernel ${kernel.name} as ${what} (${e.message}); ` +
            `roofline used for the whole step`,
        );
        return null;
      }
      const launch = rates.perDispatchUs;
      if (launch.value === null) return null;
      t = {
        ms: launch.value / 1000,
        interval: launch.ci ? [launch.ci[0] / 1000, launch.ci[1] / 1000] : [0, Infinity],
        tag: launch.tag,
        variant: "default",
        source: `no ${work.op} ${dtype} data (${e.message}): perDispatchUs` +
          (launch.source ? `, ${launch.source}` : ""),
      };
    }
    terms[work.reads] += count * t.ms;
    if (t.gpuOnly) gpuOnlyLaunches += count;
    kernels.push({
      name: kernel.name,
      launches: count,
      op: work.op,
      shape: work.shape,
      dtype,
      standIn: work.standIn,
      reads: work.reads,
      ms: t.ms,
      interval: t.interval,
      ...(t.level === undefined ? {} : { level: t.level }),
      ...(t.driftSigma === undefined ? {} : { driftSigma: t.driftSigma }),
      tag: t.tag,
      variant: t.variant,
      source: t.source,
    });
    lines.push({
      line: `decode kernel ${kernel.name} ×${count} on ${rates.name}: ${what}${
        work.standIn ? ` [stand-in: ${work.standIn}]` : ""
      } = ${t.ms.toPrecision(3)} ms each (${t.tag}; ${t.source}; variant ${t.variant})`,
      tag: t.tag,
    });
  }
  for (const { line, tag } of lines) ledger.noteFigure(line, tag);
  const extrapolated = kernels.filter((k) => k.tag === "extrapolated");
  if (extrapolated.length > 0) {
    ledger.note(
      `decode: ${extrapolated.length} of ${kernels.length} kernel predictions on ${rates.name} ` +
        `extrapolate beyond the calibrated sizes (${extrapolated.map((k) => k.name).join(", ")})`,
    );
  }
  const chain = chainFactor(ledger, rates);
  const launchCount = launches.reduce((n, l) => n + l.launches, 0);
  return {
    weightsStreamMs: terms.weights * chain,
    kvReadMs: terms.kv * chain,
    dispatchMs: terms.activations * chain,
    encodeMs: rates.stepHost
      ? stepHostMs(ledger, rates.name, rates.stepHost, launchCount)
      : recordingMs(ledger, rates, gpuOnlyLaunches),
    kernels,
  };
}

/**
 * What a device's kernels take chained in decode order, per ms of their sum as timed one at a
 * time: its `chainFactor`, or 1 (said in the ledger) without one.
 */
function chainFactor(ledger: Ledger, rates: DeviceRates): number {
  if (rates.chainFactor?.value == null) {
    ledger.note(
      `decode: ${rates.name} has no chainFactor (no step probe); its kernels are summed as ` +
        `timed one at a time`,
    );
    return 1;
  }
  return ledger.use("kernels chained", rates.name, "chainFactor", rates.chainFactor, TIMES);
}

/** The host's part of `launches` launches in a synchronised step, ms (the step probe's slope). */
function stepHostMs(
  ledger: Ledger,
  device: string,
  host: NonNullable<DeviceRates["stepHost"]>,
  launches: number,
): number {
  return launches *
    ledger.use("encodeMs", device, "stepHost.perDispatchUs", host.perDispatchUs, US) /
    1000;
}

/**
 * The host's recording of `launches` dispatches whose kernel times left it out, ms; zero, said in
 * the ledger, when the device has no such figure (a report calibrated before gpucal measured it).
 */
function recordingMs(ledger: Ledger, rates: DeviceRates, launches: number): number {
  if (launches === 0) return 0;
  const fig = rates.encodePerDispatchUs;
  if (fig?.value == null) {
    ledger.note(
      `encodeMs: ${rates.name} has no encodePerDispatchUs figure (${
        fig?.reason ?? "calibrated before gpucal measured it"
      }); the host's recording of ${launches} GPU-timed launches is not priced`,
    );
    return 0;
  }
  return launches * ledger.use("encodeMs", rates.name, "encodePerDispatchUs", fig, US) / 1000;
}

function planDevices(
  plan: ParallelPlan,
  devices: DeviceRates | readonly DeviceRates[],
): DeviceRates[] {
  const want = plan.strategy === "none"
    ? 1
    : plan.strategy === "tensor-parallel"
    ? plan.ways
    : plan.layersPerStage.length;
  if (!Array.isArray(devices)) return Array.from({ length: want }, () => devices as DeviceRates);
  const list = devices as readonly DeviceRates[];
  if (list.length !== want) {
    throw new RangeError(
      `Plan "${plan.strategy}" needs ${want} device rate set(s), got ${list.length}; pass one ` +
        `DeviceRates to use it for every device, or one per device`,
    );
  }
  return [...list];
}

/** What every term of an estimate reads: the model, the validated options and the plan. */
interface EstimateSetting {
  readonly model: ModelSpec;
  readonly quant: Quant;
  readonly kvDtype: KvDtype;
  readonly context: number;
  readonly batch: number;
  readonly promptTokens: number;
  readonly plan: ParallelPlan;
  /** The dtype each kind of kernel reads: weights, KV cache, activations. */
  readonly dtypes: Readonly<Record<KernelWork["reads"], Dtype>>;
}

function estimateSetting(model: ModelSpec, quant: Quant, opts: EstimateOptions): EstimateSetting {
  const context = positiveInteger("context", opts.context);
  const batch = positiveInteger("batch", opts.batch);
  const promptTokens = positiveInteger("promptTokens", opts.promptTokens ?? context);
  if (promptTokens > context) {
    throw new RangeError(
      `"promptTokens" (${promptTokens}) exceeds "context" (${context}); raise the context`,
    );
  }
  const kvDtype = opts.kvDtype ?? defaultKvDtype(quant);
  const actDtype: Dtype = quant === "f16" ? "f16" : "f32";
  return {
    model,
    quant,
    kvDtype,
    context,
    batch,
    promptTokens,
    plan: opts.plan ?? { strategy: "none" },
    dtypes: { weights: WEIGHT_DTYPE[quant], kv: KV_READ_DTYPE[kvDtype], activations: actDtype },
  };
}

/** The decode step's compute floor on one device: 2 × streamed params × batch at the matmul rate. */
function decodeMatmulMs(
  ledger: Ledger,
  rates: DeviceRates,
  s: EstimateSetting,
  slice: ShardSlice,
): number {
  const rate = matmulRate(ledger, "matmulMs", rates, s.quant);
  return 2 * slice.streamedParams * s.batch / (rate * 1e6);
}

/** The prompt pass's launches on one device: its kernels × the per-dispatch cost. */
function prefillDispatchMs(ledger: Ledger, rates: DeviceRates, slice: ShardSlice): number {
  const us = ledger.use("prefill dispatchMs", rates.name, "perDispatchUs", rates.perDispatchUs, US);
  return slice.kernels * us / 1000;
}

/**
 * One device's step kernel by kernel from its cost models, or null when it has none (or one
 * that cannot price a projection or attention read). A pipeline stage launches the model's first
 * kernels only on the first device and its last only on the last.
 */
function perKernelStep(
  ledger: Ledger,
  rates: DeviceRates,
  s: EstimateSetting,
  slice: ShardSlice,
  stage: { readonly index: number; readonly count: number },
): StepTerms | null {
  if (!rates.kernelTime) return null;
  const pipeline = s.plan.strategy === "pipeline-parallel";
  return kernelTerms(
    ledger,
    rates,
    rates.kernelTime,
    stepKernels(
      slice.layerCount,
      !pipeline || stage.index === 0,
      !pipeline || stage.index === stage.count - 1,
    ),
    kernelDims(s.model, s.plan.strategy === "tensor-parallel" ? s.plan.ways : 1),
    s.dtypes,
    s.context,
    s.batch,
  );
}

/**
 * One device's step as a roofline: weights streamed at the gemv bandwidth, the KV cache at the
 * gemv bandwidth of its dtype, and kernels × the per-dispatch cost.
 */
function rooflineStep(
  ledger: Ledger,
  rates: DeviceRates,
  s: EstimateSetting,
  slice: ShardSlice,
): StepTerms {
  const weightDtype = s.dtypes.weights;
  const gemv = ledger.use(
    "weightsStreamMs",
    rates.name,
    `gemvGBps.${weightDtype}`,
    rates.gemvGBps[weightDtype],
    GBPS,
  );
  const kvBytes = kvCacheBytes(
    s.model,
    s.kvDtype,
    s.context,
    s.batch,
    slice.layerCount,
    slice.kvHeads,
  );
  const launchUs = ledger.use("dispatchMs", rates.name, "perDispatchUs", rates.perDispatchUs, US);
  return {
    weightsStreamMs: slice.streamedParams * BYTES_PER_WEIGHT[s.quant] / (gemv * 1e6),
    kvReadMs: kvBytes / (kvBandwidth(ledger, rates, s.kvDtype) * 1e6),
    dispatchMs: slice.kernels * launchUs / 1000,
    encodeMs: rates.stepHost ? stepHostMs(ledger, rates.name, rates.stepHost, slice.kernels) : 0,
    kernels: [],
  };
}

/**
 * The prompt pass's arithmetic on one device at the matmul rate: the projections (2 × streamed
 * params × prompt tokens × batch) and causal attention (2 × headDim × n(n + 1) per head and layer).
 */
function prefillComputeMs(
  ledger: Ledger,
  rates: DeviceRates,
  s: EstimateSetting,
  slice: ShardSlice,
): { matmulMs: number; attentionMs: number } {
  const { model, promptTokens, batch } = s;
  const rate = matmulRate(ledger, "prefill matmulMs", rates, s.quant);
  const matmulMs = 2 * slice.streamedParams * promptTokens * batch / (rate * 1e6);
  const attentionFlops = 2 * model.headDim * promptTokens * (promptTokens + 1) * slice.heads *
    slice.layerCount * batch;
  return { matmulMs, attentionMs: attentionFlops / (rate * 1e6) };
}

/** Uploading a device's weights over its host link, ms. */
function loadMs(ledger: Ledger, rates: DeviceRates, weightsBytes: number): number {
  const upload = ledger.use(
    "loadMs",
    rates.name,
    "hostLinkGBps.upload",
    rates.hostLinkGBps.upload,
    GBPS,
  );
  return weightsBytes / (upload * 1e6);
}

/** Every term of one device of the plan, decode and prefill. */
interface DeviceEstimate {
  readonly rates: DeviceRates;
  readonly slice: ShardSlice;
  readonly weightsStreamMs: number;
  readonly matmulMs: number;
  readonly kvReadMs: number;
  readonly dispatchMs: number;
  readonly encodeMs: number;
  readonly prefillDispatchMs: number;
  readonly kernels: readonly KernelEstimate[];
  readonly method: DecodeBreakdown["method"];
  /** Whether the matmul floor, not the weights' stream, set the weight pass. */
  readonly computeBound: boolean;
  readonly decodeMs: number;
  /** Where `decodeMs` should lie at {@linkcode DECODE_INTERVAL_LEVEL}, or why it has no range. */
  readonly decodeRangeMs: readonly [number, number] | string;
  readonly prefillMatmulMs: number;
  readonly attentionMs: number;
  readonly prefillMs: number;
  readonly loadMs: number;
  readonly memory: DeviceMemory;
}

/** Prices one device's slice of the model, each term through the ledger. */
function deviceEstimate(
  ledger: Ledger,
  rates: DeviceRates,
  s: EstimateSetting,
  slice: ShardSlice,
  stage: { readonly index: number; readonly count: number },
): DeviceEstimate {
  // The ledger's lines follow the order the terms are priced in: keep it.
  const matmulMs = decodeMatmulMs(ledger, rates, s, slice);
  const prefillLaunchMs = prefillDispatchMs(ledger, rates, slice);
  const perKernel = perKernelStep(ledger, rates, s, slice, stage);
  const step = perKernel ?? rooflineStep(ledger, rates, s, slice);
  const { weightsStreamMs, kvReadMs, dispatchMs, encodeMs } = step;
  // A projection's own cost model already holds its arithmetic for one sequence; the matmul
  // floor only speaks for the batch's extra columns, which no gemv measurement covers. The
  // decode's range scales the kernel terms by `f`; the host's part stays as measured.
  const weightPass = (f: number) =>
    perKernel && s.batch === 1 ? weightsStreamMs * f : Math.max(weightsStreamMs * f, matmulMs);
  const decodeMsAt = (f: number) => weightPass(f) + (kvReadMs + dispatchMs) * f + encodeMs;
  const weightPassMs = weightPass(1);
  const prefill = prefillComputeMs(ledger, rates, s, slice);
  const band = perKernel
    ? kernelSumBand(step.kernels, rates.chainFactor)
    : `${rates.name} is priced as a roofline, whose figures carry no prediction intervals`;
  const { context, batch, kvDtype } = s;
  const memory = shardMemory(s.model, s.quant, slice, { context, batch, kvDtype });
  return {
    rates,
    slice,
    weightsStreamMs,
    matmulMs,
    kvReadMs,
    dispatchMs,
    encodeMs,
    prefillDispatchMs: prefillLaunchMs,
    kernels: step.kernels,
    method: perKernel ? "per-kernel" : "roofline",
    computeBound: weightPassMs > weightsStreamMs,
    decodeMs: decodeMsAt(1),
    decodeRangeMs: typeof band === "string"
      ? band
      : [decodeMsAt(Math.exp(-band.halfWidth)), decodeMsAt(Math.exp(band.halfWidth))],
    prefillMatmulMs: prefill.matmulMs,
    attentionMs: prefill.attentionMs,
    prefillMs: prefill.matmulMs + prefill.attentionMs + prefillLaunchMs,
    loadMs: loadMs(ledger, rates, memory.weightsBytes),
    memory: { device: rates.name, breakdown: memory, fit: fitCheck(memory, rates.memoryBytes) },
  };
}

/** A term of decode and the same term of prefill, ms. */
interface StepAndPrompt {
  readonly decodeMs: number;
  readonly prefillMs: number;
}

/**
 * The host's part of a step: one round trip on the last device (the step probe's intercept,
 * `stepHost.fixedMs`, when the rates have it), the token ids up to the first and down from the
 * last (the prompt's ids for prefill).
 */
function syncMs(
  ledger: Ledger,
  first: DeviceRates,
  last: DeviceRates,
  s: EstimateSetting,
): StepAndPrompt {
  const { batch, promptTokens } = s;
  const roundTrip = last.stepHost
    ? ledger.use("syncMs", last.name, "stepHost.fixedMs", last.stepHost.fixedMs, MS)
    : ledger.use("syncMs", last.name, "syncRoundTripMs", last.syncRoundTripMs, MS);
  const up = ledger.use(
    "syncMs",
    first.name,
    "hostLinkGBps.upload",
    first.hostLinkGBps.upload,
    GBPS,
  );
  const down = ledger.use(
    "syncMs",
    last.name,
    "hostLinkGBps.readback",
    last.hostLinkGBps.readback,
    GBPS,
  );
  const idsDown = batch * TOKEN_ID_BYTES / (down * 1e6);
  return {
    decodeMs: roundTrip + batch * TOKEN_ID_BYTES / (up * 1e6) + idsDown,
    prefillMs: roundTrip + promptTokens * batch * TOKEN_ID_BYTES / (up * 1e6) + idsDown,
  };
}

/**
 * Communication between devices: a tensor-parallel plan's ring all-reduces (two per layer and one
 * for the next token's argmax), a pipeline's activations across its stage boundaries; zero
 * for one device.
 */
function commMs(ledger: Ledger, s: EstimateSetting): StepAndPrompt {
  const { model, plan, batch, promptTokens } = s;
  const actBytes = activationBytes(s.quant);
  if (plan.strategy === "tensor-parallel") {
    const p = plan.ways;
    const link = plan.interconnect;
    const allReduces = 2 * model.layers;
    ledger.note(
      `commMs: ${allReduces + 1} ring all-reduces per step over ${p} devices on ${
        describeLink(link)
      }`,
    );
    return {
      decodeMs: allReduces * allReduceMs(link, model.hidden * batch * actBytes, p) +
        allReduceMs(link, batch * ARGMAX_PAIR_BYTES, p),
      prefillMs: allReduces * allReduceMs(link, model.hidden * promptTokens * batch * actBytes, p) +
        allReduceMs(link, batch * ARGMAX_PAIR_BYTES, p),
    };
  }
  if (plan.strategy === "pipeline-parallel") {
    const link = plan.interconnect;
    const boundaries = plan.layersPerStage.length - 1;
    ledger.note(
      `commMs: ${boundaries} stage boundary transfer(s) per step on ${describeLink(link)}`,
    );
    return {
      decodeMs: boundaries * sendMs(link, model.hidden * batch * actBytes),
      prefillMs: boundaries * sendMs(link, model.hidden * promptTokens * batch * actBytes),
    };
  }
  return { decodeMs: 0, prefillMs: 0 };
}

/**
 * A plan's value of a device term: the sum over a pipeline's stages (they run one after another),
 * else the critical device's (tensor-parallel devices run together).
 */
function planTerm(
  perDevice: readonly DeviceEstimate[],
  pipeline: boolean,
  critical: DeviceEstimate,
  term: (d: DeviceEstimate) => number,
): number {
  return pipeline ? perDevice.reduce((a, d) => a + term(d), 0) : term(critical);
}

/** The device whose value of a term is the largest (the first of equals). */
function slowest(
  perDevice: readonly DeviceEstimate[],
  term: (d: DeviceEstimate) => number,
): DeviceEstimate {
  return perDevice.reduce((a, b) => (term(b) > term(a) ? b : a));
}

/** The decode step of the whole plan, by term. */
function decodeBreakdown(
  perDevice: readonly DeviceEstimate[],
  pipeline: boolean,
  sync: number,
  comm: number,
): DecodeBreakdown {
  const critical = slowest(perDevice, (d) => d.decodeMs);
  const pick = (term: (d: DeviceEstimate) => number) =>
    planTerm(perDevice, pipeline, critical, term);
  return {
    method: perDevice.every((d) => d.method === "per-kernel") ? "per-kernel" : "roofline",
    weightsStreamMs: pick((d) => d.weightsStreamMs),
    matmulMs: pick((d) => d.matmulMs),
    kvReadMs: pick((d) => d.kvReadMs),
    dispatchMs: pick((d) => d.dispatchMs),
    encodeMs: pick((d) => d.encodeMs),
    syncMs: sync,
    commMs: comm,
    totalMs: pick((d) => d.decodeMs) + sync + comm,
    bound: perDevice.some((d) => d.computeBound) ? "compute" : "bandwidth",
  };
}

/** The prompt pass of the whole plan, by term. */
function prefillBreakdown(
  perDevice: readonly DeviceEstimate[],
  pipeline: boolean,
  sync: number,
  comm: number,
): PrefillBreakdown {
  const critical = slowest(perDevice, (d) => d.prefillMs);
  const pick = (term: (d: DeviceEstimate) => number) =>
    planTerm(perDevice, pipeline, critical, term);
  return {
    matmulMs: pick((d) => d.prefillMatmulMs),
    attentionMs: pick((d) => d.attentionMs),
    dispatchMs: pick((d) => d.prefillDispatchMs),
    syncMs: sync,
    commMs: comm,
    totalMs: pick((d) => d.prefillMs) + sync + comm,
  };
}

/**
 * Where a decode rate should lie: with probability `level`, within `tokensPerSec` (slowest,
 * fastest), from the kernel predictions' own intervals (`interval.ts`); null, with why, for a
 * roofline estimate, whose figures carry none.
 *
 * @example
 * ```ts
 * import type { DecodeInterval } from "./estimate.ts";
 * const show = (i: DecodeInterval) =>
 *   i.tokensPerSec ? `${i.tokensPerSec.map((x) => x.toFixed(1)).join("–")} tokens/s` : i.note;
 * ```
 */
export interface DecodeInterval {
  /** The probability the range is stated for. */
  readonly level: number;
  /** Slowest and fastest decode rate of the range, tokens/s; null when there is none. */
  readonly tokensPerSec: readonly [number, number] | null;
  /** How the range was made, or why there is none. */
  readonly note: string;
}

/** The plan's decode range from each device's, with the host's part and communication as priced. */
function decodeIntervalOf(
  perDevice: readonly DeviceEstimate[],
  pipeline: boolean,
  hostMs: number,
  batch: number,
): DecodeInterval {
  const level = DECODE_INTERVAL_LEVEL;
  const missing = perDevice.find((d) => typeof d.decodeRangeMs === "string")?.decodeRangeMs;
  if (typeof missing === "string") return { level, tokensPerSec: null, note: missing };
  const ranges = perDevice.map((d) => d.decodeRangeMs as readonly [number, number]);
  const end = (i: 0 | 1) => {
    const ms = ranges.map((r) => r[i]);
    return (pipeline ? ms.reduce((a, b) => a + b, 0) : Math.max(...ms)) + hostMs;
  };
  return {
    level,
    tokensPerSec: [batch * 1000 / end(1), batch * 1000 / end(0)],
    note: `the kernel predictions' ${level * 100} % intervals: the machine's run-to-run drift ` +
      `shared by every launch, each cost model's own error apart from the others'; the host's ` +
      `part of a step as measured`,
  };
}

/**
 * Estimates prefill and decode tokens per second of a model on measured devices.
 *
 * @param model The model.
 * @param quant The weight quantization.
 * @param devicesOrRates One device's rates (used for every device of the plan), or one per device
 *   in plan order.
 * @param opts Context, batch, prompt length, KV dtype and plan.
 * @returns The estimate with its per-term breakdown and sources.
 * @throws {MissingRateError} when a figure the estimate needs is missing, null or in the wrong unit.
 * @throws {RangeError} when context, batch or prompt length is not a positive integer, the prompt
 *   is longer than the context, or the plan cannot split the model.
 * @example
 * ```ts
 * import { estimateTokensPerSec, type RateFigure } from "./estimate.ts";
 * import { getPreset } from "./presets.ts";
 * const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });
 * const rates = {
 *   name: "gpu", memoryBytes: 24e9,
 *   matmulGflops: { f32: fig(20000, "GFLOP/s"), f16: fig(80000, "GFLOP/s") },
 *   gemvGBps: { f16: fig(800, "GB/s"), q4: fig(700, "GB/s") },
 *   perDispatchUs: fig(5, "us"), syncRoundTripMs: fig(0.05, "ms"),
 *   hostLinkGBps: { upload: fig(25, "GB/s"), readback: fig(25, "GB/s") },
 * };
 * const e = estimateTokensPerSec(getPreset("llama-3-8b"), "int4", rates, { context: 4096, batch: 1 });
 * console.log(e.decodeTokensPerSec > 50); // true
 * ```
 */
export function estimateTokensPerSec(
  model: ModelSpec,
  quant: Quant,
  devicesOrRates: DeviceRates | readonly DeviceRates[],
  opts: EstimateOptions,
): TokensPerSecEstimate {
  const s = estimateSetting(model, quant, opts);
  const { context, batch, promptTokens, kvDtype, plan } = s;
  const slices = shardSlices(model, plan);
  const devices = planDevices(plan, devicesOrRates);
  const ledger = new Ledger();
  const perDevice = slices.map((slice, index) =>
    deviceEstimate(ledger, devices[index]!, s, slice, { index, count: slices.length })
  );
  const sync = syncMs(ledger, perDevice[0]!.rates, perDevice[perDevice.length - 1]!.rates, s);
  const comm = commMs(ledger, s);
  const pipeline = plan.strategy === "pipeline-parallel";
  const perTokenMs = decodeBreakdown(perDevice, pipeline, sync.decodeMs, comm.decodeMs);
  const prefillMs = prefillBreakdown(perDevice, pipeline, sync.prefillMs, comm.prefillMs);
  return {
    model: model.name,
    quant,
    kvDtype,
    strategy: plan.strategy,
    devices: devices.map((d) => d.name),
    context,
    batch,
    promptTokens,
    prefillTokensPerSec: promptTokens * batch * 1000 / prefillMs.totalMs,
    decodeTokensPerSec: batch * 1000 / perTokenMs.totalMs,
    decodeInterval: decodeIntervalOf(perDevice, pipeline, sync.decodeMs + comm.decodeMs, batch),
    perTokenMs,
    prefillMs,
    loadMs: Math.max(...perDevice.map((d) => d.loadMs)),
    kernelsPerLayer: KERNELS_PER_LAYER.length,
    kernelsPerStep: Math.max(...perDevice.map((d) => d.slice.kernels)),
    kernels: slowest(perDevice, (d) => d.decodeMs).kernels,
    memory: perDevice.map((d) => d.memory),
    sources: ledger.sources,
    tag: ledger.tag,
  };
}
