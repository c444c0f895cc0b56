/**
 * Decoder-only transformer architectures: the {@linkcode ModelSpec} shape, parameter counts
 * derived from it, built-in presets from public architecture figures, and JSON loading.
 *
 * Every preset's `params` is computed from its architecture, never typed in, so a wrong layer
 * size shows up as a wrong parameter count in `tests/llm_memory_test.ts`.
 *
 * @module
 */
// Library code imports npm packages by full specifier, so it works without this deno.json.
// deno-lint-ignore no-import-prefix
import { z } from "npm:zod@4.6.7";

/**
 * The architecture of a Llama-style decoder: RMSNorm, grouped-query attention with RoPE, gated
 * (SwiGLU) MLP, optional tied embeddings.
 *
 * @example
 * ```ts
 * import { getPreset } from "./presets.ts";
 * const m = getPreset("llama-3-8b");
 * console.log(m.kvHeads, m.params); // 8 8030261248
 * ```
 */
export interface ModelSpec {
  /** Name used on the command line and in reports. */
  readonly name: string;
  /** Parameter count, computed from the architecture by {@linkcode countParams}. */
  readonly params: number;
  /** Transformer blocks. */
  readonly layers: number;
  /** Width of the residual stream. */
  readonly hidden: number;
  /** Width of the MLP's gate and up projections. */
  readonly intermediate: number;
  /** Query heads. */
  readonly heads: number;
  /** Key/value heads (grouped-query attention); divides `heads`. */
  readonly kvHeads: number;
  /** Width of one head. */
  readonly headDim: number;
  /** Vocabulary size (rows of the embedding table, columns of the logits). */
  readonly vocab: number;
  /** Whether the lm head reuses the embedding table instead of holding its own matrix. */
  readonly tiedEmbeddings: boolean;
  /** Whether the q, k and v projections carry biases (Qwen2 does, Llama and Mistral do not). */
  readonly qkvBias: boolean;
}

/**
 * A {@linkcode ModelSpec} before its parameter count is derived.
 *
 * @example
 * ```ts
 * import type { Architecture } from "./presets.ts";
 * const a: Architecture = {
 *   name: "toy", layers: 2, hidden: 64, intermediate: 128, heads: 4, kvHeads: 2, headDim: 16,
 *   vocab: 256, tiedEmbeddings: true, qkvBias: false,
 * };
 * ```
 */
export type Architecture = Omit<ModelSpec, "params">;

/**
 * Parameters of a model by role, the unit sharding and weight streaming work in.
 *
 * @example
 * ```ts
 * import { getPreset, paramBreakdown } from "./presets.ts";
 * console.log(paramBreakdown(getPreset("llama-3-8b")).perLayer); // 218112000
 * ```
 */
export interface ParamBreakdown {
  /** The embedding table, vocab × hidden. */
  readonly embedding: number;
  /** Attention matrices of one layer (q, k, v, o) and their biases. */
  readonly attentionPerLayer: number;
  /** MLP matrices of one layer (gate, up, down). */
  readonly mlpPerLayer: number;
  /** RMSNorm gains of one layer (before attention and before the MLP). */
  readonly normsPerLayer: number;
  /** Everything in one layer: attention + MLP + norms. */
  readonly perLayer: number;
  /** The final RMSNorm's gains. */
  readonly finalNorm: number;
  /** The lm head's own matrix, 0 when tied to the embedding table. */
  readonly lmHead: number;
  /** The whole model. */
  readonly total: number;
}

/**
 * Counts a model's parameters by role.
 *
 * @param arch The architecture.
 * @returns Parameters per role and in total.
 * @example
 * ```ts
 * import { getPreset, paramBreakdown } from "./presets.ts";
 * console.log(paramBreakdown(getPreset("qwen2.5-0.5b")).lmHead); // 0 (tied)
 * ```
 */
