/**
 * `matmul`: C[M×N] = A[M×K] · B[K×N], row-major, the op that bounds prefill and training.
 *
 * @module
 */
import { randomFloats, toFloat64 } from "../_random.ts";
import { BYTES_PER_ELEMENT, type OpSpec, type Shape } from "../types.ts";
import { matmulJs } from "./js.ts";
import { matmulWasm } from "./wasm.ts";
import { matmulWebGpu } from "./webgpu.ts";

function dims(shape: Shape): { m: number; k: number; n: number } {
  const { m, k, n } = shape;
  if (!m || !k || !n) throw new RangeError(`matmul needs m, k and n, got ${JSON.stringify(shape)}`);
  return { m, k, n };
}

/**
 * The matmul op. Square sweep: size `n` means M = K = N = n.
 *
 * @example
 * ```ts
 * import { matmul } from "./mod.ts";
 * console.log(matmul.flops({ m: 256, k: 256, n: 256 })); // 33554432
 * ```
 */
export const matmul: OpSpec = {
  name: "matmul",
  summary: "C = A·B, row-major f32/f16",
  complexity: "matrix",
  dims: ["m", "k", "n"],
  dtypes: ["f32", "f16"],
  axis: {
    unit: "n (M = K = N)",
    min: 1,
    max: 4096,
    shape: (n) => ({ m: n, k: n, n }),
    size: (s) => s.n ?? 0,
  },
  flops: (s) => {
    const { m, k, n } = dims(s);
    return 2 * m * k * n;
  },
  bytes: (s, dtype) => {
    const { m, k, n } = dims(s);
    return (m * k + k * n + m * n) * BYTES_PER_ELEMENT[dtype];
  },
  largestBufferBytes: (s, dtype) => {
    const { m, k, n } = dims(s);
    return Math.max(m * k, k * n, m * n) * BYTES_PER_ELEMENT[dtype];
  },
  inputs: (s, dtype, rng) => {
    const { m, k, n } = dims(s);
    return {
      arrays: [randomFloats(m * k, dtype, rng), randomFloats(k * n, dtype, rng)],
      outputLength: m * n,
    };
  },
  reference: (s, _dtype, inputs) => {
    const { m, k, n } = dims(s);
    const a = toFloat64(inputs.arrays[0]!);
    const b = toFloat64(inputs.arrays[1]!);
    const c = new Float64Array(m * n);
    for (let i = 0; i < m; i++) {
      for (let p = 0; p < k; p++) {
        const aip = a[i * k + p]!;
        for (let j = 0; j < n; j++) c[i * n + j]! += aip * b[p * n + j]!;
      }
    }
    return c;
  },
  // Relative to the reference's largest magnitude; f16 accumulates its rounding over k.
  tolerance: (s, dtype) => dtype === "f16" ? 2e-3 * Math.max(4, Math.sqrt(s.k ?? 1)) : 1e-4,
  impls: { js: matmulJs, wasm: matmulWasm, webgpu: matmulWebGpu },
};
