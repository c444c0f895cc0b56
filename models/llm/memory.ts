/**
 * How much device memory an LLM needs: weights at a quantization, the KV cache for a context
 * and batch, and the decode's activation buffers; and whether that fits a device.
 *
 * @module
 */
import { BYTES_PER_ELEMENT, type Dtype, QUANT_GROUP_SIZE } from "../../kernels/types.ts";
import type { ModelSpec } from "./presets.ts";

/** Every weight quantization the estimates know. */
export const QUANTS = ["f32", "f16", "int8", "int4"] as const;

/**
 * How weights are stored: IEEE floats, or int8 / packed int4 with one f32 scale per group of
 * {@linkcode QUANT_GROUP_SIZE} weights (the kernels' `q8` / `q4` dtypes).
 *
 * @example
 * ```ts
 * import { type Quant, WEIGHT_DTYPE } from "./memory.ts";
 * const q: Quant = "int4";
 * console.log(WEIGHT_DTYPE[q]); // "q4"
 * ```
 */
export type Quant = typeof QUANTS[number];

/**
 * The kernel dtype whose gemv reads weights stored at each quantization.
 *
 * @example
 * ```ts
 * import { WEIGHT_DTYPE } from "./memory.ts";
 * console.log(WEIGHT_DTYPE.int8); // "q8"
 * ```
 */
export const WEIGHT_DTYPE: Readonly<Record<Quant, Dtype>> = {
  f32: "f32",
  f16: "f16",
  int8: "q8",
  int4: "q4",
};

/**
 * Storage bytes per weight, group scales included: f32 4, f16 2, int8 1 + 4/32, int4 0.5 + 4/32.
 *
 * @example
 * ```ts
 * import { BYTES_PER_WEIGHT } from "./memory.ts";
 * console.log(BYTES_PER_WEIGHT.int4); // 0.625
 * ```
 */
export const BYTES_PER_WEIGHT: Readonly<Record<Quant, number>> = {
  f32: BYTES_PER_ELEMENT.f32,
  f16: BYTES_PER_ELEMENT.f16,
  int8: 1 + 4 / QUANT_GROUP_SIZE,
  int4: 0.5 + 4 / QUANT_GROUP_SIZE,
};

/** Element types the KV cache can be kept in. */
export const KV_DTYPES = ["f32", "f16", "int8"] as const;

/**
 * Element type of the KV cache; int8 carries one f32 scale per group of 32 like the weights.
 *
 * @example
 * ```ts
 * import { defaultKvDtype } from "./memory.ts";
 * console.log(defaultKvDtype("int4")); // "f16"
 * ```
 */
export type KvDtype = typeof KV_DTYPES[number];

/**
 * The kernel dtype whose bandwidth reads a KV cache of each element type.
 *
 * @example
 * ```ts
 * import { KV_READ_DTYPE } from "./memory.ts";
 * console.log(KV_READ_DTYPE.f16); // "f16"
 * ```
 */
export const KV_READ_DTYPE: Readonly<Record<KvDtype, Dtype>> = {
  f32: "f32",
  f16: "f16",
  int8: "q8",
};

/**
 * Bytes per KV cache element.
 *
 * @example
 * ```ts
 * import { BYTES_PER_KV } from "./memory.ts";
 * console.log(BYTES_PER_KV.f16); // 2
 * ```
 */
export const BYTES_PER_KV: Readonly<Record<KvDtype, number>> = {
  f32: BYTES_PER_ELEMENT.f32,
  f16: BYTES_PER_ELEMENT.f16,
  int8: BYTES_PER_ELEMENT.q8,
};

/**
 * The KV cache element type used when none is asked for: f32 for f32 models, f16 otherwise
 * (what llama.cpp-style runtimes default to).
 *
 * @param quant The weight quantization.
 * @returns The KV dtype.
 * @example
 * ```ts
 * import { defaultKvDtype } from "./memory.ts";
 * console.log(defaultKvDtype("f32")); // "f32"
 * ```
 */
export function defaultKvDtype(quant: Quant): KvDtype {
  return quant === "f32" ? "f32" : "f16";
}

/**
 * Bytes per activation element: f16 models run f16 kernels end to end, every other quantization
 * keeps activations and accumulation in f32 (the `q8`/`q4` gemv contract).
 *
 * @param quant The weight quantization.
 * @returns 2 or 4.
 * @example
 * ```ts
 * import { activationBytes } from "./memory.ts";
 * console.log(activationBytes("int4")); // 4
 * ```
 */
