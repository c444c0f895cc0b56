import assert from "node:assert/strict";
import { alignedMs, alignmentClass, fitAlignment, offsetAt } from "../models/_alignment.ts";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";
import { offAxisShapes, sureOffAxisShapes } from "../calibrate/shapes.ts";

const gemv = getOp("gemv");

Deno.test("a row's alignment class is whether its bytes fill 16-byte vectors, 4-byte words, or neither", () => {
  // q4 rows start on a byte: 1149 columns take 575 bytes, 3000 take 1500, 1152 take 576.
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 1149 }, "q4")), 0);
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 1156 }, "q4")), 0);
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 3000 }, "q4")), 1);
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 1152 }, "q4")), 2);
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 1150 }, "q8")), 0);
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 1148 }, "q8")), 1);
  assert.equal(alignmentClass(gemv.rowBytes!({ rows: 1, cols: 1149 }, "f32")), 1);
});

Deno.test("an alignment offset is learned from the points the rows' streaming dominates, not from launch-bound ones", () => {
  const slow = Math.log(2.5);
  const model = fitAlignment([
    // Launch-bound sizes: misaligned, but the fixed cost is their time; they must not teach.
    { alignment: 0, residual: -0.4, variableShare: 0.1 },
    { alignment: 0, residual: -0.3, variableShare: 0.3 },
    { alignment: 0, residual: slow + 0.05, variableShare: 0.95 },
    { alignment: 0, residual: slow - 0.05, variableShare: 0.99 },
    { alignment: 2, residual: 0.02, variableShare: 0.9 },
    { alignment: 2, residual: -0.02, variableShare: 0.97 },
    { alignment: 2, residual: 0, variableShare: 0.99 },
  ]);
  assert.ok(model !== null);
  assert.ok(Math.abs(model.offsets[0]! - slow) < 0.02, `${model.offsets[0]}`);
  assert.equal(model.offsets[1], null, "no word-aligned point was measured");
  // Unmeasured, the word-aligned class lies between the two, and the interval says how unsure.
  const between = offsetAt(model, 1);
  assert.ok(Math.abs(between.ln - model.offsets[0]! / 2) < 1e-12);
  assert.ok(Math.abs(between.halfWidth - model.offsets[0]! / 2) < 1e-12);
});

Deno.test("classes that differ by noise alone give no alignment model", () => {
  const wobble = [0.1, -0.12, 0.05, -0.07];
  const points = wobble.flatMap((r, i) => [
    { alignment: 0 as const, residual: r, variableShare: 0.9 },
    { alignment: 2 as const, residual: wobble[(i + 1) % 4]!, variableShare: 0.9 },
  ]);
  assert.equal(fitAlignment(points), null);
});

Deno.test("an offset scales the time beyond the launch, not the launch", () => {
  assert.equal(alignedMs(1.04, 0.04, Math.log(2)), 2.04);
  assert.equal(alignedMs(0.04, 0.04, Math.log(2)), 0.04);
});

/** Device-resident q4 gemv on a GPU whose misaligned rows stream 2.5× slower. */
function trueMs(shape: Shape): number {
  const stream = gemv.bytes(shape, "q4") / 4e6; // 4 GB/s
  const misaligned = alignmentClass(gemv.rowBytes!(shape, "q4")) === 0;
  return 0.03 + stream * (misaligned ? 2.5 : 1);
}

/** The synthetic report with its q4 device-resident WebGPU gemv measured on a sweep's sizes. */
function reportWithMisalignedSweep(): Report {
  const report = syntheticReport();
  const isSeries = (m: Measurement) =>
    m.op === "gemv" && m.dtype === "q4" && m.backend === "webgpu" &&
    m.residency === "device-resident";
  const template = report.measurements.find((m) => isSeries(m) && m.state === "ok")!;
  assert.ok(template.state === "ok");
  const shapes: [Shape, boolean][] = [
    ...[4, 20, 45, 102, 228, 512, 1149, 2580, 5793, 8192].map((n) =>
      [{ rows: n, cols: n }, false] as [Shape, boolean]
    ),
    [{ rows: 2048, cols: 512 }, true],
    [{ rows: 1024, cols: 4096 }, true],
    [{ rows: 4096, cols: 1024 }, true],
  ];
  let seq = report.measurements.length;
  const sweep: Measurement[] = shapes.map(([shape, offAxis], i) => {
    const ms = trueMs(shape) * (1 + 0.02 * Math.sin(i * 7.1));
    const wall = { ...template.wall, median: ms, ciHalfWidth: 0.02 * ms, relCi: 0.02 };
    return {
      ...template,
      shape,
      size: shape.rows!,
      flops: gemv.flops(shape),
      bytes: gemv.bytes(shape, "q4"),
      wall,
      gpu: wall,
      seq: seq++,
      ...(offAxis ? { offAxis: true as const } : {}),
    };
  });
  const measurements = [...report.measurements.filter((m) => !isSeries(m)), ...sweep];
  return { ...report, measurements, fits: fitAll(measurements) };
}

