/**
 * Off-axis shapes: the shapes beside an op's sweep axis that a calibration measures after the
 * op's grid, so that predictions at the shapes programs run — a transformer's projections at
 * batch 1 to a few hundred rows, gemvs whose rows and columns differ, softmax over a few rows or
 * many — rest on measurements of such proportions and not on the square axis alone. The models
 * learn from them how proportions change a kernel's time (`models/_shape_model.ts`); fits,
 * crossovers and tuning keep to the axis.
 *
 * The proportions are those of transformer layers (d × d attention projections, d × 4d and
 * 4d × d feed-forward) at two widths; the row counts span decode (1), small batches (8, 16) and
 * prefill chunks (64, 256).
 *
 * @module
 */
import type { Dtype, OpSpec, Shape } from "../kernels/types.ts";
import type { CalibrationMode } from "../core/schema.ts";

const MATMUL_QUICK: readonly Shape[] = [
  { m: 1, k: 1024, n: 1024 },
  { m: 8, k: 1024, n: 4096 },
  { m: 64, k: 4096, n: 1024 },
];

/**
 * After the quick set, a decode-sized matmul whose B outgrows the caches the first one fits in
 * (16 MB against 4 MB in f32): at m = 1 a tiled kernel streams B and packs it, and the time per
 * byte changes with where B lives. A default run measures at least the first four of this list.
 */
const MATMUL: readonly Shape[] = [
  ...MATMUL_QUICK,
  { m: 1, k: 4096, n: 1024 },
  { m: 256, k: 512, n: 512 },
  { m: 16, k: 512, n: 2048 },
  { m: 64, k: 1024, n: 4096 },
  { m: 8, k: 4096, n: 1024 },
  { m: 1, k: 1024, n: 4096 },
  { m: 16, k: 2048, n: 512 },
  { m: 8, k: 1024, n: 1024 },
  { m: 64, k: 1024, n: 1024 },
  { m: 256, k: 1024, n: 4096 },
];

const GEMV_QUICK: readonly Shape[] = [
  { rows: 4096, cols: 1024 },
  { rows: 1024, cols: 4096 },
];

/**
 * A gemv whose weights outgrow any CPU's last-level cache (268 MB in f32): a model's weights
 * stream from memory, and the largest axis sizes fit in a server's cache. On a 2-vCPU EPYC VM
 * wasm-mt streamed f32 gemv at 44 GB/s at 2580² (27 MB) and 29.5 GB/s at 8192² (268 MB).
 */
const GEMV_STREAMING: Shape = { rows: 8192, cols: 8192 };

const GEMV: readonly Shape[] = [
  ...GEMV_QUICK,
  GEMV_STREAMING,
  // Rows the kernel cannot load in vectors: in words (q4 and q8 at 3000 columns, f32 and f16 at
  // 1150) or across words (q4 and q8 at 1150), up to 2.6× slower on lavapipe. The sweep's own
  // such sizes are mostly launch-bound, and the shapes above are all vector-aligned, so without
  // these a default run learns no alignment offset and predicts q8 1500 × 6000 (not whole
  // 32-weight groups) as fast as 1024 × 4096: half its time (see `models/_alignment.ts`).
  { rows: 1024, cols: 3000 },
  { rows: 2048, cols: 1150 },
  { rows: 2048, cols: 512 },
  { rows: 512, cols: 2048 },
  { rows: 8192, cols: 2048 },
  { rows: 256, cols: 8192 },
];

const SOFTMAX_QUICK: readonly Shape[] = [
  { rows: 1, cols: 4096 },
  { rows: 256, cols: 1024 },
];

const SOFTMAX: readonly Shape[] = [
  ...SOFTMAX_QUICK,
  { rows: 8, cols: 1024 },
  { rows: 128, cols: 512 },
  { rows: 128, cols: 4096 },
  { rows: 1024, cols: 256 },
];

const BY_OP: Readonly<Record<string, { quick: readonly Shape[]; full: readonly Shape[] }>> = {
  matmul: { quick: MATMUL_QUICK, full: MATMUL },
  gemv: { quick: GEMV_QUICK, full: GEMV },
  softmax: { quick: SOFTMAX_QUICK, full: SOFTMAX },
};

/**
 * The off-axis shapes to measure for `op` at `dtype` in `mode`, in the order to measure them
 * (the most different proportions first, since a late job measures only its first few): none for
 * ops with one dimension, a few in a quick run, the full set otherwise.
 *
 * @param op The op.
 * @param _dtype The dtype (every dtype of an op takes the same shapes).
 * @param mode The calibration mode.
 * @returns The shapes, in the op's dims.
 * @example
 * ```ts
 * import { offAxisShapes } from "./shapes.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * console.log(offAxisShapes(getOp("matmul"), "f32", "quick")[0]); // { m: 1, k: 1024, n: 1024 }
 * console.log(offAxisShapes(getOp("add"), "f32", "default")); // []
 * ```
 */
export function offAxisShapes(op: OpSpec, _dtype: Dtype, mode: CalibrationMode): Shape[] {
  const sets = BY_OP[op.name];
  if (sets === undefined) return [];
  return [...(mode === "quick" ? sets.quick : sets.full)];
}
