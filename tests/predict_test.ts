import assert from "node:assert/strict";
import { STREAMED_FROM_BYTES } from "../core/operand_rotation.ts";
import { costMs, modelMs, paramsFromRates, predictMs, smoothMax } from "../core/costmodel.ts";
import { compiledMs, compileFit } from "../models/_index.ts";
import { localLooError, residualCurve } from "../models/_residuals.ts";
import { getOp } from "../kernels/catalog.ts";
import {
  ASSUMED_BETWEEN_RUN_SIGMA,
  predictTime,
  recommendTuning,
  variantParams,
} from "../models/predict.ts";
import { syntheticReport, syntheticStability, syntheticTimeMs } from "./_fixtures.ts";
import { fitAll } from "../calibrate/analyze.ts";
import type { CostFit, Report } from "../core/schema.ts";

const cube = (n: number) => ({ m: n, k: n, n });

/** No drift within the run and none between runs on any backend: the model's interval alone. */
const NO_SPREAD = { webgpu: 0, wasm: 0, "wasm-mt": 0, js: 0 };

/** The report with stability data saying runs do not move: intervals carry the model's terms only. */
function steady(report: Report, within: Partial<typeof NO_SPREAD> = {}): Report {
  return { ...report, stability: { ...syntheticStability(within), betweenRunSigma: NO_SPREAD } };
}

Deno.test("predictTime() returns the measured median with a 90 % band from its CI at a measured shape", () => {
  const report = steady(syntheticReport());
  const t = predictTime(report, { op: "matmul", shape: cube(128), dtype: "f32", backend: "wasm" });
  const m = report.measurements.find((x) =>
    x.state === "ok" && x.op === "matmul" && x.backend === "wasm" && x.size === 128
  );
  assert.ok(m?.state === "ok");
  assert.equal(t.provenance, "measured");
  assert.equal(t.ms, m.wall.median);
  // The report's runs do not move: the band is the median's own, at the stated 90 %.
  const half = 1.6448536 * (m.wall.ciHalfWidth / m.wall.median / 1.96);
  assert.ok(Math.abs(t.interval[0] / (m.wall.median * Math.exp(-half)) - 1) < 1e-6);
  assert.ok(Math.abs(t.interval[1] / (m.wall.median * Math.exp(half)) - 1) < 1e-6);
  assert.equal(t.level, 0.9);
  assert.match(t.source, /^measured matmul f32 wasm/);
});

Deno.test("predictTime() widens its interval by how far whole runs of this machine moved, beside the run's own drift", () => {
  const request = { op: "matmul", shape: cube(128), dtype: "f32", backend: "wasm" } as const;
  const base = syntheticReport();
  const stability = syntheticStability({ wasm: 0.05 });
  const lnHalf = (r: Report) => {
    const [lo, hi] = predictTime(r, request).interval;
    return Math.log(hi / lo) / 2;
  };
  const between = (sigmas: Partial<typeof NO_SPREAD>) => ({
    ...base,
    stability: { ...stability, betweenRunSigma: { ...NO_SPREAD, ...sigmas } },
  });
  const alone = lnHalf(steady(base));
  const within = lnHalf(between({}));
  const both = lnHalf(between({ wasm: 0.12 }));
  const z = 1.6448536;
  assert.ok(Math.abs(within ** 2 - alone ** 2 - (z * 0.05) ** 2) < 1e-9);
  assert.ok(Math.abs(both ** 2 - alone ** 2 - (z * 0.13) ** 2) < 1e-9, `${both} vs ${alone}`);
  // Another backend's spread between runs does not widen wasm's interval.
  assert.ok(Math.abs(lnHalf(between({ "wasm-mt": 0.3 })) - within) < 1e-12);
});

Deno.test("predictTime() of a machine calibrated fewer than three times assumes the spread between runs, and says so", () => {
  const request = { op: "matmul", shape: cube(128), dtype: "f32", backend: "wasm" } as const;
  const base = syntheticReport();
  const firstRun = { ...base, stability: syntheticStability({ wasm: 0.05 }) };
  const t = predictTime(firstRun, request);
  const lnHalf = (i: readonly [number, number]) => Math.log(i[1] / i[0]) / 2;
  const alone = lnHalf(predictTime(steady(base), request).interval);
  const assumed = Math.hypot(0.05, ASSUMED_BETWEEN_RUN_SIGMA.wasm);
  assert.ok(Math.abs(lnHalf(t.interval) ** 2 - alone ** 2 - (1.6448536 * assumed) ** 2) < 1e-9);
  assert.match(
    t.source,
    /run-to-run drift 12 % \(between runs assumed: this machine has fewer than three calibrations\)$/,
  );
  // Measured between runs, the spread is the machine's own and no longer said to be assumed.
  const measured = predictTime(
    { ...base, stability: { ...firstRun.stability, betweenRunSigma: { wasm: 0.02 } } },
    request,
  );
  assert.ok(lnHalf(measured.interval) < lnHalf(t.interval));
  assert.doesNotMatch(measured.source, /assumed/);
});

