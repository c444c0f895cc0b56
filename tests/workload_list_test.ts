import assert from "node:assert/strict";
import { MAX_LISTED_WORKLOADS, parseWorkloadList } from "../bench/_workload_list.ts";
import { parseShape } from "../core/cli_args.ts";
import { getOp } from "../kernels/catalog.ts";

Deno.test("a shape reads back as formatShape wrote it, in its op's dimension order", () => {
  assert.deepEqual(parseShape(getOp("matmul"), "3x5000x300"), { m: 3, k: 5000, n: 300 });
  assert.deepEqual(parseShape(getOp("gemv"), "768x3072"), { rows: 768, cols: 3072 });
  assert.deepEqual(parseShape(getOp("add"), "1e6"), { n: 1e6 });
  for (const bad of ["2x2", "2x2x0", "2x2x2.5", "2x-2x2", "2xx2", ""]) {
    assert.throws(() => parseShape(getOp("matmul"), bad), /positive integers joined by "x"/, bad);
  }
  assert.throws(
    () => parseShape(getOp("gemv"), "4x9007199254740993"),
    /"cols" is 9007199254740992; pass a positive integer up to 9007199254740991/,
  );
});

Deno.test("a workload list gives one workload per line, comments and blank lines aside", () => {
  const text = "# LLM projections\nmatmul f32 1x3072x768\n\n  gemv   q4 768x3072  # int4\n";
  assert.deepEqual(parseWorkloadList(text, "list.txt"), [
    { op: "matmul", dtype: "f32", shape: { m: 1, k: 3072, n: 768 } },
    { op: "gemv", dtype: "q4", shape: { rows: 768, cols: 3072 } },
  ]);
});

Deno.test("a bad line is named by file and line, with what it should have been", () => {
  const cases: [string, RegExp][] = [
    ["add f32 1024\nconv f32 3x3\n", /l\.txt:2: Unknown op "conv"/],
    ["matmul q4 8x8x8\n", /l\.txt:1: matmul has no dtype "q4"/],
    ["gemv f32 1024\n", /l\.txt:1: "1024" is not 2 positive integers/],
    ["gemv f32\n", /l\.txt:1: "gemv f32" is not OP DTYPE SHAPE/],
    ["add f32 1e300\n", /l\.txt:1: "n" is 1e\+300; pass a positive integer up to 9007199254740991/],
    ["# nothing\n\n", /l\.txt: no workloads/],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseWorkloadList(text, "l.txt"), message, text);
  }
});

Deno.test("a list is bounded: past its limit it says to split it", () => {
  const text = "add f32 1000\n".repeat(MAX_LISTED_WORKLOADS + 1);
  assert.throws(() => parseWorkloadList(text, "big.txt"), /more than \d+ workloads; split it/);
  assert.equal(parseWorkloadList("add f32 1000\n".repeat(MAX_LISTED_WORKLOADS), "ok").length, 500);
});
