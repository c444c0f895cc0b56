import assert from "node:assert/strict";
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  implOf,
  type Residency,
  type Shape,
  variantFromId,
} from "../kernels/types.ts";
import { predictTime, recommendTuning } from "../models/predict.ts";
import { loadReport } from "../reports/load.ts";
import { datasetReportPaths } from "./_fixtures.ts";

/** Shapes on and off each op's axis: decode and prefill matmuls, an odd width, gemvs with rows ≠ cols. */
const SHAPES: Readonly<Record<string, readonly Shape[]>> = {
  matmul: [
    { m: 1, k: 1000, n: 3000 },
    { m: 1, k: 1024, n: 1024 },
    { m: 8, k: 4096, n: 1024 },
    { m: 32, k: 1024, n: 1024 },
    { m: 64, k: 1024, n: 4096 },
    { m: 77, k: 77, n: 77 },
    { m: 300, k: 300, n: 300 },
  ],
  gemv: [
    { rows: 1000, cols: 3000 },
    { rows: 3000, cols: 1000 },
    { rows: 1024, cols: 3072 },
    { rows: 300, cols: 300 },
    { rows: 4096, cols: 4096 },
  ],
  softmax: [{ rows: 16, cols: 1000 }, { rows: 128, cols: 512 }],
  add: [{ n: 1000 }, { n: 250_000 }],
  sum: [{ n: 4096 }, { n: 2_000_000 }],
  dot: [{ n: 40_000 }],
};

const SERIES: readonly (readonly [Backend, Residency])[] = [
  ["webgpu", "end-to-end"],
  ["webgpu", "device-resident"],
  ["wasm", "end-to-end"],
  ["wasm-mt", "end-to-end"],
  ["js", "end-to-end"],
];

Deno.test("recommendTuning() recommends the variant predictTime() runs, and one that can run the shape, in every report of the dataset", async () => {
  const reports = datasetReportPaths();
  assert.ok(reports.length > 0);
  let asked = 0;
  for (const path of reports) {
    const report = await loadReport(path);
    for (const [op, shapes] of Object.entries(SHAPES)) {
      for (const dtype of ["f32", "f16", "q8", "q4"] as const) {
        for (const [backend, residency] of SERIES) {
          for (const shape of shapes) {
            const ask = { op, shape, dtype, backend, residency };
            let runs: string;
            try {
              runs = predictTime(report, ask).variant;
            } catch (e) {
              if (e instanceof RangeError) continue;
              throw e;
            }
            const where = `${path.split("/").at(-1)} ${op} ${dtype} ${backend} ${residency} ` +
              JSON.stringify(shape);
            assert.equal(recommendTuning(report, ask).variant, runs, where);
            const refused = implOf(getOp(op), backend)?.unsupported?.(
              shape,
              dtype,
              variantFromId(runs),
            );
            assert.equal(refused ?? null, null, `${where}: ${runs}`);
            asked++;
          }
        }
      }
    }
  }
  assert.ok(asked > 100 * reports.length, `${asked} questions`);
});
