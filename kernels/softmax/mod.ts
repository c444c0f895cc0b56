/**
 * `softmax`: row-wise, numerically stable (each row's max subtracted before `exp`), the
 * normalisation of attention scores.
 *
 * The sweep follows decode-time attention: 32 rows (one per head, one query token) of `cols`
 * scores (the context length), from 1 to 2^20 columns. Operands are uniform in ±[1, 4), so
 * `exp(x - max)` spans e^-8 … 1 and skipping the max subtraction or a column shows up.
 *
 * @module
 */
import { randomFloats, toFloat64 } from "../_random.ts";
import { BYTES_PER_ELEMENT, type Dtype, type OpSpec, type Shape } from "../types.ts";
import { softmaxJs } from "./js.ts";
import { softmaxWasm } from "./wasm.ts";
import { softmaxWebGpu } from "./webgpu.ts";

/** Rows of the sweep: attention heads of a 7B-class model, one query token each. */
export const SOFTMAX_SWEEP_ROWS = 32;

function dims(shape: Shape): { rows: number; cols: number } {
  const { rows, cols } = shape;
  if (!rows || !cols) {
    throw new RangeError(`Softmax needs rows and cols >= 1, got ${JSON.stringify(shape)}`);
  }
  return { rows, cols };
}

/**
 * Rounding relative to the largest output (~5/cols): f32 kernels sum each row's exps in pieces
 * (error ~√terms·2^-24) and use exp approximations good to a few ulp; f16 outputs are rounded to
 * 11 bits, f16 arithmetic rounds every exp and partial sum, and outputs under 2^-14 (rows longer
 * than ~2^16) are subnormal f16, whose absolute spacing 2^-24 is then up to ~cols·2^-24/5 of the
 * largest output.
 */
function tolerance(shape: Shape, dtype: Dtype): number {
  const { cols } = dims(shape);
  if (dtype === "f16") return Math.max(5e-3, cols * 2 ** -26);
  return 1e-5 * Math.max(1, Math.sqrt(cols) / 256);
}

/**
 * The softmax op: out[r][c] = exp(x[r][c] − max_r) / Σ_c exp(x[r][c] − max_r). Sweep: size =
 * cols with {@linkcode SOFTMAX_SWEEP_ROWS} rows.
 *
 * @example
 * ```ts
 * import { softmax } from "./mod.ts";
 * import { seededRng } from "../_random.ts";
 * const shape = softmax.axis.shape(4);
 * const ref = softmax.reference(shape, "f32", softmax.inputs(shape, "f32", seededRng(1)));
 * console.log(Math.round(ref.slice(0, 4).reduce((s, v) => s + v, 0))); // 1
 * ```
 */
export const softmax: OpSpec = {
  name: "softmax",
  summary: "row-wise stable softmax, f32/f16",
  complexity: "reduction",
  dims: ["rows", "cols"],
  dtypes: ["f32", "f16"],
  axis: {
    unit: `cols (rows = ${SOFTMAX_SWEEP_ROWS})`,
    min: 1,
    max: 1 << 20,
    shape: (cols) => ({ rows: SOFTMAX_SWEEP_ROWS, cols }),
    size: (s) => s.cols ?? 0,
  },
  // Per element: max, subtract, exp, add, scale.
  flops: (s) => {
    const { rows, cols } = dims(s);
    return 5 * rows * cols;
  },
  bytes: (s, dtype) => {
    const { rows, cols } = dims(s);
    return 2 * rows * cols * BYTES_PER_ELEMENT[dtype];
  },
  largestBufferBytes: (s, dtype) => {
    const { rows, cols } = dims(s);
    return rows * cols * BYTES_PER_ELEMENT[dtype];
  },
  inputs: (s, dtype, rng) => {
    const { rows, cols } = dims(s);
    const x = randomFloats(rows * cols, dtype, rng);
    for (let i = 0; i < x.length; i++) x[i] = 4 * x[i]!;
    return { arrays: [x], outputLength: rows * cols };
  },
  reference: (s, _dtype, inputs) => {
    const { rows, cols } = dims(s);
    const x = toFloat64(inputs.arrays[0]!);
    const out = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      const row = x.subarray(r * cols, (r + 1) * cols);
      let max = -Infinity;
      for (const v of row) max = Math.max(max, v);
      let total = 0;
      for (let c = 0; c < cols; c++) total += out[r * cols + c] = Math.exp(row[c]! - max);
      for (let c = 0; c < cols; c++) out[r * cols + c]! /= total;
    }
    return out;
  },
  tolerance,
  impls: { js: softmaxJs, wasm: softmaxWasm, webgpu: softmaxWebGpu },
};
