/**
 * Scalar TypeScript gemv for f32, q8 and q4: one pass over each row with four partial sums, so
 * the JIT sees independent add chains (`unroll: 4`), or the plain loop (`unroll: 1`).
 *
 * Quantized rows are summed group by group in the integers' float values and each group's sum is
 * scaled once, as the WASM and WGSL bodies do.
 *
 * @module
 */
import type { Dtype, HostArray, JsImpl, Shape, Variant } from "../types.ts";
import { QUANT_GROUP_SIZE } from "../types.ts";
import { gemvDims, groupsPerRow, q4RowBytes } from "./_layout.ts";
import { loopBound } from "../_loop_bounds.ts";
import { outOfLine } from "../_out_of_line.ts";

function unrollOf(variant: Variant): 1 | 4 {
  const u = variant.unroll ?? 4;
  if (u !== 1 && u !== 4) {
    throw new RangeError(`gemv js variant unroll is ${JSON.stringify(u)}: use 1 or 4`);
  }
  return u;
}

function f32Rows(w: Float32Array, x: Float32Array, y: Float32Array, cols: number, u: 1 | 4) {
  for (let r = 0; r < y.length; r++) {
    const base = r * cols;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    let c = 0;
    if (u === 4) {
      for (; c + 4 <= cols; c += 4) {
        s0 += w[base + c]! * x[c]!;
        s1 += w[base + c + 1]! * x[c + 1]!;
        s2 += w[base + c + 2]! * x[c + 2]!;
        s3 += w[base + c + 3]! * x[c + 3]!;
      }
    }
    for (; c < cols; c++) s0 += w[base + c]! * x[c]!;
    y[r] = (s0 + s1) + (s2 + s3);
  }
}

function q8Rows(
  w: Int8Array,
  scales: Float32Array,
  x: Float32Array,
  y: Float32Array,
  cols: number,
  u: 1 | 4,
) {
  const groups = groupsPerRow(cols);
  for (let r = 0; r < y.length; r++) {
    let acc = 0;
    for (let g = 0; g < groups; g++) {
      const c0 = g * QUANT_GROUP_SIZE;
      const c1 = Math.min(cols, c0 + QUANT_GROUP_SIZE);
      const base = r * cols;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let c = c0;
      if (u === 4) {
        for (; c + 4 <= c1; c += 4) {
          s0 += w[base + c]! * x[c]!;
          s1 += w[base + c + 1]! * x[c + 1]!;
          s2 += w[base + c + 2]! * x[c + 2]!;
          s3 += w[base + c + 3]! * x[c + 3]!;
        }
      }
      for (; c < c1; c++) s0 += w[base + c]! * x[c]!;
      acc += scales[r * groups + g]! * ((s0 + s1) + (s2 + s3));
    }
    y[r] = acc;
  }
}

function q4Rows(
  w: Uint8Array,
  scales: Float32Array,
  x: Float32Array,
  y: Float32Array,
  cols: number,
  u: 1 | 4,
) {
  const groups = groupsPerRow(cols);
  const rowBytes = q4RowBytes(cols);
  for (let r = 0; r < y.length; r++) {
    let acc = 0;
    for (let g = 0; g < groups; g++) {
      const c0 = g * QUANT_GROUP_SIZE;
      const c1 = Math.min(cols, c0 + QUANT_GROUP_SIZE);
      // c0 is even, so byte i of the row holds columns 2i (low nibble) and 2i + 1 (high).
      const base = r * rowBytes;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let c = c0;
      if (u === 4) {
        for (; c + 4 <= c1; c += 4) {
          const b0 = w[base + (c >> 1)]!;
          const b1 = w[base + (c >> 1) + 1]!;
          s0 += ((b0 & 15) - 8) * x[c]!;
          s1 += ((b0 >> 4) - 8) * x[c + 1]!;
          s2 += ((b1 & 15) - 8) * x[c + 2]!;
          s3 += ((b1 >> 4) - 8) * x[c + 3]!;
        }
      }
      for (; c < c1; c++) {
        const b = w[base + (c >> 1)]!;
        s0 += (((c & 1) === 0 ? b & 15 : b >> 4) - 8) * x[c]!;
      }
      acc += scales[r * groups + g]! * ((s0 + s1) + (s2 + s3));
    }
    y[r] = acc;
  }
}

function operand<T extends HostArray>(
  ins: readonly HostArray[],
  i: number,
  type: { new (n: number): T },
  what: string,
): T {
  const a = ins[i];
  if (!(a instanceof type)) {
    throw new TypeError(`gemv js operand ${i} (${what}) must be a ${type.name}`);
  }
  return a;
}

/**
 * The scalar gemv: y = W·x with W as f32 (`[W, x]`), int8 (`[W, scales, x]`) or packed int4
 * (`[W, scales, x]`), told apart by W's array type. f16 is WebGPU only.
 *
 * @example
 * ```ts
 * import { gemvJs } from "./js.ts";
 * const y = new Float32Array(1);
 * gemvJs.run([new Float32Array([1, 2]), new Float32Array([3, 4])], y, { rows: 1, cols: 2 }, {});
 * console.log(y[0]); // 11
 * ```
 */
export const gemvJs: JsImpl = {
  variants: [{ unroll: 4 }, { unroll: 1 }],
  unsupported: (_shape: Shape, dtype: Dtype) =>
    dtype === "f16" ? "gemv f16 is WebGPU only: use f32, q8 or q4 on the CPU" : null,
  run(ins, out, shape, variant) {
    const { rows } = gemvDims(shape);
    const cols = loopBound(shape.cols!);
    const u = unrollOf(variant);
    const y = out.subarray(0, rows);
    const w = ins[0];
    if (w instanceof Float32Array) {
      outOfLine(f32Rows, w, operand(ins, 1, Float32Array, "x"), y, cols, u);
    } else if (w instanceof Int8Array) {
      const scales = operand(ins, 1, Float32Array, "scales");
      outOfLine(q8Rows, w, scales, operand(ins, 2, Float32Array, "x"), y, cols, u);
    } else if (w instanceof Uint8Array) {
      const scales = operand(ins, 1, Float32Array, "scales");
      outOfLine(q4Rows, w, scales, operand(ins, 2, Float32Array, "x"), y, cols, u);
    } else {
      throw new TypeError(
        "gemv js needs W as a Float32Array (f32), Int8Array (q8) or Uint8Array (q4): f16 is WebGPU only",
      );
    }
  },
};
