import assert from "node:assert/strict";
import { BackendSelector } from "../models/selector.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

const cube = (n: number) => ({ m: n, k: n, n });

function gpuCrossover(report: Report): number {
  const c = report.crossovers.find((x) =>
    x.op === "matmul" && x.dtype === "f32" && x.pair === "cpu→webgpu" &&
    x.residency === "end-to-end"
  );
  assert.ok(c?.size, "the fixture has a matmul cpu→webgpu crossover");
  return c.size;
}

Deno.test("select() picks the CPU below the GPU crossover and webgpu above it", () => {
  const report = syntheticReport();
  const selector = BackendSelector.fromReport(report);
  const size = gpuCrossover(report);
  const below = selector.select({ op: "matmul", shape: cube(Math.round(size / 1.5)) });
  const above = selector.select({ op: "matmul", shape: cube(Math.round(size * 1.4)) });
  assert.notEqual(below.backend, "webgpu");
  assert.equal(above.backend, "webgpu");
  assert.ok(below.predictedMs.webgpu! > below.predictedMs[below.backend]!);
});

Deno.test("select() uses the measurement at a measured shape and tags it measured", () => {
  const report = syntheticReport();
  const pick = BackendSelector.fromReport(report).select({ op: "matmul", shape: cube(128) });
  const measured = report.measurements.find((m) =>
    m.state === "ok" && m.op === "matmul" && m.backend === pick.backend && m.size === 128 &&
    m.residency === "end-to-end"
  );
  assert.equal(pick.provenance, "measured");
  assert.ok(measured?.state === "ok");
  assert.equal(pick.predictedMs[pick.backend], measured.wall.median);
  assert.equal(pick.variant, measured.variant);
});

Deno.test("select() tags sizes inside the fitted range fitted and outside extrapolated", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  assert.equal(selector.select({ op: "matmul", shape: cube(300) }).provenance, "fitted");
  assert.equal(selector.select({ op: "matmul", shape: cube(2048) }).provenance, "extrapolated");
  assert.equal(selector.select({ op: "matmul", shape: cube(4) }).provenance, "extrapolated");
});

Deno.test("select() counts a shape within 5 % of a measured one as measured", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  assert.equal(selector.select({ op: "matmul", shape: cube(131) }).provenance, "measured");
  assert.equal(selector.select({ op: "matmul", shape: cube(140) }).provenance, "fitted");
});

Deno.test("select() explains itself in one sentence and reports the speedup over js", () => {
  const pick = BackendSelector.fromReport(syntheticReport()).select({
    op: "matmul",
    shape: cube(300),
  });
  assert.match(pick.reason, /^[a-z-]+: [\d.]+× faster than [a-z-]+ at 300x300x300 \(fitted\)$/);
  assert.ok(pick.speedupVsScalar! > 1);
  assert.equal(pick.speedupVsScalar, pick.predictedMs.js! / pick.predictedMs[pick.backend]!);
  assert.equal(JSON.parse(JSON.stringify(pick)).reason, pick.reason);
});

Deno.test("select() skips backends the report lacks, with the report's reason", () => {
  const base = syntheticReport();
  const isGpuMatmul = (x: { op: string; backend: string }) =>
    x.op === "matmul" && x.backend === "webgpu";
  const report = syntheticReport({
    fits: base.fits.filter((f) => !isGpuMatmul(f)),
    measurements: [
      ...base.measurements.filter((m) => !isGpuMatmul(m)),
      {
        state: "unsupported",
        op: "matmul",
        shape: cube(64),
        dtype: "f32",
        backend: "webgpu",
        variant: "default",
        residency: "end-to-end",
        size: 64,
        seq: 9999,
        reason: "No WebGPU adapter",
      },
    ],
  });
  const pick = BackendSelector.fromReport(report).select({ op: "matmul", shape: cube(2048) });
  assert.notEqual(pick.backend, "webgpu");
  assert.equal(pick.predictedMs.webgpu, undefined);
  assert.match(pick.skipped.webgpu!, /No WebGPU adapter/);
});

Deno.test("select() compares resident GPU kernels with CPU runs when device-resident", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  const shape = cube(128);
  const e2e = selector.select({ op: "matmul", shape });
  const resident = selector.select({ op: "matmul", shape, residency: "device-resident" });
  assert.notEqual(e2e.backend, "webgpu");
  assert.equal(resident.backend, "webgpu");
  assert.equal(resident.predictedMs.wasm, e2e.predictedMs.wasm);
});

Deno.test("select() throws a RangeError for an op or dtype the report lacks", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  assert.throws(() => selector.select({ op: "conv", shape: { n: 4 } }), RangeError);
  assert.throws(
    () => selector.select({ op: "matmul", shape: cube(64), dtype: "f16" }),
    /Cannot select for matmul f16/,
  );
});

Deno.test("fromReport() with borrowed tags every choice borrowed", () => {
  const selector = BackendSelector.fromReport(syntheticReport(), { borrowed: true });
  assert.equal(selector.select({ op: "matmul", shape: cube(128) }).provenance, "borrowed");
});

Deno.test("selectForMatmul() is select() of the m×k by k×n shape", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  const a = selector.selectForMatmul(64, 512, 256);
  const b = selector.select({ op: "matmul", shape: { m: 64, k: 256, n: 512 } });
  assert.deepEqual(a.predictedMs, b.predictedMs);
  assert.equal(a.backend, b.backend);
});

Deno.test("selectForElementwise() and selectForVectorOp(n, 1) use the add data", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  const e = selector.selectForElementwise(16_384);
  const v = selector.selectForVectorOp(16_384, 1);
  assert.equal(e.provenance, "measured");
  assert.deepEqual(v.predictedMs, e.predictedMs);
});

Deno.test("selectForVectorOp() models other op counts from the closest op, never as measured", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  const v = selector.selectForVectorOp(16_384, 40);
  assert.notEqual(v.provenance, "measured");
  assert.match(v.reason, /40 ops/);
  assert.throws(() => selector.selectForVectorOp(16, -1), RangeError);
});

Deno.test("selectByComplexity() follows the report's thresholds for matrix ops", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  assert.equal(selector.selectByComplexity("high", 4).backend, "js");
  assert.match(selector.selectByComplexity("matrix", 50_000).backend, /^wasm/);
  assert.equal(selector.selectByComplexity("high", 1_000_000).backend, "webgpu");
});

Deno.test("selectByComplexity() never picks the GPU when its threshold is null", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  const pick = selector.selectByComplexity("low", 4_194_304);
  assert.notEqual(pick.backend, "webgpu");
  assert.notEqual(pick.backend, "js");
});

Deno.test("selectByComplexity() rejects unknown levels and uncalibrated ones", () => {
  const selector = BackendSelector.fromReport(syntheticReport());
  assert.throws(() => selector.selectByComplexity("huge" as "high", 10), /Unknown complexity/);
  assert.throws(() => selector.selectByComplexity("medium", 10), /covers no reduction op/);
});

Deno.test("stats() reports the predicted speedup and the thresholds used", () => {
  const report = syntheticReport();
  const s = BackendSelector.fromReport(report).stats("high", 1_000_000);
  assert.equal(s.backend, "webgpu");
  assert.equal(s.complexity, "matrix");
  assert.equal(s.op, "matmul");
  assert.equal(s.size, 1000);
  assert.equal(s.thresholds?.gpuAbove.value, gpuCrossover(report));
  assert.ok(s.estimatedSpeedup! > 1);
  assert.match(s.reason, /^webgpu: /);
});
