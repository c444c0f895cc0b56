import assert from "node:assert/strict";
import { MIN_TRANSFER_BYTES, slowestTransfer } from "../models/_transfers.ts";
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
    shape: { rows: 6000, cols: 6000 },
    dtype: "f32",
    backend: "webgpu",
  } as const;
  const a = predictTime(base, request);
  const b = predictTime(slow, request);
  assert.equal(b.ms, a.ms, "the point stays");
  assert.ok(b.interval[1] > 2 * a.interval[1], `${b.interval} vs ${a.interval}`);
  assert.match(b.source, /slowest transfer rate .* gemv f16 2200x2200/);
});
