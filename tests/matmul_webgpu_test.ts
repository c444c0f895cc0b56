import assert from "node:assert/strict";
import { openGpu } from "../calibrate/device.ts";
import { UnsupportedError } from "../calibrate/runner.ts";
import { createWebGpuRunner } from "../calibrate/runners/webgpu.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { matmul } from "../kernels/matmul/mod.ts";
import { matmulWebGpu } from "../kernels/matmul/webgpu.ts";
import { type Shape, type Variant, variantId } from "../kernels/types.ts";

const adapter = await navigator.gpu?.requestAdapter();
const hasAdapter = adapter != null;
const hasF16 = adapter?.features.has("shader-f16") ?? false;

const big = (v: Variant) => v.algo === "reg" && Number(v.tm) >= 8 && Number(v.tn) >= 8;

/** The register blocks of at least 8×8 with vec4 loads: workgroups of up to 128 rows or columns. */
const VEC4_BLOCKS: readonly Variant[] = matmulWebGpu.variants.filter((v) =>
  big(v) && v.avec4 === true
);
/** The big register blocks with scalar loads, which run every shape. */
const SCALAR_BLOCKS: readonly Variant[] = matmulWebGpu.variants.filter((v) =>
  big(v) && v.vec4 !== true
);

/** Several workgroups with ragged last rows and columns, k and n multiples of 4 (vec4 loads). */
const RAGGED: readonly Shape[] = [
  { m: 1, k: 4, n: 4 },
  { m: 130, k: 68, n: 76 },
  { m: 257, k: 12, n: 132 },
  { m: 67, k: 256, n: 260 },
];
/** Ragged shapes with k and n of any value, for the scalar blocks. */
const ODD: readonly Shape[] = [
  { m: 1, k: 1, n: 1 },
  { m: 7, k: 7, n: 7 },
  { m: 129, k: 33, n: 67 },
  { m: 70, k: 130, n: 131 },
];

Deno.test("the first WebGPU matmul variants are the big vec4 blocks, then a big one for any shape", () => {
  assert.ok(VEC4_BLOCKS.length >= 3 && SCALAR_BLOCKS.length >= 1);
  const lead = [...VEC4_BLOCKS, SCALAR_BLOCKS[0]!];
  assert.deepEqual(matmulWebGpu.variants.slice(0, lead.length), lead);
  for (const shape of ODD) {
    assert.equal(matmulWebGpu.unsupported!(shape, "f32", SCALAR_BLOCKS[0]!), null);
    assert.equal(matmulWebGpu.unsupported!(shape, "f16", SCALAR_BLOCKS[0]!), null);
  }
});

Deno.test("program() dispatches wg×tn columns and wgy×tm rows per workgroup", () => {
  const variant = { algo: "reg", wg: 8, wgy: 4, tm: 16, tn: 16, vec4: true, kt: 0, avec4: true };
  const p = matmulWebGpu.program({ m: 130, k: 8, n: 260 }, "f32", variant);
  assert.deepEqual(p.workgroups, [3, 3, 1]);
  assert.match(p.code, /@workgroup_size\(8, 4\)/);
  const square = matmulWebGpu.program({ m: 130, k: 8, n: 260 }, "f32", { ...variant, wgy: 8 });
  assert.deepEqual(square.workgroups, [3, 2, 1]);
  assert.notEqual(square.key, p.key);
});

Deno.test("program() rejects block sizes it cannot generate", () => {
  const shape = { m: 8, k: 8, n: 8 };
  const base = { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: false, kt: 0 };
  assert.throws(() => matmulWebGpu.program(shape, "f32", { ...base, tm: 33 }), /tm is 33/);
  assert.throws(() => matmulWebGpu.program(shape, "f32", { ...base, tm: 0 }), RangeError);
  assert.throws(() => matmulWebGpu.program(shape, "f32", { ...base, tn: 6 }), /tn is 6/);
  assert.throws(() => matmulWebGpu.program(shape, "f32", { ...base, wgy: 0 }), /workgroup/);
});

Deno.test("the big vec4 blocks declare shapes without k % 4 == 0 or n % 4 == 0 unsupported", () => {
  for (const v of VEC4_BLOCKS) {
    assert.match(matmulWebGpu.unsupported!({ m: 8, k: 7, n: 8 }, "f32", v) ?? "", /k % 4/);
    assert.match(matmulWebGpu.unsupported!({ m: 8, k: 8, n: 6 }, "f32", v) ?? "", /n % 4/);
  }
});

for (const dtype of ["f32", "f16"] as const) {
  const missingF16 = dtype === "f16" && !hasF16;
  Deno.test({
    name: `the big WebGPU matmul register blocks match the reference in ${dtype} on ragged shapes${
      missingF16 ? " (skipped: adapter lacks shader-f16)" : ""
    }`,
    ignore: !hasAdapter || missingF16,
    fn: async () => {
      const gpu = await openGpu();
      assert.ok(gpu, "an adapter was found at load time but openGpu() returned null");
      try {
        const runner = createWebGpuRunner(gpu);
        let ran = 0;
        const cases = [
          ...RAGGED.flatMap((shape) => VEC4_BLOCKS.map((variant) => ({ shape, variant }))),
          ...[...RAGGED, ...ODD].flatMap((shape) =>
            SCALAR_BLOCKS.map((variant) => ({ shape, variant }))
          ),
        ];
        for (const [s, { shape, variant }] of cases.entries()) {
          const inputs = matmul.inputs(shape, dtype, seededRng(s + 11));
          const label = `${dtype} ${JSON.stringify(shape)} ${variantId(variant)}`;
          assert.equal(matmulWebGpu.unsupported!(shape, dtype, variant), null, label);
          let prepared;
          try {
            prepared = await runner.prepare(matmul, shape, dtype, variant, inputs, "end-to-end");
          } catch (e) {
            if (e instanceof UnsupportedError) assert.fail(`${label}: ${e.message}`);
            throw e;
          }
          try {
            const ref = matmul.reference(shape, dtype, inputs);
            const v = verifyOutput(await prepared.output(), ref, matmul.tolerance(shape, dtype));
            assert.ok(v.ok, `${label}: ${v.message}`);
            ran++;
          } finally {
            prepared.dispose();
          }
        }
        assert.equal(ran, cases.length);
      } finally {
        gpu.device.destroy();
      }
    },
  });
}
