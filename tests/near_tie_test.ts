import assert from "node:assert/strict";
import { compareReports } from "../reports/compare.ts";
import { formatComparison } from "../reports/compare_format.ts";
import { nearTie } from "../reports/near_tie.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";
import { movedGpuCrossover, nearlyEqualBackends } from "./_report_variants.ts";

const WASM_MT_KEY = "add f32 wasm→wasm-mt end-to-end";

function crossover(report: Report, pair: string, op = "add") {
  return report.crossovers.find((c) =>
    c.op === op && c.dtype === "f32" && c.pair === pair && c.residency === "end-to-end"
  )!;
}

Deno.test("nearTie() reports a crossing between two level backends as a tie over their range", () => {
  const report = nearlyEqualBackends(1.04, 20_000);
  const tie = nearTie(report, crossover(report, "wasm→wasm-mt"), 0.1);
  assert.ok(tie);
  const sizes = report.measurements.filter((m) => m.op === "add" && m.backend === "wasm")
    .map((m) => m.size);
  assert.equal(tie.from, Math.min(...sizes));
  assert.equal(tie.to, Math.max(...sizes));
  assert.ok(Math.abs(tie.within - 0.04) < 1e-9, `within ${tie.within}`);
});

Deno.test("nearTie() leaves a crossover between clearly different curves a threshold", () => {
  const report = syntheticReport();
  const gpu = crossover(report, "cpu→webgpu", "matmul");
  assert.equal(nearTie(report, gpu, 0.1), null);
});

Deno.test("compareReports() shows a crossing that moved 20x within a near-tie as a tie, not a regression", () => {
  const result = compareReports(nearlyEqualBackends(1.04, 1000), nearlyEqualBackends(1.04, 20_000));
  const row = result.rows.find((r) => r.key === WASM_MT_KEY);
  assert.ok(row?.ties?.baseline && row.ties.current);
  assert.equal(row.regressed, false);
  assert.match(
    row.note,
    /no effect: .*a near-tie, either from [\d.]+ to [\d.e+]+ elements, within 4\.0 %/,
  );
  const text = formatComparison(result, "text", { baseline: "a", current: "b" });
  assert.match(text, /either 1024–4\.19e\+6 elements \(within 4\.0 %\)/);
});

Deno.test("compareReports() still flags a GPU crossover that moved 2x: no tie there", () => {
  const row = compareReports(syntheticReport(), movedGpuCrossover(2)).rows
    .find((r) => r.key === "matmul f32 cpu→webgpu end-to-end");
  assert.equal(row?.regressed, true);
  assert.equal(row.ties, undefined);
});