export function activationBytes(quant: Quant): number {
  return quant === "f16" ? BYTES_PER_ELEMENT.f16 : BYTES_PER_ELEMENT.f32;
}

/**
 * Checks that a value is a positive integer.
 *
 * @param what The option's name, for the message.
 * @param value The value.
 * @returns The value.
 * @throws {RangeError} when it is not a positive integer.
 * @example
 * ```ts
 * import { positiveInteger } from "./memory.ts";
 * console.log(positiveInteger("batch", 4)); // 4
 * ```
 */
export function positiveInteger(what: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`"${what}" must be a positive integer, got ${value}; pass e.g. 1`);
  }
  return value;
}

/**
 * Checks a quantization name, e.g. one read from the command line.
 *
 * @param value The name.
 * @returns The quantization.
 * @throws {RangeError} listing the known quantizations.
 * @example
 * ```ts
 * import { parseQuant } from "./memory.ts";
 * console.log(parseQuant("int8")); // "int8"
 * ```
 */
export function parseQuant(value: string): Quant {
  const quant = QUANTS.find((q) => q === value);
  if (!quant) {
    throw new RangeError(`Unknown quantization "${value}": use one of ${QUANTS.join(", ")}`);
  }
  return quant;
}

/**
 * The decode's activation buffers for one sequence, in elements. The decode allocates each once
 * and reuses it in every layer, so the working set is their sum (an upper bound on the live set
 * at any instant):
 *
 * - `x` residual stream, `xn` normed copy, `out` projection output (o and down): hidden each;
 * - `q` queries and `attn` attention output: heads × headDim each; `k` keys before RoPE writes
 *   them to the cache: kvHeads × headDim (values are written straight into the cache);
 * - `scores`: heads × context (the whole context's attention scores);
 * - `gate`, `up`: intermediate each (SiLU(gate)·up is written back into `gate`);
 * - `logits`: vocab, always f32 (kept apart because it is not per layer).
 *
 * @param model The model.
 * @param context Tokens attended to.
 * @returns Element counts per buffer.
 * @example
 * ```ts
 * import { activationBuffers } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * console.log(activationBuffers(getPreset("llama-3-8b"), 4096).scores); // 131072
 * ```
 */
export function activationBuffers(model: ModelSpec, context: number): Readonly<{
  x: number;
  xn: number;
  q: number;
  k: number;
  scores: number;
  attn: number;
  out: number;
  gate: number;
  up: number;
  logits: number;
}> {
  return {
    x: model.hidden,
    xn: model.hidden,
    q: model.heads * model.headDim,
    k: model.kvHeads * model.headDim,
    scores: model.heads * context,
    attn: model.heads * model.headDim,
    out: model.hidden,
    gate: model.intermediate,
    up: model.intermediate,
    logits: model.vocab,
  };
}

/**
 * Bytes of the KV cache: context × layers × kvHeads × headDim × 2 (keys and values) × bytes ×
 * batch.
 *
 * @param model The model.
 * @param kvDtype The cache's element type.
 * @param context Tokens cached per sequence.
 * @param batch Sequences.
 * @param layers Layers held (all of them unless pipeline-sharded).
 * @param kvHeads KV heads held per layer (all of them unless tensor-sharded).
 * @returns Bytes, rounded up.
 * @example
 * ```ts
 * import { kvCacheBytes } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * console.log(kvCacheBytes(getPreset("llama-3-8b"), "f16", 4096, 1)); // 536870912
 * ```
 */
export function kvCacheBytes(
  model: ModelSpec,
  kvDtype: KvDtype,
  context: number,
  batch: number,
  layers: number = model.layers,
  kvHeads: number = model.kvHeads,
): number {
  return Math.ceil(context * layers * kvHeads * model.headDim * 2 * BYTES_PER_KV[kvDtype] * batch);
}

/**
 * Bytes of the activation buffers (see {@linkcode activationBuffers}): the per-layer buffers at
 * the quantization's activation width × batch, plus logits vocab × batch × 4.
 *
 * @param model The model.
 * @param quant The weight quantization (sets the activation width).
 * @param context Tokens attended to.
 * @param batch Sequences.
 * @returns Bytes.
 * @example
 * ```ts
 * import { activationsBytes } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * console.log(activationsBytes(getPreset("llama-3-8b"), "int4", 4096, 1)); // 1238016
 * ```
 */
