/**
 * The kernel sequence of one decode step, by name, with the work each kernel does at a model's
 * dimensions. The synthetic WebGPU decode launches exactly these, in this order, at the shapes
 * {@linkcode DecodeKernel.work} gives, and the estimate prices the same list, so the two cannot
 * disagree on what a token launches.
 *
 * @module
 */
import type { Shape } from "../../kernels/types.ts";

/**
 * The dimensions a device's kernels run at: the model's, or a tensor-parallel slice of them.
 *
 * @example
 * ```ts
 * import type { KernelDims } from "./decode_kernels.ts";
 * const d: KernelDims = {
 *   hidden: 512, heads: 8, kvHeads: 2, headDim: 64, intermediate: 1536, vocab: 4096,
 * };
 * ```
 */
export interface KernelDims {
  readonly hidden: number;
  /** Query heads computed on the device. */
  readonly heads: number;
  /** KV heads cached on the device. */
  readonly kvHeads: number;
  readonly headDim: number;
  /** MLP width on the device. */
  readonly intermediate: number;
  /** Vocabulary rows of the lm head on the device. */
  readonly vocab: number;
}

/**
 * What one launch does, as a catalog op at a shape: the op itself for a projection, else the
 * catalog op closest to it in bytes moved and work done (`standIn` says which and why).
 *
 * @example
 * ```ts
 * import type { KernelWork } from "./decode_kernels.ts";
 * const w: KernelWork = { op: "gemv", shape: { rows: 512, cols: 512 }, reads: "weights", standIn: null };
 * ```
 */
export interface KernelWork {
  /** Catalog op (kernels/catalog.ts) whose cost model prices the launch. */
  readonly op: string;
  /** Its shape in that op's dims. */
  readonly shape: Shape;
  /** The operand that sets the dtype: the weights, the KV cache or the activations. */
  readonly reads: "weights" | "kv" | "activations";
  /** Why a different op stands in for this kernel; null when the kernel is the op. */
  readonly standIn: string | null;
}

/**
 * One kernel launch of the decode.
 *
 * @example
 * ```ts
 * import type { DecodeKernel } from "./decode_kernels.ts";
 * const k: DecodeKernel = {
 *   name: "attn_residual", kind: "elementwise", summary: "x += out",
 *   work: (d, _n, batch) => ({
 *     op: "add", shape: { n: d.hidden * batch }, reads: "activations", standIn: null,
 *   }),
 * };
 * ```
 */
export interface DecodeKernel {
  /** Stable name, used in the synthetic decode's pipeline keys and in reports. */
  readonly name: string;
  /** What sort of work it is. */
  readonly kind:
    | "norm"
    | "gemv"
    | "rope"
    | "attention"
    | "softmax"
    | "elementwise"
    | "lookup"
    | "reduction";
  /** What it reads and writes (buffers as named by `activationBuffers()` in memory.ts). */
  readonly summary: string;
  /**
   * The launch's work for `batch` sequences that attend to `attended` cached positions; a
   * projection's shape is the matrix the decode allocates.
   */
  readonly work: (d: KernelDims, attended: number, batch: number) => KernelWork;
}

const gemv = (rows: number, cols: number): KernelWork => ({
  op: "gemv",
  shape: { rows, cols },
  reads: "weights",
  standIn: null,
});

/** RMSNorm is a sum of squares then a scale: a dot of the vector with itself is its reduction. */
const norm = (d: KernelDims, _n: number, batch: number): KernelWork => ({
  op: "dot",
  shape: { n: d.hidden * batch },
  reads: "activations",
  standIn: "dot (the sum of squares over hidden; the scale that follows is elementwise)",
});

const residual = (d: KernelDims, _n: number, batch: number): KernelWork => ({
  op: "add",
  shape: { n: d.hidden * batch },
  reads: "activations",
  standIn: null,
});

/**
 * The kernels of one transformer layer, in launch order (16): attention block then MLP block.
 * K and V are projected separately (grouped-query attention makes them narrower than Q).
 *
 * @example
 * ```ts
 * import { KERNELS_PER_LAYER } from "./decode_kernels.ts";
 * console.log(KERNELS_PER_LAYER.length); // 16
 * ```
 */
