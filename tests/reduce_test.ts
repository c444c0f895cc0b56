import assert from "node:assert/strict";
import { openGpu } from "../calibrate/device.ts";
import { seededRng } from "../kernels/_random.ts";
import { createJsRunner } from "../calibrate/runners/js.ts";
import { createWasmRunner } from "../calibrate/runners/wasm.ts";
import { createWasmMtRunner } from "../calibrate/runners/wasm_mt.ts";
import { createWebGpuRunner } from "../calibrate/runners/webgpu.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { dot, sum } from "../kernels/reduce/mod.ts";
import { BLOCK } from "../kernels/reduce/wasm.ts";
import type { Runner } from "../calibrate/runner.ts";
import type { Shape } from "../kernels/types.ts";
import { checkEveryVariant, withWebGpuRunner } from "./_kernel_check.ts";

const adapter = await navigator.gpu?.requestAdapter();
const hasAdapter = adapter != null;
const hasF16 = adapter?.features.has("shader-f16") ?? false;

// Odd sizes, a partial vec4, and several wasm blocks (so wasm-mt splits them over workers).
const SHAPES: readonly Shape[] = [
  { n: 1 },
  { n: 7 },
  { n: 33 },
  { n: 1000 },
  { n: 100003 },
  { n: 4 * BLOCK + 3 },
];

const CPU_RUNNERS: { name: string; open: () => Runner }[] = [
  { name: "js", open: createJsRunner },
  { name: "wasm", open: createWasmRunner },
  { name: "wasm-mt", open: () => createWasmMtRunner({ threads: 2 }) },
];

Deno.test("sum and dot count n and 2n FLOPs and read their operands once", () => {
  assert.equal(sum.flops({ n: 1000 }), 1000);
  assert.equal(dot.flops({ n: 1000 }), 2000);
  assert.equal(sum.bytes({ n: 1000 }, "f32"), 4004);
  assert.equal(dot.bytes({ n: 1000 }, "f16"), 4002);
});

Deno.test("sum and dot operands are positive, so the result is as large as Σ|terms|", () => {
  for (const op of [sum, dot]) {
    const inputs = op.inputs({ n: 1000 }, "f32", seededRng(3));
    for (const a of inputs.arrays) {
      assert.ok((a as Float32Array).every((v) => v >= 0.25 && v < 1));
    }
  }
});

Deno.test("f16 sum and dot results stay well inside f16 range at large n", () => {
  for (const op of [sum, dot]) {
    const shape = { n: 1 << 20 };
    const [total] = op.reference(shape, "f16", op.inputs(shape, "f16", seededRng(5)));
    assert.ok(total! > 4096 && total! < 32768, `${op.name} f16 result ${total}`);
  }
});

for (const { name, open } of CPU_RUNNERS) {
  Deno.test(`${name} runner computes sum and dot right for every variant`, async () => {
    const runner = open();
    try {
      for (const op of [sum, dot]) {
        const { ran } = await checkEveryVariant(runner, op, "f32", SHAPES);
        assert.equal(ran, op.impls[name === "js" ? "js" : "wasm"]!.variants.length * SHAPES.length);
      }
    } finally {
      await runner.close();
    }
  });
}

Deno.test({
  name: "webgpu runner computes sum and dot right for every f32 variant",
  ignore: !hasAdapter,
  fn: () =>
    withWebGpuRunner(async (runner) => {
      for (const op of [sum, dot]) {
        const { ran, unsupported } = await checkEveryVariant(runner, op, "f32", SHAPES);
        // Half the variants accumulate in f16, which needs f16 operands.
        assert.equal(ran, unsupported);
      }
    }),
});

Deno.test({
  name: "webgpu runner computes f16 sum and dot right with f32 and f16 accumulation",
  ignore: !hasAdapter || !hasF16,
  fn: () =>
    withWebGpuRunner(async (runner) => {
      for (const op of [sum, dot]) {
        const { ran } = await checkEveryVariant(runner, op, "f16", SHAPES);
        assert.equal(ran, op.impls.webgpu!.variants.length * SHAPES.length);
      }
    }),
});

Deno.test({
  name: "webgpu sum leaves its scratch counter reset, so repeated runs stay right",
  ignore: !hasAdapter,
  fn: async () => {
    const gpu = await openGpu();
    assert.ok(gpu);
    const runner = createWebGpuRunner(gpu);
    const shape = { n: 100003 };
    const inputs = sum.inputs(shape, "f32", seededRng(9));
    const ref = sum.reference(shape, "f32", inputs);
    for (const residency of ["end-to-end", "device-resident"] as const) {
      const prepared = await runner.prepare(
        sum,
        shape,
        "f32",
        sum.impls.webgpu!.variants[0]!,
        inputs,
        residency,
      );
      try {
        await prepared.time(5);
        const v = verifyOutput(await prepared.output(), ref, sum.tolerance(shape, "f32"));
        assert.ok(v.ok, `${residency}: ${v.message}`);
      } finally {
        prepared.dispose();
      }
    }
    await runner.close();
  },
});
