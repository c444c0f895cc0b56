import assert from "node:assert/strict";
import { compareReports } from "../reports/compare.ts";
import { formatComparison } from "../reports/compare_format.ts";
import { runScope, seriesCoverage } from "../reports/coverage.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

/** The synthetic report with every matmul entry removed, as if its op had crashed. */
function withoutMatmul(command?: string[]): Report {
  const report = syntheticReport();
  report.measurements = report.measurements.filter((m) => m.op !== "matmul");
  report.fits = report.fits.filter((f) => f.op !== "matmul");
  report.crossovers = report.crossovers.filter((c) => c.op !== "matmul");
  report.tuning = report.tuning.filter((t) => t.op !== "matmul");
  report.thresholds = report.thresholds.filter((t) => t.op !== "matmul");
  if (command) report.provenance.command = command;
  return report;
}

Deno.test("compareReports() calls an op that disappeared a regression, row by row", () => {
  const result = compareReports(syntheticReport(), withoutMatmul());
  assert.equal(result.regressed, true);
  const series = result.rows.filter((r) => r.kind === "series");
  assert.ok(series.length > 0);
  assert.ok(series.every((r) => r.key.startsWith("matmul ") && r.regressed));
  assert.match(series[0]!.note, /gone from the current report: regression/);
  const lost = result.rows.filter((r) => r.kind !== "series" && r.key.startsWith("matmul "));
  assert.ok(lost.length > 0);
  assert.ok(
    lost.every((r) => r.regressed),
    lost.filter((r) => !r.regressed).map((r) => r.key).join(),
  );
  const text = formatComparison(result, "text", { baseline: "a", current: "b" });
  assert.doesNotMatch(text, /gone +within noise/);
  assert.match(text, /series +matmul f32 wasm end-to-end .* regressed/);
});

Deno.test("compareReports() lists an op the current run skipped with --ops, and says so", () => {
  const current = withoutMatmul(["deno", "task", "calibrate", "--ops", "add,gemv"]);
  const result = compareReports(syntheticReport(), current);
  assert.equal(result.regressed, false);
  const series = result.rows.filter((r) => r.kind === "series");
  assert.ok(series.length > 0);
  assert.ok(series.every((r) => !r.regressed));
  assert.match(series[0]!.note, /skipped: the current run was made with --ops add,gemv/);
  const text = formatComparison(result, "text", { baseline: "a", current: "b" });
  assert.match(text, /series +matmul f32 wasm end-to-end .* skipped/);
});

Deno.test("compareReports() lists the f16 series a --quick run left out as skipped, unless --dtypes named f16", () => {
  const quick = (command: string[]) => {
    const r = syntheticReport();
    r.measurements = r.measurements.filter((m) => m.dtype !== "f16");
    r.fits = r.fits.filter((f) => f.dtype !== "f16");
    r.crossovers = r.crossovers.filter((c) => c.dtype !== "f16");
    r.tuning = r.tuning.filter((t) => t.dtype !== "f16");
    r.thresholds = r.thresholds.filter((t) => t.dtype !== "f16");
    r.provenance = { ...r.provenance, quick: true, mode: "quick", command };
    return r;
  };
  // The baseline measured matmul f16 on WebGPU too.
  const baseline = syntheticReport();
  baseline.measurements = [
    ...baseline.measurements,
    ...baseline.measurements.filter((m) =>
      m.op === "matmul" && m.dtype === "f32" && m.backend === "webgpu"
    ).map((m) => ({ ...m, dtype: "f16" as const, seq: m.seq + 10_000 })),
  ];
  const plain = compareReports(baseline, quick(["deno", "task", "calibrate", "--quick"]));
  const f16 = plain.rows.filter((r) => r.kind === "series" && r.key.includes(" f16 "));
  assert.ok(f16.length > 0);
  assert.ok(f16.every((r) => !r.regressed && /--quick run leaves f16 out/.test(r.note)));
  const named = compareReports(
    baseline,
    quick(["deno", "task", "calibrate", "--quick", "--dtypes", "f32,f16"]),
  );
  assert.equal(named.regressed, true, "with f16 named, a lost f16 series is a regression");
});

Deno.test("compareReports() calls a backend that disappeared a regression unless --backends left it out", () => {
  const current = syntheticReport();
  current.measurements = current.measurements.filter((m) => m.backend !== "webgpu");
  assert.equal(compareReports(syntheticReport(), current).regressed, true);
  current.provenance.command = ["deno", "task", "calibrate", "--backends=js,wasm,wasm-mt"];
  const skipped = seriesCoverage(syntheticReport(), current);
  assert.ok(skipped.length > 0 && skipped.every((s) => !s.regressed));
  assert.match(skipped[0]!.note, /--backends js,wasm,wasm-mt/);
});

Deno.test("compareReports() calls a series that now fails its correctness check a regression", () => {
  const current = syntheticReport();
  const m = current.measurements.find((m) => m.op === "matmul" && m.backend === "wasm")!;
  current.measurements = current.measurements.map((x) =>
    x === m
      ? {
        ...m,
        state: "failed" as const,
        error: "Wrong answer: max relative error 0.3",
        maxRelError: 0.3,
      }
      : x
  );
  const [lost] = seriesCoverage(syntheticReport(), current);
  assert.equal(lost?.key, "matmul f32 wasm end-to-end");
  assert.equal(lost.regressed, true);
  assert.match(lost.note, /now fails its correctness check \(failed at \d+: Wrong answer/);
});

Deno.test("compareReports() calls a system figure that disappeared a regression", () => {
  const current = syntheticReport();
  current.system.uploadGBps = {
    value: null,
    unit: "GB/s",
    tag: "measured",
    reason: "readback failed",
  };
  const row = compareReports(syntheticReport(), current).rows.find((r) => r.key === "upload");
  assert.equal(row?.regressed, true);
  assert.match(row.note, /disappeared \(current: readback failed\): regression/);
});

Deno.test("runScope() reads --ops, --dtypes and --backends in either form, and a --budget stop", () => {
  const report = syntheticReport();
  report.provenance.command = ["deno", "task", "calibrate", "--ops=add", "--dtypes", "f32"];
  report.provenance.stopReason = "budget";
  const scope = runScope(report);
  assert.deepEqual([...scope.ops!], ["add"]);
  assert.deepEqual([...scope.dtypes!], ["f32"]);
  assert.equal(scope.backends, null);
  assert.equal(scope.flags, "--ops add --dtypes f32");
  assert.equal(scope.budget, true);
});

Deno.test("seriesCoverage() does not count a timing that drowned in noise at one size", () => {
  const current = syntheticReport();
  const m = current.measurements.find((m) => m.op === "add" && m.backend === "webgpu")!;
  current.measurements = current.measurements.map((x) =>
    x === m
      ? {
        ...m,
        state: "failed" as const,
        error: "No usable sample: the time per dispatch was lost in the synchronisation noise",
      }
      : x
  );
  assert.deepEqual(seriesCoverage(syntheticReport(), current), []);
});
