/**
 * A synthetic transformer decode on WebGPU: seeded random weights, the real kernel sequence of
 * `models/llm/decode_kernels.ts` (built in `graph.ts` on the one WebGPU engine of
 * `calibrate/runners/gpu.ts`), one submit per token and one readback of the token id (greedy
 * argmax on the device) — what the tokens/sec estimate charges, measured. The projections run
 * the gemv kernel of `kernels/gemv/webgpu.ts`.
 *
 * Before anything is timed, one step is checked against the float64 reference of `reference.ts`
 * (as calibrate verifies a kernel before timing it): a decode that computes the wrong thing fails
 * with a {@linkcode DecodeCheckError} instead of giving a rate.
 *
 * The KV cache is f32 and starts zeroed; the decoded positions are the last `warmup + tokens`
 * of the context, so the timed steps attend to nearly the whole context.
 *
 * @module
 */
import { gemvWebGpu } from "../kernels/gemv/webgpu.ts";
import type { Dtype, Variant } from "../kernels/types.ts";
import type { GpuHandle } from "../calibrate/device.ts";
import {
  GpuResources,
  Readback,
  TimestampQueries,
  timestampSpanMs,
  validated,
} from "../calibrate/runners/gpu.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { LANE_WG } from "./_decode_wgsl.ts";
import type { DecodeQuant } from "./_weights.ts";
import {
  buildDecodeGraph,
  checkDecodeDims,
  type DecodeGraph,
  type DecodeGraphOptions,
  type Dispatch,
  START_TOKEN,
} from "./graph.ts";
import { ReferenceDecoder } from "./reference.ts";
import { positiveInteger } from "../models/llm/memory.ts";
import type { ModelSpec } from "../models/llm/presets.ts";
import { median } from "../core/stats.ts";

export type { DecodeQuant } from "./_weights.ts";

/**
 * Options of {@linkcode measureDecode}.
 *
 * @example
 * ```ts
 * import type { DecodeOptions } from "./decode.ts";
 * const o: DecodeOptions = { tokens: 8, context: 128, gemvVariant: "rpw=1,tpr=64,vec4=true" };
 * ```
 */
export interface DecodeOptions {
  /** Timed tokens. */
  readonly tokens: number;
  /** KV cache capacity; the last timed token attends to all of it. */
  readonly context: number;
  /** Untimed tokens first (pipelines warm, caches filled); default 2. */
  readonly warmup?: number;
  /** Gemv variant (object or id such as `"rpw=1,tpr=64,vec4=true"`); a sound default when absent. */
  readonly gemvVariant?: Variant | string;
  /** Gemv variant id per projection kernel name (`"q_proj"`, `"lm_head"` …), over `gemvVariant`. */
  readonly gemvVariants?: Readonly<Record<string, string>>;
  /**
   * The catalog softmax variant whose workgroup size the attention softmax takes (an id such as
   * `"acc=f32,wg=256"`); 64 lanes when absent. Its accumulation is always f32.
   */
  readonly softmaxVariant?: string;
  /**
   * Check one step against the float64 reference before timing; default true. Models over
   * {@linkcode CHECK_MAX_PARAMS} parameters are never checked (the reference would take seconds).
   */
  readonly check?: boolean;
}

/**
 * What {@linkcode measureDecode} measured.
 *
 * @example
 * ```ts
 * import type { DecodeMeasurement } from "./decode.ts";
 * const say = (m: DecodeMeasurement) => `${m.model} ${m.quant}: ${m.tokensPerSec.toFixed(1)} tok/s`;
 * ```
 */
