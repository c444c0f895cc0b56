import assert from "node:assert/strict";
import { compareReports } from "../reports/compare.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport, syntheticStability } from "./_fixtures.ts";
import {
  jittered,
  MATMUL_WASM,
  movedGpuCrossover,
  probesWith,
  slowedBackends,
  slowedSeries,
  withRelCi,
} from "./_report_variants.ts";

const GPU_KEY = "matmul f32 cpu→webgpu end-to-end";

Deno.test("compareReports() finds nothing regressed between identical reports", () => {
  const result = compareReports(syntheticReport(), syntheticReport());
  assert.equal(result.comparable, true);
  assert.equal(result.regressed, false);
  assert.equal(result.rows.filter((r) => r.beyondNoise).length, 0);
  assert.ok(result.rows.some((r) => r.kind === "crossover"));
  assert.ok(result.rows.some((r) => r.kind === "rate"));
  assert.ok(result.rows.some((r) => r.kind === "system"));
});

Deno.test("compareReports() flags a GPU crossover that moved 2x as a regression", () => {
  const result = compareReports(syntheticReport(), movedGpuCrossover(2));
  assert.equal(result.regressed, true);
  const row = result.rows.find((r) => r.key === GPU_KEY);
  assert.ok(row);
  assert.equal(row.kind, "crossover");
  assert.ok(Math.abs(row.change! - 1) < 1e-9);
  assert.equal(row.beyondNoise, true);
  assert.equal(row.regressed, true);
  assert.match(row.note, /threshold moved up/);
  assert.deepEqual(result.rows.filter((r) => r.regressed).map((r) => r.key), [GPU_KEY]);
});

Deno.test("compareReports() counts a crossover moving down as a regression too", () => {
  const row = compareReports(syntheticReport(), movedGpuCrossover(0.5)).rows
    .find((r) => r.key === GPU_KEY);
  assert.equal(row?.regressed, true);
  assert.match(row.note, /threshold moved down/);
});

Deno.test("compareReports() ignores small jitter within the tolerance", () => {
  const result = compareReports(syntheticReport(), jittered(0.03));
  assert.equal(result.regressed, false);
  assert.equal(result.rows.filter((r) => r.beyondNoise).length, 0);
});

Deno.test("compareReports() does not call a move beyond tolerance noise while intervals overlap", () => {
  const current = syntheticReport();
  // 12 % lower, but a wide current interval still reaches the baseline's [1.805, 1.995].
  current.system.uploadGBps = { ...current.system.uploadGBps, value: 1.672, ci: [1.5, 1.85] };
  const row = compareReports(syntheticReport(), current).rows.find((r) => r.key === "upload");
  assert.ok(row);
  assert.ok(Math.abs(row.change!) > 0.1);
  assert.equal(row.beyondNoise, false);
  assert.match(row.note, /intervals overlap/);
});

Deno.test("compareReports() calls a falling rate a regression and a rising one an improvement", () => {
  const current = syntheticReport();
  current.system.uploadGBps = { ...current.system.uploadGBps, value: 1.0, ci: [0.95, 1.05] };
  current.system.copyGBps = { ...current.system.copyGBps, value: 19, ci: [18, 20] };
  current.system.dispatchRoundTripMs = {
    ...current.system.dispatchRoundTripMs,
    value: 5,
    ci: [4.8, 5.2],
  };
  const rows = compareReports(syntheticReport(), current).rows;
  const get = (key: string) => rows.find((r) => r.key === key)!;
  assert.equal(get("upload").regressed, true);
  assert.equal(get("device copy").regressed, false);
  assert.equal(get("device copy").beyondNoise, true);
  assert.equal(get("dispatch round trip").regressed, false);
  assert.match(get("dispatch round trip").note, /improvement/);
});

Deno.test("compareReports() falls back to the tolerance alone without intervals, and says so", () => {
  const baseline = syntheticReport();
  const current = syntheticReport();
  delete baseline.system.perDispatchUs.ci;
  current.system.perDispatchUs = { value: 120, unit: "us", tag: "measured" };
  const row = compareReports(baseline, current).rows.find((r) => r.key === "per dispatch");
  assert.equal(row?.regressed, true);
  assert.match(row.note, /tolerance alone/);
});

