import assert from "node:assert/strict";
import {
  firstSharedSize,
  imbalanceLn,
  perCallWork,
  runsOnOneThread,
} from "../models/_imbalance.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import { BLOCK } from "../kernels/reduce/wasm.ts";
import { ELEMENTWISE_BLOCK } from "../kernels/elementwise/wasm.ts";
import { syntheticReport } from "./_fixtures.ts";
import { fitAll } from "../calibrate/analyze.ts";
import type { Measurement } from "../core/schema.ts";

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

Deno.test("a matmul that packs B per call shares out its rows, not its packing", () => {
  const matmul = getOp("matmul");
  const variant = { mr: 6, nr: 8, kc: 256, nc: 512, fma: true };
  const at = (m: number, perCall: number) =>
    Math.exp(imbalanceLn(matmul, { m, k: 1024, n: 1024 }, variant, 2, perCall));
  // 16 rows are blocks of 6, 6 and 4: one thread takes 6 rows, the other 10, and each packs B
  // once, as each does at the squares. With the packing worth 12 rows: (10 + 12) / (8 + 12).
  assert.ok(Math.abs(at(16, 12) - 1.1) < 1e-12);
  assert.ok(Math.abs(at(16, 0) - 1.25) < 1e-12, "no packing: the rows alone");
  // 6 rows are one block: one thread packs and runs all of it.
  assert.ok(Math.abs(at(6, 12) - 18 / 15) < 1e-12);
  assert.equal(at(12, 12), 1, "two blocks of 6: even");
  // A kernel that packs nothing takes no packing, whatever it is told.
  const sum = getOp("sum");
  assert.equal(
    imbalanceLn(sum, { n: 2 * BLOCK }, SUM_VARIANT, 2, 50),
    imbalanceLn(sum, { n: 2 * BLOCK }, SUM_VARIANT, 2),
  );
});

Deno.test("perCallWork() reads the packing from one-thread runs as rows' worth of work", () => {
  // Each run: its packing worth 14 rows, then its rows, 2 µs a row of 2 MFLOP.
  const run = (m: number, packing = 14) => ({
    ms: (packing + m) * 2e-3,
    total: m,
    flops: m * 2e6,
  });
  assert.ok(Math.abs(perCallWork([6, 16, 32, 100, 256].map((m) => run(m))) - 14) < 1e-9);
  assert.equal(perCallWork([run(6), run(16)]), 0, "two runs are not enough to tell");
  assert.equal(perCallWork([run(16), run(16), run(16)]), 0, "one row count says nothing");
  assert.equal(perCallWork([6, 16, 32].map((m) => run(m, 0))), 0, "no packing");
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

Deno.test("predictTime() prices a wasm-mt run of one part (inline) at one thread's time, not drawn toward two threads'", () => {
  // add f32 on wasm-mt: up to one block of elements the caller runs it alone at one thread's
  // 8 GB/s; from the second block on two threads share it at 16 GB/s.
  const oneThread = (n: number) => 0.001 + 12 * n / 8e6;
  const twoThreads = (n: number) => 0.003 + 12 * n / 16e6;
  const base = syntheticReport();
  const isSeries = (m: Measurement) =>
    m.op === "add" && m.dtype === "f32" && m.backend === "wasm-mt";
  const template = base.measurements.find((m) => isSeries(m) && m.state === "ok")!;
  assert.ok(template.state === "ok");
  const series: Measurement[] = [256, 1024, 4096, 12000, 40000, 131072, 1048576, 4194304].map(
    (n, i) => {
      const median = n <= ELEMENTWISE_BLOCK ? oneThread(n) : twoThreads(n);
      const wall = { ...template.wall, median, ciHalfWidth: 0.01 * median, relCi: 0.01 };
      return {
        ...template,
        shape: { n },
        size: n,
        flops: n,
        bytes: 12 * n,
        wall,
        seq: base.measurements.length + i,
      };
    },
  );
  const measurements = [...base.measurements.filter((m) => !isSeries(m)), ...series];
  const report = { ...base, measurements, fits: fitAll(measurements) };
  // 16 000 elements are one block: between the inline 12 000 and the shared 40 000.
  const n = 16000;
  assert.ok(n < ELEMENTWISE_BLOCK);
  const p = predictTime(report, { op: "add", shape: { n }, dtype: "f32", backend: "wasm-mt" });
  const ratio = p.ms / oneThread(n);
  assert.ok(ratio > 0.9 && ratio < 1.1, `predicted ÷ one thread's time at ${n}: ${ratio}`);
});

Deno.test("runsOnOneThread() is a matrix op's run of one chunk on more than one thread", () => {
  const matmul = getOp("matmul");
  const v = { mr: 6, nr: 8, kc: 256, nc: 512, fma: true };
  assert.equal(runsOnOneThread(matmul, { m: 6, k: 6000, n: 256 }, v, 2), true);
  // Fewer rows than a block split by 64-column parts: one part up to 64 columns.
  assert.equal(runsOnOneThread(matmul, { m: 3, k: 6000, n: 64 }, v, 2), true);
  assert.equal(runsOnOneThread(matmul, { m: 3, k: 6000, n: 65 }, v, 2), false);
  assert.equal(runsOnOneThread(matmul, { m: 7, k: 100, n: 100 }, v, 2), false);
  assert.equal(runsOnOneThread(matmul, { m: 6, k: 6000, n: 256 }, v, 1), false);
  // One chunk of a one-dimensional op runs inline, and its fit draws that.
  assert.equal(runsOnOneThread(sum, { n: 100 }, SUM_VARIANT, 2), false);
});

Deno.test("predictTime() prices a wasm-mt matmul of one row block as one-thread wasm runs it, and two blocks as wasm-mt", () => {
  const report = syntheticReport();
  const variant = report.fits.find((f) => f.op === "matmul" && f.backend === "wasm-mt")!.variant;
  const mr = Number(/mr=(\d+)/.exec(variant)![1]);
  const ask = (backend: "wasm" | "wasm-mt", m: number) =>
    predictTime(report, {
      op: "matmul",
      shape: { m, k: 2000, n: 300 },
      dtype: "f32",
      backend,
      variant,
    });
  // One block of mr rows: one thread packs B and runs every row, exactly as wasm would.
  const one = ask("wasm-mt", mr);
  assert.equal(one.ms, ask("wasm", mr).ms);
  assert.match(one.source, /^one chunk, which one thread runs whole: .* matmul f32 wasm /);
  // Two blocks: each thread takes one, and the series' own model prices it.
  const two = ask("wasm-mt", 2 * mr);
  assert.notEqual(two.ms, ask("wasm", 2 * mr).ms);
  assert.doesNotMatch(two.source, /one chunk/);
});
