/**
 * The elementwise kinds and their operand counts, shared by the op (`mod.ts`) and its bodies
 * (`js.ts`, `wasm.ts`, `webgpu.ts`).
 *
 * @module
 */

/**
 * Which elementwise function: `add`, `mul` or `fma`.
 *
 * @example
 * ```ts
 * import { ELEMENTWISE_ARITY, type ElementwiseKind } from "./_kind.ts";
 * const k: ElementwiseKind = "fma";
 * console.log(ELEMENTWISE_ARITY[k]); // 3
 * ```
 */
export type ElementwiseKind = "add" | "mul" | "fma";

/**
 * Number of operands of each elementwise kind.
 *
 * @example
 * ```ts
 * import { ELEMENTWISE_ARITY } from "./_kind.ts";
 * console.log(ELEMENTWISE_ARITY.add); // 2
 * ```
 */
export const ELEMENTWISE_ARITY: Readonly<Record<ElementwiseKind, number>> = {
  add: 2,
  mul: 2,
  fma: 3,
};
