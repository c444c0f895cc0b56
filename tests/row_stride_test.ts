import assert from "node:assert/strict";
import { rowStridePower } from "../models/_alignment.ts";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime, recommendTuning } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

const gemv = getOp("gemv");

Deno.test("a row stride's power of two counts to 4 KiB, and a row that starts mid-byte has none", () => {
  const stride = (cols: number, dtype: "f32" | "f16" | "q8" | "q4") =>
    rowStridePower(gemv.rowBytes!({ rows: 1, cols }, dtype));
  assert.equal(stride(3000, "f32"), 32); // 12 000 bytes
  assert.equal(stride(3008, "f32"), 256);
  assert.equal(stride(3072, "f32"), 4096); // 3 × 4 KiB
  assert.equal(stride(8192, "f32"), 4096);
  assert.equal(stride(1280, "f16"), 512);
  assert.equal(stride(1149, "q4"), 1); // 575 bytes
  assert.equal(stride(4096, "q8"), 4096);
});

/** The tuned gemv variant's time: a launch and 4 GB/s of weights, whatever the shape. */
function tunedMs(shape: Shape): number {
  return 0.03 + gemv.bytes(shape, "f32") / 4e6;
}

/**
 * The other variant's time against the tuned one's: ×1.2 on the squares the variant search ran,
 * ×0.6 where rows are 1–4 KiB apart, ×1.5 at smaller strides (lavapipe's variants summing 4 and
 * 16 rows per invocation, in turn).
 */
function otherRatio(shape: Shape): number {
  if (shape.rows === shape.cols) return 1.2;
  return rowStridePower(gemv.rowBytes!(shape, "f32")) >= 1024 ? 0.6 : 1.5;
}

/** The synthetic report with its f32 device-resident WebGPU gemv measured as calibrate does. */
export function reportWithStrideRatios(): { report: Report; tuned: string; other: string } {
  const report = syntheticReport();
  const isSeries = (m: Measurement) =>
    m.op === "gemv" && m.dtype === "f32" && m.backend === "webgpu" &&
    m.residency === "device-resident";
  const template = report.measurements.find((m) => isSeries(m) && m.state === "ok")!;
  assert.ok(template.state === "ok");
  const tuned = template.variant;
  const other = "wg=128";
  const offAxis: Shape[] = [
    { rows: 4096, cols: 1024 },
    { rows: 1024, cols: 3000 },
    { rows: 1024, cols: 4096 },
    { rows: 2048, cols: 512 },
    { rows: 512, cols: 2048 },
    { rows: 1024, cols: 3008 },
    { rows: 1024, cols: 3002 },
    { rows: 8192, cols: 2048 },
    { rows: 256, cols: 8192 },
    { rows: 2048, cols: 1150 },
  ];
  const runs: [Shape, string, number][] = [
    ...[4, 20, 45, 102, 228, 512, 1149, 2580].map((n): [Shape, string, number] => {
      const shape = { rows: n, cols: n };
      return [shape, tuned, tunedMs(shape)];
    }),
    [{ rows: 512, cols: 512 }, other, tunedMs({ rows: 512, cols: 512 }) * 1.2],
    ...offAxis.flatMap((shape): [Shape, string, number][] => [
      [shape, tuned, tunedMs(shape)],
      [shape, other, tunedMs(shape) * otherRatio(shape)],
    ]),
  ];
  let seq = report.measurements.length;
  const series: Measurement[] = runs.map(([shape, variant, ms], i) => {
    const median = ms * (1 + 0.02 * Math.sin(i * 7.1));
    const wall = { ...template.wall, median, ciHalfWidth: 0.02 * median, relCi: 0.02 };
    return {
      ...template,
      variant,
      shape,
      size: shape.rows!,
      flops: gemv.flops(shape),
      bytes: gemv.bytes(shape, "f32"),
      wall,
      gpu: wall,
      seq: seq++,
      ...(shape.rows === shape.cols ? {} : { offAxis: true as const }),
    };
  });
  const measurements = [...report.measurements.filter((m) => !isSeries(m)), ...series];
  // The variant search at 512²: the tuned variant 1.2× faster there.
  const square = tunedMs({ rows: 512, cols: 512 });
  const tuning = [
    ...report.tuning,
    {
      op: "gemv",
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
      sizeMin: 1,
      sizeMax: 16384,
      unit: "n (rows = cols)",
      best: { variant: tuned, ms: square },
      runnerUp: { variant: other, ms: 1.2 * square },
      tag: "measured",
    } as const,
  ];
  return { report: { ...report, measurements, fits: fitAll(measurements), tuning }, tuned, other };
}

Deno.test("off the axis, a gemv variant is chosen by how far apart the rows are, not by the column count alone", () => {
  const { report, tuned, other } = reportWithStrideRatios();
  const at = (shape: Shape) => {
    const ask = {
      op: "gemv",
      shape,
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
    } as const;
    return { tuning: recommendTuning(report, ask).variant, time: predictTime(report, ask) };
  };
  // 3072 columns lie between 3008 (×1.5) and 4096 (×0.6), but their rows are 12 KiB apart.
  for (const shape of [{ rows: 1024, cols: 3072 }, { rows: 1536, cols: 6144 }]) {
    const { tuning, time } = at(shape);
    assert.equal(tuning, other, JSON.stringify(shape));
    assert.equal(time.variant, other);
    const truth = tunedMs(shape) * 0.6;
    assert.ok(time.interval[0] <= truth && truth <= time.interval[1], `${time.interval} ${truth}`);
  }
  for (const shape of [{ rows: 1000, cols: 3000 }, { rows: 2000, cols: 1000 }]) {
    assert.equal(at(shape).tuning, tuned, JSON.stringify(shape));
  }
});

Deno.test("on the axis beyond twice the variant search's sizes, the variants ranked off the axis are ranked too", () => {
  const { report, tuned, other } = reportWithStrideRatios();
  const at = (n: number) =>
    recommendTuning(report, {
      op: "gemv",
      shape: { rows: n, cols: n },
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
    }).variant;
  // The search timed the other variant at 512² only (×1.2): 768² is its tuning's, 4096² (rows
  // 16 KiB apart, where the other ran ×0.6 at every shape off the axis) is not.
  assert.equal(at(768), tuned);
  assert.equal(at(4096), other);
});