Deno.test("predictTime() uses the residual-corrected fit between measured sizes, with the correction's held-out error around that size", () => {
  // The synthetic medians scatter ±3 % about the truth, as windows of a run drift (2 %).
  const report = steady(syntheticReport(), { wasm: 0.02 });
  const t = predictTime(report, { op: "matmul", shape: cube(300), dtype: "f32", backend: "wasm" });
  const truth = syntheticTimeMs("matmul", "f32", "wasm", "end-to-end", 300);
  assert.equal(t.provenance, "fitted");
  assert.ok(Math.abs(t.ms / truth - 1) < 0.2, `${t.ms} vs ${truth}`);
  const fit = report.fits.find((f) => f.op === "matmul" && f.backend === "wasm")!;
  const model = compileFit(fit);
  const points = report.measurements.flatMap((m) =>
    m.state === "ok" && m.op === "matmul" && m.backend === "wasm" && m.variant === fit.variant
      ? [{ flops: m.flops, bytes: m.bytes, ms: m.wall.median }]
      : []
  );
  const curve = residualCurve(points, (p) => compiledMs(model, p.flops, p.bytes));
  const bytes = getOp("matmul").bytes(cube(300), "f32");
  const local = localLooError(curve, bytes, Math.min(fit.cvMape!, 0.25));
  assert.ok(local !== null);
  // The fit's mean held-out error is the floor (up to 25 %), and both shrink near a measured size.
  assert.ok(local < Math.max(localLooError(curve, bytes)!, fit.cvMape!), "300³ is near 256³");
  // The held-out error already holds the run's own drift; the drift alone is only its floor.
  const half = Math.max(Math.log1p(local), 1.6448536 * 0.02);
  assert.ok(Math.abs(t.interval[1] / t.ms - Math.exp(half)) < 1e-6);
  assert.match(t.source, /corrected by its residuals/);
  assert.ok(t.interval[0] < truth && truth < t.interval[1]);
});

Deno.test("predictTime() between measured sizes adds only the between-run drift to its held-out error, and is never narrower than the whole drift", () => {
  const request = { op: "matmul", shape: cube(300), dtype: "f32", backend: "wasm" } as const;
  const base = syntheticReport();
  const lnHalf = (within: number, between: number) => {
    const stability = syntheticStability({ wasm: within });
    const t = predictTime(
      { ...base, stability: { ...stability, betweenRunSigma: { ...NO_SPREAD, wasm: between } } },
      request,
    );
    assert.equal(t.provenance, "fitted");
    return Math.log(t.interval[1] / t.ms);
  };
  const z = 1.6448536;
  const learned = lnHalf(0, 0);
  // Each left-out point was measured at its own moment of the run: the drift within the run is
  // in the held-out error already, and does not widen it again.
  assert.ok(Math.abs(lnHalf(learned / (2 * z), 0) - learned) < 1e-9);
  // The drift between runs is not: it adds.
  assert.ok(Math.abs(lnHalf(learned / (2 * z), 0.1) - Math.hypot(learned, z * 0.1)) < 1e-6);
  // A drift wider than everything learned is the floor.
  assert.ok(Math.abs(lnHalf(0.5, 0.1) - z * Math.hypot(0.5, 0.1)) < 1e-6);
});

/**
 * The synthetic report with its wasm add f32 series replaced: measured at `sizes` with times
 * `truth(n)` (±1 %), its fit replaced by `fit` (t0, bandwidth, range, held-out error).
 */
function withWasmAdd(
  sizes: readonly number[],
  truth: (n: number) => number,
  fit: Partial<CostFit>,
): { report: Report; fit: CostFit } {
  const base = syntheticReport();
  const old = base.fits.find((f) => f.op === "add" && f.backend === "wasm" && f.dtype === "f32")!;
  const template = base.measurements.find((m) =>
    m.state === "ok" && m.op === "add" && m.backend === "wasm" && m.dtype === "f32"
  )!;
  assert.ok(template.state === "ok");
  const measurements = [
    ...base.measurements.filter((m) => !(m.op === "add" && m.backend === "wasm")),
    ...sizes.map((n) => ({
      ...template,
      variant: old.variant,
      size: n,
      shape: { n },
      flops: n,
      bytes: 12 * n,
      wall: { ...template.wall, median: truth(n), ciHalfWidth: truth(n) * 0.01 },
    })),
  ];
  const replaced: CostFit = { ...old, ...fit };
  const fits = base.fits.map((f) => (f === old ? replaced : f));
  return { report: syntheticReport({ measurements, fits }), fit: replaced };
}

