import assert from "node:assert/strict";
import { imbalanceLn } from "../models/_imbalance.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import { BLOCK } from "../kernels/reduce/wasm.ts";
import { ELEMENTWISE_BLOCK } from "../kernels/elementwise/wasm.ts";
import { syntheticReport } from "./_fixtures.ts";

const sum = getOp("sum");
const SUM_VARIANT = { accs: 4, fma: false };

Deno.test("a wasm-mt run lasts as long as its busiest thread: a full block and a sliver is nearly all one thread's", () => {
  const n = BLOCK + 4465;
  assert.ok(Math.abs(imbalanceLn(sum, { n }, SUM_VARIANT, 2) - Math.log(2 * BLOCK / n)) < 1e-12);
  assert.equal(imbalanceLn(sum, { n: 2 * BLOCK }, SUM_VARIANT, 2), 0, "two full blocks: even");
  assert.equal(imbalanceLn(sum, { n: BLOCK - 1 }, SUM_VARIANT, 2), 0, "one block runs inline");
  assert.equal(imbalanceLn(sum, { n }, SUM_VARIANT, 1), 0, "one thread has no one to share with");
});

Deno.test("threads claim chunks as they come free, so many parts share out evenly", () => {
  const gemv = getOp("gemv");
  assert.equal(imbalanceLn(gemv, { rows: 4096, cols: 4096 }, {}, 2), 0);
  // A matmul's parts are row blocks of mr: 8 rows at mr = 6 are blocks of 6 and 2.
  const matmul = getOp("matmul");
  const variant = { mr: 6, nr: 8, kc: 256, nc: 512, fma: true };
  assert.ok(
    Math.abs(imbalanceLn(matmul, { m: 8, k: 64, n: 64 }, variant, 2) - Math.log(1.5)) < 1e-12,
  );
});

Deno.test("a matrix op whose rows make one block runs on one thread, however long it is", () => {
  const matmul = getOp("matmul");
  const variant = { mr: 4, nr: 8, kc: 256, nc: 512, fma: true };
  // 4 rows at mr = 4: one block, so the second thread idles through 16.8 MB of B.
  assert.ok(
    Math.abs(imbalanceLn(matmul, { m: 4, k: 2048, n: 2048 }, variant, 2) - Math.log(2)) < 1e-12,
  );
  // Fewer rows than a block go by blocks of columns instead, and share out.
  assert.equal(imbalanceLn(matmul, { m: 3, k: 2048, n: 2048 }, variant, 2), 0);
});

Deno.test("predictTime() prices wasm-mt at a full block and a sliver like two full blocks", () => {
  const report = syntheticReport();
  assert.equal(report.machine.cores, 2);
  const at = (n: number) =>
    predictTime(report, { op: "add", shape: { n }, dtype: "f32", backend: "wasm-mt" });
  const sliver = at(ELEMENTWISE_BLOCK + 3616);
  const two = at(2 * ELEMENTWISE_BLOCK);
  assert.ok(Math.abs(sliver.ms / two.ms - 1) < 0.05, `${sliver.ms} vs ${two.ms}`);
  assert.match(sliver.source, /unevenly its parts share among the threads/);
  // Single-threaded wasm has no threads to share among.
  const wasm = predictTime(report, {
    op: "add",
    shape: { n: ELEMENTWISE_BLOCK + 3616 },
    dtype: "f32",
    backend: "wasm",
  });
  assert.doesNotMatch(wasm.source, /unevenly/);
});
