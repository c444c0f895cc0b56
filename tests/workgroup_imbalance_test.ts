import assert from "node:assert/strict";
import { workgroupImbalanceLn } from "../models/_imbalance.ts";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

const gemv = getOp("gemv");
const sixteenRows = { tpr: 1, rpw: 16, rpi: 16, vec4: true };
const variant = "rpi=16,rpw=16,tpr=1,vec4=true";

Deno.test("a gemv's last block of rows puts only its rows' invocations to work", () => {
  const wg = gemv.impls.webgpu!.workgroupInvocations!;
  assert.deepEqual(wg({ rows: 512, cols: 300 }, sixteenRows), { size: 16, active: [16, 16] });
  assert.deepEqual(wg({ rows: 300, cols: 300 }, sixteenRows), { size: 16, active: [16, 3] });
  const split = { tpr: 32, rpw: 4, vec4: true };
  assert.deepEqual(wg({ rows: 6, cols: 64 }, split).active, [128, 64]);
});

Deno.test("a dispatch lasts as long as the thread that took the most working invocations", () => {
  assert.equal(workgroupImbalanceLn({ size: 16, active: [16, 16, 16, 16] }, 2), 0);
  // One workgroup: one thread works, the other waits.
  assert.ok(Math.abs(workgroupImbalanceLn({ size: 16, active: [16] }, 2) - Math.log(2)) < 1e-12);
  // Three on two threads: two on the first.
  const three = workgroupImbalanceLn({ size: 16, active: [16, 16, 16] }, 2);
  assert.ok(Math.abs(three - Math.log(4 / 3)) < 1e-12);
  assert.equal(workgroupImbalanceLn({ size: 16, active: [16, 3] }, 1), 0);
});

/** Device-resident f32 gemv on two CPU threads: each takes 256-row workgroups in turn. */
function twoThreadMs(shape: Shape): number {
  const blocks = Math.ceil(shape.rows! / 256);
  const rows = Array.from({ length: blocks }, (_, i) => Math.min(256, shape.rows! - 256 * i));
  const busiest = Math.max(
    ...[0, 1].map((t) => rows.filter((_, i) => i % 2 === t).reduce((a, b) => a + b, 0)),
  );
  return 0.03 + busiest * shape.cols! * 4 / 2e6; // 2 GB/s a thread
}

/** The synthetic report with its f32 device-resident gemv measured at the sweep's sizes. */
function reportOnTwoThreads(software: boolean): Report {
  const report = syntheticReport();
  const isSeries = (m: Measurement) =>
    m.op === "gemv" && m.dtype === "f32" && m.backend === "webgpu" &&
    m.residency === "device-resident";
  const template = report.measurements.find((m) =>
    m.op === "gemv" && m.backend === "webgpu" && m.state === "ok"
  )!;
  assert.ok(template.state === "ok");
  let seq = report.measurements.length;
  const sweep: Measurement[] = [4, 102, 512, 1024, 2048, 4096, 8192].map((n, i) => {
    const shape = { rows: n, cols: n };
    const ms = twoThreadMs(shape) * (1 + 0.02 * Math.sin(i * 7.1));
    const wall = { ...template.wall, median: ms, ciHalfWidth: 0.02 * ms, relCi: 0.02 };
    return {
      ...template,
      op: "gemv",
      dtype: "f32",
      residency: "device-resident",
      variant,
      shape,
      size: n,
      flops: gemv.flops(shape),
      bytes: gemv.bytes(shape, "f32"),
      wall,
      gpu: wall,
      seq: seq++,
    } as Measurement;
  });
  const measurements = [...report.measurements.filter((m) => !isSeries(m)), ...sweep];
  return {
    ...report,
    adapter: { ...report.adapter!, software },
    measurements,
    fits: fitAll(measurements),
  };
}

Deno.test("on a CPU adapter, predictTime() prices the idle thread of a gemv with one and a bit workgroups", () => {
  const at = (report: Report, shape: Shape) =>
    predictTime(report, {
      op: "gemv",
      shape,
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
      variant,
    });
  const cpu = reportOnTwoThreads(true);
  for (
    const shape of [{ rows: 300, cols: 300 }, { rows: 700, cols: 700 }, { rows: 1500, cols: 1500 }]
  ) {
    const truth = twoThreadMs(shape);
    const t = at(cpu, shape);
    assert.ok(Math.abs(t.ms / truth - 1) < 0.15, `${shape.rows}: ${t.ms} vs ${truth}`);
  }
  // A GPU's many cores: no threads to share among, the sweep's even sizes priced as they ran.
  const gpu = at(reportOnTwoThreads(false), { rows: 300, cols: 300 });
  assert.ok(gpu.ms < 0.8 * at(cpu, { rows: 300, cols: 300 }).ms, `${gpu.ms}`);
});
