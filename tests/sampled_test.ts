import assert from "node:assert/strict";
import { getOp } from "../kernels/catalog.ts";
import { seededRng } from "../kernels/_random.ts";
import { SAMPLED_ABOVE_FLOPS, verifySampledRows } from "../calibrate/sampled.ts";
import { sampleIndices, verifySampled } from "../calibrate/verify.ts";

const matmul = getOp("matmul");
const shape = { m: 64, k: 16, n: 8 };
const inputs = matmul.inputs(shape, "f32", seededRng(5));
const right = Float32Array.from(matmul.reference(shape, "f32", inputs));

Deno.test("sampled verification passes a right matmul and fails one that skips rows", () => {
  assert.equal(verifySampledRows(matmul, shape, "f32", inputs, right, 11, true)?.ok, true);
  // A kernel that computes every other row only (the rest left zero).
  const skipping = right.map((v, i) => Math.floor(i / shape.n) % 2 === 0 ? v : 0);
  for (const seed of [1, 2, 3, 4, 5]) {
    const v = verifySampledRows(matmul, shape, "f32", inputs, skipping, seed, true);
    assert.equal(v?.ok, false, `seed ${seed}`);
    assert.match(v!.message!, /sampled rows/);
    assert.equal(
      Math.floor(v!.worstIndex / shape.n) % 2,
      1,
      "the worst element is on a skipped row",
    );
  }
});

Deno.test("sampled verification is for huge cases only: a small matmul is verified in full", () => {
  assert.equal(verifySampledRows(matmul, shape, "f32", inputs, right, 1), null);
  assert.ok(matmul.flops({ m: 2048, k: 2048, n: 2048 }) > SAMPLED_ABOVE_FLOPS);
});

Deno.test("sampleIndices() is seeded, distinct, ascending and covers both ends", () => {
  const a = sampleIndices(10_000, 32, 9);
  assert.deepEqual(a, sampleIndices(10_000, 32, 9));
  assert.notDeepEqual(a, sampleIndices(10_000, 32, 10));
  assert.equal(new Set(a).size, 32);
  assert.deepEqual(a, [...a].sort((x, y) => x - y));
  assert.equal(a[0], 0);
  assert.equal(a.at(-1), 9_999);
  assert.deepEqual(sampleIndices(3, 8, 1), [0, 1, 2]);
});

Deno.test("verifySampled() fails an output whose sampled elements are skipped", () => {
  const ref = (i: number) => i + 1;
  const out = Float32Array.from({ length: 1000 }, (_, i) => i % 3 === 0 ? 0 : i + 1);
  const v = verifySampled(out, ref, sampleIndices(1000, 64, 3), 1e-6);
  assert.equal(v.ok, false);
  assert.equal(v.worstIndex % 3, 0);
  assert.equal(
    verifySampled(Float32Array.from({ length: 1000 }, (_, i) => i + 1), ref, [0, 5], 1e-6).ok,
    true,
  );
});

Deno.test("sampled verification of a gemv (f32, q8, q4) passes the right answer and fails skipped rows", () => {
  const gemv = getOp("gemv");
  const s = { rows: 48, cols: 64 };
  for (const dtype of ["f32", "q8", "q4"] as const) {
    const q = gemv.inputs(s, dtype, seededRng(2));
    const y = Float32Array.from(gemv.reference(s, dtype, q));
    assert.equal(verifySampledRows(gemv, s, dtype, q, y, 4, true)?.ok, true, dtype);
    const skipping = y.map((v, r) => r % 2 === 0 ? v : 0);
    assert.equal(verifySampledRows(gemv, s, dtype, q, skipping, 4, true)?.ok, false, dtype);
  }
});
