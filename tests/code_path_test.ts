import assert from "node:assert/strict";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { matmulWasm } from "../kernels/matmul/wasm.ts";
import { predictTime } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

const matmul = getOp("matmul");
const SIX_ROWS = { mr: 6, nr: 8, kc: 256, nc: 512, fma: true };
const SIX_ROWS_ID = "fma=true,kc=256,mr=6,nc=512,nr=8";

Deno.test("wasm matmul runs fewer rows than one micro-tile unpacked, and as many packed", () => {
  const path = (m: number, mr: number) =>
    matmulWasm.codePath!({ m, k: 1024, n: 512 }, { ...SIX_ROWS, mr });
  assert.deepEqual([1, 5, 6, 64].map((m) => path(m, 6)), [1, 1, 0, 0]);
  assert.deepEqual([3, 4].map((m) => path(m, 4)), [1, 0]);
});

Deno.test("wasm matmul packs more columns than one block a block at a time: a path beside the packed one block's, away from the unpacked", () => {
  const path = (m: number, n: number) => matmulWasm.codePath!({ m, k: 2048, n }, SIX_ROWS);
  assert.deepEqual([256, 512, 513, 640, 4096].map((n) => path(8, n)), [0, 0, -1, -1, -1]);
  assert.equal(path(5, 4096), 1, "fewer rows than a micro-tile stay unpacked");
});

/**
 * The six-row variant's time as lavapipe's host ran it: unpacked, B streamed once at 12 GB/s;
 * packed, B copied at 5 GB/s before 30 GFLOP/s of micro-tiles (6 × 1024² took twice 5 × 1024²).
 */
function wasmMs({ m, k, n }: Shape): number {
  const bBytes = 4 * k! * n!;
  if (m! < 6) return 0.004 + bBytes / 12e6;
  return 0.004 + bBytes / 5e6 + (2 * m! * k! * n!) / 30e6;
}

/** The synthetic report with its wasm f32 matmul measured as calibrate does, on and off the axis. */
function reportWithPaths(): Report {
  const report = syntheticReport();
  const isSeries = (m: Measurement) =>
    m.op === "matmul" && m.dtype === "f32" && m.backend === "wasm";
  const template = report.measurements.find((m) => isSeries(m) && m.state === "ok")!;
  assert.ok(template.state === "ok");
  const onAxis = [4, 16, 32, 64, 128, 256, 1024].map((n) => ({ m: n, k: n, n }));
  const offAxis: Shape[] = [
    { m: 1, k: 4096, n: 512 },
    { m: 8, k: 2048, n: 512 },
    { m: 256, k: 512, n: 512 },
    { m: 1, k: 1024, n: 1024 },
    { m: 64, k: 4096, n: 1024 },
    { m: 2, k: 4096, n: 1024 },
    { m: 16, k: 512, n: 2048 },
    { m: 8, k: 1024, n: 4096 },
    { m: 1, k: 1024, n: 4096 },
    { m: 4, k: 1024, n: 4096 },
    { m: 1, k: 4096, n: 4096 },
  ];
  let seq = report.measurements.length;
  const series = [...onAxis, ...offAxis].map((shape, i): Measurement => {
    const median = wasmMs(shape) * (1 + 0.02 * Math.sin(i * 7.1));
    const wall = { ...template.wall, median, ciHalfWidth: 0.02 * median, relCi: 0.02 };
    return {
      ...template,
      variant: SIX_ROWS_ID,
      shape,
      size: shape.m === shape.k && shape.k === shape.n ? shape.m! : shape.n!,
      flops: matmul.flops(shape),
      bytes: matmul.bytes(shape, "f32"),
      wall,
      seq: seq++,
      ...(shape.m === shape.k && shape.k === shape.n ? {} : { offAxis: true as const }),
    };
  });
  const measurements = [...report.measurements.filter((m) => !isSeries(m)), ...series];
  const tuning = report.tuning.filter((t) => !(t.op === "matmul" && t.backend === "wasm"));
  return { ...report, measurements, fits: fitAll(measurements), tuning };
}

Deno.test("a matmul with rows on either side of the micro-tile is priced from shapes that ran its way", () => {
  const report = reportWithPaths();
  const at = (shape: Shape) =>
    predictTime(report, {
      op: "matmul",
      shape,
      dtype: "f32",
      backend: "wasm",
      variant: SIX_ROWS_ID,
    });
  // m = 5 and 6 lie between the measured 4 (unpacked) and 8 (packed); 6 takes twice as long.
  const five = at({ m: 5, k: 1024, n: 2048 });
  const six = at({ m: 6, k: 1024, n: 2048 });
  assert.ok(six.ms > 1.5 * five.ms, `${five.ms} ${six.ms}`);
  for (
    const shape of [{ m: 5, k: 1024, n: 2048 }, { m: 6, k: 1024, n: 2048 }, {
      m: 7,
      k: 1536,
      n: 1024,
    }]
  ) {
    const p = at(shape);
    const truth = wasmMs(shape);
    assert.ok(Math.abs(p.ms / truth - 1) < 0.25, `${JSON.stringify(shape)} ${p.ms} ${truth}`);
    assert.ok(p.interval[0] <= truth && truth <= p.interval[1], `${p.interval} ${truth}`);
  }
});
