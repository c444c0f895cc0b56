import assert from "node:assert/strict";
import { kernelsKey, pricedAlike, SAME_DECODE_SHARE } from "../decode/_sample_match.ts";

/** A tiny-16m f32 decode: four layers of q and o projections, a 27 ms step. */
const MINE = {
  model: "tiny-16m",
  quant: "f32",
  variants: { q_proj: "rpi=16", o_proj: "rpi=16" },
  lanes: 64,
};
const LAUNCHES = new Map([["q_proj", 4], ["o_proj", 4]]);

/** The report's price of a projection at a variant, ms a launch; rpi=2 it never measured. */
function price(perLaunch: Record<string, number>) {
  return (_name: string, variant: string) => perLaunch[variant] ?? null;
}

Deno.test("a sample whose projections ran variants the report prices within 2 % of the step counts", () => {
  const pricing = {
    launches: LAUNCHES,
    price: price({ "rpi=16": 0.2, "rpi=4": 0.21 }),
    stepMs: 27,
  };
  const swapped = kernelsKey("tiny-16m", "f32", { q_proj: "rpi=4", o_proj: "rpi=16" }, 64);
  // 4 launches × 0.01 ms apart: 0.04 ms of a 27 ms step.
  assert.equal(pricedAlike(swapped, MINE, pricing), true);
  // Both projections ×5 slower at rpi=4: 8 × 0.8 ms, far over 2 % of the step.
  const slow = { ...pricing, price: price({ "rpi=16": 0.2, "rpi=4": 1.0 }) };
  const both = kernelsKey("tiny-16m", "f32", { q_proj: "rpi=4", o_proj: "rpi=4" }, 64);
  assert.equal(pricedAlike(both, MINE, slow), false);
  // Right at the share counts; just past it does not.
  const edge = (d: number) => ({ ...pricing, price: price({ "rpi=16": 0.2, "rpi=4": 0.2 + d }) });
  const limit = SAME_DECODE_SHARE * 27 / 4;
  assert.equal(pricedAlike(swapped, MINE, edge(limit * 0.999)), true);
  assert.equal(pricedAlike(swapped, MINE, edge(limit * 1.001)), false);
});

Deno.test("a sample counts only for its own pair, softmax and projections, at variants the report can price", () => {
  const pricing = { launches: LAUNCHES, price: price({ "rpi=16": 0.2, "rpi=4": 0.2 }), stepMs: 27 };
  const same = MINE.variants;
  assert.equal(pricedAlike(kernelsKey("tiny-16m", "f32", same, 64), MINE, pricing), true);
  assert.equal(pricedAlike(kernelsKey("tiny-64m", "f32", same, 64), MINE, pricing), false);
  assert.equal(pricedAlike(kernelsKey("tiny-16m", "int4", same, 64), MINE, pricing), false);
  assert.equal(pricedAlike(kernelsKey("tiny-16m", "f32", same, 256), MINE, pricing), false);
  const fewer = kernelsKey("tiny-16m", "f32", { q_proj: "rpi=16" }, 64);
  assert.equal(pricedAlike(fewer, MINE, pricing), false);
  const unmeasured = kernelsKey("tiny-16m", "f32", { q_proj: "rpi=2", o_proj: "rpi=16" }, 64);
  assert.equal(pricedAlike(unmeasured, MINE, pricing), false);
  for (const bad of ["", "[]", '["tiny-16m","f32",{"q_proj":4},64]', "{}"]) {
    assert.equal(pricedAlike(bad, MINE, pricing), false, bad);
  }
});