export interface DecodeMeasurement {
  readonly model: string;
  readonly quant: DecodeQuant;
  readonly context: number;
  readonly warmup: number;
  /** Tokens per second: 1000 / the median per-token time. */
  readonly tokensPerSec: number;
  readonly medianMs: number;
  /** Wall time of each timed token: uniform write, encode, submit, token readback. */
  readonly perTokenMs: readonly number[];
  /** Median host time of a token's uniform write and command encoding, before the submit. */
  readonly encodeMedianMs: number;
  /**
   * GPU time of each timed token's one compute pass (timestamps at its start and end), ms; null
   * when the device has no `timestamp-query`. The wall time less this is what the token paid
   * for encoding, submitting and the synchronisation that reads its id back.
   */
  readonly gpuPerTokenMs: readonly number[] | null;
  /** Median of {@linkcode gpuPerTokenMs}, or null without timestamps. */
  readonly gpuMedianMs: number | null;
  /** Every token id produced, warm-up included. */
  readonly tokenIds: readonly number[];
  /** Kernel launches per token. */
  readonly dispatchesPerToken: number;
  /** Bytes of weights on the device. */
  readonly weightBytes: number;
  /** The gemv variant the projections ran (the distinct ones, `;`-separated, when several). */
  readonly gemvVariant: string;
  /** KV cache element type (always f32 here). */
  readonly kvDtype: "f32";
  /** Buffer creation, random weights and pipeline compilation, ms. */
  readonly setupMs: number;
  /** How the checked step compared with the float64 reference; null when not checked. */
  readonly check: DecodeCheck | null;
}

/**
 * How a decode step on the device compared with the float64 reference.
 *
 * @example
 * ```ts
 * import type { DecodeCheck } from "./decode.ts";
 * const c: DecodeCheck = { position: 46, logitsError: 3e-6, hiddenError: 2e-6, tolerance: 1e-3 };
 * ```
 */
export interface DecodeCheck {
  /** The position checked (the first one decoded). */
  readonly position: number;
  /** Largest logit error relative to the reference's largest logit magnitude. */
  readonly logitsError: number;
  /** The same for the hidden state (the residual stream after the last layer). */
  readonly hiddenError: number;
  /** The largest error accepted, {@linkcode DECODE_TOLERANCE}. */
  readonly tolerance: number;
}

/**
 * A decode that did not compute what its float64 reference does; it was not timed.
 *
 * @example
 * ```ts
 * import { DecodeCheckError } from "./decode.ts";
 * const e = new DecodeCheckError("Wrong decode", { position: 0, logitsError: 1, hiddenError: 0, tolerance: 1e-3 });
 * console.log(e.name, e.check.logitsError); // DecodeCheckError 1
 * ```
 */
export class DecodeCheckError extends Error {
  /**
   * @param message What was wrong.
   * @param check The comparison.
   */
  constructor(message: string, readonly check: DecodeCheck) {
    super(message);
    this.name = "DecodeCheckError";
  }
}

/**
 * Largest error of a checked step's logits and hidden state, relative to the reference's largest
 * magnitude (as `calibrate/verify.ts` judges kernels). f32 kernels land near 1e-6 on the tiny
 * models; a wrong kernel (a missed reduction lane, a misread cache row) lands above 1e-2.
 */
export const DECODE_TOLERANCE = 1e-3;

/** Models with more parameters are not checked: the reference regenerates every weight. */
export const CHECK_MAX_PARAMS = 2 ** 27;

const DEFAULT_WARMUP = 2;
/** Where the pass's two timestamps land in the token readback, bytes. */
const TIMESTAMP_OFFSET = 8;

/**
 * Parses a variant id (as reports write them) back into a variant.
 *
 * @param id e.g. `"rpw=1,tpr=64,vec4=true"`; `"default"` is `{}`.
 * @returns The variant.
 * @throws {RangeError} when an item is not `key=value`.
 * @example
 * ```ts
 * import { parseVariantId } from "./decode.ts";
 * console.log(parseVariantId("rpw=4,tpr=32,unpack=bits")); // { rpw: 4, tpr: 32, unpack: "bits" }
 * ```
 */