export function paramBreakdown(arch: Architecture): ParamBreakdown {
  const q = arch.heads * arch.headDim;
  const kv = arch.kvHeads * arch.headDim;
  const embedding = arch.vocab * arch.hidden;
  const attentionPerLayer = arch.hidden * q + 2 * arch.hidden * kv + q * arch.hidden +
    (arch.qkvBias ? q + 2 * kv : 0);
  const mlpPerLayer = 3 * arch.hidden * arch.intermediate;
  const normsPerLayer = 2 * arch.hidden;
  const perLayer = attentionPerLayer + mlpPerLayer + normsPerLayer;
  const finalNorm = arch.hidden;
  const lmHead = arch.tiedEmbeddings ? 0 : arch.vocab * arch.hidden;
  return {
    embedding,
    attentionPerLayer,
    mlpPerLayer,
    normsPerLayer,
    perLayer,
    finalNorm,
    lmHead,
    total: embedding + arch.layers * perLayer + finalNorm + lmHead,
  };
}

/**
 * Counts a model's parameters: embedding, per layer q/k/v/o (+ biases), gate/up/down and two
 * norms, the final norm, and the lm head unless tied.
 *
 * @param arch The architecture.
 * @returns The parameter count.
 * @example
 * ```ts
 * import { countParams, getPreset } from "./presets.ts";
 * console.log(countParams(getPreset("llama-2-7b"))); // 6738415616
 * ```
 */
export function countParams(arch: Architecture): number {
  return paramBreakdown(arch).total;
}

/**
 * Completes an architecture into a {@linkcode ModelSpec} by counting its parameters.
 *
 * @param arch The architecture.
 * @returns The model, `params` filled in.
 * @throws {RangeError} when `kvHeads` does not divide `heads`.
 * @example
 * ```ts
 * import { defineModel } from "./presets.ts";
 * const m = defineModel({
 *   name: "toy", layers: 2, hidden: 64, intermediate: 128, heads: 4, kvHeads: 2, headDim: 16,
 *   vocab: 256, tiedEmbeddings: true, qkvBias: false,
 * });
 * console.log(m.params); // 90432
 * ```
 */
export function defineModel(arch: Architecture): ModelSpec {
  if (arch.heads % arch.kvHeads !== 0) {
    throw new RangeError(
      `Model "${arch.name}": "kvHeads" (${arch.kvHeads}) must divide "heads" (${arch.heads}); ` +
        `check the architecture's key/value head count`,
    );
  }
  return Object.freeze({ ...arch, params: countParams(arch) });
}

const ARCHITECTURES: readonly Architecture[] = [
  {
    name: "llama-3-8b",
    layers: 32,
    hidden: 4096,
    intermediate: 14336,
    heads: 32,
    kvHeads: 8,
    headDim: 128,
    vocab: 128256,
    tiedEmbeddings: false,
    qkvBias: false,
  },
  {
    name: "llama-2-7b",
    layers: 32,
    hidden: 4096,
    intermediate: 11008,
    heads: 32,
    kvHeads: 32,
    headDim: 128,
    vocab: 32000,
    tiedEmbeddings: false,
    qkvBias: false,
  },
  {
    name: "mistral-7b",
    layers: 32,
    hidden: 4096,
    intermediate: 14336,
    heads: 32,
    kvHeads: 8,
    headDim: 128,
    vocab: 32000,
    tiedEmbeddings: false,
    qkvBias: false,
  },
  {
    name: "qwen2.5-0.5b",
    layers: 24,
    hidden: 896,
    intermediate: 4864,
    heads: 14,
    kvHeads: 2,
    headDim: 64,
    vocab: 151936,
    tiedEmbeddings: true,
    qkvBias: true,
  },
  // The tiny models exist for the synthetic WebGPU decode: ~65 MB and ~250 MB of f32 weights,
  // each matrix far below the 128 MiB storage-binding limit, a token in well under a second on
  // a 2-core software rasteriser.
  {
    name: "tiny-16m",
    layers: 4,
    hidden: 512,
    intermediate: 1536,
    heads: 8,
    kvHeads: 2,
    headDim: 64,
    vocab: 4096,
    tiedEmbeddings: false,
    qkvBias: false,
  },
  {
    name: "tiny-64m",
    layers: 8,
    hidden: 768,
    intermediate: 2048,
    heads: 12,
    kvHeads: 4,
    headDim: 64,
    vocab: 8192,
    tiedEmbeddings: false,
    qkvBias: false,
  },
];

