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

Deno.test("a ratio measured only at other proportions widens by a factor of two for every octave past the first to the nearest shape it ran at", () => {
  const dims = ["m", "k", "n"];
  const shape = { m: 40, k: 1111, n: 900 };
  // A plain loop timed at 1 × 1024² alone, asked about 40 rows: log2(40) = 5.3 octaves away.
  const decodeOnly = {
    from: "fitted",
    ratio: 1.1,
    sizes: [1024],
    share: 1,
    onAxis: false,
    octavesAway: Math.log2(40),
  };
  const half = variantRatioHalfWidth(decodeOnly, dims, shape);
  assert.ok(Math.abs(half - Math.log(2) * Math.log2(40)) < 1e-12);
  // Lavapipe's ran it ×19 its ratio at m = 1: inside now, outside a factor of two.
  assert.ok(half > Math.log(19));
  // Within an octave of where it ran, a factor of two as before.
  const near = { ...decodeOnly, octavesAway: 0.6 };
  assert.ok(Math.abs(variantRatioHalfWidth(near, dims, shape) - Math.log(2)) < 1e-12);
  // A variant that ran on the axis is not moved by how far its off-axis shapes lie.
  const onAxis = { ...decodeOnly, onAxis: true };
  assert.ok(Math.abs(variantRatioHalfWidth(onAxis, dims, shape) - Math.log(1.25)) < 1e-12);
});
