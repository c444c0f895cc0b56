import assert from "node:assert/strict";
import { firstSharedSize, imbalanceLn } from "../models/_imbalance.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import { BLOCK } from "../kernels/reduce/wasm.ts";
import { ELEMENTWISE_BLOCK } from "../kernels/elementwise/wasm.ts";
import { syntheticReport } from "./_fixtures.ts";
import { loadReport } from "../reports/load.ts";

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

Deno.test("a one-dimensional op leaves the caller at its second part, and only then", () => {
  const variant = { accs: 8, fma: true };
  assert.equal(firstSharedSize(getOp("dot"), variant, 2), BLOCK + 1);
  assert.equal(firstSharedSize(getOp("dot"), variant, 1), null);
  assert.equal(
    firstSharedSize(getOp("matmul"), { mr: 6, nr: 8, kc: 256, nc: 512, fma: true }, 2),
    null,
  );
});

Deno.test("predictTime() prices a wasm-mt run of one part (inline) at one thread's time, not drawn toward two threads'", async () => {
  const report = await loadReport(
    new URL("../reports/llvmpipe-vulkan-x86_64-1f7ec986.json", import.meta.url).pathname,
  );
  // 50 001 elements are one part: the caller runs them alone, as wasm does. The dataset entry
  // measured wasm-mt dot at 23 080 (inline) and 81 920 (two parts on two threads).
  const at = (backend: "wasm" | "wasm-mt") =>
    predictTime(report, { op: "dot", shape: { n: 50001 }, dtype: "f32", backend }).ms;
  const ratio = at("wasm-mt") / at("wasm");
  assert.ok(ratio > 0.9 && ratio < 1.1, `wasm-mt ÷ wasm at 50 001: ${ratio.toFixed(2)}`);
});
