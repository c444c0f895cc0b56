import assert from "node:assert/strict";
import { estimateTokensPerSec } from "../models/llm/estimate.ts";
import { getPreset } from "../models/llm/presets.ts";
import { MissingCalibrationError, ratesFromReport } from "../models/llm/rates.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("ratesFromReport() takes device-resident WebGPU gemv at the largest size", () => {
  const r = ratesFromReport(syntheticReport());
  assert.equal(r.backend, "webgpu");
  assert.match(r.backendReason, /WebGPU adapter/);
  for (const dtype of ["f32", "q4"] as const) {
    const fig = r.gemvGBps[dtype]!;
    assert.equal(fig.tag, "measured");
    assert.ok(fig.value! > 0);
    assert.match(fig.source!, new RegExp(`gemv ${dtype} webgpu device-resident rows=4096`));
    assert.equal(r.gemvVariants[dtype], "wg=64");
  }
  assert.equal(r.gemvGBps.q8?.value, null);
  assert.match(r.gemvGBps.q8!.reason!, /deno task calibrate --ops gemv --dtypes q8/);
});

Deno.test("ratesFromReport() takes matmul, dispatch, sync and host link from the report", () => {
  const report = syntheticReport();
  const r = ratesFromReport(report);
  assert.match(r.matmulGflops.f32!.source!, /matmul f32 webgpu device-resident/);
  assert.equal(r.matmulGflops.f16, undefined);
  assert.equal(r.syncRoundTripMs.value, 11.2);
  assert.equal(r.hostLinkGBps.upload.value, 1.9);
  assert.equal(r.hostLinkGBps.readback.value, 1.6);
  assert.equal(r.memoryBytes, 7.8 * 2 ** 30);
});

Deno.test("ratesFromReport() syncs a step by reading its result back, when the report timed that", () => {
  const report = syntheticReport();
  const readback = { value: 12.1, unit: "ms", tag: "measured" as const, source: "mapAsync" };
  const r = ratesFromReport({
    ...report,
    system: { ...report.system, readbackRoundTripMs: readback },
  });
  assert.equal(r.syncRoundTripMs.value, 12.1);
  assert.match(r.syncRoundTripMs.source!, /^readbackRoundTripMs: mapAsync/);
  const older = ratesFromReport(report);
  assert.equal(older.syncRoundTripMs.value, report.system.dispatchRoundTripMs.value);
});

Deno.test("ratesFromReport() charges each dispatch the median fixed cost of the device's kernels", () => {
  const report = syntheticReport();
  const t0s = report.fits
    .filter((f) => f.backend === "webgpu" && f.residency === "device-resident")
    .map((f) => f.t0Us)
    .sort((a, b) => a - b);
  const r = ratesFromReport(report);
  assert.equal(r.perDispatchUs.value, t0s[Math.floor(t0s.length / 2)]);
  assert.equal(r.perDispatchUs.tag, "fitted");
  assert.match(r.perDispatchUs.source!, /median fixed cost t0 of \d+ device-resident webgpu fits/);
});

Deno.test("ratesFromReport() uses the trivial dispatch when the report has no device fits", () => {
  const report = syntheticReport();
  const r = ratesFromReport({ ...report, fits: report.fits.filter((f) => f.backend !== "webgpu") });
  assert.equal(r.perDispatchUs, report.system.perDispatchUs);
});

Deno.test("ratesFromReport() falls back to the fastest CPU backend without an adapter", () => {
  const report = syntheticReport({ adapter: null });
  const r = ratesFromReport(report);
  assert.equal(r.backend, "wasm-mt");
  assert.match(r.backendReason, /no WebGPU adapter; wasm-mt is the fastest CPU backend/);
  assert.match(r.gemvGBps.f32!.source!, /gemv f32 wasm-mt end-to-end/);
  assert.equal(r.perDispatchUs.tag, "fitted");
  assert.equal(r.hostLinkGBps.upload.tag, "borrowed");
});

