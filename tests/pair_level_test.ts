import assert from "node:assert/strict";
import { pairLevelShift } from "../reports/pair_level.ts";
import { interpolatedChoiceCost } from "../reports/threshold_cost.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";
import { slowedBackends } from "./_report_variants.ts";

const quiet = () => 0.02;

function crossoverOf(report: Report) {
  const c = report.crossovers.find((c) => c.op === "matmul" && c.pair === "wasm→wasm-mt");
  if (c === undefined) throw new RangeError("Fixture has no matmul wasm→wasm-mt crossover");
  return c;
}

/** wasm-mt slowed by `factor` at the sizes of matmul from `from` up, nothing else. */
function slowedAbove(from: number, factor: number): Report {
  const report = syntheticReport();
  report.measurements = report.measurements.map((m) =>
    m.state === "ok" && m.backend === "wasm-mt" && m.op === "matmul" && m.size >= from
      ? { ...m, wall: { ...m.wall, median: m.wall.median * factor } }
      : m
  );
  return report;
}

Deno.test("pairLevelShift() finds a whole curve that moved, and that the move turns the faster side", () => {
  const baseline = syntheticReport();
  const current = slowedBackends(syntheticReport(), ["wasm-mt"], 1.15);
  const s = pairLevelShift(baseline, crossoverOf(baseline), current, crossoverOf(current), quiet);
  assert.ok(s);
  assert.ok(Math.abs(s.logShift - Math.log(1.15)) < 1e-9);
  assert.equal(s.shapeKept, true);
  assert.equal(s.flipped, 1, "at n = 64 wasm-mt was 3 % faster, now 12 % slower");
  assert.equal(s.explainsFlips, true);
});

Deno.test("pairLevelShift() tells a curve whose shape changed from one that moved as a whole", () => {
  const baseline = syntheticReport();
  const current = slowedAbove(128, 2);
  const s = pairLevelShift(baseline, crossoverOf(baseline), current, crossoverOf(current), quiet);
  assert.ok(s);
  assert.equal(s.shapeKept, false, `worst residual ${s.worstResidual}`);
});

Deno.test("pairLevelShift() does not explain a crossover that moved while no measurement did", () => {
  const baseline = syntheticReport();
  const current = syntheticReport();
  crossoverOf(current).size = 200;
  const s = pairLevelShift(baseline, crossoverOf(baseline), current, crossoverOf(current), quiet);
  assert.equal(s?.flipped, 0);
  assert.equal(s?.explainsFlips, false);
});

Deno.test("interpolatedChoiceCost() prices a move between two measured sizes from the curves there", () => {
  const baseline = syntheticReport();
  const current = syntheticReport();
  const c = crossoverOf(current);
  const from = c.size!;
  c.size = from * 1.01;
  const cost = interpolatedChoiceCost(baseline, crossoverOf(baseline), current, c);
  assert.ok(cost);
  assert.deepEqual(cost.between, [32, 64]);
  assert.ok(cost.cost > 0 && cost.cost < 0.05, `${cost.cost}`);
  assert.deepEqual(cost.ends.map((e) => e.change), [0, 0], "no measurement moved");
  c.size = 100;
  assert.equal(
    interpolatedChoiceCost(baseline, crossoverOf(baseline), current, c),
    null,
    "past a measured size",
  );
});
