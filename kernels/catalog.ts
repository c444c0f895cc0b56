/**
 * The catalog: every op gpucal measures. Adding an op is adding its folder and one line here.
 *
 * @module
 */
import { add, fma, mul } from "./elementwise/mod.ts";
import { gemv } from "./gemv/mod.ts";
import { matmul } from "./matmul/mod.ts";
import { dot, sum } from "./reduce/mod.ts";
import { softmax } from "./softmax/mod.ts";
import type { OpSpec } from "./types.ts";

/**
 * Every op, in the order calibration runs them.
 *
 * @example
 * ```ts
 * import { OPS } from "./catalog.ts";
 * console.log(OPS.map((o) => o.name).includes("matmul")); // true
 * ```
 */
export const OPS: readonly OpSpec[] = [matmul, gemv, add, mul, fma, sum, dot, softmax];

/**
 * Looks an op up by name.
 *
 * @param name The op's name.
 * @returns The op.
 * @throws {RangeError} naming the known ops when there is none of that name.
 * @example
 * ```ts
 * import { getOp } from "./catalog.ts";
 * console.log(getOp("add").complexity); // "elementwise"
 * ```
 */
export function getOp(name: string): OpSpec {
  const op = OPS.find((o) => o.name === name);
  if (!op) {
    throw new RangeError(
      `Unknown op "${name}": known ops are ${OPS.map((o) => o.name).join(", ")}`,
    );
  }
  return op;
}
