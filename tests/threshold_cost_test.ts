import assert from "node:assert/strict";
import { compareReports } from "../reports/compare.ts";
import type { Crossover, Report } from "../core/schema.ts";
import { thresholdChoiceCost } from "../reports/threshold_cost.ts";
import { syntheticReport } from "./_fixtures.ts";
import { movedGpuCrossover, nearlyEqualBackends } from "./_report_variants.ts";

const WASM_MT_KEY = "add f32 wasm→wasm-mt end-to-end";

function crossoverOf(
  report: Report,
  op: string,
  pair: Crossover["pair"],
  residency = "end-to-end",
) {
  const c = report.crossovers.find((c) =>
    c.op === op && c.dtype === "f32" && c.pair === pair && c.residency === residency
  );
  if (c === undefined) throw new RangeError(`Fixture has no ${op} ${pair} crossover`);
  return c;
}

/** The cost of the move of the f32 `op` `pair` crossover from `base` to `current`. */
function costOfMove(base: Report, current: Report, op: string, pair: Crossover["pair"]) {
  return thresholdChoiceCost(
    base,
    crossoverOf(base, op, pair),
    current,
    crossoverOf(current, op, pair),
  );
}

Deno.test("thresholdChoiceCost() prices a GPU crossover moved 2x at the slowdown between the two sizes", () => {
  const base = syntheticReport();
  const moved = movedGpuCrossover(2);
  const cost = costOfMove(base, moved, "matmul", "cpu→webgpu");
  assert.ok(cost !== null, "the fixture measures sizes between the two thresholds");
  assert.ok(cost.cost > 0.1, `cost ${cost.cost}`);
  assert.ok(cost.sizes >= 1);
});

Deno.test("thresholdChoiceCost() is the ratio of the two backends where the thresholds disagree", () => {
  const base = nearlyEqualBackends(1.04, 1e6);
  const current = nearlyEqualBackends(1.04, 1e3);
  const cost = costOfMove(base, current, "add", "wasm→wasm-mt");
  assert.ok(cost !== null);
  // Between 1e3 and 1e6 the current threshold picks wasm-mt, 4 % slower than wasm there.
  assert.ok(Math.abs(cost.cost - 0.04) < 1e-9, `cost ${cost.cost}`);
});

Deno.test("thresholdChoiceCost() names choices by the pair's sides, whichever way from and to run", () => {
  const base = nearlyEqualBackends(1.04, 1e3);
  const current = nearlyEqualBackends(1.04, 1e3);
  // The same boundary written the other way round: wasm-mt below it, wasm above.
  const flipped = crossoverOf(current, "add", "wasm→wasm-mt");
  flipped.from = "wasm-mt";
  flipped.to = "wasm";
  const cost = thresholdChoiceCost(
    base,
    crossoverOf(base, "add", "wasm→wasm-mt"),
    current,
    flipped,
  );
  assert.ok(cost !== null);
  assert.ok(cost.sizes > 0, "the two rules now disagree on every measured size");
});

Deno.test("thresholdChoiceCost() is null when no measured size lies between the thresholds", () => {
  const base = nearlyEqualBackends(1.04, 1000);
  const current = nearlyEqualBackends(1.04, 1001);
  const cost = costOfMove(base, current, "add", "wasm→wasm-mt");
  assert.equal(cost, null);
});

Deno.test("compareReports() lets a crossover between near-equal backends move without a regression", () => {
  const result = compareReports(nearlyEqualBackends(1.04, 1e6), nearlyEqualBackends(1.04, 1e3));
  const row = result.rows.find((r) => r.key === WASM_MT_KEY);
  assert.ok(row);
  assert.equal(row.beyondNoise, true);
  assert.equal(row.regressed, false);
  assert.match(row.note, /no effect: choosing by either threshold is at most 4\.0 % slower/);
  assert.equal(result.rows.some((r) => r.regressed), false);
});

Deno.test("compareReports() still flags the same move when the backends differ by more than the tolerance", () => {
  const result = compareReports(nearlyEqualBackends(1.3, 1e6), nearlyEqualBackends(1.3, 1e3));
  const row = result.rows.find((r) => r.key === WASM_MT_KEY);
  assert.equal(row?.regressed, true);
  assert.match(row.note, /at most 30\.0 % slower/);
});

Deno.test("thresholdChoiceCost() does not count a cost within the two runs' disagreement at that size", () => {
  const base = nearlyEqualBackends(1.3, 1e6);
  const current = nearlyEqualBackends(1.3, 1e3);
  const plain = costOfMove(base, current, "add", "wasm→wasm-mt");
  assert.ok(plain !== null && plain.cost > 0.25);
  const pair = (r: Report) => crossoverOf(r, "add", "wasm→wasm-mt");
  // Two runs that disagree by σ 0.3 in ln time per backend cannot establish a 30 % cost.
  const noisy = thresholdChoiceCost(base, pair(base), current, pair(current), () => 0.3);
  assert.equal(noisy?.cost, 0);
  assert.equal(noisy.withinNoise, noisy.sizes);
  // Runs that agree to 2 % do.
  const calm = thresholdChoiceCost(base, pair(base), current, pair(current), () => 0.02);
  assert.ok(Math.abs(calm!.cost - plain.cost) < 1e-12);
  assert.ok(calm!.withinNoise! < calm!.sizes);
});
