import assert from "node:assert/strict";
import { MIN_TRANSFER_BYTES, slowestTransfer, typicalTransfer } from "../models/_transfers.ts";
import { predictTime } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

type Ok = Extract<Measurement, { state: "ok" }>;

/** A WebGPU gemv pair at `n`² whose end-to-end run moved its bytes in `transferMs`. */
function pair(
  base: Report,
  n: number,
  kernelMs: number,
  transferMs: number,
  dtype: "f32" | "f16" = "f32",
): Measurement[] {
  const template = base.measurements.find((m): m is Ok =>
    m.state === "ok" && m.op === "gemv" && m.backend === "webgpu" && m.dtype === "f32"
  )!;
  const syncMs = base.system.dispatchRoundTripMs.value!;
  const bytes = (dtype === "f32" ? 4 : 2) * (n * n + 2 * n);
  const at = (residency: Ok["residency"], median: number): Measurement => ({
    ...template,
    dtype,
    shape: { rows: n, cols: n },
    size: n,
    residency,
    bytes,
    flops: 2 * n * n,
    wall: { ...template.wall, median, ciHalfWidth: median * 0.01 },
  });
  return [at("device-resident", kernelMs), at("end-to-end", kernelMs + syncMs + transferMs)];
}

Deno.test("the slowest transfer is what a report's own end-to-end runs took beyond their kernels and one sync", () => {
  const base = syntheticReport();
  const report = syntheticReport({
    measurements: [
      ...base.measurements,
      ...pair(base, 2048, 2, 8), // 16.8 MB in 8 ms: 2.1 GB/s
      ...pair(base, 3000, 4, 120), // 36 MB in 120 ms: 0.3 GB/s, the slow speed
      ...pair(base, 512, 0.2, 50), // 1 MB: the sync's jitter, not a transfer
    ],
  });
  const slowest = slowestTransfer(report);
  assert.ok(slowest !== null);
  assert.ok(Math.abs(slowest.gbps - 4 * (3000 * 3000 + 6000) / 120 / 1e6) < 1e-9);
  assert.equal(slowest.at, "gemv f32 3000x3000");
  assert.ok(4 * 512 * 514 < MIN_TRANSFER_BYTES);
});

Deno.test("a WebGPU end-to-end interval beyond the measured bytes reaches the slowest transfer the report saw", () => {
  const base = syntheticReport();
  // Another series (gemv f16) met the slow speed: 9.7 MB in 80 ms.
  const slow = syntheticReport({
    measurements: [...base.measurements, ...pair(base, 2200, 2.3, 80, "f16")],
  });
  const request = {
    op: "gemv",
    shape: { rows: 5500, cols: 5500 },
    dtype: "f32",
    backend: "webgpu",
  } as const;
  const a = predictTime(base, request);
  const b = predictTime(slow, request);
  assert.equal(b.ms, a.ms, "the point stays");
  assert.ok(b.interval[1] > 2 * a.interval[1], `${b.interval} vs ${a.interval}`);
  assert.match(b.source, /slowest transfer rate .* gemv f16 2200x2200/);
});

Deno.test("the typical transfer is the median of the report's own, and needs three of them", () => {
  const base = syntheticReport();
  const only = (...pairs: Measurement[][]) => syntheticReport({ measurements: pairs.flat() });
  const a = pair(base, 1800, 1.5, 13); // 13 MB in 13 ms
  const b = pair(base, 2000, 1.8, 40); // 16 MB in 40 ms: the median
  const c = pair(base, 2200, 2.1, 120); // 19.4 MB in 120 ms
  assert.equal(typicalTransfer(only(a, c)), null);
  const typical = typicalTransfer(only(c, a, b));
  assert.ok(typical !== null);
  assert.equal(typical.at, "gemv f32 2000x2000");
  assert.ok(Math.abs(typical.gbps - 4 * (2000 * 2000 + 4000) / 40 / 1e6) < 1e-9);
});

Deno.test("beyond its measured bytes, a WebGPU end-to-end time is its kernel, one sync and its bytes at the median transfer rate the report measured", () => {
  const base = syntheticReport();
  // Another series (gemv f16) moved its bytes slowly, more often than all else: the median is one.
  const slow = Array.from({ length: 20 }, (_, i) => pair(base, 1800 + 20 * i, 2, 60, "f16")).flat();
  const report = syntheticReport({ measurements: [...base.measurements, ...slow] });
  const typical = typicalTransfer(report)!;
  assert.match(typical.at, /^gemv f16/);
  const request = { op: "gemv", shape: { rows: 5500, cols: 5500 }, dtype: "f32" } as const;
  const kernelMs =
    predictTime(report, { ...request, backend: "webgpu", residency: "device-resident" }).ms;
  const syncMs = report.system.dispatchRoundTripMs.value!;
  const partsMs = kernelMs + syncMs + 4 * (5500 * 5500 + 11000) / typical.gbps / 1e6;
  const p = predictTime(report, { ...request, backend: "webgpu" });
  assert.ok(Math.abs(p.ms / partsMs - 1) < 1e-9, `${p.ms} vs ${partsMs}`);
  assert.ok(p.interval[0] < p.ms && p.ms < p.interval[1]);
  assert.match(p.source, /median transfer rate of the report's own end-to-end runs .* gemv f16/);
  // Where the transfers ran fast, the parts are less than the fit's extrapolation: they decide.
  const fast = Array.from({ length: 20 }, (_, i) => pair(base, 1800 + 20 * i, 2, 1, "f16")).flat();
  const quick = syntheticReport({ measurements: [...base.measurements, ...fast] });
  const quickPartsMs = kernelMs + syncMs +
    4 * (5500 * 5500 + 11000) / typicalTransfer(quick)!.gbps / 1e6;
  const q = predictTime(quick, { ...request, backend: "webgpu" });
  assert.ok(Math.abs(q.ms / quickPartsMs - 1) < 1e-9, `${q.ms} vs ${quickPartsMs}`);
  assert.ok(q.ms < p.ms / 2);
});
