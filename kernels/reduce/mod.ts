/**
 * Reductions to one number: `sum` (Σ a[i]) and `dot` (Σ a[i]·b[i]) over n elements, the
 * bandwidth-bound ops of the seeds' "reduction" class (norms, losses, attention scores).
 *
 * Operands are all positive, uniform in [0.25, 1): `calibrate/verify.ts` scales errors by the
 * reference's magnitude, and with random signs Σ a[i] can cancel to near zero, turning ordinary
 * rounding (which grows with Σ|a[i]|) into a huge "relative" error. With positive terms
 * |Σ| = Σ|terms| ≈ 0.6·n, so relative error is the honest measure of accumulated rounding.
 *
 * f16 results are stored as f16 (max 65504), so f16 operands are scaled by a power of two (exact)
 * that keeps the result near 2^13 whatever n is.
 *
 * @module
 */
import { BYTES_PER_ELEMENT, type Dtype, type OpSpec, type Rng, type Shape } from "../types.ts";
import { toFloat64 } from "../_random.ts";
import { dotJs, sumJs } from "./js.ts";
import { dotWasm, sumWasm } from "./wasm.ts";
import { dotWebGpu, sumWebGpu } from "./webgpu.ts";

function length(shape: Shape): number {
  const n = shape.n;
  if (!n) throw new RangeError(`Reductions need n >= 1, got ${JSON.stringify(shape)}`);
  return n;
}

/** log2 of the f16 scale: a result near 0.6·n·2^-e stays under 2^14 (f16 tops out at 65504). */
function f16Exponent(n: number): number {
  return Math.max(0, Math.ceil(Math.log2(n)) - 14);
}

function positiveFloats(
  n: number,
  dtype: Dtype,
  rng: Rng,
  exponent: number,
): Float32Array | Float16Array {
  let out: Float32Array | Float16Array;
  if (dtype === "f32") out = new Float32Array(n);
  else if (dtype === "f16") out = new Float16Array(n);
  else throw new TypeError(`Reductions have no dtype "${dtype}": use "f32" or "f16"`);
  const scale = 2 ** -exponent;
  for (let i = 0; i < n; i++) out[i] = (0.25 + 0.75 * rng()) * scale;
  return out;
}

/**
 * Accumulated rounding, relative to the (positive) result: f32 kernels sum each SIMD lane or
 * thread sequentially over up to ~n/16 terms, whose error grows like √terms·2^-24, plus a tree
 * on top; f16 kernels that add in f16 lose ~2^-11 per level and round the result to f16.
 */
function tolerance(shape: Shape, dtype: Dtype): number {
  const n = length(shape);
  if (dtype === "f16") return 4e-3 * Math.max(1, Math.log2(n) / 16);
  return 1e-6 * Math.max(1, Math.sqrt(n) / 64);
}

/**
 * The sum op: out[0] = Σ a[i]. Sweep: size = n elements.
 *
 * @example
 * ```ts
 * import { sum } from "./mod.ts";
 * import { seededRng } from "../_random.ts";
 * const inputs = sum.inputs({ n: 3 }, "f32", seededRng(1));
 * console.log(sum.reference({ n: 3 }, "f32", inputs).length); // 1
 * ```
 */
export const sum: OpSpec = {
  name: "sum",
  summary: "out = Σ a[i], f32/f16",
  complexity: "reduction",
  dims: ["n"],
  dtypes: ["f32", "f16"],
  axis: { unit: "elements", min: 1, max: 1 << 26, shape: (n) => ({ n }), size: (s) => s.n ?? 0 },
  flops: (s) => length(s),
  bytes: (s, dtype) => (length(s) + 1) * BYTES_PER_ELEMENT[dtype],
  largestBufferBytes: (s, dtype) => length(s) * BYTES_PER_ELEMENT[dtype],
  inputs: (s, dtype, rng) => {
    const n = length(s);
    const exponent = dtype === "f16" ? f16Exponent(n) : 0;
    return { arrays: [positiveFloats(n, dtype, rng, exponent)], outputLength: 1 };
  },
  reference: (_s, _dtype, inputs) => {
    const a = toFloat64(inputs.arrays[0]!);
    let total = 0;
    for (let i = 0; i < a.length; i++) total += a[i]!;
    return Float64Array.of(total);
  },
  tolerance,
  impls: { js: sumJs, wasm: sumWasm, webgpu: sumWebGpu },
};

/**
 * The dot op: out[0] = Σ a[i]·b[i]. Sweep: size = n elements per operand.
 *
 * @example
 * ```ts
 * import { dot } from "./mod.ts";
 * console.log(dot.flops({ n: 1000 })); // 2000
 * ```
 */
export const dot: OpSpec = {
  name: "dot",
  summary: "out = Σ a[i]·b[i], f32/f16",
  complexity: "reduction",
  dims: ["n"],
  dtypes: ["f32", "f16"],
  axis: { unit: "elements", min: 1, max: 1 << 26, shape: (n) => ({ n }), size: (s) => s.n ?? 0 },
  flops: (s) => 2 * length(s),
  bytes: (s, dtype) => (2 * length(s) + 1) * BYTES_PER_ELEMENT[dtype],
  largestBufferBytes: (s, dtype) => length(s) * BYTES_PER_ELEMENT[dtype],
  inputs: (s, dtype, rng) => {
    const n = length(s);
    // Products average ~0.39 (result ≤ 0.39·2^16 < 65504) and the smallest, 2^-4·2^-e, must
    // stay a normal f16 (≥ 2^-14) up to n = 2^26; the scale is split over a and b.
    const exponent = dtype === "f16" ? Math.max(0, f16Exponent(n) - 2) : 0;
    const ea = Math.ceil(exponent / 2);
    return {
      arrays: [
        positiveFloats(n, dtype, rng, ea),
        positiveFloats(n, dtype, rng, exponent - ea),
      ],
      outputLength: 1,
    };
  },
  reference: (_s, _dtype, inputs) => {
    const a = toFloat64(inputs.arrays[0]!);
    const b = toFloat64(inputs.arrays[1]!);
    let total = 0;
    for (let i = 0; i < a.length; i++) total += a[i]! * b[i]!;
    return Float64Array.of(total);
  },
  tolerance,
  impls: { js: dotJs, wasm: dotWasm, webgpu: dotWebGpu },
};
