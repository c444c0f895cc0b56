import assert from "node:assert/strict";
import { seededRng } from "../kernels/_random.ts";
import { createJsRunner } from "../calibrate/runners/js.ts";
import { createWasmRunner } from "../calibrate/runners/wasm.ts";
import { createWasmMtRunner } from "../calibrate/runners/wasm_mt.ts";
import { softmax } from "../kernels/softmax/mod.ts";
import { F16_ACC_MAX_COLS } from "../kernels/softmax/webgpu.ts";
import type { Runner } from "../calibrate/runner.ts";
import type { Shape } from "../kernels/types.ts";
import { checkEveryVariant, withWebGpuRunner } from "./_kernel_check.ts";

const adapter = await navigator.gpu?.requestAdapter();
const hasAdapter = adapter != null;
const hasF16 = adapter?.features.has("shader-f16") ?? false;

// One column, odd row lengths (unaligned rows, scalar tails), and a row past F16_ACC_MAX_COLS.
const SHAPES: readonly Shape[] = [
  { rows: 1, cols: 1 },
  { rows: 3, cols: 7 },
  { rows: 5, cols: 33 },
  { rows: 4, cols: 1000 },
  { rows: 2, cols: 100003 },
];

const CPU_RUNNERS: { name: string; open: () => Runner }[] = [
  { name: "js", open: createJsRunner },
  { name: "wasm", open: createWasmRunner },
  { name: "wasm-mt", open: () => createWasmMtRunner({ threads: 2 }) },
];

Deno.test("softmax sweeps 32 attention rows of `size` columns", () => {
  assert.deepEqual(softmax.axis.shape(4096), { rows: 32, cols: 4096 });
  assert.equal(softmax.axis.size({ rows: 32, cols: 4096 }), 4096);
  assert.equal(softmax.bytes({ rows: 2, cols: 10 }, "f32"), 160);
});

Deno.test("softmax reference rows sum to 1 even for large inputs", () => {
  const shape = { rows: 3, cols: 50 };
  const inputs = softmax.inputs(shape, "f32", seededRng(2));
  (inputs.arrays[0] as Float32Array)[0] = 1000;
  const ref = softmax.reference(shape, "f32", inputs);
  for (let r = 0; r < 3; r++) {
    const total = ref.subarray(r * 50, (r + 1) * 50).reduce((s, v) => s + v, 0);
    assert.ok(Math.abs(total - 1) < 1e-12, `row ${r} sums to ${total}`);
  }
});

for (const { name, open } of CPU_RUNNERS) {
  Deno.test(`${name} runner computes softmax right for every variant`, async () => {
    const runner = open();
    try {
      const { ran } = await checkEveryVariant(runner, softmax, "f32", SHAPES);
      assert.equal(ran, 2 * SHAPES.length);
    } finally {
      await runner.close();
    }
  });
}

Deno.test({
  name: "webgpu runner computes softmax right for every f32 variant",
  ignore: !hasAdapter,
  fn: () =>
    withWebGpuRunner(async (runner) => {
      const { ran, unsupported } = await checkEveryVariant(runner, softmax, "f32", SHAPES);
      // The two acc=f16 variants need f16 operands.
      assert.deepEqual({ ran, unsupported }, {
        ran: 2 * SHAPES.length,
        unsupported: 2 * SHAPES.length,
      });
    }),
});

Deno.test({
  name: "webgpu runner computes f16 softmax right, with f16 arithmetic only on short rows",
  ignore: !hasAdapter || !hasF16,
  fn: () =>
    withWebGpuRunner(async (runner) => {
      const { ran, unsupported } = await checkEveryVariant(runner, softmax, "f16", SHAPES);
      const long = SHAPES.filter((s) => s.cols! > F16_ACC_MAX_COLS).length;
      assert.deepEqual({ ran, unsupported }, {
        ran: 4 * SHAPES.length - 2 * long,
        unsupported: 2 * long,
      });
    }),
});
