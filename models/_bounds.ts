/**
 * Private: the shapes a prediction may be asked for. Dimensions are positive safe integers (a
 * `1e300` dimension made every cost model `Infinity` and dropped the other backends silently), and
 * the work stays within {@linkcode MAX_EXTRAPOLATION}× of the largest the report measured or
 * fitted: a cost model says nothing about a problem a million times larger than any it saw, and a
 * "2.34e28 ms" answer is not a prediction.
 *
 * @module
 */
import type { OpSpec, Shape } from "../kernels/types.ts";
import type { OpTable } from "./_index.ts";

/**
 * How far past the largest work (flops or bytes) a report measured or fitted for an op a
 * prediction may go. Below the range a cost model tends to its fixed cost, which it measured, so
 * only the upper end is bounded.
 */
export const MAX_EXTRAPOLATION = 1000;

/** The largest flops and bytes of a table's measurements and fits. */
interface Reach {
  readonly flops: number;
  readonly bytes: number;
}

const reaches = new WeakMap<OpTable, Reach>();

function reachOf(table: OpTable): Reach {
  let reach = reaches.get(table);
  if (reach === undefined) {
    let flops = 0;
    let bytes = 0;
    for (const s of table.series) {
      for (const v of s.variants.values()) {
        flops = Math.max(flops, v.flopsRange[1], ...v.points.map((p) => p.flops));
        bytes = Math.max(bytes, v.bytesRange[1], ...v.points.map((p) => p.bytes));
      }
    }
    reach = { flops, bytes };
    reaches.set(table, reach);
  }
  return reach;
}

/**
 * Checks that every dimension of an op's shape is a positive safe integer.
 *
 * @param op The op.
 * @param shape The shape asked for.
 * @throws {RangeError} naming the dimension and its value.
 * @example
 * ```ts
 * import { checkShape } from "./_bounds.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * checkShape(getOp("add"), { n: 1024 }); // fine
 * try {
 *   checkShape(getOp("add"), { n: 1e300 });
 * } catch (e) {
 *   console.log((e as RangeError).message.startsWith("Invalid shape")); // true
 * }
 * ```
 */
export function checkShape(op: OpSpec, shape: Shape): void {
  for (const dim of op.dims) {
    const value = shape[dim];
    if (!(Number.isSafeInteger(value) && value! >= 1)) {
      throw new RangeError(
        `Invalid shape for ${op.name}: "${dim}" is ${value}; pass a positive integer up to ` +
          `${Number.MAX_SAFE_INTEGER} (${op.dims.join(", ")})`,
      );
    }
  }
}

/**
 * Checks a request against what a report can answer: a valid shape (when there is one) and work
 * within {@linkcode MAX_EXTRAPOLATION}× of the largest the report measured or fitted.
 *
 * @param table The report's table of the op, dtype and residency.
 * @param shape The shape, or null when the work is not a catalog shape.
 * @param flops Work of the request.
 * @param bytes Work of the request.
 * @param where The request in words, for the message.
 * @throws {RangeError} for an invalid shape, or work beyond the reach, saying by how much.
 * @example
 * ```ts ignore
 * checkReach(table, { n: 1 << 20 }, flops, bytes, () => "1048576");
 * ```
 */
export function checkReach(
  table: OpTable,
  shape: Shape | null,
  flops: number,
  bytes: number,
  where: () => string,
): void {
  if (shape !== null) checkShape(table.op, shape);
  const reach = reachOf(table);
  const over = Math.max(
    reach.flops > 0 ? flops / reach.flops : 0,
    reach.bytes > 0 ? bytes / reach.bytes : 0,
  );
  if (over <= MAX_EXTRAPOLATION) return;
  throw new RangeError(
    `Cannot predict ${table.op.name} ${table.dtype} at ${where()}: its work is ` +
      `${over.toPrecision(3)}× the largest the report measured or fitted (beyond the ` +
      `${MAX_EXTRAPOLATION}× gpucal extrapolates); calibrate larger sizes or split the problem`,
  );
}
