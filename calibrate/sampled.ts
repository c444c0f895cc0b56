/**
 * Sampled verification at scale: the float64 reference of a few seeded rows of a huge output
 * instead of the whole of it (a 2048³ matmul's full reference costs more than its measurement).
 *
 * @module
 */
import type { Dtype, HostArray, OpInputs, OpSpec, Shape } from "../kernels/types.ts";
import { sampleIndices, type Verification, verifyOutput } from "./verify.ts";

/** Above this many FLOPs a matmul is verified on sampled rows. */
export const SAMPLED_ABOVE_FLOPS = 1e9;

/** Rows checked in a sampled verification. */
const SAMPLED_ROWS = 8;

/**
 * Verifies `out` on `SAMPLED_ROWS` seeded rows when the op has a row-wise reference and the case
 * is large (a matmul over {@linkcode SAMPLED_ABOVE_FLOPS}); else returns null and the caller
 * verifies the whole output. The rows' reference is the op's own, on the sub-problem of those
 * rows, so it is exactly the full reference's rows.
 *
 * @param op The op.
 * @param shape The shape.
 * @param dtype The dtype.
 * @param inputs The operands the kernel ran on.
 * @param out The kernel's output.
 * @param seed Picks the rows.
 * @param force Sample whatever the size (tests).
 * @returns The verification, or null when this case is verified in full.
 * @example
 * ```ts
 * import { verifySampledRows } from "./sampled.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * import { seededRng } from "../kernels/_random.ts";
 * const mm = getOp("matmul");
 * const shape = { m: 16, k: 8, n: 4 };
 * const inputs = mm.inputs(shape, "f32", seededRng(1));
 * const out = Float32Array.from(mm.reference(shape, "f32", inputs));
 * console.log(verifySampledRows(mm, shape, "f32", inputs, out, 3, true)?.ok); // true
 * ```
 */
export function verifySampledRows(
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  inputs: OpInputs,
  out: ArrayLike<number>,
  seed: number,
  force = false,
): Verification | null {
  if (op.name !== "matmul" || (!force && op.flops(shape) <= SAMPLED_ABOVE_FLOPS)) return null;
  const { m, k, n } = shape as { m: number; k: number; n: number };
  const a = inputs.arrays[0]!;
  const rows = sampleIndices(m, SAMPLED_ROWS, seed);
  const subA = a.constructor as new (length: number) => HostArray;
  const picked = new subA(rows.length * k);
  rows.forEach((r, i) => picked.set(a.subarray(r * k, (r + 1) * k) as never, i * k));
  const ref = op.reference({ ...shape, m: rows.length }, dtype, {
    arrays: [picked, inputs.arrays[1]!],
    outputLength: rows.length * n,
  });
  const got = new Float64Array(rows.length * n);
  rows.forEach((r, i) => {
    for (let j = 0; j < n; j++) got[i * n + j] = r * n + j < out.length ? out[r * n + j]! : NaN;
  });
  const v = verifyOutput(got, ref, op.tolerance(shape, dtype));
  const worstIndex = v.worstIndex < 0
    ? -1
    : rows[Math.floor(v.worstIndex / n)]! * n + (v.worstIndex % n);
  if (v.ok) return { ...v, worstIndex };
  return {
    ...v,
    worstIndex,
    message: `Wrong result on sampled rows ${rows.join(", ")}: element ${worstIndex} is ${
      out[worstIndex]
    }, expected ${ref[v.worstIndex]}`,
  };
}
