import assert from "node:assert/strict";
import { verifyOutput } from "../calibrate/verify.ts";

Deno.test("verifyOutput() accepts rounding within tolerance", () => {
  const ref = new Float64Array([1, -2, 3.5]);
  const out = Float32Array.from(ref, (x) => x * (1 + 1e-7));
  const v = verifyOutput(out, ref, 1e-6);
  assert.equal(v.ok, true);
  assert.ok(v.maxRelError < 1e-6);
});

Deno.test("verifyOutput() names the worst element of a wrong answer", () => {
  const v = verifyOutput(new Float32Array([1, 2, 9]), new Float64Array([1, 2, 3]), 1e-4);
  assert.equal(v.ok, false);
  assert.equal(v.worstIndex, 2);
  assert.match(v.message ?? "", /element 2 is 9, expected 3/);
});

Deno.test("verifyOutput() fails NaN, zeros and length mismatches", () => {
  assert.equal(verifyOutput([1, NaN], [1, 2], 1).ok, false);
  assert.equal(verifyOutput([0, 0], [1, 2], 1e-3).ok, false);
  const short = verifyOutput([1], [1, 2], 1);
  assert.equal(short.ok, false);
  assert.equal(short.maxRelError, Infinity);
});