Deno.test("predictTime() follows a cache step the single-bandwidth fit misses", () => {
  // Measured: 3× faster per byte while the working set fits a 1 MB cache; the fit averages both.
  const inCache = (bytes: number) => 0.001 + bytes / 30e6;
  const spilled = (bytes: number) => 0.001 + bytes / 10e6;
  const truth = (n: number) => (12 * n <= 1e6 ? inCache : spilled)(12 * n);
  const sizes = [1e3, 4e3, 16e3, 64e3, 256e3, 1e6, 4e6];
  const { report, fit } = withWasmAdd(sizes, truth, {
    t0Us: 1,
    gflops: null,
    gbps: 15,
    sizeRange: [1e3, 4e6],
  });
  for (const n of [2_000, 30_000, 40_000, 2_000_000]) {
    const t = predictTime(report, { op: "add", shape: { n }, dtype: "f32", backend: "wasm" });
    const uncorrected = compiledMs(compileFit(fit), n, 12 * n);
    assert.ok(Math.abs(t.ms / truth(n) - 1) < 0.05, `n=${n}: ${t.ms} vs ${truth(n)}`);
    assert.ok(Math.abs(uncorrected / truth(n) - 1) > 0.3, `the fit alone is off at n=${n}`);
  }
});

Deno.test("predictTime() keeps a CPU series' cached and streamed sizes apart at the runners' switch", () => {
  // Runs from 4 MiB up stream their operands (calibrate/runners/_cpu.ts): 3× slower per byte.
  const edge = STREAMED_FROM_BYTES / 12;
  const truth = (n: number) => 0.001 + (12 * n) / (12 * n < STREAMED_FROM_BYTES ? 30e6 : 10e6);
  const sizes = [1e3, 16e3, 64e3, 256e3, Math.floor(edge / 1.1), Math.ceil(edge * 1.1), 1e6, 4e6];
  // One bandwidth across the step: held out, it misses by half (what calibrate's fit says).
  const { report } = withWasmAdd(sizes, truth, {
    t0Us: 1,
    gflops: null,
    gbps: 15,
    sizeRange: [1e3, 4e6],
    cvMape: 0.5,
  });
  // Just either side of the switch, between the two sizes measured beside it, and between grid
  // sizes on either side: the prediction follows its side, and its interval claims the corrected
  // curve's held-out error (here nil), not the one formula's.
  for (const n of [Math.floor(edge / 1.03), Math.ceil(edge * 1.03), 40e3, 2e6]) {
    const t = predictTime(steady(report), {
      op: "add",
      shape: { n },
      dtype: "f32",
      backend: "wasm",
    });
    assert.ok(Math.abs(t.ms / truth(n) - 1) < 0.05, `n=${n}: ${t.ms} vs ${truth(n)}`);
    assert.ok(t.interval[1] / t.interval[0] < 1.2, `n=${n}: ${t.interval}`);
  }
});

Deno.test("predictTime() keeps a regime change at the smallest sizes out of the largest sizes' intervals", () => {
  // A worker pool that runs tiny adds inline (n ≤ 1e3) and wakes its workers (+40 µs) above.
  const truth = (n: number) => (n <= 1e3 ? 1e-6 * n : 0.04 + n / 1e6);
  const sizes = [250, 500, 1e3, 4e3, 16e3, 64e3, 256e3, 1e6, 4e6];
  // One formula across both regimes: its held-out error is far beyond the floor's cap.
  const { report } = withWasmAdd(sizes, truth, {
    t0Us: 20,
    gflops: null,
    gbps: 12,
    sizeRange: [250, 4e6],
    cvMape: 3,
  });
  const near = predictTime(steady(report), {
    op: "add",
    shape: { n: 700 },
    dtype: "f32",
    backend: "wasm",
  });
  const far = predictTime(steady(report), {
    op: "add",
    shape: { n: 2e6 },
    dtype: "f32",
    backend: "wasm",
  });
  assert.ok(Math.abs(far.ms / truth(2e6) - 1) < 0.05, `${far.ms} vs ${truth(2e6)}`);
  assert.ok(
    far.interval[1] / far.ms < 1.3,
    `far from the regime change: ×${far.interval[1] / far.ms}`,
  );
  // 700 is nearer 500 than 1000 is to its neighbours: the step's error, a little shrunk.
  assert.ok(near.interval[1] / near.ms > 1.6, `next to it: ×${near.interval[1] / near.ms}`);
  assert.ok(near.interval[0] < truth(700) && truth(700) < near.interval[1]);
});

