/**
 * Sampled verification at scale: the float64 reference of a few seeded rows of a huge output
 * instead of the whole of it (a 2048³ matmul's full reference costs more than its measurement).
 *
 * @module
 */
import { groupsPerRow, q4RowBytes } from "../kernels/gemv/mod.ts";
import type { Dtype, HostArray, OpInputs, OpSpec, Shape } from "../kernels/types.ts";
import { sampleIndices, type Verification, verifyOutput } from "./verify.ts";

/** Above this many FLOPs a matmul is verified on sampled rows. */
export const SAMPLED_ABOVE_FLOPS = 1e9;

/** Above this many operand bytes a gemv is verified on sampled rows. */
export const SAMPLED_ABOVE_BYTES = 16 * 2 ** 20;

function large(op: OpSpec, shape: Shape, dtype: Dtype): boolean {
  return op.flops(shape) > SAMPLED_ABOVE_FLOPS || op.bytes(shape, dtype) > SAMPLED_ABOVE_BYTES;
}

/**
 * How an op's output and operands split into rows: output row r depends on row r of each
 * row-sliced operand (elements per row given by index) and on the whole of the others.
 */
interface RowLayout {
  readonly rows: number;
  /** Output elements per row. */
  readonly rowLength: number;
  /** The shape of the sub-problem of `count` rows. */
  rowShape(count: number): Shape;
  /** Per operand index, its elements per row; absent: the operand is used whole. */
  readonly rowSlices: Readonly<Record<number, number>>;
}

const ROW_LAYOUTS: Readonly<Record<string, (shape: Shape, dtype: Dtype) => RowLayout>> = {
  // C = A·B: row i of C is row i of A times B.
  matmul: (s) => ({
    rows: s.m!,
    rowLength: s.n!,
    rowShape: (count) => ({ ...s, m: count }),
    rowSlices: { 0: s.k! },
  }),
  // y = W·x: y[r] is row r of W (and of its scales, when quantized) times x.
  gemv: (s, dtype) => ({
    rows: s.rows!,
    rowLength: 1,
    rowShape: (count) => ({ ...s, rows: count }),
    rowSlices: dtype === "q4"
      ? { 0: q4RowBytes(s.cols!), 1: groupsPerRow(s.cols!) }
      : dtype === "q8"
      ? { 0: s.cols!, 1: groupsPerRow(s.cols!) }
      : { 0: s.cols! },
  }),
};

/** Rows checked in a sampled verification. */
const SAMPLED_ROWS = 8;

/**
 * Verifies `out` on `SAMPLED_ROWS` seeded rows when the op splits into rows (matmul, gemv) and
 * the case is large (over {@linkcode SAMPLED_ABOVE_FLOPS} or {@linkcode SAMPLED_ABOVE_BYTES});
 * else returns null and the caller verifies the whole output. The rows' reference is the op's own, on the sub-problem of those
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
  const layout = ROW_LAYOUTS[op.name]?.(shape, dtype);
  if (!layout || (!force && !large(op, shape, dtype))) return null;
  const { rows: total, rowLength: n, rowShape, rowSlices } = layout;
  const rows = sampleIndices(total, SAMPLED_ROWS, seed);
  // The sub-problem of the sampled rows: each row-sliced operand keeps those rows only.
  const arrays = inputs.arrays.map((a, j) => {
    const per = rowSlices[j];
    if (per === undefined) return a;
    const picked = new (a.constructor as new (length: number) => HostArray)(rows.length * per);
    rows.forEach((r, i) => picked.set(a.subarray(r * per, (r + 1) * per) as never, i * per));
    return picked;
  });
  const ref = op.reference(rowShape(rows.length), dtype, {
    arrays,
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
