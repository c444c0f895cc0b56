/**
 * The kernel sequence of one decode step, by name. The estimates charge one dispatch per entry
 * and the synthetic WebGPU decode launches exactly these, in this order, so the two agree on
 * what a token costs in launches.
 *
 * @module
 */

/**
 * One kernel launch of the decode.
 *
 * @example
 * ```ts
 * import type { DecodeKernel } from "./decode_kernels.ts";
 * const k: DecodeKernel = { name: "attn_norm", kind: "norm", summary: "RMSNorm of x into xn" };
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
}

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
  { name: "attn_norm", kind: "norm", summary: "RMSNorm of x into xn" },
  { name: "q_proj", kind: "gemv", summary: "xn · Wq into q" },
  { name: "k_proj", kind: "gemv", summary: "xn · Wk into k" },
  { name: "v_proj", kind: "gemv", summary: "xn · Wv straight into the V cache at the position" },
  {
    name: "rope",
    kind: "rope",
    summary: "rotates q in place and k into the K cache at the position",
  },
  { name: "attn_scores", kind: "attention", summary: "q · K cache over the context into scores" },
  { name: "softmax", kind: "softmax", summary: "softmax of scores per head, in place" },
  { name: "attn_values", kind: "attention", summary: "scores · V cache into attn" },
  { name: "o_proj", kind: "gemv", summary: "attn · Wo into out" },
  { name: "attn_residual", kind: "elementwise", summary: "x += out" },
  { name: "mlp_norm", kind: "norm", summary: "RMSNorm of x into xn" },
  { name: "gate_proj", kind: "gemv", summary: "xn · Wgate into gate" },
  { name: "up_proj", kind: "gemv", summary: "xn · Wup into up" },
  { name: "silu_mul", kind: "elementwise", summary: "gate = SiLU(gate) · up" },
  { name: "down_proj", kind: "gemv", summary: "gate · Wdown into out" },
  { name: "mlp_residual", kind: "elementwise", summary: "x += out" },
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
  },
  { name: "final_norm", kind: "norm", summary: "RMSNorm of x into xn", stage: "last" },
  { name: "lm_head", kind: "gemv", summary: "xn · Whead into logits", stage: "last" },
  {
    name: "argmax",
    kind: "reduction",
    summary: "index of the largest logit, the next token id",
    stage: "last",
  },
];