Deno.test("predictTime() tags sizes beyond the fit extrapolated and widens the interval", () => {
  const report = syntheticReport();
  const inside = predictTime(report, {
    op: "matmul",
    shape: cube(300),
    dtype: "f32",
    backend: "webgpu",
  });
  const outside = predictTime(report, {
    op: "matmul",
    shape: cube(2048),
    dtype: "f32",
    backend: "webgpu",
  });
  assert.equal(outside.provenance, "extrapolated");
  assert.ok(outside.interval[1] / outside.ms > inside.interval[1] / inside.ms);
  assert.match(outside.source, /doublings beyond/);
});

Deno.test("predictTime() interpolates measured sizes in log space when there is no fit", () => {
  const report = syntheticReport({ fits: [] });
  const t = predictTime(report, { op: "add", shape: { n: 65_536 }, dtype: "f32", backend: "wasm" });
  const truth = syntheticTimeMs("add", "f32", "wasm", "end-to-end", 65_536);
  assert.equal(t.provenance, "fitted");
  assert.match(t.source, /interpolation/);
  assert.ok(Math.abs(t.ms / truth - 1) < 0.25, `${t.ms} vs ${truth}`);
});

Deno.test("predictTime() rejects an unknown variant and a backend the report lacks", () => {
  const report = syntheticReport();
  const base = { op: "matmul", shape: cube(64), dtype: "f32" } as const;
  assert.throws(() => predictTime(report, { ...base, backend: "wasm", variant: "nope" }), /"nope"/);
  assert.throws(() => predictTime(report, { ...base, dtype: "f16", backend: "wasm" }), RangeError);
});

Deno.test("recommendTuning() returns the tuning bucket's best variant, parsed, and runner-up", () => {
  const report = syntheticReport();
  const t = recommendTuning(report, {
    op: "matmul",
    shape: cube(384),
    dtype: "f32",
    backend: "webgpu",
    residency: "device-resident",
  });
  assert.equal(t.variant, "tm=4,tn=4,vec4=true,wg=8x8");
  assert.deepEqual(t.params, { tm: 4, tn: 4, vec4: true, wg: "8x8" });
  assert.equal(t.provenance, "measured");
  assert.equal(t.runnerUp?.variant, "tm=2,tn=4,vec4=true,wg=8x8");
  assert.ok(Math.abs(t.runnerUp.predictedMs / t.predictedMs - 24.8 / 19.3) < 1e-9);
});

Deno.test("recommendTuning() outside every tuning bucket uses the nearest and says extrapolated", () => {
  const t = recommendTuning(syntheticReport(), {
    op: "matmul",
    shape: cube(32),
    dtype: "f32",
    backend: "webgpu",
    residency: "device-resident",
  });
  assert.equal(t.provenance, "extrapolated");
  assert.match(t.source, /nearest bucket/);
});

Deno.test("recommendTuning() without a backend tunes the fastest one", () => {
  const t = recommendTuning(syntheticReport(), { op: "matmul", shape: cube(128), dtype: "f32" });
  assert.equal(t.backend, "wasm-mt");
  assert.equal(t.runnerUp, null);
});

Deno.test("recommendTuning() interpolates bucket times in log space when a variant has no data", () => {
  const report = syntheticReport({
    fits: [],
    measurements: [],
    tuning: [64, 256].map((n, i) => ({
      op: "matmul",
      dtype: "f32",
      backend: "wasm",
      residency: "end-to-end",
      sizeMin: n,
      sizeMax: n,
      unit: "n (M = K = N)",
      best: { variant: "mr=4", ms: i === 0 ? 1 : 64 },
      runnerUp: null,
      tag: "measured",
    })),
  });
  assert.throws(() =>
    predictTime(report, { op: "matmul", shape: cube(128), dtype: "f32", backend: "wasm" })
  );
  const t = recommendTuning(report, {
    op: "matmul",
    shape: cube(128),
    dtype: "f32",
    backend: "wasm",
  });
  assert.equal(t.variant, "mr=4");
  assert.ok(Math.abs(t.predictedMs - 8) < 1e-9, `${t.predictedMs}`);
});

Deno.test("variantParams() parses numbers, booleans and strings, and default as empty", () => {
  assert.deepEqual(variantParams("default"), {});
  assert.deepEqual(variantParams("ept=4,fma=false,wg=8x8"), { ept: 4, fma: false, wg: "8x8" });
});

Deno.test("the models' compiled cost model agrees with predictMs() of calibrate/fit.ts", () => {
  for (const fit of syntheticReport().fits) {
    const c = compileFit(fit);
    for (const [flops, bytes] of [[0, 0], [1e3, 1e6], [1e9, 1e3], [5e7, 2e7], [0, 4e6]] as const) {
      const want = predictMs(fit, flops, bytes);
      assert.ok(
        Math.abs(compiledMs(c, flops, bytes) / want - 1) < 1e-12,
        `${fit.op} ${fit.backend}`,
      );
    }
  }
});