Deno.test("ratesFromReport() feeds estimateTokensPerSec with sources naming measurements", () => {
  const r = ratesFromReport(syntheticReport(), { require: ["q4"] });
  const e = estimateTokensPerSec(getPreset("tiny-16m"), "int4", r, { context: 64, batch: 1 });
  assert.ok(e.decodeTokensPerSec > 0);
  assert.ok(e.sources.some((s) => /kernel lm_head .*gemv q4 webgpu .*device-resident/.test(s)));
});

Deno.test("ratesFromReport() without gemv names the calibrate command", () => {
  const base = syntheticReport();
  const report = syntheticReport({
    measurements: base.measurements.filter((m) => m.op !== "gemv"),
    fits: base.fits.filter((f) => f.op !== "gemv"),
  });
  assert.throws(
    () => ratesFromReport(report),
    (e) =>
      e instanceof MissingCalibrationError &&
      /run deno task calibrate --ops gemv/.test(e.message),
  );
});

Deno.test("ratesFromReport() requiring an unmeasured dtype names it in the command", () => {
  assert.throws(
    () => ratesFromReport(syntheticReport(), { require: ["q8"] }),
    /"gemvGBps\.q8" has no webgpu measurement; run deno task calibrate --ops gemv --dtypes q8/,
  );
});

Deno.test("ratesFromReport() runs decode on the CPU when it streams gemv faster than the GPU", () => {
  const report = syntheticReport();
  const slowGpu = {
    ...report,
    measurements: report.measurements.map((m) =>
      m.state === "ok" && m.op === "gemv" && m.backend === "webgpu"
        ? { ...m, gbps: m.gbps / 1000 }
        : m
    ),
  };
  const r = ratesFromReport(slowGpu);
  assert.notEqual(r.backend, "webgpu");
  assert.match(r.backendReason, /streams gemv weights faster .* than the WebGPU adapter/);
});

Deno.test("ratesFromReport() lets the estimate price each WebGPU decode kernel from the report", () => {
  const r = ratesFromReport(syntheticReport(), { require: ["q4"] });
  const t = r.kernelTime!({ op: "gemv", shape: { rows: 512, cols: 512 }, dtype: "q4" });
  assert.match(t.source, /gemv q4 webgpu .*device-resident/);
  const e = estimateTokensPerSec(getPreset("tiny-16m"), "int4", r, { context: 64, batch: 1 });
  assert.equal(e.perTokenMs.method, "per-kernel");
  const q = e.kernels.find((k) => k.name === "q_proj")!;
  assert.equal(q.ms, t.ms);
  // The fixture has no dot: the norms are charged the per-dispatch cost, and say so.
  assert.ok(e.sources.some((s) => /kernel attn_norm .*no dot f32 data .*perDispatchUs/.test(s)));
  assert.equal(ratesFromReport(syntheticReport({ adapter: null })).kernelTime, undefined);
});

Deno.test("ratesFromReport() streams weights at the largest working set measured, not the fastest cached one", () => {
  // The CPU's gemv at 4096 rows runs from cache; a 268 MB off-axis gemv streams from memory at
  // less than half that rate, which is what a model's weights see.
  const report = syntheticReport({ adapter: null });
  const bytes = 8192 * 8192 * 4;
  const streamed = new Map<string, number>();
  for (const backend of ["wasm", "wasm-mt"]) {
    const cached = report.measurements.find((m) =>
      m.state === "ok" && m.op === "gemv" && m.dtype === "f32" && m.backend === backend &&
      m.shape.rows === 4096
    );
    assert.ok(cached?.state === "ok");
    const gbps = cached.gbps / 2.5;
    streamed.set(backend, gbps);
    report.measurements.push({
      ...cached,
      shape: { rows: 8192, cols: 8192 },
      offAxis: true,
      bytes,
      gbps,
      wall: { ...cached.wall, median: bytes / (gbps * 1e6) },
    });
  }
  const r = ratesFromReport(report);
  assert.equal(r.backend, "wasm-mt");
  assert.ok(Math.abs(r.gemvGBps.f32!.value! - streamed.get("wasm-mt")!) < 1e-9);
  assert.match(r.gemvGBps.f32!.source!, /largest working set measured, 268 MB/);
});
