/**
 * Shape and storage layout of gemv operands, shared by the spec and its bodies.
 *
 * @module
 */
import { QUANT_GROUP_SIZE, type Shape } from "../types.ts";

/**
 * The rows and columns of a gemv shape.
 *
 * @param shape `{ rows, cols }`.
 * @returns Both dimensions.
 * @throws {RangeError} when either is missing or not a positive integer.
 * @example
 * ```ts
 * import { gemvDims } from "./_layout.ts";
 * console.log(gemvDims({ rows: 2, cols: 3 })); // { rows: 2, cols: 3 }
 * ```
 */
export function gemvDims(shape: Shape): { rows: number; cols: number } {
  const { rows, cols } = shape;
  const ok = (v: number | undefined): v is number => Number.isInteger(v) && v! > 0;
  if (!ok(rows) || !ok(cols)) {
    throw new RangeError(
      `gemv needs positive integer rows and cols, got ${JSON.stringify(shape)}`,
    );
  }
  return { rows, cols };
}

/**
 * Scale groups per row: the last group of a row may be partial, groups never span rows.
 *
 * @param cols Columns of W.
 * @returns ceil(cols / {@linkcode QUANT_GROUP_SIZE}).
 * @example
 * ```ts
 * import { groupsPerRow } from "./_layout.ts";
 * console.log(groupsPerRow(33)); // 2
 * ```
 */
export function groupsPerRow(cols: number): number {
  return Math.ceil(cols / QUANT_GROUP_SIZE);
}

/**
 * Bytes of one q4 row: rows are packed independently, so each starts on a byte boundary and an
 * odd column count leaves the high nibble of the row's last byte unused.
 *
 * @param cols Columns of W.
 * @returns ceil(cols / 2).
 * @example
 * ```ts
 * import { q4RowBytes } from "./_layout.ts";
 * console.log(q4RowBytes(7)); // 4
 * ```
 */
export function q4RowBytes(cols: number): number {
  return Math.ceil(cols / 2);
}