Deno.test("modelMs() and compiledMs() return the same bits for the same coefficients, through the one costMs()", () => {
  const works = [[0, 0], [1e3, 1e6], [1e9, 1e3], [5e7, 2e7], [0, 4e6], [3e6, 0], [
    7e6,
    7e6,
  ]] as const;
  for (const fit of syntheticReport().fits) {
    const params = paramsFromRates(fit.t0Us, fit.gflops, fit.gbps);
    // The compiled coefficients the log parameters stand for, so both paths see the same numbers.
    const c = { t0: Math.exp(params.lnT0), cf: Math.exp(params.lnCf), cb: Math.exp(params.lnCb) };
    for (const [flops, bytes] of works) {
      const both = costMs(c.t0, c.cf, c.cb, flops, bytes);
      assert.equal(modelMs(params, flops, bytes), both, `${fit.op} ${fit.backend}`);
      assert.equal(compiledMs(c, flops, bytes), both, `${fit.op} ${fit.backend}`);
      // The fitter's smooth maximum (with its share) has the evaluator's value.
      const a = c.cf * flops, b = c.cb * bytes;
      assert.equal(c.t0 + smoothMax(a, b).value, both);
    }
  }
});

Deno.test("predictTime() of WebGPU end to end beyond the bytes it measured reaches the transfer route", () => {
  const base = syntheticReport();
  // Uploads ten times slower than the sweep's end-to-end points ran: the interval must reach the
  // time the device-resident kernel, one sync and the bytes at that rate give.
  const system = { ...base.system, uploadGBps: { ...base.system.uploadGBps, value: 0.05 } };
  const report = syntheticReport({ system });
  const shape = { n: 30_000_000 };
  const bytes = getOp("add").bytes(shape, "f32");
  const t = predictTime(report, { op: "add", shape, dtype: "f32", backend: "webgpu" });
  const resident = predictTime(report, {
    op: "add",
    shape,
    dtype: "f32",
    backend: "webgpu",
    residency: "device-resident",
  });
  const route = resident.ms + system.dispatchRoundTripMs.value! + bytes / 0.05 / 1e6;
  assert.ok(t.interval[1] >= route * (1 - 1e-9), `${t.interval} vs ${route}`);
  assert.match(t.source, /upload rate .* the interval reaches it/);
  const small = predictTime(report, {
    op: "add",
    shape: { n: 1000 },
    dtype: "f32",
    backend: "webgpu",
  });
  assert.doesNotMatch(
    small.source,
    /interval reaches/,
    "within the measured bytes: its own points",
  );
});

Deno.test("a WebGPU end-to-end prediction is at least its device-resident time plus one sync, however small the sizes its own fit saw", () => {
  const full = syntheticReport();
  // A default sweep stops an end-to-end series that loses to the CPU once a point confirms it:
  // here matmul end to end is measured only at 16³ and 32³, where the round trip is all its time.
  const measurements = full.measurements.filter((m) =>
    !(m.op === "matmul" && m.backend === "webgpu" && m.residency === "end-to-end" && m.size > 32)
  );
  const report: Report = { ...full, measurements, fits: fitAll(measurements) };
  const request = {
    op: "matmul",
    shape: cube(2048),
    dtype: "f32" as const,
    backend: "webgpu" as const,
  };
  const kernel = predictTime(report, { ...request, residency: "device-resident" });
  const t = predictTime(report, request);
  const floor = kernel.ms + report.system.dispatchRoundTripMs.value!;
  assert.ok(t.ms >= floor * (1 - 1e-9), `${t.ms} vs device-resident ${kernel.ms} + sync`);
  assert.ok(t.interval[1] >= floor, `${t.interval}`);
  assert.match(t.source, /raised to the device-resident time/);
});

/** lavapipe's vector-load matmul tiles (16 × 8 a thread, 8 × 4 threads: 64 × 64 outputs). */
const VEC4_TILES = "algo=reg,avec4=true,kt=0,tm=16,tn=8,vec4=true,wg=8,wgy=4";

/**
 * The synthetic report with its WebGPU matmul as `VEC4_TILES`, and a maker of more of its
 * device-resident measurements: of `variant` at n³ taking `ms`.
 */
