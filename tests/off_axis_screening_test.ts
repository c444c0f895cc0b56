import assert from "node:assert/strict";
import { screeningOrder } from "../calibrate/off_axis_steps.ts";
import { variantId } from "../kernels/types.ts";

const v = (tile: number) => ({ tile });
const ids = (variants: readonly object[]) => variants.map((x) => variantId(x as never));

Deno.test("an off-axis screen tries the winner, the squares' runner-up, then the variants the square search never timed before the ones it timed and ranked low", () => {
  // The search timed 8, 16, 4 (in that order of speed); 2 and 32 it never reached.
  const ranked = [v(8), v(16), v(4), v(2), v(32)];
  const timed = new Set(["tile=8", "tile=16", "tile=4"]);
  assert.deepEqual(ids(screeningOrder(ranked, [], timed)), [
    "tile=8",
    "tile=16",
    "tile=2",
    "tile=32",
    "tile=4",
  ]);
});

Deno.test("a variant already found faster off the axis is screened right after the winner, once", () => {
  const ranked = [v(8), v(16), v(4), v(2)];
  const timed = new Set(["tile=8", "tile=16", "tile=4", "tile=2"]);
  assert.deepEqual(ids(screeningOrder(ranked, [v(2)], timed)), [
    "tile=8",
    "tile=2",
    "tile=16",
    "tile=4",
  ]);
});

Deno.test("a later screen tries the square search's ranking before the variants it never timed", () => {
  const ranked = [v(8), v(16), v(4), v(2), v(32)];
  const timed = new Set(["tile=8", "tile=16", "tile=4"]);
  assert.deepEqual(ids(screeningOrder(ranked, [v(32)], timed, false)), [
    "tile=8",
    "tile=32",
    "tile=16",
    "tile=4",
    "tile=2",
  ]);
});
