import assert from "node:assert/strict";
import { variantRatioHalfWidth } from "../models/_index.ts";

Deno.test("a variant's ratio measured only at other proportions is trusted a factor of two either way", () => {
  const square = { m: 611, k: 611, n: 611 };
  const dims = ["m", "k", "n"];
  // Ran alike with the fitted variant at its one shape: on the axis, that tends to hold (±25 %).
  const onAxis = { from: "fitted", ratio: 1.05, sizes: [128], share: 1, onAxis: true };
  assert.ok(Math.abs(variantRatioHalfWidth(onAxis, dims, square) - Math.log(1.25)) < 1e-12);
  // At 1 × 1024 × 1024 alone, where tile sizes hardly matter, it says little of 611³.
  const offAxis = { ...onAxis, onAxis: false };
  assert.ok(Math.abs(variantRatioHalfWidth(offAxis, dims, square) - Math.log(2)) < 1e-12);
  // Only on the part of the time a variant moves.
  const launchBound = { ...offAxis, share: 0.5 };
  assert.ok(Math.abs(variantRatioHalfWidth(launchBound, dims, square) - Math.log(2) / 2) < 1e-12);
});