Deno.test("predictTime() puts an aligned shape on the aligned path and a misaligned one on the slow path, whatever sizes the sweep mixed", () => {
  const report = reportWithMisalignedSweep();
  const variant =
    report.measurements.find((m) =>
      m.op === "gemv" && m.dtype === "q4" && m.residency === "device-resident"
    )!.variant;
  for (
    const shape of [{ rows: 768, cols: 768 }, { rows: 768, cols: 2048 }, { rows: 1500, cols: 1500 }]
  ) {
    const t = predictTime(report, {
      op: "gemv",
      shape,
      dtype: "q4",
      backend: "webgpu",
      residency: "device-resident",
      variant,
    });
    const truth = trueMs(shape);
    assert.ok(Math.abs(t.ms / truth - 1) < 0.2, `${shape.rows}x${shape.cols}: ${t.ms} vs ${truth}`);
    assert.ok(t.interval[0] <= truth && truth <= t.interval[1], `${t.interval} vs ${truth}`);
  }
});

Deno.test("twins a few columns apart give the offset, where the classes' residuals are confounded with size", () => {
  const slow = Math.log(1.6);
  // The sweep's vector-aligned sizes scatter ×0.5–2 about the fit (cache regimes, proportions),
  // so their median says little; the word-aligned twin runs 1.6× its aligned twin.
  const model = fitAlignment([
    { alignment: 2, residual: -0.7, variableShare: 0.9, dims: [8192, 8192] },
    { alignment: 2, residual: 0.5, variableShare: 0.9, dims: [512, 512] },
    { alignment: 2, residual: -0.4, variableShare: 0.9, dims: [1024, 4096] },
    { alignment: 1, residual: -0.1, variableShare: 0.9, dims: [2580, 2580] },
    { alignment: 2, residual: 0.2, variableShare: 0.95, dims: [1024, 3008] },
    { alignment: 1, residual: 0.2 + slow, variableShare: 0.95, dims: [1024, 3000] },
    { alignment: 0, residual: 0.2 + 2 * slow, variableShare: 0.95, dims: [1024, 3002] },
  ]);
  assert.ok(model !== null);
  assert.ok(Math.abs(model.offsets[1]! - slow) < 1e-12, `${model.offsets[1]}`);
  assert.ok(Math.abs(model.offsets[0]! - 2 * slow) < 1e-12, `${model.offsets[0]}`);
  assert.equal(model.offsets[2], 0);
  // Without the twins, the word-aligned class's median sits on the fit: no offset learned.
  const untwinned = fitAlignment([
    { alignment: 2, residual: -0.7, variableShare: 0.9 },
    { alignment: 2, residual: 0.5, variableShare: 0.9 },
    { alignment: 2, residual: -0.4, variableShare: 0.9 },
    { alignment: 1, residual: -0.1, variableShare: 0.9 },
    { alignment: 2, residual: 0.2, variableShare: 0.95 },
    { alignment: 1, residual: 0.2 + slow, variableShare: 0.95 },
  ]);
  assert.ok(untwinned === null || untwinned.offsets[1] === 0, `${untwinned?.offsets}`);
});

Deno.test("a default run measures twins of every load path among its sure gemv shapes", () => {
  const shapes = offAxisShapes(gemv, "q8", "default").slice(0, sureOffAxisShapes(gemv, "default"));
  for (const dtype of ["q8", "q4"] as const) {
    const classes = shapes.filter((s) =>
      s.rows === 1024 && (s.cols ?? 0) >= 3000 && (s.cols ?? 0) <= 3008
    )
      .map((s) => alignmentClass(gemv.rowBytes!(s, dtype), gemv.rowVectorBytes!(dtype)));
    assert.deepEqual(classes.sort(), [0, 1, 2], dtype);
  }
});
