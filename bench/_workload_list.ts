/**
 * Private: a list of workloads written by a person, one per line (`bench:regret --shapes PATH`),
 * read into the ops, dtypes and shapes the bench measures. A line is `OP DTYPE SHAPE`, the shape
 * as `select --shape` takes it (`matmul f32 3x5000x300`); `#` starts a comment.
 *
 * @module
 */
import { getOp } from "../kernels/catalog.ts";
import type { Dtype, Shape } from "../kernels/types.ts";
import { parseShape } from "../core/cli_args.ts";

/** One workload of a list: an op at a shape and dtype. */
export interface ListedWorkload {
  readonly op: string;
  readonly dtype: Dtype;
  readonly shape: Shape;
}

/** Most workloads a list may hold: each costs every backend's measuring budget. */
export const MAX_LISTED_WORKLOADS = 500;

/**
 * Reads a workload list.
 *
 * @param text The list's text.
 * @param source Where it came from, for the messages (a path).
 * @returns The workloads, in the list's order.
 * @throws {RangeError} naming the line and what is wrong with it; for an empty list too.
 * @example
 * ```ts
 * import { parseWorkloadList } from "./_workload_list.ts";
 * const list = parseWorkloadList("# few rows\nmatmul f32 3x5000x300\ngemv q4 768x3072\n", "a.txt");
 * console.log(list.map((w) => `${w.op} ${w.shape.m ?? w.shape.rows}`)); // [ "matmul 3", "gemv 768" ]
 * ```
 */
export function parseWorkloadList(text: string, source: string): ListedWorkload[] {
  const out: ListedWorkload[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") continue;
    try {
      out.push(parseLine(line));
    } catch (e) {
      throw new RangeError(`${source}:${i + 1}: ${e instanceof Error ? e.message : e}`);
    }
    if (out.length > MAX_LISTED_WORKLOADS) {
      throw new RangeError(`${source}: more than ${MAX_LISTED_WORKLOADS} workloads; split it`);
    }
  }
  if (out.length === 0) {
    throw new RangeError(
      `${source}: no workloads; write one per line, e.g. "matmul f32 64x512x512"`,
    );
  }
  return out;
}

function parseLine(line: string): ListedWorkload {
  const fields = line.split(/\s+/);
  if (fields.length !== 3) {
    throw new RangeError(`"${line}" is not OP DTYPE SHAPE, e.g. "gemv q8 3072x768"`);
  }
  const [name, dtype, shape] = fields as [string, string, string];
  const op = getOp(name);
  if (!(op.dtypes as readonly string[]).includes(dtype)) {
    throw new RangeError(`${op.name} has no dtype "${dtype}": it runs ${op.dtypes.join(", ")}`);
  }
  return { op: op.name, dtype: dtype as Dtype, shape: parseShape(op, shape) };
}
