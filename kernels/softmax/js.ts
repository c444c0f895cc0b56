/**
 * Scalar TypeScript softmax, row by row: find the max, then either store each `exp` and scale
 * the row in a third pass, or (`recompute`) only sum the exps and compute them again while
 * writing, trading one memory pass for a second `exp` per element.
 *
 * @module
 */
import type { JsImpl, Variant } from "../types.ts";
import { loopBound } from "../_loop_bounds.ts";
import { outOfLine } from "../_out_of_line.ts";

function recompute(variant: Variant): boolean {
  const r = variant.recompute;
  if (typeof r !== "boolean") {
    throw new RangeError(`Softmax js variant recompute is ${JSON.stringify(r)}: use true or false`);
  }
  return r;
}

function softmaxRows(
  x: Float32Array,
  out: Float32Array,
  rows: number,
  cols: number,
  again: boolean,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    const end = base + cols;
    let max = -Infinity;
    for (let i = base; i < end; i++) if (x[i]! > max) max = x[i]!;
    let total = 0;
    if (again) {
      for (let i = base; i < end; i++) total += Math.exp(x[i]! - max);
      const inv = 1 / total;
      for (let i = base; i < end; i++) out[i] = Math.exp(x[i]! - max) * inv;
    } else {
      for (let i = base; i < end; i++) total += out[i] = Math.exp(x[i]! - max);
      const inv = 1 / total;
      for (let i = base; i < end; i++) out[i]! *= inv;
    }
  }
}

/**
 * The js softmax: variants `{ recompute: false | true }`.
 *
 * @example
 * ```ts
 * import { softmaxJs } from "./js.ts";
 * const out = new Float32Array(2);
 * softmaxJs.run([Float32Array.of(1, 1)], out, { rows: 1, cols: 2 }, { recompute: false });
 * console.log(out); // Float32Array(2) [ 0.5, 0.5 ]
 * ```
 */
export const softmaxJs: JsImpl = {
  variants: [{ recompute: false }, { recompute: true }],
  run: (ins, out, shape, variant) => {
    const x = ins[0];
    if (!(x instanceof Float32Array)) {
      throw new TypeError(`Softmax js needs a Float32Array operand, got ${x}`);
    }
    const rows = loopBound(shape.rows ?? 0);
    const cols = loopBound(shape.cols ?? 0);
    outOfLine(softmaxRows, x, out, rows, cols, recompute(variant));
  },
};
