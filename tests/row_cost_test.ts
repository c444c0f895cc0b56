import assert from "node:assert/strict";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import { fitRowOverhead, rowCostLn } from "../models/_row_cost.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("a row's cost weighs little where rows are long and much where they are short", () => {
  assert.equal(rowCostLn(8192, 32, 32, 500), 0, "the sweep's own rows");
  assert.equal(rowCostLn(1e5, 1000, 32, 0), 0, "rows that cost nothing");
  const short = Math.exp(rowCostLn(1000 * 100, 1000, 32, 500));
  const long = Math.exp(rowCostLn(8 * 32000, 8, 32, 500));
  // The sweep's 32 rows are in the fit's launch: 968 more rows of 500 elements' worth each.
  assert.ok(Math.abs(short - (1e5 + 968 * 500) / 1e5) < 1e-9, `1000 rows of 100: ${short}`);
  assert.ok(long > 0.9 && long < 1, `8 rows of 32000 are a little faster than 32: ${long}`);
});

Deno.test("fitRowOverhead() finds what a row costs from shapes beside the sweep's rows", () => {
  const shapes = [[1, 4096], [8, 1024], [128, 512], [256, 1024], [1024, 256]];
  const pointsAt = (overhead: number) =>
    shapes.map(([rows, cols]) => ({
      elements: rows! * cols!,
      rows: rows!,
      lnMs: Math.log(0.01 + 1e-5 * (rows! * cols! + overhead * rows!)),
      // The fit through the sweep's 32 rows: their cost in its launch, the elements beyond it.
      modelMs: (ln: number) => 0.01 + 1e-5 * overhead * 32 + 1e-5 * rows! * cols! * Math.exp(ln),
    }));
  const found = fitRowOverhead(pointsAt(600), 32);
  assert.ok(found > 600 / 1.1 && found < 600 * 1.1, `600 elements a row, found ${found}`);
  assert.equal(fitRowOverhead(pointsAt(0), 32), 0, "rows that cost nothing");
  const sweepOnly = pointsAt(600).map((p) => ({ ...p, rows: 32 }));
  assert.equal(fitRowOverhead(sweepOnly, 32), 0, "no shape off the sweep's rows says nothing");
});

const softmax = getOp("softmax");
const VARIANT = "acc=f32,wg=64";

/** Lavapipe's softmax as it ran: a launch, 10 ns an element, and 5 µs a workgroup (a row). */
function deviceMs({ rows, cols }: Shape): number {
  return 0.05 + 1e-5 * rows! * cols! + 0.005 * rows!;
}

/** The synthetic report with softmax f32 measured device-resident on WebGPU as calibrate does. */
function reportWithRows(): Report {
  const report = syntheticReport();
  const template = report.measurements.find((m) =>
    m.state === "ok" && m.backend === "webgpu" && m.residency === "device-resident"
  )!;
  assert.ok(template.state === "ok");
  const onAxis = [16, 64, 256, 1024, 4096, 16384].map((cols) => ({ rows: 32, cols }));
  const offAxis: Shape[] = [
    { rows: 1, cols: 4096 },
    { rows: 256, cols: 1024 },
    { rows: 8, cols: 1024 },
    { rows: 128, cols: 512 },
    { rows: 128, cols: 4096 },
    { rows: 1024, cols: 256 },
  ];
  let seq = report.measurements.length;
  const series = [...onAxis, ...offAxis].map((shape, i): Measurement => {
    const median = deviceMs(shape) * (1 + 0.02 * Math.sin(i * 7.1));
    const wall = { ...template.wall, median, ciHalfWidth: 0.02 * median, relCi: 0.02 };
    return {
      ...template,
      op: "softmax",
      dtype: "f32",
      variant: VARIANT,
      shape,
      size: shape.cols!,
      flops: softmax.flops(shape),
      bytes: softmax.bytes(shape, "f32"),
      wall,
      seq: seq++,
      ...(shape.rows === 32 ? {} : { offAxis: true as const }),
    };
  });
  const measurements = [...report.measurements, ...series];
  return { ...report, measurements, fits: fitAll(measurements) };
}

/** Device-resident WebGPU softmax at `shape` is predicted within ±25 % of `truth`, inside its interval. */
function assertPredictsWithin25(report: Report, shape: Shape, truth: number, variant?: string) {
  const p = predictTime(report, {
    op: "softmax",
    shape,
    dtype: "f32",
    backend: "webgpu",
    residency: "device-resident",
    ...(variant === undefined ? {} : { variant }),
  });
  const label = `${shape.rows} × ${shape.cols}: ${p.ms.toFixed(3)} against ${truth.toFixed(3)}`;
  assert.ok(Math.abs(p.ms / truth - 1) <= 0.25, label);
  assert.ok(p.interval[0] <= truth && truth <= p.interval[1], `${label}, in ${p.interval}`);
}

Deno.test("softmax with many short rows pays each row's workgroup, as the measured shapes did", () => {
  const report = reportWithRows();
  for (
    const shape of [{ rows: 1000, cols: 100 }, { rows: 2048, cols: 64 }, { rows: 300, cols: 3000 }]
  ) {
    assertPredictsWithin25(report, shape, deviceMs(shape));
  }
});

/** Lavapipe's 256-invocation softmax: a little faster an element, 16 µs a workgroup (a row). */
function wideMs({ rows, cols }: Shape): number {
  return 0.05 + 0.8e-5 * rows! * cols! + 0.016 * rows!;
}

Deno.test("a variant timed at a few shapes only pays its own rows' cost, not the fitted variant's", () => {
  const report = reportWithRows();
  const template = report.measurements.findLast((m) => m.op === "softmax" && !m.offAxis)!;
  assert.ok(template.state === "ok");
  // Where calibrate times the other variants: the variant search's squares and two screens.
  const wide = [{ rows: 32, cols: 16384 }, { rows: 1, cols: 4096 }, { rows: 256, cols: 1024 }]
    .map((shape, i): Measurement => ({
      ...template,
      variant: "acc=f32,wg=256",
      shape,
      size: shape.cols,
      flops: softmax.flops(shape),
      bytes: softmax.bytes(shape, "f32"),
      wall: { ...template.wall, median: wideMs(shape), ciHalfWidth: 0.02 * wideMs(shape) },
      seq: template.seq + 1 + i,
      ...(shape.rows === 32 ? {} : { offAxis: true as const }),
    }));
  const withWide = { ...report, measurements: [...report.measurements, ...wide] };
  for (const shape of [{ rows: 1000, cols: 64 }, { rows: 77, cols: 777 }]) {
    assertPredictsWithin25(withWide, shape, wideMs(shape), "acc=f32,wg=256");
  }
});
