/**
 * Test helper: runs every variant of an op on a runner over a list of shapes and checks each
 * output against the op's float64 reference with `verifyOutput`, as `measure()` would.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type GpuHandle, openGpu } from "../calibrate/device.ts";
import { createWebGpuRunner } from "../calibrate/runners/webgpu.ts";
import { type Prepared, type Runner, UnsupportedError } from "../calibrate/runner.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { type Dtype, type OpSpec, type Shape, variantId } from "../kernels/types.ts";

/**
 * Checks every variant of `op` in `dtype` on `shapes`; a variant the op itself declares
 * unsupported for a case is counted, any other failure (wrong answer, error) fails the test.
 *
 * @param runner The runner to drive.
 * @param op The op.
 * @param dtype The dtype.
 * @param shapes Shapes to try.
 * @returns How many cases ran and how many were declared unsupported.
 * @example
 * ```ts ignore
 * import { createJsRunner } from "../calibrate/runners/js.ts";
 * import { sum } from "../kernels/reduce/mod.ts";
 * const { ran } = await checkEveryVariant(createJsRunner(), sum, "f32", [{ n: 7 }]);
 * ```
 */
export async function checkEveryVariant(
  runner: Runner,
  op: OpSpec,
  dtype: Dtype,
  shapes: readonly Shape[],
): Promise<{ ran: number; unsupported: number }> {
  const impl = runner.backend === "js"
    ? op.impls.js
    : runner.backend === "webgpu"
    ? op.impls.webgpu
    : op.impls.wasm;
  assert.ok(impl, `${op.name} has a ${runner.backend} implementation`);
  const counts = { ran: 0, unsupported: 0 };
  for (const variant of impl.variants) {
    for (const [s, shape] of shapes.entries()) {
      const what = `${op.name} ${runner.backend} ${dtype} ${variantId(variant)} ${
        JSON.stringify(shape)
      }`;
      const declared: string | null = impl.unsupported?.(shape, dtype, variant) ?? null;
      const inputs = op.inputs(shape, dtype, seededRng(s + 1));
      let prepared: Prepared;
      try {
        prepared = await runner.prepare(op, shape, dtype, variant, inputs, "end-to-end");
      } catch (e) {
        if (declared !== null && e instanceof UnsupportedError) {
          counts.unsupported++;
          continue;
        }
        throw e;
      }
      try {
        assert.equal(declared, null, `${what} ran although declared unsupported: ${declared}`);
        const out = await prepared.output();
        const v = verifyOutput(out, op.reference(shape, dtype, inputs), op.tolerance(shape, dtype));
        assert.ok(v.ok, `${what}: ${v.message}`);
        counts.ran++;
      } finally {
        prepared.dispose();
      }
    }
  }
  return counts;
}

/**
 * Opens the WebGPU adapter, hands a runner on it to `fn`, and closes the runner (destroying the
 * device) however `fn` ends. For tests that `ignore` themselves when no adapter exists.
 *
 * @param fn The test body.
 * @example
 * ```ts ignore
 * import { sum } from "../kernels/reduce/mod.ts";
 * await withWebGpuRunner((runner) => checkEveryVariant(runner, sum, "f32", [{ n: 7 }]));
 * ```
 */
export async function withWebGpuRunner(
  fn: (runner: Runner, gpu: GpuHandle) => Promise<unknown>,
): Promise<void> {
  const gpu = await openGpu();
  assert.ok(gpu, "an adapter was found at load time but openGpu() returned null");
  const runner = createWebGpuRunner(gpu);
  try {
    await fn(runner, gpu);
  } finally {
    await runner.close();
  }
}
