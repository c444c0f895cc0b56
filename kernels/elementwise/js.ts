/**
 * Scalar TypeScript elementwise kernels: one plain loop over typed arrays, which is what a
 * careful JavaScript caller would write.
 *
 * @module
 */
import type { JsImpl } from "../types.ts";
import type { ElementwiseKind } from "./_kind.ts";
import { outOfLine } from "../_out_of_line.ts";

type Body = (a: Float32Array, b: Float32Array, c: Float32Array, out: Float32Array) => void;

const BODIES: Readonly<Record<ElementwiseKind, Body>> = {
  add: (a, b, _c, out) => {
    for (let i = 0; i < out.length; i++) out[i] = a[i]! + b[i]!;
  },
  mul: (a, b, _c, out) => {
    for (let i = 0; i < out.length; i++) out[i] = a[i]! * b[i]!;
  },
  // Math.fround keeps a·b rounded to f32 before + c, as the WASM and WGSL bodies compute it.
  fma: (a, b, c, out) => {
    for (let i = 0; i < out.length; i++) out[i] = Math.fround(a[i]! * b[i]!) + c[i]!;
  },
};

/**
 * The scalar implementation of an elementwise op (f32 only).
 *
 * @param kind Which elementwise function.
 * @returns Its JavaScript implementation, one variant.
 * @example
 * ```ts
 * import { elementwiseJs } from "./js.ts";
 * const out = new Float32Array(2);
 * elementwiseJs("add").run([new Float32Array([1, 2]), new Float32Array([3, 4])], out, { n: 2 }, {});
 * console.log(out); // Float32Array(2) [ 4, 6 ]
 * ```
 */
export function elementwiseJs(kind: ElementwiseKind): JsImpl {
  const body = BODIES[kind];
  return {
    variants: [{}],
    run: (ins, out) => {
      const [a, b, c] = ins as readonly Float32Array[];
      outOfLine(body, a!, b!, c ?? a!, out);
    },
  };
}