export function parseVariantId(id: string): Variant {
  if (id === "default") return {};
  const out: Record<string, string | number | boolean> = {};
  for (const item of id.split(",")) {
    const m = /^([A-Za-z_]\w*)=(.+)$/.exec(item);
    if (!m) throw new RangeError(`Invalid variant id "${id}": items are key=value, got "${item}"`);
    const raw = m[2]!;
    out[m[1]!] = raw === "true"
      ? true
      : raw === "false"
      ? false
      : /^-?\d+(\.\d+)?$/.test(raw)
      ? Number(raw)
      : raw;
  }
  return out as Variant;
}

/**
 * The first of the catalog's gemv variants (listed fastest first) that runs this shape.
 *
 * @param dtype The weights' dtype.
 * @param shape The projection's rows and columns.
 * @returns The variant.
 * @throws {RangeError} when no WebGPU gemv variant runs the shape.
 * @example
 * ```ts
 * import { defaultVariant } from "./decode.ts";
 * console.log(typeof defaultVariant("q4", { rows: 512, cols: 512 })); // "object"
 * ```
 */
export function defaultVariant(dtype: Dtype, shape: { rows: number; cols: number }): Variant {
  const runnable = gemvWebGpu.variants.find((v) => !gemvWebGpu.unsupported?.(shape, dtype, v));
  if (runnable === undefined) {
    throw new RangeError(`No WebGPU gemv variant runs ${dtype} ${shape.rows}x${shape.cols}`);
  }
  return runnable;
}

/**
 * The attention softmax's lanes per workgroup, from a catalog softmax variant id (the decode's
 * 64 when absent).
 *
 * @param id A softmax variant id, or undefined.
 * @returns 64 or 256.
 * @throws {RangeError} for a variant the decode cannot run (other lanes, f16 accumulation).
 * @example
 * ```ts
 * import { softmaxLanes } from "./decode.ts";
 * console.log(softmaxLanes("acc=f32,wg=256"), softmaxLanes(undefined)); // 256 64
 * ```
 */
export function softmaxLanes(id: string | undefined): 64 | 256 {
  if (id === undefined) return LANE_WG;
  const { wg, acc } = parseVariantId(id);
  if ((wg !== 64 && wg !== 256) || (acc !== undefined && acc !== "f32")) {
    throw new RangeError(
      `Softmax variant "${id}" cannot run in the decode: it needs wg=64 or wg=256 and acc=f32`,
    );
  }
  return wg;
}

/** Tokens, context and warm-up of a decode, checked. */
function decodeCounts(opts: DecodeOptions): { tokens: number; context: number; warmup: number } {
  const tokens = positiveInteger("tokens", opts.tokens);
  const context = positiveInteger("context", opts.context);
  const warmup = opts.warmup ?? DEFAULT_WARMUP;
  if (!Number.isInteger(warmup) || warmup < 0) {
    throw new RangeError(`"warmup" must be a non-negative integer, got ${warmup}; pass e.g. 2`);
  }
  if (tokens + warmup > context) {
    throw new RangeError(
      `Decoding ${tokens} + ${warmup} warm-up tokens needs a context of at least ` +
        `${tokens + warmup}, got ${context}; raise the context`,
    );
  }
  return { tokens, context, warmup };
}

/**
 * What one timed step took: the token it produced, its wall time from its first recorded command
 * to its token read back, the host's recording of it, and its pass's GPU time (null without
 * timestamps).
 *
 * @example
 * ```ts
 * import type { StepRun } from "./decode.ts";
 * const hostMs = (r: StepRun) => (r.gpuMs === null ? null : r.ms - r.gpuMs);
 * ```
 */
export interface StepRun {
  readonly id: number;
  readonly ms: number;
  readonly encodeMs: number;
  readonly gpuMs: number | null;
}

/** Bytes of a step's readback: the token id, then the pass's two timestamps. */
export const STEP_READBACK_BYTES = TIMESTAMP_OFFSET + 16;