/**
 * The built-in models by name: Llama 3 8B, Llama 2 7B, Mistral 7B, Qwen2.5 0.5B and two tiny
 * test models (`tiny-16m`, `tiny-64m`) for the synthetic decode.
 *
 * @example
 * ```ts
 * import { PRESETS } from "./presets.ts";
 * console.log(Object.keys(PRESETS).includes("mistral-7b")); // true
 * ```
 */
export const PRESETS: Readonly<Record<string, ModelSpec>> = Object.freeze(
  Object.fromEntries(ARCHITECTURES.map((a) => [a.name, defineModel(a)])),
);

/**
 * Looks a built-in model up by name.
 *
 * @param name The preset's name, e.g. `"llama-3-8b"`.
 * @returns The model.
 * @throws {RangeError} listing the presets when there is none of that name.
 * @example
 * ```ts
 * import { getPreset } from "./presets.ts";
 * console.log(getPreset("tiny-16m").layers); // 4
 * ```
 */
export function getPreset(name: string): ModelSpec {
  const model = Object.hasOwn(PRESETS, name) ? PRESETS[name] : undefined;
  if (!model) {
    throw new RangeError(
      `Unknown model "${name}": presets are ${Object.keys(PRESETS).join(", ")}; ` +
        `or load a JSON architecture with modelFromJson()`,
    );
  }
  return model;
}

const count = z.number().int().positive();

const ModelJson = z.object({
  name: z.string().min(1),
  params: count.optional(),
  layers: count,
  hidden: count,
  intermediate: count,
  heads: count,
  kvHeads: count,
  headDim: count,
  vocab: count,
  tiedEmbeddings: z.boolean(),
  qkvBias: z.boolean().default(false),
});

/** How far a stated `params` may be from the count the architecture gives (published figures are rounded). */
const PARAMS_TOLERANCE = 0.01;

/**
 * Reads a model architecture from parsed JSON. `qkvBias` defaults to false; `params`, when
 * present, is checked against the count the architecture gives (within 1 %) and then replaced
 * by it.
 *
 * @param json Parsed JSON, e.g. `JSON.parse(await Deno.readTextFile("model.json"))`.
 * @returns The model.
 * @throws {TypeError} naming the first invalid field.
 * @throws {RangeError} when `kvHeads` does not divide `heads` or `params` disagrees with the architecture.
 * @example
 * ```ts
 * import { modelFromJson } from "./presets.ts";
 * const m = modelFromJson({
 *   name: "toy", layers: 2, hidden: 64, intermediate: 128, heads: 4, kvHeads: 2, headDim: 16,
 *   vocab: 256, tiedEmbeddings: true,
 * });
 * console.log(m.params); // 90432
 * ```
 */
export function modelFromJson(json: unknown): ModelSpec {
  const parsed = ModelJson.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue && issue.path.length > 0 ? issue.path.join(".") : "(root)";
    throw new TypeError(
      `Invalid model JSON: field "${field}": ${issue?.message ?? "invalid"}; ` +
        `expected name, layers, hidden, intermediate, heads, kvHeads, headDim, vocab, tiedEmbeddings`,
    );
  }
  const { params, ...arch } = parsed.data;
  const model = defineModel(arch);
  if (params !== undefined && Math.abs(params - model.params) > PARAMS_TOLERANCE * model.params) {
    throw new RangeError(
      `Model "${model.name}": "params" is ${params} but the architecture gives ${model.params}; ` +
        `fix the layer sizes or drop "params"`,
    );
  }
  return model;
}
