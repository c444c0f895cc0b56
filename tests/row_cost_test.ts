import assert from "node:assert/strict";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import { fitRowCost, NO_ROW_COST, type RowCost, rowsMs } from "../models/_row_cost.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

const ONE_AT_A_TIME = (overhead: number) => ({ overhead, parallel: 1 });

/** A fit through the sweep's 32 rows: `t0` fixed (the launch and those rows' cost), 10 ns an element. */
function sweepTime(elements: number, t0 = 0.05) {
  return { ms: t0 + 1e-5 * elements, t0, elementMs: 1e-5 };
}

Deno.test("a row's cost weighs little where rows are long and much where they are short", () => {
  const cost = ONE_AT_A_TIME(500);
  const t0 = 0.05 + 1e-5 * 32 * 500;
  const at = (elements: number) => sweepTime(elements, t0);
  assert.equal(rowsMs(8192, 32, 32, cost, at(8192)), at(8192).ms, "the sweep's own rows");
  assert.equal(rowsMs(1e5, 1000, 32, NO_ROW_COST, at(1e5)), at(1e5).ms, "rows that cost nothing");
  // 1000 rows of 100: the launch, the elements and 1000 rows of 500 elements' worth each.
  const short = rowsMs(1000 * 100, 1000, 32, cost, at(1e5));
  assert.ok(
    Math.abs(short - (0.05 + 1e-5 * (1e5 + 1000 * 500))) < 1e-9,
    `1000 rows of 100: ${short}`,
  );
  // 8 rows give back 24 rows' overhead, below the fit's fixed cost.
  const long = rowsMs(8 * 32000, 8, 32, cost, at(8 * 32000));
  assert.ok(
    Math.abs(long - (0.05 + 1e-5 * (8 * 32000 + 8 * 500))) < 1e-9,
    `8 rows of 32000: ${long}`,
  );
  const one = rowsMs(1000, 1, 32, cost, at(1000));
  assert.ok(one < t0 && Math.abs(one - (0.05 + 1e-5 * 1500)) < 1e-9, `1 row of 1000: ${one}`);
});

Deno.test("fewer rows than run at once leave the rest idle: the time goes with a row's length", () => {
  const twoThreads = { overhead: 0, parallel: 2 };
  const beyond = (rows: number, elements: number) =>
    (rowsMs(elements, rows, 32, twoThreads, sweepTime(elements)) - 0.05) / (1e-5 * elements);
  assert.ok(Math.abs(beyond(1, 50000) - 2) < 1e-9, "one row on one of two threads");
  assert.ok(Math.abs(beyond(2, 50000) - 1) < 1e-9, "two rows keep both busy");
  assert.ok(Math.abs(beyond(3, 3 * 4096) - 4 / 3) < 1e-9, "three rows: two waves");
  // A GPU runs the sweep's 32 rows and 1000 more at once: 1024 short rows take a short row's time.
  const wide = { overhead: 0, parallel: 1024 };
  const at = sweepTime(32768);
  assert.ok(Math.abs(rowsMs(32768, 1024, 32, wide, at) - (0.05 + 1e-5 * 32768 / 32)) < 1e-9);
  assert.ok(Math.abs(rowsMs(32768, 1, 32, wide, at) - (0.05 + 1e-5 * 32768 * 32)) < 1e-9);
});

const SHAPES = [[1, 4096], [8, 1024], [2, 9000], [128, 512], [256, 1024], [1024, 256]];

/** Points of `SHAPES` timed as a row cost of `truth` says, the sweep's fixed cost 0.02 ms. */
function pointsAt(truth: RowCost) {
  const t0 = 0.02 + 1e-5 * 32 * truth.overhead;
  const timeAt = (rows: number, cols: number, cost: RowCost) =>
    rowsMs(rows * cols, rows, 32, cost, sweepTime(rows * cols, t0));
  return SHAPES.map(([rows, cols]) => ({
    elements: rows! * cols!,
    rows: rows!,
    lnMs: Math.log(timeAt(rows!, cols!, truth)),
    modelMs: (cost: RowCost) => timeAt(rows!, cols!, cost),
  }));
}

Deno.test("fitRowCost() finds what a row costs from shapes beside the sweep's rows", () => {
  const found = fitRowCost(pointsAt(ONE_AT_A_TIME(600)), 32);
  assert.ok(
    found.overhead > 600 / 1.1 && found.overhead < 600 * 1.1,
    `600 a row: ${found.overhead}`,
  );
  assert.equal(found.parallel, 1, "rows that run one after another");
  assert.deepEqual(fitRowCost(pointsAt(NO_ROW_COST), 32), NO_ROW_COST, "rows that cost nothing");
  const sweepOnly = pointsAt(ONE_AT_A_TIME(600)).map((p) => ({ ...p, rows: 32 }));
  assert.deepEqual(fitRowCost(sweepOnly, 32), NO_ROW_COST, "no shape off the sweep's rows");
});

Deno.test("fitRowCost() finds how many rows run at once from shapes of fewer rows", () => {
  for (const parallel of [2, 4, 64]) {
    const found = fitRowCost(pointsAt({ overhead: 800, parallel }), 32);
    assert.equal(found.parallel, parallel, `${parallel} at once`);
    assert.ok(found.overhead > 800 / 1.1 && found.overhead < 800 * 1.1, `${found.overhead}`);
  }
  const known = fitRowCost(pointsAt({ overhead: 800, parallel: 4 }), 32, 4);
  assert.equal(known.parallel, 4, "rows at once given, the overhead fitted");
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
