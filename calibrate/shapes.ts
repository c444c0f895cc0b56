/**
 * Off-axis shapes: the shapes, beside an op's sweep axis, that the planner measures after each
 * op's grid so that predictions at shapes users run (non-square matmul, gemv with rows ≠ cols,
 * softmax with other row counts) rest on measurements rather than on the square axis alone.
 *
 * @module
 */
import type { Dtype, OpSpec, Shape } from "../kernels/types.ts";
import type { Mode } from "./plan.ts";

/**
 * The off-axis shapes to measure for `op` at `dtype` in `mode`, in the order to measure them.
 * The planner measures each on every backend still in play (its chosen variant, each residency),
 * interleaved per shape like the grid, within the job's off-axis share of the time plan.
 *
 * A stub for now: it returns no shapes. The lead fills it (matmul with m ∈ {1, 8, 64, …} against
 * transformer-like k, n; gemv with rows ≠ cols; softmax with other row counts).
 *
 * @param op The op.
 * @param dtype The dtype.
 * @param mode The calibration mode (a quick run may take fewer shapes).
 * @returns The shapes, in the op's dims.
 * @example
 * ```ts
 * import { offAxisShapes } from "./shapes.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * console.log(offAxisShapes(getOp("matmul"), "f32", "default")); // []
 * ```
 */
export function offAxisShapes(_op: OpSpec, _dtype: Dtype, _mode: Mode): Shape[] {
  return [];
}
