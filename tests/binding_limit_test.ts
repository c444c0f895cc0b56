import assert from "node:assert/strict";
import { OPS } from "../kernels/catalog.ts";
import { seededRng } from "../kernels/_random.ts";
import type { Shape } from "../kernels/types.ts";
import { BackendSelector } from "../models/selector.ts";
import { predictTime, recommendTuning } from "../models/predict.ts";
import { syntheticReport } from "./_fixtures.ts";

/** Small shapes of an op with every dimension different, so no buffer size is a coincidence. */
function shapesOf(dims: readonly string[]): Shape[] {
  const sizes = [[3, 5, 7], [33, 2, 9], [1, 40, 3]];
  return sizes.map((s) => Object.fromEntries(dims.map((d, i) => [d, s[i]!])));
}

Deno.test("an op's largest buffer is the largest of its operands and its output, as a run binds them", () => {
  for (const op of OPS) {
    for (const dtype of op.dtypes) {
      for (const shape of shapesOf(op.dims)) {
        const inputs = op.inputs(shape, dtype, seededRng(1));
        const output = inputs.outputLength * (dtype === "f16" ? 2 : 4);
        const largest = Math.max(output, ...inputs.arrays.map((a) => a.byteLength));
        assert.equal(
          op.largestBufferBytes?.(shape, dtype),
          largest,
          `${op.name} ${dtype} ${JSON.stringify(shape)}`,
        );
      }
    }
  }
});

Deno.test("a shape with a buffer over the adapter's largest storage binding is neither predicted, tuned nor selected on WebGPU", () => {
  const report = syntheticReport(); // its adapter binds at most 128 MiB, as lavapipe's
  // 5800 × 5800 f32 weights take 128.3 MiB; 5700 × 5700 take 124 MiB.
  const over = { rows: 5800, cols: 5800 };
  const under = { rows: 5700, cols: 5700 };
  for (const residency of ["end-to-end", "device-resident"] as const) {
    const ask = { op: "gemv", dtype: "f32", backend: "webgpu", residency } as const;
    assert.throws(
      () => predictTime(report, { ...ask, shape: over }),
      (e: Error) => e instanceof RangeError && /largest storage binding of 128 MiB/.test(e.message),
    );
    assert.throws(() => recommendTuning(report, { ...ask, shape: over }), RangeError);
    assert.ok(predictTime(report, { ...ask, shape: under }).ms > 0);
    const selection = BackendSelector.fromReport(report).select({
      op: "gemv",
      shape: over,
      dtype: "f32",
      residency,
    });
    assert.notEqual(selection.backend, "webgpu");
    assert.ok(!Number.isFinite(selection.predictedMs["webgpu"] ?? NaN), residency);
  }
  // An adapter that binds more runs it.
  const adapter = report.adapter!;
  const larger = syntheticReport({
    adapter: { ...adapter, limits: { ...adapter.limits, maxStorageBufferBindingSize: 2 ** 31 } },
  });
  const t = predictTime(larger, { op: "gemv", shape: over, dtype: "f32", backend: "webgpu" });
  assert.ok(t.ms > 0);
});