function residentMatmul() {
  const base: Report = JSON.parse(
    JSON.stringify(syntheticReport()).replaceAll('"tm=4,tn=4,vec4=true,wg=8x8"', `"${VEC4_TILES}"`),
  );
  const template = base.measurements.find((m) =>
    m.state === "ok" && m.op === "matmul" && m.backend === "webgpu" &&
    m.residency === "device-resident"
  )!;
  assert.ok(template.state === "ok");
  const at = (variant: string, n: number, ms: number) => ({
    ...template,
    variant,
    size: n,
    shape: cube(n),
    flops: 2 * n ** 3,
    bytes: 12 * n * n,
    wall: { ...template.wall, median: ms, ciHalfWidth: ms * 0.01 },
  });
  const wholeMs = (n: number) => syntheticTimeMs("matmul", "f32", "webgpu", "device-resident", n);
  const request = {
    op: "matmul",
    dtype: "f32",
    backend: "webgpu",
    residency: "device-resident",
  } as const;
  return { base, at, wholeMs, request };
}

Deno.test("a WebGPU matmul at an odd width is predicted with a variant that can run it, from its own times where the work sets them", () => {
  // The synthetic device-resident matmul as lavapipe's vector-load tiles, and beside it their
  // scalar-load twin, which runs any n: the same launch, half the rate. The variant search timed
  // the twin at 32³, where the launch is most of both times; calibrate at 255³ and 511³.
  const vec4 = VEC4_TILES;
  const scalar = "algo=reg,kt=0,tm=16,tn=8,vec4=false,wg=8,wgy=4";
  const { base, at, wholeMs: vec4Ms, request } = residentMatmul();
  const t0 = 0.09;
  const scalarMs = (n: number) => t0 + 2 * (vec4Ms(n) - t0);
  const twin = (n: number) => at(scalar, n, scalarMs(n));
  const anchorOnly = steady({ ...base, measurements: [...base.measurements, twin(32)] });
  const measured = steady({
    ...base,
    measurements: [...base.measurements, twin(32), twin(255), twin(511)],
  });
  for (const report of [anchorOnly, measured]) {
    // n = 76 runs the vector loads; n = 77 cannot, and the prediction says which variant can.
    assert.equal(predictTime(report, { ...request, shape: cube(76) }).variant, vec4);
    assert.equal(predictTime(report, { ...request, shape: cube(77) }).variant, scalar);
    // Nor is 256³'s vector-load measurement the time of 257³, within 5 % of it.
    assert.equal(predictTime(report, { ...request, shape: cube(257) }).variant, scalar);
  }
  for (const n of [181, 301, 611]) {
    const truth = scalarMs(n);
    const fromAnchor = predictTime(anchorOnly, { ...request, shape: cube(n) }).ms;
    const t = predictTime(measured, { ...request, shape: cube(n) });
    // At 32³ the twin took 1.9× the vector loads' time (all but a tenth of each is launch): the
    // anchor's ratio, carried to where the work sets the time, is too fast.
    assert.ok(fromAnchor < 0.97 * truth, `${n}: anchor ${fromAnchor} vs ${truth}`);
    assert.ok(Math.abs(t.ms / truth - 1) < 0.1, `${n}: ${t.ms} vs ${truth}`);
    assert.ok(t.interval[0] < truth && truth < t.interval[1]);
  }
});

Deno.test("a WebGPU matmul at an odd width runs a variant timed on the axis, not one timed only at a decode's far-off shape", () => {
  // The scalar-load twin of the vector-load tiles, timed on the axis at half their rate; a plain
  // loop timed only at 1 × 1024² (twice), where it ran in 0.8× the twin's time: at m = 1 every
  // kernel waits on B, so that says nothing of its rate at 40 rows (lavapipe's ran 40 × 1111 × 900
  // in 125 ms against the twin's 8.2).
  const scalar = "algo=reg,kt=0,tm=16,tn=8,vec4=false,wg=8,wgy=4";
  const plain = "algo=naive,wg=8";
  const { base, at, wholeMs: vec4Ms, request } = residentMatmul();
  const t0 = 0.09;
  const twin = (n: number) => at(scalar, n, t0 + 2 * (vec4Ms(n) - t0));
  const withTwin = steady({
    ...base,
    measurements: [...base.measurements, twin(32), twin(255), twin(511)],
  });
  const decode = { m: 1, k: 1024, n: 1024 };
  const twinAtDecode = predictTime(withTwin, { ...request, shape: decode, variant: scalar }).ms;
  const plainAtDecode = {
    ...at(plain, 1024, 0.8 * twinAtDecode),
    shape: decode,
    offAxis: true as const,
    flops: 2 * 1024 * 1024,
    bytes: 4 * (1024 + 1024 * 1024 + 1024),
  };
  const report = steady({
    ...withTwin,
    measurements: [...withTwin.measurements, plainAtDecode, plainAtDecode],
  });
  // Forty rows of an odd width: four octaves of m from the plain loop's one shape.
  assert.equal(
    predictTime(report, { ...request, shape: { m: 40, k: 1111, n: 901 } }).variant,
    scalar,
  );
  // Near the shape it ran at, its own time there speaks for it.
  assert.equal(
    predictTime(report, { ...request, shape: { m: 1, k: 1030, n: 1027 } }).variant,
    plain,
  );
});