/**
 * Runs a synthetic decode of a model on a WebGPU device and times it per token, once one step
 * has matched the float64 reference.
 *
 * @param gpu An open device (not destroyed here; every buffer made here is).
 * @param model The model (the tiny presets fit a 128 MiB storage binding).
 * @param quant Weight format: `"f32"` or `"int4"`.
 * @param opts Timed tokens, context, warm-up, gemv variant, check.
 * @returns Tokens/s (median), per-token times and the token ids.
 * @throws {RangeError} when a dimension does not suit the kernels, a buffer exceeds the device's
 *   binding limit, tokens + warm-up exceed the context, or the decode yields an invalid token.
 * @throws {DecodeCheckError} when the checked step does not match the reference (nothing is timed).
 * @example
 * ```ts ignore
 * import { openGpu } from "../calibrate/device.ts";
 * import { getPreset } from "../models/llm/presets.ts";
 * import { measureDecode } from "./decode.ts";
 * const gpu = await openGpu();
 * if (gpu) {
 *   const m = await measureDecode(gpu, getPreset("tiny-16m"), "int4", { tokens: 8, context: 64 });
 *   console.log(m.tokensPerSec.toFixed(1), "tokens/s");
 *   gpu.device.destroy();
 * }
 * ```
 */
export async function measureDecode(
  gpu: Pick<GpuHandle, "device">,
  model: ModelSpec,
  quant: DecodeQuant,
  opts: DecodeOptions,
): Promise<DecodeMeasurement> {
  const { tokens, context, warmup } = decodeCounts(opts);
  if (quant !== "f32" && quant !== "int4") {
    throw new RangeError(`The synthetic decode runs "f32" or "int4" weights, got "${quant}"`);
  }
  const softmaxWg = softmaxLanes(opts.softmaxVariant);
  const { device } = gpu;
  checkDecodeDims(model, device);
  const started = performance.now();
  const first = context - tokens - warmup;
  const positions = Array.from({ length: tokens + warmup }, (_, i) => first + i);
  const graph = await buildValidated(device, model, {
    quant,
    context,
    softmaxWg,
    gemvVariant: gemvVariants(model, quant, opts),
  }, positions);
  const timing = new GpuResources(device);
  try {
    await device.queue.onSubmittedWorkDone();
    const setupMs = performance.now() - started;
    const check = opts.check === false || model.params > CHECK_MAX_PARAMS
      ? null
      : await checkedOnce(graph, model, quant, first);
    const runs = await timeTokens(graph, model, quant, positions, timing);
    const timed = runs.slice(warmup);
    const medianMs = median(timed.map((r) => r.ms));
    const gpuMs = timed.map((r) => r.gpuMs);
    const gpuPerTokenMs = gpuMs.every((t) => t !== null) ? gpuMs as number[] : null;
    return {
      model: model.name,
      quant,
      context,
      warmup,
      tokensPerSec: 1000 / medianMs,
      medianMs,
      perTokenMs: timed.map((r) => r.ms),
      encodeMedianMs: median(timed.map((r) => r.encodeMs)),
      gpuPerTokenMs,
      gpuMedianMs: gpuPerTokenMs && median(gpuPerTokenMs),
      tokenIds: runs.map((r) => r.id),
      dispatchesPerToken: graph.dispatches.length,
      weightBytes: graph.weightBytes,
      gemvVariant: graph.gemvVariants.join(";"),
      kvDtype: "f32",
      setupMs,
      check,
    };
  } finally {
    graph.destroy();
    timing.destroy();
  }
}

/**
 * Builds the decode inside a validation scope, with the bind groups of every position made before
 * timing (so a token pays only for its work); what WebGPU rejects fails the decode.
 *
 * @param device The device.
 * @param model The model.
 * @param options The graph's options.
 * @param positions The positions the steps will run at.
 * @returns The graph (the caller destroys it).
 * @throws {Error} what WebGPU rejected while building it.
 * @example
 * ```ts ignore
 * import { buildValidated } from "./decode.ts";
 * const graph = await buildValidated(device, model, options, [0, 1, 2]);
 * graph.destroy();
 * ```
 */
