import assert from "node:assert/strict";
import { amortizationLn, fitAmortization } from "../models/_amortization.ts";
import { predictTime } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("fitAmortization() reads each code path's per-call cost from shapes that ran m / (m + c) of the square's rate", () => {
  const points = [
    ...[8, 16, 32, 64].map((rows) => ({ path: 0, rows, perCall: 8 })),
    ...[8, 32, 128].map((rows) => ({ path: -1, rows, perCall: 16 })),
    ...[1, 2, 4].map((rows) => ({ path: 1, rows, perCall: 4 })),
  ].map(({ path, rows, perCall }) => {
    const residual = amortizationLn(rows, 400, perCall);
    return { path, rows, squareRows: 400, residual, withoutCurve: residual + 1 };
  });
  const fitted = fitAmortization(points);
  for (const [path, perCall] of [[0, 8], [-1, 16], [1, 4]] as const) {
    const c = fitted.get(path)!;
    assert.ok(Math.abs(Math.log(c / perCall)) < 0.2, `path ${path}: ${c} rows, not ${perCall}`);
  }
});

Deno.test("fitAmortization() gives no curve to a path with one shape, or whose shapes it does not explain better than the series' prediction", () => {
  const lone = { path: 0, rows: 8, squareRows: 400, residual: 1, withoutCurve: 1 };
  assert.equal(fitAmortization([lone]).size, 0);
  // Few rows that ran as fast as the square: the prediction without a curve already says so.
  const fast = [4, 8, 16].map((rows) => ({
    path: 0,
    rows,
    squareRows: 400,
    residual: 0,
    withoutCurve: 0,
  }));
  assert.equal(fitAmortization(fast).size, 0);
});

Deno.test("amortizationLn() is nothing at the square's own rows and grows as the rows fall", () => {
  assert.equal(amortizationLn(300, 300, 12), 0);
  assert.ok(amortizationLn(8, 300, 12) > amortizationLn(16, 300, 12));
  assert.ok(amortizationLn(16, 300, 12) > 0);
  assert.equal(amortizationLn(8, 300, 0), 0);
});

/** The synthetic report's wasm matmul at a square of `side`. */
function squareMs(base: Report, side: number): number {
  const shape = { m: side, k: side, n: side };
  return predictTime(base, { op: "matmul", shape, dtype: "f32", backend: "wasm" }).ms;
}

/** A wasm matmul that packs B per call at 12 rows' work, as the square fit prices its flops. */
function packedMs(base: Report, shape: { m: number; k: number; n: number }): number {
  const side = Math.round(Math.cbrt(shape.m * shape.k * shape.n));
  const flopsRatio = (shape.m * shape.k * shape.n) / side ** 3;
  return squareMs(base, side) * flopsRatio * Math.exp(amortizationLn(shape.m, side, 12));
}

Deno.test("predictTime() prices a few-row wasm matmul far from the measured shapes by its rows' share of the packing", () => {
  const base = syntheticReport();
  const template = base.measurements.find((x) =>
    x.state === "ok" && x.op === "matmul" && x.backend === "wasm"
  )!;
  assert.ok(template.state === "ok");
  // Packed shapes (m ≥ the synthetic variant's 4-row tiles, n ≤ its 512-column blocks).
  const shapes = [
    { m: 8, k: 1024, n: 512 },
    { m: 16, k: 2048, n: 256 },
    { m: 32, k: 512, n: 512 },
    { m: 64, k: 1024, n: 384 },
    { m: 128, k: 256, n: 512 },
    { m: 12, k: 768, n: 448 },
  ];
  const measured: Measurement[] = shapes.map((shape, i) => {
    const median = packedMs(base, shape);
    const flops = 2 * shape.m * shape.k * shape.n;
    const bytes = 4 * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n);
    return {
      ...template,
      shape,
      size: shape.n,
      seq: 20_000 + i,
      offAxis: true as const,
      flops,
      bytes,
      gflops: flops / (median * 1e6),
      gbps: bytes / (median * 1e6),
      wall: { ...template.wall, median, ciHalfWidth: median * 0.01 },
    };
  });
  const report = syntheticReport({ measurements: [...base.measurements, ...measured] });
  // Six rows and a depth four times the deepest measured: the rows' share holds there.
  for (const shape of [{ m: 6, k: 8000, n: 200 }, { m: 5, k: 3000, n: 500 }]) {
    const p = predictTime(report, { op: "matmul", shape, dtype: "f32", backend: "wasm" });
    const truth = packedMs(base, shape);
    assert.ok(Math.abs(Math.log(p.ms / truth)) < Math.log(1.15), `${p.ms} against ${truth}`);
  }
});