Deno.test("a WebGPU matmul whose output tiles come out partly empty is priced at the penalty measured beside the grid", () => {
  // The synthetic device-resident matmul on 64 × 64 tiles (16 × 8 per thread, 8 × 4 threads),
  // whose partial tiles cost their idle share at the power 0.75; calibrate measured two sizes four
  // past the grid's top ones.
  const { base, at, wholeMs, request } = residentMatmul();
  const t0 = 0.09;
  const covered = (d: number) => d < 64 ? 1 : d / (Math.ceil(d / 64) * 64);
  const truth = (n: number) => t0 + (wholeMs(n) - t0) * (covered(n) ** 2) ** -0.75;
  const past = [260, 516].map((n) => at(VEC4_TILES, n, truth(n)));
  const measured = steady({ ...base, measurements: [...base.measurements, ...past] });
  const unmeasured = steady(base);
  for (const n of [330, 400, 580]) {
    const t = predictTime(measured, { ...request, shape: cube(n) });
    assert.ok(Math.abs(t.ms / truth(n) - 1) < 0.08, `${n}: ${t.ms} vs ${truth(n)}`);
    assert.ok(t.interval[0] < truth(n) && truth(n) < t.interval[1]);
    // Without the sizes past the grid nothing says what partial tiles cost: the fit's work alone.
    const blind = predictTime(unmeasured, { ...request, shape: cube(n) }).ms;
    assert.ok(blind < 0.92 * truth(n), `${n}: ${blind} vs ${truth(n)}`);
  }
  // Near two measured sizes, the nearer is "this shape": 264³ is 260³'s partial tiles, not 256³.
  const near = predictTime(measured, { ...request, shape: cube(264) });
  assert.equal(near.provenance, "measured");
  assert.equal(near.ms, truth(260));
  // Emptier tiles than any measured (200³ fills 61 %, 260³ 66 %) are priced as the emptiest.
  const emptier = predictTime(measured, { ...request, shape: cube(200) }).ms;
  const asMeasured = t0 + (wholeMs(200) - t0) * (covered(260) ** 2) ** -0.75;
  assert.ok(Math.abs(emptier / asMeasured - 1) < 0.08, `${emptier} vs ${asMeasured}`);
  // Whole tiles are the fit's: 384³ is six tiles a side.
  const whole = predictTime(measured, { ...request, shape: cube(384) }).ms;
  assert.ok(Math.abs(whole / wholeMs(384) - 1) < 0.08, `${whole} vs ${wholeMs(384)}`);
});

/**
 * `residentMatmul()`'s report with the vector-load tiles' scalar-load twin measured device-resident
 * where calibrate measures it (32³, 255³, 511³): the same launch, half the rate.
 */
function withScalarTwin() {
  const scalar = "algo=reg,kt=0,tm=16,tn=8,vec4=false,wg=8,wgy=4";
  const { base, at, wholeMs, request } = residentMatmul();
  const t0 = 0.09;
  const scalarMs = (n: number) => t0 + 2 * (wholeMs(n) - t0);
  const report = steady({
    ...base,
    measurements: [...base.measurements, ...[32, 255, 511].map((n) => at(scalar, n, scalarMs(n)))],
  });
  return { scalar, scalarMs, wholeMs, request, report };
}

Deno.test("end to end, an odd-width WebGPU matmul is the sweep's transfers and sync with the kernel that can run it", () => {
  const { scalar, scalarMs, wholeMs, request, report } = withScalarTwin();
  const e2e = { ...request, residency: "end-to-end" } as const;
  // Only the vector-load variant ran end to end; n = 301 needs the scalar one.
  const auto = predictTime(report, { ...e2e, shape: cube(301) });
  const asked = predictTime(report, { ...e2e, shape: cube(301), variant: scalar });
  assert.equal(auto.variant, scalar);
  assert.equal(asked.ms, auto.ms);
  const truth = syntheticTimeMs("matmul", "f32", "webgpu", "end-to-end", 301) - wholeMs(301) +
    scalarMs(301);
  assert.ok(Math.abs(auto.ms / truth - 1) < 0.1, `${auto.ms} vs ${truth}`);
  assert.ok(auto.interval[0] < truth && truth < auto.interval[1]);
  // A variant neither sweep ran is still refused.
  assert.throws(() => predictTime(report, { ...e2e, shape: cube(301), variant: "nope" }), /"nope"/);
});