Deno.test("compareReports() compares the rate measured at the largest size both reports share", () => {
  const baseline = syntheticReport();
  const current = slowedSeries(syntheticReport(), MATMUL_WASM, 2);
  const largest = (r: Report) =>
    r.measurements.filter((m) => m.op === "matmul" && m.backend === "wasm" && m.state === "ok")
      .sort((a, b) => b.size - a.size)[0]!;
  const [b, c] = [largest(baseline), largest(current)];
  assert.ok(b.state === "ok" && c.state === "ok");
  // The current report names another variant best at that size.
  Object.assign(c, { variant: "fma=true,kc=128,mr=4,nc=256,nr=8" });
  const row = compareReports(baseline, current).rows
    .find((r) => r.key === "matmul f32 wasm end-to-end compute");
  assert.ok(row);
  assert.equal(row.unit, "GFLOP/s");
  assert.equal(row.baseline, b.gflops);
  assert.equal(row.current, c.gflops);
  assert.equal(row.regressed, true);
  assert.match(row.note, new RegExp(`measured at ${b.size}`));
  assert.match(row.note, /best variant .* → fma=true,kc=128/);
});

/** The synthetic report with only the largest measured point of matmul f32 wasm slowed. */
function strayAtLargest(factor: number): Report {
  const report = syntheticReport();
  const largest = Math.max(
    ...report.measurements.filter((m) => m.op === "matmul" && m.backend === "wasm").map((m) =>
      m.size
    ),
  );
  report.measurements = report.measurements.map((m) =>
    m.state === "ok" && m.op === "matmul" && m.backend === "wasm" && m.size === largest
      ? {
        ...m,
        wall: { ...m.wall, median: m.wall.median * factor },
        gflops: m.gflops / factor,
        gbps: m.gbps / factor,
      }
      : m
  );
  return report;
}

Deno.test("compareReports() leaves a rate that moved at one measured point only to its backend's test", () => {
  const key = "matmul f32 wasm end-to-end compute";
  const result = compareReports(syntheticReport(), strayAtLargest(3));
  const row = result.rows.find((r) => r.key === key);
  assert.ok(row);
  assert.ok(Math.abs(row.change! - (1 / 3 - 1)) < 1e-9, "the move is shown");
  assert.equal(row.beyondNoise, false, "left to the backend's test, not shown as an improvement");
  assert.equal(row.regressed, false, row.note);
  assert.match(
    row.note,
    /not a regression on one point: .*only matmul f32 end-to-end at \d+ is slower/,
  );
  assert.equal(result.regressed, false);
  const series = compareReports(syntheticReport(), slowedSeries(syntheticReport(), MATMUL_WASM, 3))
    .rows.find((r) => r.key === key);
  assert.equal(series?.regressed, true, "the whole series slowed: every size shows it");
  assert.match(series.note, /slower at \d+ sizes of its series/);
});

Deno.test("compareReports() falls back to the fitted rate where the reports share no size", () => {
  const current = syntheticReport();
  current.measurements = current.measurements.filter((m) =>
    !(m.op === "matmul" && m.backend === "wasm")
  );
  const fit = current.fits.find((f) =>
    f.op === "matmul" && f.backend === "wasm" && f.residency === "end-to-end"
  )!;
  current.fits.push({ ...fit, variant: "fma=true,kc=128,mr=4,nc=256,nr=8", gflops: 6 });
  const row = compareReports(syntheticReport(), current).rows
    .find((r) => r.key === "matmul f32 wasm end-to-end compute");
  assert.ok(row);
  assert.equal(row.baseline, 3);
  assert.equal(row.current, 6);
  assert.equal(row.regressed, false);
  assert.equal(row.beyondNoise, true);
  assert.match(row.note, /best variant .* → fma=true,kc=128/);
});

