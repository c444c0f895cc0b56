import assert from "node:assert/strict";
import { openGpu } from "../calibrate/device.ts";
import { UnsupportedError } from "../calibrate/runner.ts";
import { createWebGpuRunner } from "../calibrate/runners/webgpu.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { add, fma } from "../kernels/elementwise/mod.ts";
import { gemv } from "../kernels/gemv/mod.ts";
import { type Dtype, type OpSpec, type Shape, type Variant, variantId } from "../kernels/types.ts";

const adapter = await navigator.gpu?.requestAdapter();
const hasAdapter = adapter != null;

/** Runs `variants` of `op` on `shapes` and checks each output; returns how many ran. */
async function checkVariants(
  op: OpSpec,
  dtype: Dtype,
  variants: readonly Variant[],
  shapes: readonly Shape[],
): Promise<number> {
  const gpu = await openGpu();
  assert.ok(gpu, "an adapter was found at load time but openGpu() returned null");
  const runner = createWebGpuRunner(gpu);
  let ran = 0;
  try {
    for (const variant of variants) {
      for (const [i, shape] of shapes.entries()) {
        const inputs = op.inputs(shape, dtype, seededRng(40 + i));
        let prepared;
        try {
          prepared = await runner.prepare(op, shape, dtype, variant, inputs, "end-to-end");
        } catch (e) {
          if (e instanceof UnsupportedError) continue;
          throw e;
        }
        try {
          const out = await prepared.output();
          const check = verifyOutput(
            out,
            op.reference(shape, dtype, inputs),
            op.tolerance(shape, dtype),
          );
          const where = `${op.name} ${dtype} ${variantId(variant)} ${JSON.stringify(shape)}`;
          assert.ok(check.ok, `${where}: ${check.message}`);
          ran++;
        } finally {
          prepared.dispose();
        }
      }
    }
  } finally {
    await runner.close();
    gpu.device.destroy();
  }
  return ran;
}

const rowsVariants = gemv.impls.webgpu!.variants.filter((v) => (v.rpi ?? 1) !== 1);
const teamVariants = (op: OpSpec) =>
  op.impls.webgpu!.variants.filter((v) => typeof v.ept === "number" && v.ept >= 256);

Deno.test("gemv's rows-per-invocation variants read vec4 rows whatever cols and need tpr 1", () => {
  const impl = gemv.impls.webgpu!;
  assert.ok(rowsVariants.length >= 2);
  const v = { tpr: 1, rpw: 32, rpi: 8, vec4: true };
  assert.equal(impl.unsupported!({ rows: 9, cols: 7 }, "f32", v), null);
  assert.match(impl.program({ rows: 9, cols: 7 }, "f32", v).key, /funnel/);
  assert.deepEqual(impl.program({ rows: 513, cols: 8 }, "f32", v).workgroups, [3, 1, 1]);
  assert.throws(() => impl.program({ rows: 9, cols: 8 }, "f32", { ...v, tpr: 2 }), RangeError);
  assert.throws(() => impl.program({ rows: 9, cols: 8 }, "f32", { ...v, rpi: 3 }), RangeError);
});

Deno.test("team-run elementwise variants lead the list and dispatch a workgroup per wg × ept elements", () => {
  const impl = add.impls.webgpu!;
  assert.ok(teamVariants(add).length >= 2);
  assert.ok((impl.variants[0]!.ept as number) >= 256);
  assert.deepEqual(impl.program({ n: 1 }, "f32", { wg: 256, ept: 1024 }).workgroups, [1, 1, 1]);
  assert.deepEqual(
    impl.program({ n: (1 << 24) + 1 }, "f32", { wg: 256, ept: 1024 }).workgroups,
    [65, 1, 1],
  );
  assert.throws(() => impl.program({ n: 8 }, "f32", { wg: 64, ept: 512 }), RangeError);
});

for (const dtype of ["f32", "q8", "q4"] as const) {
  Deno.test({
    name: `every rows-per-invocation gemv variant matches the reference in ${dtype} over many ` +
      "workgroups and ragged rows and cols",
    ignore: !hasAdapter,
    fn: async () => {
      const shapes = [{ rows: 1100, cols: 259 }, { rows: 515, cols: 128 }, { rows: 3, cols: 1003 }];
      const ran = await checkVariants(gemv, dtype, rowsVariants, shapes);
      assert.ok(ran >= 2 * shapes.length, `only ${ran} ${dtype} cases ran`);
    },
  });
}

Deno.test({
  name: "team-run elementwise variants cover every element when a team owns several blocks",
  ignore: !hasAdapter,
  fn: async () => {
    const shapes = [{ n: 3 }, { n: (1 << 17) + 151 }, { n: 8 * 1024 * 5 + 4 * 31 + 2 }];
    for (const op of [add, fma]) {
      const ran = await checkVariants(op, "f32", teamVariants(op), shapes);
      assert.equal(ran, teamVariants(op).length * shapes.length);
    }
  },
});