Deno.test("a variant without a fit is unsure only of the part of the time a variant moves: not of the sync around a small kernel", () => {
  const { scalar, request, report } = withScalarTwin();
  const lnWidth = (t: { interval: readonly [number, number] }) =>
    Math.log(t.interval[1] / t.interval[0]);
  // End to end at 36³ and 37³ the sync is nearly all the time: the scalar kernel 37³ needs moves
  // it by a few per cent, and its interval is about as wide as the fitted variant's beside it.
  const e2e = { ...request, residency: "end-to-end" } as const;
  const fittedE2e = predictTime(report, { ...e2e, shape: cube(36) });
  const twinE2e = predictTime(report, { ...e2e, shape: cube(37) });
  assert.equal(fittedE2e.variant, VEC4_TILES);
  assert.equal(twinE2e.variant, scalar);
  assert.ok(
    lnWidth(twinE2e) < lnWidth(fittedE2e) + 0.05,
    `${twinE2e.interval} vs ${fittedE2e.interval}`,
  );
  // On the device, where the kernel is most of the time at 301³, it still carries its ±25 %.
  const resident = predictTime(report, { ...request, shape: cube(301) });
  assert.equal(resident.variant, scalar);
  assert.ok(lnWidth(resident) > 2 * Math.log(1.2), `${resident.interval}`);
});

Deno.test("an end-to-end variant without a fit swaps its device-resident kernel into a fitted variant's time, not a ratio of whole times", () => {
  const base = syntheticReport();
  const fitted = "tm=4,tn=4,vec4=true,wg=8x8";
  const scalar = "tm=4,tn=4,vec4=false,wg=8x8";
  type Ok = Extract<Report["measurements"][number], { state: "ok" }>;
  const matmul = base.measurements.filter((m): m is Ok =>
    m.state === "ok" && m.op === "matmul" && m.backend === "webgpu" && m.variant === fitted
  );
  const at = (residency: Ok["residency"], size: number) =>
    matmul.find((m) => m.residency === residency && m.size === size)!;
  const withMedian = (m: Ok, median: number): Ok => ({
    ...m,
    variant: scalar,
    wall: { ...m.wall, median, ciHalfWidth: median * 0.01 },
  });
  // The scalar kernel runs 3× the vector one's time on the device, and end to end it was timed
  // once, at 256³, where the transfers and sync are most of the time.
  const kernels = [64, 128, 256, 512].map((n) =>
    withMedian(at("device-resident", n), 3 * at("device-resident", n).wall.median)
  );
  const extraMs = 2 * at("device-resident", 256).wall.median;
  const once = withMedian(at("end-to-end", 256), at("end-to-end", 256).wall.median + extraMs);
  const report = syntheticReport({ measurements: [...base.measurements, ...kernels, once] });
  const request = { op: "matmul", shape: { m: 16, k: 16, n: 16 }, dtype: "f32" } as const;
  const vector = predictTime(report, { ...request, backend: "webgpu", variant: fitted });
  const kernel = (variant: string) =>
    predictTime(report, { ...request, backend: "webgpu", residency: "device-resident", variant })
      .ms;
  const expected = vector.ms + kernel(scalar) - kernel(fitted);
  const p = predictTime(report, { ...request, backend: "webgpu", variant: scalar });
  assert.ok(Math.abs(p.ms / expected - 1) < 0.01, `${p.ms} vs ${expected}`);
  // The whole-time ratio at 256³ (×1.3) would have priced the sync as kernel.
  assert.ok(p.ms < 1.05 * vector.ms, `${p.ms} vs ${vector.ms}`);
  assert.match(p.source, /device-resident kernel swapped/);
});

Deno.test("between two measured sizes whose efficiencies differ, the interval reaches both", () => {
  const base = steady(syntheticReport());
  // js add at 262 144 elements (3.1 MB) ran 2.3× its model: its operands fell out of cache.
  const measurements = base.measurements.map((m) =>
    m.op === "add" && m.backend === "js" && m.state === "ok" && m.size === 262_144
      ? { ...m, wall: { ...m.wall, median: 2.3 * m.wall.median } }
      : m
  );
  const report = { ...base, measurements, fits: fitAll(measurements) };
  const n = 90_000;
  const p = predictTime(report, { op: "add", shape: { n }, dtype: "f32", backend: "js" });
  const model = syntheticTimeMs("add", "f32", "js", "end-to-end", n);
  // In cache, as 16 384 ran, or out of it, as 262 144 did: the interval holds either.
  assert.ok(p.interval[0] <= model * 1.02, `${p.interval} against ${model}`);
  assert.ok(p.interval[1] >= 2.3 * model * 0.98, `${p.interval} against ${2.3 * model}`);
  assert.match(p.source, /measured sizes on either side/);
});