export async function buildValidated(
  device: GPUDevice,
  model: ModelSpec,
  options: DecodeGraphOptions,
  positions: readonly number[],
): Promise<DecodeGraph> {
  const made: DecodeGraph[] = [];
  try {
    return await validated(device, `the decode of "${model.name}" (${options.quant})`, () => {
      const graph = buildDecodeGraph(device, model, options);
      made.push(graph);
      graph.bindPositions(positions);
      return graph;
    });
  } catch (e) {
    for (const graph of made) graph.destroy();
    throw e;
  }
}

/** Each projection's gemv variant: its own when given, else the decode's. */
function gemvVariants(
  model: ModelSpec,
  quant: DecodeQuant,
  opts: DecodeOptions,
): (name: string) => Variant {
  const dtype: Dtype = quant === "f32" ? "f32" : "q4";
  const variant = typeof opts.gemvVariant === "string"
    ? parseVariantId(opts.gemvVariant)
    : opts.gemvVariant ?? defaultVariant(dtype, { rows: model.hidden, cols: model.hidden });
  return (name) => {
    const id = opts.gemvVariants?.[name];
    return id === undefined ? variant : parseVariantId(id);
  };
}

/** Runs the decode's steps at `positions` in order, each timed from its first write to its id. */
async function timeTokens(
  graph: DecodeGraph,
  model: ModelSpec,
  quant: DecodeQuant,
  positions: readonly number[],
  resources: GpuResources,
): Promise<StepRun[]> {
  // The token id at byte 0 and, with timestamps, the pass's begin and end ticks at byte 8: one
  // readback, so timing the GPU adds no synchronisation to the token.
  const readback = new Readback(resources, STEP_READBACK_BYTES, "token readback");
  const clock = TimestampQueries.create(resources);
  clock?.reserve(1);
  const runs: StepRun[] = [];
  for (const pos of positions) {
    const run = await timeStep(graph, pos, graph.dispatches, readback, clock);
    if (!(run.id < model.vocab)) {
      throw new RangeError(
        `Decode of "${model.name}" (${quant}) produced token id ${run.id} at position ${pos}, ` +
          `not in [0, ${model.vocab}): the logits overflowed or a kernel is broken`,
      );
    }
    runs.push(run);
  }
  return runs;
}

/**
 * Runs `launches` of `graph` as one step at `pos`, timed as a decode times a token: one readback
 * carries the token and, with `clock`, the pass's timestamps, so timing the GPU adds no
 * synchronisation to the step.
 *
 * @param graph The graph.
 * @param pos The position.
 * @param launches The step's launches (`graph.dispatches` for a decode step).
 * @param readback A readback of {@linkcode STEP_READBACK_BYTES} bytes.
 * @param clock Timestamp queries with one run reserved, or null.
 * @returns What the step took.
 * @example
 * ```ts ignore
 * import { STEP_READBACK_BYTES, timeStep } from "./decode.ts";
 * const run = await timeStep(graph, 40, graph.dispatches, readback, clock);
 * console.log(run.ms, run.gpuMs);
 * ```
 */
export async function timeStep(
  graph: DecodeGraph,
  pos: number,
  launches: readonly Dispatch[],
  readback: Readback,
  clock: TimestampQueries | null,
): Promise<StepRun> {
  const { device } = graph;
  const t0 = performance.now();
  const encoder = device.createCommandEncoder();
  graph.encodeLaunches(encoder, pos, launches, clock?.batchWrites());
  readback.copy(encoder, graph.buffers.token, 4);
  clock?.resolve(encoder, 1, { buffer: readback.buffer, offset: TIMESTAMP_OFFSET });
  const commands = encoder.finish();
  const encodeMs = performance.now() - t0;
  device.queue.submit([commands]);
  const bytes = await readback.read(`the token at position ${pos}`);
  const id = new Uint32Array(bytes, 0, 1)[0]!;
  const gpuMs = clock && timestampSpanMs(new BigInt64Array(bytes, TIMESTAMP_OFFSET, 2), 1);
  return { id, ms: performance.now() - t0, encodeMs, gpuMs };
}

