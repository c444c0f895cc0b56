/**
 * `gemv`: y = W·x with W rows×cols row-major, the op that bounds LLM decode speed.
 *
 * Operands, in order:
 *
 * - `f32`, `f16`: `[W, x]`, all of the dtype (f16 is WebGPU only); y has the same dtype.
 * - `q8`: `[W, scales, x]`: W an `Int8Array` of rows·cols, `scales` a `Float32Array` with one
 *   scale per group of {@linkcode QUANT_GROUP_SIZE} consecutive weights of a row (`groupsPerRow`
 *   per row, the last group of a row partial when cols is not a multiple of 32, groups never
 *   spanning rows), x and y f32. The weight is q × scale.
 * - `q4`: as q8 but W a `Uint8Array` of two weights per byte, low nibble first, weight =
 *   (nibble − 8) × scale. Each row is packed on its own: it starts on a byte boundary and takes
 *   ceil(cols / 2) bytes, so with odd cols the high nibble of a row's last byte is unused.
 *
 * @module
 */
import { randomFloats, toFloat64 } from "../_random.ts";
import {
  BYTES_PER_ELEMENT,
  type Dtype,
  type OpInputs,
  type OpSpec,
  QUANT_GROUP_SIZE,
  type Rng,
  type Shape,
} from "../types.ts";
import { gemvDims, groupsPerRow, q4RowBytes } from "./_layout.ts";
import { gemvJs } from "./js.ts";
import { gemvWasm } from "./wasm.ts";
import { gemvWebGpu } from "./webgpu.ts";

export { gemvDims, groupsPerRow, q4RowBytes } from "./_layout.ts";

/** Random positive scales around 0.01, like those of a real quantized layer. */
function randomScales(n: number, rng: Rng): Float32Array {
  const s = new Float32Array(n);
  for (let i = 0; i < n; i++) s[i] = 0.005 + 0.01 * rng();
  return s;
}

function randomF32(n: number, rng: Rng): Float32Array {
  return randomFloats(n, "f32", rng) as Float32Array;
}

/** A nibble other than 8, so that no dequantized weight is zero. */
function randomNibble(rng: Rng): number {
  const n = Math.floor(rng() * 15);
  return n >= 8 ? n + 1 : n;
}

function quantizedInputs(shape: Shape, dtype: "q8" | "q4", rng: Rng): OpInputs {
  const { rows, cols } = gemvDims(shape);
  let w: Int8Array | Uint8Array;
  if (dtype === "q8") {
    w = new Int8Array(rows * cols);
    for (let i = 0; i < w.length; i++) {
      const m = 1 + Math.floor(rng() * 127);
      w[i] = rng() < 0.5 ? -m : m;
    }
  } else {
    w = new Uint8Array(rows * q4RowBytes(cols));
    for (let i = 0; i < w.length; i++) w[i] = randomNibble(rng) | (randomNibble(rng) << 4);
  }
  return {
    arrays: [w, randomScales(rows * groupsPerRow(cols), rng), randomF32(cols, rng)],
    outputLength: rows,
  };
}

/** W dequantized to float64, row-major rows×cols. */
function dequantized(shape: Shape, dtype: Dtype, inputs: OpInputs): Float64Array {
  const { rows, cols } = gemvDims(shape);
  const w = inputs.arrays[0];
  if (dtype === "f32" || dtype === "f16") return toFloat64(w!);
  const scales = inputs.arrays[1]!;
  const groups = groupsPerRow(cols);
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let q: number;
      if (dtype === "q8") q = w![r * cols + c]!;
      else {
        const b = w![r * q4RowBytes(cols) + (c >> 1)]!;
        q = ((c & 1) === 0 ? b & 15 : b >> 4) - 8;
      }
      out[r * cols + c] = q * scales[r * groups + Math.floor(c / QUANT_GROUP_SIZE)]!;
    }
  }
  return out;
}