export function activationsBytes(
  model: ModelSpec,
  quant: Quant,
  context: number,
  batch: number,
): number {
  const { logits, ...perLayer } = activationBuffers(model, context);
  const perToken = Object.values(perLayer).reduce((a, b) => a + b, 0);
  return perToken * activationBytes(quant) * batch + logits * batch * BYTES_PER_ELEMENT.f32;
}

/**
 * Options of {@linkcode memoryBreakdown}.
 *
 * @example
 * ```ts
 * import type { MemoryOptions } from "./memory.ts";
 * const o: MemoryOptions = { context: 4096, batch: 1, kvDtype: "f16" };
 * ```
 */
export interface MemoryOptions {
  /** Tokens per sequence the KV cache holds. */
  readonly context: number;
  /** Sequences decoded together. */
  readonly batch: number;
  /** KV cache element type; {@linkcode defaultKvDtype} when absent. */
  readonly kvDtype?: KvDtype;
}

/**
 * Memory one device needs to decode a model, by part.
 *
 * @example
 * ```ts
 * import { memoryBreakdown } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * const m = memoryBreakdown(getPreset("tiny-16m"), "f32", { context: 256, batch: 1 });
 * console.log(m.totalBytes > m.weightsBytes); // true
 * ```
 */
export interface MemoryBreakdown {
  /** Model name. */
  readonly model: string;
  /** Weight quantisation. */
  readonly quant: Quant;
  /** KV cache dtype. */
  readonly kvDtype: KvDtype;
  /** KV cache length, tokens. */
  readonly context: number;
  /** Sequences decoded together. */
  readonly batch: number;
  /** Parameters held. */
  readonly params: number;
  /** params × bytes per weight, rounded up. */
  readonly weightsBytes: number;
  /** See {@linkcode kvCacheBytes}. */
  readonly kvCacheBytes: number;
  /** See {@linkcode activationsBytes}. */
  readonly activationsBytes: number;
  /** The sum. */
  readonly totalBytes: number;
}

/**
 * The part of a model one device holds: its parameters, and the layers and KV heads whose cache
 * it keeps. The whole model by default; a shard's slice when sharded.
 *
 * @example
 * ```ts
 * import type { HeldPart } from "./memory.ts";
 * const half: HeldPart = { params: 4e9, layers: 16, kvHeads: 8 };
 * ```
 */
export interface HeldPart {
  readonly params: number;
  readonly layers: number;
  readonly kvHeads: number;
}

/**
 * Weights, KV cache and activation memory of a model at a quantization, context and batch.
 * Every parameter (norm gains too) is counted at the quantization's bytes per weight.
 *
 * @param model The model.
 * @param quant The weight quantization.
 * @param opts Context, batch and KV dtype.
 * @param held What the device holds (the whole model by default; a shard's slice).
 * @returns The breakdown.
 * @throws {RangeError} when context or batch is not a positive integer.
 * @example
 * ```ts
 * import { memoryBreakdown } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * const m = memoryBreakdown(getPreset("llama-3-8b"), "int4", { context: 4096, batch: 1 });
 * console.log(m.weightsBytes, m.kvCacheBytes); // 5018913280 536870912
 * ```
 */
export function memoryBreakdown(
  model: ModelSpec,
  quant: Quant,
  opts: MemoryOptions,
  held: HeldPart = { params: model.params, layers: model.layers, kvHeads: model.kvHeads },
): MemoryBreakdown {
  const context = positiveInteger("context", opts.context);
  const batch = positiveInteger("batch", opts.batch);
  const kvDtype = opts.kvDtype ?? defaultKvDtype(quant);
  const weights = Math.ceil(held.params * BYTES_PER_WEIGHT[quant]);
  const kv = kvCacheBytes(model, kvDtype, context, batch, held.layers, held.kvHeads);
  const act = activationsBytes(model, quant, context, batch);
  return {
    model: model.name,
    quant,
    kvDtype,
    context,
    batch,
    params: held.params,
    weightsBytes: weights,
    kvCacheBytes: kv,
    activationsBytes: act,
    totalBytes: weights + kv + act,
  };
}