export const KERNELS_PER_LAYER: readonly DecodeKernel[] = [
  { name: "attn_norm", kind: "norm", summary: "RMSNorm of x into xn", work: norm },
  {
    name: "q_proj",
    kind: "gemv",
    summary: "xn · Wq into q",
    work: (d) => gemv(d.heads * d.headDim, d.hidden),
  },
  {
    name: "k_proj",
    kind: "gemv",
    summary: "xn · Wk into k",
    work: (d) => gemv(d.kvHeads * d.headDim, d.hidden),
  },
  {
    name: "v_proj",
    kind: "gemv",
    summary: "xn · Wv straight into the V cache at the position",
    work: (d) => gemv(d.kvHeads * d.headDim, d.hidden),
  },
  {
    name: "rope",
    kind: "rope",
    summary: "rotates q in place and k into the K cache at the position",
    work: (d, _n, batch) => ({
      op: "mul",
      shape: { n: (d.heads + d.kvHeads) * d.headDim * batch },
      reads: "activations",
      standIn: "mul (one pass over q and k, a few FLOPs per element)",
    }),
  },
  {
    name: "attn_scores",
    kind: "attention",
    summary: "q · K cache over the context into scores",
    work: (d, n, batch) => ({
      op: "gemv",
      shape: { rows: n * batch, cols: d.kvHeads * d.headDim },
      reads: "kv",
      standIn: "gemv (the K cache, attended positions × KV width, read once against q)",
    }),
  },
  {
    name: "softmax",
    kind: "softmax",
    summary: "softmax of scores per head, in place",
    work: (d, n, batch) => ({
      op: "softmax",
      shape: { rows: d.heads * batch, cols: n },
      reads: "activations",
      standIn: null,
    }),
  },
  {
    name: "attn_values",
    kind: "attention",
    summary: "scores · V cache into attn",
    work: (d, n, batch) => ({
      op: "gemv",
      shape: { rows: d.kvHeads * d.headDim * batch, cols: n },
      reads: "kv",
      standIn: "gemv (the V cache, KV width × attended positions, read once against the scores)",
    }),
  },
  {
    name: "o_proj",
    kind: "gemv",
    summary: "attn · Wo into out",
    work: (d) => gemv(d.hidden, d.heads * d.headDim),
  },
  { name: "attn_residual", kind: "elementwise", summary: "x += out", work: residual },
  { name: "mlp_norm", kind: "norm", summary: "RMSNorm of x into xn", work: norm },
  {
    name: "gate_proj",
    kind: "gemv",
    summary: "xn · Wgate into gate",
    work: (d) => gemv(d.intermediate, d.hidden),
  },
  {
    name: "up_proj",
    kind: "gemv",
    summary: "xn · Wup into up",
    work: (d) => gemv(d.intermediate, d.hidden),
  },
  {
    name: "silu_mul",
    kind: "elementwise",
    summary: "gate = SiLU(gate) · up",
    work: (d, _n, batch) => ({
      op: "mul",
      shape: { n: d.intermediate * batch },
      reads: "activations",
      standIn: "mul (gate · up; the SiLU adds a few FLOPs per element)",
    }),
  },
  {
    name: "down_proj",
    kind: "gemv",
    summary: "gate · Wdown into out",
    work: (d) => gemv(d.hidden, d.intermediate),
  },
  { name: "mlp_residual", kind: "elementwise", summary: "x += out", work: residual },
];

/**
 * The kernels outside the layers, with where they run when the model is split into pipeline
 * stages: the embedding lookup on the first stage, the head on the last. The next token is
 * chosen on the device (greedy argmax), so only its id is read back.
 *
 * @example
 * ```ts
 * import { MODEL_KERNELS } from "./decode_kernels.ts";
 * console.log(MODEL_KERNELS.map((k) => k.name).join(",")); // "embed,final_norm,lm_head,argmax"
 * ```
 */
export const MODEL_KERNELS: readonly (DecodeKernel & { readonly stage: "first" | "last" })[] = [
  {
    name: "embed",
    kind: "lookup",
    summary: "copies the token's embedding row into x",
    stage: "first",
    work: (d, _n, batch) => ({
      op: "add",
      shape: { n: d.hidden * batch },
      reads: "activations",
      standIn: "add (one row of hidden values read and written)",
    }),
  },
  {
    name: "final_norm",
    kind: "norm",
    summary: "RMSNorm of x into xn",
    stage: "last",
    work: norm,
  },
  {
    name: "lm_head",
    kind: "gemv",
    summary: "xn · Whead into logits",
    stage: "last",
    work: (d) => gemv(d.vocab, d.hidden),
  },
  {
    name: "argmax",
    kind: "reduction",
    summary: "index of the largest logit, the next token id",
    stage: "last",
    work: (d, _n, batch) => ({
      op: "sum",
      shape: { n: d.vocab * batch },
      reads: "activations",
      standIn: "sum (one reduction over the logits)",
    }),
  },
];

/**
 * The dimensions one device's kernels run at: the whole model, or one of `ways` tensor-parallel
 * slices (query and KV heads, MLP width and vocabulary split; KV heads replicated when fewer
 * than the devices).
 *
 * @param model The model's dimensions.
 * @param ways Tensor-parallel devices; 1 for an unsplit model or a pipeline stage.
 * @returns The dimensions the device's kernels see.
 * @example
 * ```ts
 * import { kernelDims } from "./decode_kernels.ts";
 * import { getPreset } from "./presets.ts";
 * console.log(kernelDims(getPreset("llama-3-8b"), 2).heads); // 16
 * ```
 */
export function kernelDims(model: KernelDims, ways = 1): KernelDims {
  return {
    hidden: model.hidden,
    heads: model.heads / ways,
    kvHeads: Math.ceil(model.kvHeads / ways),
    headDim: model.headDim,
    intermediate: Math.ceil(model.intermediate / ways),
    vocab: Math.ceil(model.vocab / ways),
  };
}
