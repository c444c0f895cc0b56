import assert from "node:assert/strict";
import { geometricGrid, rateConverged } from "../calibrate/sweep.ts";

Deno.test("geometricGrid() gives exact powers of two by default, both ends included", () => {
  const grid = geometricGrid(1, 1 << 26);
  assert.equal(grid.length, 27);
  grid.forEach((s, i) => assert.equal(s, 2 ** i));
});

Deno.test("geometricGrid() spaces points per octave and rounds to distinct integers", () => {
  assert.deepEqual(geometricGrid(1, 8, { pointsPerOctave: 2 }), [1, 2, 3, 4, 6, 8]);
  assert.deepEqual(geometricGrid(1, 4, { pointsPerOctave: 8 }), [1, 2, 3, 4]);
  const fine = geometricGrid(1024, 4096, { pointsPerOctave: 4 });
  assert.deepEqual(fine, [1024, 1218, 1448, 1722, 2048, 2435, 2896, 3444, 4096]);
});

Deno.test("geometricGrid() with a factor ends exactly at max even off the grid", () => {
  assert.deepEqual(geometricGrid(100, 1000, { factor: 3 }), [100, 300, 900, 1000]);
  assert.deepEqual(geometricGrid(7, 7, { factor: 2 }), [7]);
});

Deno.test("geometricGrid() rejects bounds and spacings it cannot honour", () => {
  assert.throws(() => geometricGrid(0, 8), RangeError);
  assert.throws(() => geometricGrid(8, 4), RangeError);
  assert.throws(() => geometricGrid(1.5, 8), RangeError);
  assert.throws(() => geometricGrid(1, 8, { factor: 1 }), RangeError);
  assert.throws(() => geometricGrid(1, 8, { pointsPerOctave: 0 }), RangeError);
});

Deno.test("rateConverged() holds once the last three rates agree within 5 %", () => {
  assert.equal(rateConverged([1, 2, 4, 8, 16], [1, 4, 9.7, 9.9, 10.1]), true);
  assert.equal(rateConverged([1, 2, 4, 8, 16], [1, 4, 9, 9.9, 10.1]), false);
  assert.equal(rateConverged([1, 2, 4], [10, 10.2, 10.5], 0.01), false, "a tighter tolerance");
});

Deno.test("rateConverged() needs three sizes and reads them in size order", () => {
  assert.equal(rateConverged([1, 2], [10, 10]), false);
  assert.equal(rateConverged([16, 1, 8, 4], [10, 1, 10, 10]), true);
});

Deno.test("rateConverged() rejects mismatched lengths and non-positive rates", () => {
  assert.throws(() => rateConverged([1, 2, 3], [1, 2]), RangeError);
  assert.throws(() => rateConverged([1, 2, 3], [1, 0, 2]), RangeError);
});