/**
 * Formats bytes in decimal units with two decimals: GB from 1 GB up, MB from 1 MB, else kB.
 *
 * @param bytes Bytes.
 * @returns e.g. `"5.02 GB"`, `"536.87 MB"`.
 * @example
 * ```ts
 * import { formatBytes } from "./memory.ts";
 * console.log(formatBytes(5018913280), formatBytes(1238016)); // "5.02 GB" "1.24 MB"
 * ```
 */
export function formatBytes(bytes: number): string {
  const abs = Math.abs(bytes);
  if (abs >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  if (abs >= 1e6) return `${(bytes / 1e6).toFixed(2)} MB`;
  return `${(bytes / 1e3).toFixed(2)} kB`;
}

/**
 * Whether a breakdown fits a device, and if not, which part overflows and by how much.
 *
 * @example
 * ```ts
 * import { fitCheck, memoryBreakdown } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * const f = fitCheck(memoryBreakdown(getPreset("tiny-16m"), "f32", { context: 64, batch: 1 }), 1e9);
 * console.log(f.fits); // true
 * ```
 */
export interface FitCheck {
  /** True when the breakdown fits the device. */
  readonly fits: boolean;
  /** Memory the device can give the model, bytes. */
  readonly deviceBytes: number;
  /** Memory the breakdown needs, bytes. */
  readonly totalBytes: number;
  /** deviceBytes − totalBytes: negative when it does not fit. */
  readonly headroomBytes: number;
  /** The first part, in the order weights → KV cache → activations, whose running sum overflows; null when it fits. */
  readonly limitedBy: "weights" | "kv-cache" | "activations" | null;
  /** One sentence for people. */
  readonly message: string;
}

/**
 * Checks a memory breakdown against a device's memory.
 *
 * @param breakdown From {@linkcode memoryBreakdown}.
 * @param deviceBytes The device's memory in bytes.
 * @returns Whether it fits and, if not, what overflows and by how much.
 * @throws {RangeError} when deviceBytes is not a positive number.
 * @example
 * ```ts
 * import { fitCheck, memoryBreakdown } from "./memory.ts";
 * import { getPreset } from "./presets.ts";
 * const m = memoryBreakdown(getPreset("llama-3-8b"), "int4", { context: 4096, batch: 1 });
 * console.log(fitCheck(m, 4e9).message);
 * // "Does not fit: weights alone (5.02 GB) exceed the device's 4.00 GB by 1.02 GB"
 * ```
 */
export function fitCheck(breakdown: MemoryBreakdown, deviceBytes: number): FitCheck {
  if (!(deviceBytes > 0) || !Number.isFinite(deviceBytes)) {
    throw new RangeError(`Device memory must be a positive number of bytes, got ${deviceBytes}`);
  }
  const { weightsBytes: w, kvCacheBytes: kv, activationsBytes: act, totalBytes } = breakdown;
  const base = { deviceBytes, totalBytes, headroomBytes: deviceBytes - totalBytes };
  const dev = formatBytes(deviceBytes);
  const kvText = `KV cache for context ${breakdown.context} × batch ${breakdown.batch}`;
  if (w > deviceBytes) {
    return {
      ...base,
      fits: false,
      limitedBy: "weights",
      message: `Does not fit: weights alone (${formatBytes(w)}) exceed the device's ${dev} by ${
        formatBytes(w - deviceBytes)
      }`,
    };
  }
  if (w + kv > deviceBytes) {
    return {
      ...base,
      fits: false,
      limitedBy: "kv-cache",
      message:
        `Does not fit: weights (${formatBytes(w)}) + ${kvText} (${formatBytes(kv)}) exceed the ` +
        `device's ${dev} by ${formatBytes(w + kv - deviceBytes)}; shorten the context or batch`,
    };
  }
  if (totalBytes > deviceBytes) {
    return {
      ...base,
      fits: false,
      limitedBy: "activations",
      message: `Does not fit: weights + ${kvText} + activations (${formatBytes(act)}) exceed the ` +
        `device's ${dev} by ${formatBytes(totalBytes - deviceBytes)}`,
    };
  }
  return {
    ...base,
    fits: true,
    limitedBy: null,
    message: `Fits: ${formatBytes(totalBytes)} of the device's ${dev} (${
      formatBytes(deviceBytes - totalBytes)
    } free)`,
  };
}