Deno.test("compareReports() reports a crossover that disappeared as a moved threshold", () => {
  const current = movedGpuCrossover(1);
  const c = current.crossovers.find((c) =>
    c.op === "matmul" && c.pair === "cpu→webgpu" && c.residency === "end-to-end"
  )!;
  Object.assign(c, { size: null, ci: null, reason: "webgpu never wins up to 512" });
  const row = compareReports(syntheticReport(), current).rows.find((r) => r.key === GPU_KEY);
  assert.equal(row?.regressed, true);
  assert.match(row.note, /threshold disappeared \(current: webgpu never wins/);
});

Deno.test("compareReports() calls a crossover the current report lost a regression", () => {
  const current = syntheticReport();
  current.crossovers = current.crossovers.filter((c) => c.op !== "add");
  const result = compareReports(syntheticReport(), current);
  assert.equal(result.regressed, true);
  const row = result.rows.find((r) => r.key === "add f32 js→wasm end-to-end");
  assert.equal(row?.regressed, true);
  assert.match(row.note, /not measured in the current report: gone: regression/);
});

Deno.test("compareReports() lists a crossover the current run skipped with --ops without calling it a regression", () => {
  const current = syntheticReport();
  current.crossovers = current.crossovers.filter((c) => c.op !== "add");
  current.provenance.command = ["deno", "task", "calibrate", "--ops", "matmul,gemv"];
  const result = compareReports(syntheticReport(), current);
  assert.equal(result.regressed, false);
  const row = result.rows.find((r) => r.key === "add f32 js→wasm end-to-end");
  assert.equal(row?.regressed, false);
  assert.match(row.note, /skipped: the current run was made with --ops matmul,gemv/);
});

Deno.test("compareReports() refuses reports of different machines unless allowed", () => {
  const other = syntheticReport({ fingerprint: "0000111122223333", slug: "other" });
  const refused = compareReports(syntheticReport(), other);
  assert.equal(refused.comparable, false);
  assert.equal(refused.rows.length, 0);
  assert.match(refused.reasons[0]!, /Different machines: baseline fingerprint 3f9a1c0d5e7b2a64/);
  const allowed = compareReports(syntheticReport(), other, { allowDifferentMachine: true });
  assert.equal(allowed.comparable, true);
  assert.match(allowed.reasons.join("\n"), /Different machines/);
});

Deno.test("compareReports() compares a run with other driver settings and says they differ", () => {
  const oneThread = syntheticReport();
  oneThread.provenance.driverEnv = { LP_NUM_THREADS: "1", DENO_WEBGPU_BACKEND: "vulkan" };
  const result = compareReports(syntheticReport(), oneThread);
  assert.equal(result.comparable, true);
  assert.match(
    result.reasons.join("\n"),
    /different driver settings \(LP_NUM_THREADS "1" in the current run, unset in the baseline\)/,
  );
  const sameConfiguration = syntheticReport();
  sameConfiguration.provenance.driverEnv = { DENO_WEBGPU_BACKEND: "vulkan" };
  assert.ok(
    !compareReports(syntheticReport(), sameConfiguration).reasons.some((r) => /driver/.test(r)),
  );
});

Deno.test("compareReports() refuses different schema versions", () => {
  const newer = { ...syntheticReport(), schemaVersion: 2 } as unknown as ReturnType<
    typeof syntheticReport
  >;
  const result = compareReports(syntheticReport(), newer);
  assert.equal(result.comparable, false);
  assert.match(result.reasons[0]!, /Different schema versions \(baseline 1, current 2\)/);
});

Deno.test("compareReports() rejects a non-positive tolerance", () => {
  assert.throws(
    () => compareReports(syntheticReport(), syntheticReport(), { tolerance: 0 }),
    RangeError,
  );
});

Deno.test("compareReports() judges a rate only where its term carries most of the time", () => {
  // A 1 s fixed cost swamps 3 GFLOP/s at n = 512 (0.27 GFLOP): the rate's term is ~8 % of the time.
  const withT0 = (t0Us: number, gflops: number) => {
    const r = syntheticReport();
    r.fits = r.fits.map((f) =>
      f.op === "matmul" && f.dtype === "f32" && f.backend === "wasm" ? { ...f, t0Us, gflops } : f
    );
    return r;
  };
  const key = "matmul f32 wasm end-to-end compute";
  const swamped = compareReports(withT0(1e6, 3), withT0(1e6, 1)).rows.find((r) => r.key === key);
  assert.equal(swamped?.regressed, false);
  assert.match(swamped.note, /not judged: the rate explains [\d.]+ % of the time/);
  const carried = compareReports(withT0(5, 3), slowedSeries(withT0(5, 3), MATMUL_WASM, 3)).rows
    .find((r) => r.key === key);
  assert.equal(carried?.regressed, true);
});

/** Stability data whose only figure is `sigma` for wasm-mt (probes are not re-read). */
function stabilityWith(sigma: number): NonNullable<Report["stability"]> {
  return { ...syntheticStability({ "wasm-mt": sigma }), residency: "end-to-end" };
}

/** A report whose add wasm→wasm-mt crossover is gone (wasm-mt never wins in range). */
function withoutWasmMtCrossover(report: Report): Report {
  const c = report.crossovers.find((c) => c.op === "add" && c.pair === "wasm→wasm-mt")!;
  Object.assign(c, { size: null, ci: null, reason: "wasm-mt never wins up to 1e6 elements" });
  delete c.driftCi;
  delete c.driftOutOfRange;
  return report;
}

/**
 * A calm baseline (wasm-mt drift σ 5 %) whose add wasm→wasm-mt crossover has a drift interval,
 * with 1 % of its replicates leaving the measured sizes under that drift.
 */
function calmBaselineWithCrossover(): Report {
  const baseline = { ...syntheticReport(), stability: stabilityWith(0.05) };
  const c = baseline.crossovers.find((c) => c.op === "add" && c.pair === "wasm→wasm-mt")!;
  assert.ok(c.size !== null && c.ci !== null);
  c.driftCi = [c.ci[0] * 0.9, c.ci[1] * 1.1];
  c.driftOutOfRange = 0.01;
  return baseline;
}

Deno.test("compareReports() judges both runs by the larger of their two drifts", () => {
  const baseline = calmBaselineWithCrossover();
  const key = "add f32 wasm→wasm-mt end-to-end";

  const calm = { ...withoutWasmMtCrossover(syntheticReport()), stability: stabilityWith(0.05) };
  const judgedCalm = compareReports(baseline, calm).rows.find((r) => r.key === key);
  assert.equal(judgedCalm?.regressed, true, "both runs calm: a vanished threshold is a regression");

  // The current run saw wasm-mt drift 10× as much: a shift of that size takes the crossover out
  // of range in Φ(Φ⁻¹(0.01) / 10) ≈ 41 % of cases, so its vanishing is within noise.
  const wild = { ...withoutWasmMtCrossover(syntheticReport()), stability: stabilityWith(0.5) };
  const judgedWild = compareReports(baseline, wild).rows.find((r) => r.key === key);
  assert.equal(judgedWild?.regressed, false);
  assert.match(
    judgedWild.note,
    /within run-to-run drift of wasm-mt \(σ 50 %\).* 41 % of replicates/,
  );
});

Deno.test("compareReports() counts how far whole runs of the machine moved between calibrations as drift", () => {
  const baseline = calmBaselineWithCrossover();
  const key = "add f32 wasm→wasm-mt end-to-end";
  // Calm probes within each run, but the machine's earlier runs moved wasm-mt by σ 50 % as a
  // whole: two reports are two runs, so the vanished threshold is within what runs do.
  const current = {
    ...withoutWasmMtCrossover(syntheticReport()),
    stability: { ...stabilityWith(0.05), betweenRunSigma: { "wasm-mt": 0.5 } },
  };
  const judged = compareReports(baseline, current).rows.find((r) => r.key === key);
  assert.equal(judged?.regressed, false);
  assert.match(judged.note, /within run-to-run drift of wasm-mt \(σ 50 %\)/);
});

Deno.test("compareReports() judges a measured rate against how far its backend's points moved between the two runs", () => {
  // Calm probes (σ 3 %), but every wasm point of the current run strayed up to ±57 %, and the
  // two largest matmuls happened to stray slow together.
  const calm = () => ({ ...syntheticReport(), stability: probesWith(0.03) });
  const current = calm();
  let i = 0;
  current.measurements = current.measurements.map((m) => {
    if (m.state !== "ok" || m.backend !== "wasm") return m;
    const factor = m.op === "matmul" && m.size >= 256 ? 1.4 : Math.exp(0.45 * Math.sin(2.1 * i++));
    return {
      ...m,
      wall: { ...m.wall, median: m.wall.median * factor },
      gflops: m.gflops / factor,
      gbps: m.gbps / factor,
    };
  });
  const row = compareReports(calm(), current).rows.find((r) =>
    r.key === "matmul f32 wasm end-to-end compute"
  );
  assert.ok(row && row.change !== null && row.change < -0.25, `${row?.change}`);
  assert.equal(row.regressed, false, row.note);
  // The same move with every other point steady is a regression.
  const steady = slowedSeries(calm(), MATMUL_WASM, 1.4);
  const alone = compareReports(calm(), steady).rows.find((r) =>
    r.key === "matmul f32 wasm end-to-end compute"
  );
  assert.equal(alone?.regressed, true, alone?.note);
});

Deno.test("compareReports() does not call a crossover moved by a within-noise level shift of its pair a regression", () => {
  // On a machine whose wasm-mt drifts ±50 % between runs (its probes say so), wasm-mt 50 %
  // slower at every size: at n = 64 it turns from 3 % faster to 45 % slower, the crossover
  // moves from 63 to 100, and both curves kept their shapes.
  const noisy = (r: Report): Report => ({ ...withRelCi(r, 0.15), stability: probesWith(0.5) });
  const current = noisy(slowedBackends(syntheticReport(), ["wasm-mt"], 1.5));
  const moved = current.crossovers.find((c) => c.op === "matmul" && c.pair === "wasm→wasm-mt")!;
  moved.size = 100;
  moved.ci = [95, 105];
  const result = compareReports(noisy(syntheticReport()), current);
  const row = result.rows.find((r) => r.key === "matmul f32 wasm→wasm-mt end-to-end")!;
  assert.equal(row.regressed, false, row.note);
  assert.match(row.note, /at most 4\d\.\d % slower/);
  assert.match(
    row.note,
    /wasm-mt moved \+50 % against wasm alike \(the curves kept their shapes\)/,
  );
});

Deno.test("compareReports() keeps a crossover moved by a change of one curve's shape a regression", () => {
  const noisy = (r: Report): Report => ({ ...withRelCi(r, 0.15), stability: probesWith(0.5) });
  const current = noisy(syntheticReport());
  current.measurements = current.measurements.map((m) =>
    m.state === "ok" && m.backend === "wasm-mt" && m.op === "matmul" && m.size >= 64
      ? { ...m, wall: { ...m.wall, median: m.wall.median * 1.8 } }
      : m
  );
  const moved = current.crossovers.find((c) => c.op === "matmul" && c.pair === "wasm→wasm-mt")!;
  moved.size = 150;
  moved.ci = [140, 160];
  const row = compareReports(noisy(syntheticReport()), current).rows
    .find((r) => r.key === "matmul f32 wasm→wasm-mt end-to-end")!;
  assert.equal(row.regressed, true, row.note);
});

Deno.test("compareReports() says when the host itself ran slower, from the loop timed beside the drift probes, and no verdict changes for it", () => {
  const withHost = (hostMs: number): Report => ({
    ...syntheticReport(),
    stability: {
      ...syntheticStability({}),
      probes: [0, 10, 20].map((atS) => ({ atS, ms: { wasm: 0.01 }, hostMs })),
    },
  });
  const slower = compareReports(withHost(4), withHost(5.32));
  assert.ok(
    slower.reasons.some((r) =>
      /^The host itself ran ×1\.33 slower in the current run .*5\.32 ms against 4\.00 ms/.test(r)
    ),
    slower.reasons.join("\n"),
  );
  assert.equal(slower.regressed, compareReports(withHost(4), withHost(4)).regressed);
  assert.ok(compareReports(withHost(4), withHost(3)).reasons.some((r) => /×1\.33 faster/.test(r)));
  // Within ×1.1, or without host times in one report, nothing is said.
  assert.ok(!compareReports(withHost(4), withHost(4.2)).reasons.some((r) => /host itself/.test(r)));
  assert.ok(
    !compareReports(syntheticReport(), withHost(8)).reasons.some((r) => /host itself/.test(r)),
  );
});