// The checks passed, per device: the same programs on the same device and weights compute the
// same step, so a validation's repeated decodes of one model pay for the reference once.
const passedChecks = new WeakMap<GPUDevice, Map<string, DecodeCheck>>();

/** {@linkcode checkDecodeStep}, once per device, model and set of programs. */
async function checkedOnce(
  graph: DecodeGraph,
  model: ModelSpec,
  quant: DecodeQuant,
  pos: number,
): Promise<DecodeCheck> {
  let passed = passedChecks.get(graph.device);
  if (!passed) passedChecks.set(graph.device, passed = new Map());
  const key = JSON.stringify([model, quant, pos, graph.dispatches.map((d) => d.program.key)]);
  const known = passed.get(key);
  if (known) return known;
  const check = await checkDecodeStep(graph, model, quant, pos);
  passed.set(key, check);
  return check;
}

/**
 * Runs the step at `pos` from {@linkcode START_TOKEN} on the device and compares its logits and
 * hidden state with the float64 reference ({@linkcode DECODE_TOLERANCE}), and its token with the
 * argmax of its own logits; then puts the start token back, so a decode that follows from `pos`
 * is the one checked. The reference's KV cache is zero before `pos`, as a fresh graph's is.
 *
 * @param graph A graph built for `model` and `quant` (`graph.ts`).
 * @param model The model.
 * @param quant Weight format.
 * @param pos The position to check.
 * @returns The comparison.
 * @throws {DecodeCheckError} when the step does not match.
 * @example
 * ```ts ignore
 * import { buildDecodeGraph } from "./graph.ts";
 * import { checkDecodeStep } from "./decode.ts";
 * const graph = buildDecodeGraph(device, model, { quant: "f32", context: 8, gemvVariant: () => variant, softmaxWg: 64 });
 * console.log((await checkDecodeStep(graph, model, "f32", 0)).logitsError);
 * graph.destroy();
 * ```
 */
export async function checkDecodeStep(
  graph: DecodeGraph,
  model: ModelSpec,
  quant: DecodeQuant,
  pos: number,
): Promise<DecodeCheck> {
  graph.writeToken(START_TOKEN);
  const onDevice = await graph.runStep(pos);
  graph.writeToken(START_TOKEN);
  const reference = new ReferenceDecoder(model, quant, graph.dims.context).step(pos, START_TOKEN);
  const logits = verifyOutput(onDevice.logits, reference.logits, DECODE_TOLERANCE);
  const hidden = verifyOutput(onDevice.hidden, reference.hidden, DECODE_TOLERANCE);
  const check: DecodeCheck = {
    position: pos,
    logitsError: logits.maxRelError,
    hiddenError: hidden.maxRelError,
    tolerance: DECODE_TOLERANCE,
  };
  const greedy = firstLargest(onDevice.logits);
  const wrong = !logits.ok
    ? `logits: ${logits.message}`
    : !hidden.ok
    ? `hidden state: ${hidden.message}`
    : onDevice.token !== greedy
    ? `argmax gave token ${onDevice.token}, the largest logit is at ${greedy}`
    : null;
  if (wrong !== null) {
    throw new DecodeCheckError(
      `Decode of "${model.name}" (${quant}) does not match its float64 reference at position ` +
        `${pos}, so it was not timed: ${wrong}`,
      check,
    );
  }
  return check;
}

/** The lowest index of the largest value, as the argmax kernel picks it. */
function firstLargest(values: Float32Array): number {
  let at = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[at]!) at = i;
  return at;
}