/**
 * The gemv op. Square sweep: size n means rows = cols = n, the shape of an LLM's projections.
 *
 * @example
 * ```ts
 * import { gemv } from "./mod.ts";
 * console.log(gemv.flops({ rows: 4096, cols: 4096 })); // 33554432
 * console.log(gemv.bytes({ rows: 2, cols: 64 }, "q8")); // 408: weights, scales, x, y
 * console.log(gemv.rowBytes!({ rows: 2, cols: 1149 }, "q4")); // 575: rows start on bytes
 * ```
 */
export const gemv: OpSpec = {
  name: "gemv",
  summary: "y = W·x, row-major W in f32/f16 or int8/int4 with per-32 f32 scales",
  complexity: "matrix",
  dims: ["rows", "cols"],
  dtypes: ["f32", "f16", "q8", "q4"],
  // A decode's projections: each weight matrix is read once per token.
  streamsOperands: true,
  axis: {
    unit: "n (rows = cols)",
    min: 1,
    max: 16384,
    shape: (n) => ({ rows: n, cols: n }),
    size: (s) => s.rows ?? 0,
  },
  flops: (s) => {
    const { rows, cols } = gemvDims(s);
    return 2 * rows * cols;
  },
  bytes: (s, dtype) => {
    const { rows, cols } = gemvDims(s);
    if (dtype === "f32" || dtype === "f16") {
      return (rows * cols + cols + rows) * BYTES_PER_ELEMENT[dtype];
    }
    const weights = dtype === "q8" ? rows * cols : rows * q4RowBytes(cols);
    return weights + 4 * rows * groupsPerRow(cols) + 4 * (cols + rows);
  },
  largestBufferBytes: (s, dtype) => {
    const { rows, cols } = gemvDims(s);
    // W is the largest of W, x and y; quantized, the scales, x and y are f32.
    if (dtype === "f32" || dtype === "f16") return rows * cols * BYTES_PER_ELEMENT[dtype];
    const weights = dtype === "q8" ? rows * cols : rows * q4RowBytes(cols);
    return Math.max(weights, 4 * rows * groupsPerRow(cols), 4 * cols, 4 * rows);
  },
  rowBytes: (s, dtype) => {
    const { cols } = gemvDims(s);
    if (dtype === "q4") return q4RowBytes(cols);
    return dtype === "q8" ? cols : cols * BYTES_PER_ELEMENT[dtype];
  },
  // The WebGPU kernel's vector loads (kernels/gemv/webgpu.ts): f32 and f16 rows as vec4 of
  // elements, q8 and q4 rows as vec4<u32> of whole 32-weight groups.
  rowVectorBytes: (dtype) =>
    dtype === "q8"
      ? QUANT_GROUP_SIZE
      : dtype === "q4"
      ? q4RowBytes(QUANT_GROUP_SIZE)
      : 4 * BYTES_PER_ELEMENT[dtype],
  inputs: (s, dtype, rng) => {
    if (dtype === "q8" || dtype === "q4") return quantizedInputs(s, dtype, rng);
    const { rows, cols } = gemvDims(s);
    return {
      arrays: [randomFloats(rows * cols, dtype, rng), randomFloats(cols, dtype, rng)],
      outputLength: rows,
    };
  },
  reference: (s, dtype, inputs) => {
    const { rows, cols } = gemvDims(s);
    const w = dequantized(s, dtype, inputs);
    const x = toFloat64(inputs.arrays[dtype === "q8" || dtype === "q4" ? 2 : 1]!);
    const y = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let sum = 0;
      for (let c = 0; c < cols; c++) sum += w[r * cols + c]! * x[c]!;
      y[r] = sum;
    }
    return y;
  },
  // Relative to max|y|: f32 sums of random-sign terms lose ~eps·sqrt(cols) of that scale; these
  // bounds leave a wide margin. f16 rounds its output (2^-11) and may accumulate in f16.
  tolerance: (s, dtype) => {
    const cols = s.cols ?? 1;
    return dtype === "f16"
      ? 2e-3 * Math.max(4, Math.sqrt(cols))
      : 4e-6 * Math.sqrt(Math.max(64, cols));
  },
  impls: { js: gemvJs, wasm: gemvWasm, webgpu: gemvWebGpu },
};
