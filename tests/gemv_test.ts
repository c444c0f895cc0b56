import assert from "node:assert/strict";
import { measure } from "../calibrate/measure.ts";
import { type Runner, UnsupportedError } from "../calibrate/runner.ts";
import { openRunner } from "../calibrate/runners/mod.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { gemv } from "../kernels/gemv/mod.ts";
import {
  type Backend,
  type Dtype,
  type OpInputs,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import { withWebGpuRunner } from "./_kernel_check.ts";

const adapter = await navigator.gpu?.requestAdapter();
const hasAdapter = adapter != null;
const hasF16 = adapter?.features.has("shader-f16") ?? false;

/** Every edge size on both axes: 1, odd (q4's half-filled last byte), ragged groups, vec4-able. */
const SHAPES: readonly Shape[] = [
  { rows: 1, cols: 1 },
  { rows: 7, cols: 7 },
  { rows: 33, cols: 33 },
  { rows: 100, cols: 257 },
  { rows: 257, cols: 100 },
  { rows: 1, cols: 257 },
  { rows: 33, cols: 7 },
  { rows: 7, cols: 64 },
  { rows: 100, cols: 100 },
];

const QUANTIZED = ["q8", "q4"] as const;

async function openCpu(backend: Backend): Promise<Runner> {
  const runner = await openRunner(backend);
  assert.ok(typeof runner !== "string", `${backend} runner unavailable: ${runner}`);
  return runner;
}

function variantsOf(backend: Backend): readonly Variant[] {
  const impl = backend === "js"
    ? gemv.impls.js
    : backend === "webgpu"
    ? gemv.impls.webgpu
    : gemv.impls.wasm;
  assert.ok(impl, `gemv has no ${backend} implementation`);
  return impl.variants;
}

async function runOnce(
  runner: Runner,
  shape: Shape,
  dtype: Dtype,
  variant: Variant,
  inputs: OpInputs,
): Promise<Float32Array> {
  const prepared = await runner.prepare(gemv, shape, dtype, variant, inputs, "end-to-end");
  try {
    return await prepared.output();
  } finally {
    prepared.dispose();
  }
}

/** Runs every variant on every shape; returns how many cases ran and were unsupported. */
async function checkEveryVariant(
  runner: Runner,
  dtype: Dtype,
): Promise<{ ran: number; unsupported: number }> {
  const counts = { ran: 0, unsupported: 0 };
  for (const variant of variantsOf(runner.backend)) {
    for (const [i, shape] of SHAPES.entries()) {
      const inputs = gemv.inputs(shape, dtype, seededRng(100 + i));
      let out: Float32Array;
      try {
        out = await runOnce(runner, shape, dtype, variant, inputs);
      } catch (e) {
        if (!(e instanceof UnsupportedError)) throw e;
        counts.unsupported++;
        continue;
      }
      const check = verifyOutput(
        out,
        gemv.reference(shape, dtype, inputs),
        gemv.tolerance(shape, dtype),
      );
      const where = `${runner.backend} ${dtype} ${variantId(variant)} ${shape.rows}x${shape.cols}`;
      assert.ok(check.ok, `${where}: ${check.message}`);
      counts.ran++;
    }
  }
  return counts;
}

/** With one scale doubled in what the kernel reads, verification against the true W must fail. */
async function assertCorruptScaleFails(runner: Runner, dtype: "q8" | "q4"): Promise<void> {
  const shape = { rows: 33, cols: 65 };
  const inputs = gemv.inputs(shape, dtype, seededRng(9));
  const ref = gemv.reference(shape, dtype, inputs);
  const tolerance = gemv.tolerance(shape, dtype);
  const scales = Float32Array.from(inputs.arrays[1]!);
  scales[7 * 3 + 1]! *= 2;
  const corrupted = { ...inputs, arrays: [inputs.arrays[0]!, scales, inputs.arrays[2]!] };
  const variant = variantsOf(runner.backend)[0]!;
  const good = await runOnce(runner, shape, dtype, variant, inputs);
  assert.ok(verifyOutput(good, ref, tolerance).ok, `${runner.backend} ${dtype} fails untouched`);
  const bad = await runOnce(runner, shape, dtype, variant, corrupted);
  const check = verifyOutput(bad, ref, tolerance);
  assert.equal(check.ok, false, `${runner.backend} ${dtype}: a doubled scale went unnoticed`);
  assert.equal(check.worstIndex, 7);
}

Deno.test("gemv.reference() dequantizes q8 by group and q4 low nibble first, row by row", () => {
  // 2 rows x 33 cols: two groups per row, the second a single column.
  const shape = { rows: 2, cols: 33 };
  const x = Float32Array.from({ length: 33 }, (_, c) => c + 1);
  const scales = new Float32Array([0.5, 2, 0.25, 4]);
  const q8 = new Int8Array(66).fill(1);
  q8[32] = -3; // row 0, group 1
  q8[33] = 5; // row 1, column 0
  const y8 = gemv.reference(shape, "q8", { arrays: [q8, scales, x], outputLength: 2 });
  assert.deepEqual([...y8], [0.5 * 528 + 2 * -3 * 33, 0.25 * (528 + 4) + 4 * 33]);

  // Each q4 row takes 17 bytes; the high nibble of byte 16 is unused and must be ignored.
  const q4 = new Uint8Array(34).fill(0x99); // every weight +1
  q4[0] = 0x7a; // row 0: column 0 = 10 - 8 = 2, column 1 = 7 - 8 = -1
  q4[16] = 0xf0; // row 0, column 32 = 0 - 8 = -8; high nibble unused
  q4[17] = 0x98; // row 1, column 0 = 0
  const y4 = gemv.reference(shape, "q4", { arrays: [q4, scales, x], outputLength: 2 });
  assert.deepEqual([
    ...y4,
  ], [0.5 * (528 + 1 * 1 - 2 * 2) + 2 * -8 * 33, 0.25 * (528 - 1) + 4 * 33]);
});

Deno.test("gemv.inputs() lays out q8 and q4 weights with one positive scale per group", () => {
  const shape = { rows: 3, cols: 65 };
  const q8 = gemv.inputs(shape, "q8", seededRng(1));
  const q4 = gemv.inputs(shape, "q4", seededRng(1));
  assert.ok(q8.arrays[0] instanceof Int8Array && q8.arrays[0].length === 195);
  assert.ok(q4.arrays[0] instanceof Uint8Array && q4.arrays[0].length === 3 * 33);
  for (const inputs of [q8, q4]) {
    assert.equal(inputs.arrays[1]!.length, 3 * 3);
    assert.ok([...inputs.arrays[1]!].every((s) => s > 0 && s < 0.02));
    assert.equal(inputs.arrays[2]!.length, 65);
    assert.equal(inputs.outputLength, 3);
  }
  assert.ok([...q8.arrays[0]!].every((q) => q !== 0 && q >= -127));
  assert.ok([...q4.arrays[0]!].every((b) => (b & 15) !== 8 && b >> 4 !== 8));
  assert.ok([...gemv.reference(shape, "q8", q8)].every((v) => Number.isFinite(v) && v !== 0));
});

Deno.test("gemv.bytes() counts weights and scales at storage size, plus x and y", () => {
  const shape = gemv.axis.shape(64);
  assert.deepEqual(shape, { rows: 64, cols: 64 });
  assert.equal(gemv.axis.size(shape), 64);
  assert.equal(gemv.flops(shape), 2 * 64 * 64);
  assert.equal(gemv.bytes(shape, "f32"), 4 * (64 * 64 + 128));
  assert.equal(gemv.bytes(shape, "f16"), 2 * (64 * 64 + 128));
  assert.equal(gemv.bytes(shape, "q8"), 64 * 64 + 4 * 64 * 2 + 4 * 128);
  assert.equal(gemv.bytes({ rows: 2, cols: 33 }, "q4"), 2 * 17 + 4 * 2 * 2 + 4 * 35);
  assert.throws(() => gemv.flops({ rows: 0, cols: 3 }), RangeError);
});

for (const backend of ["js", "wasm", "wasm-mt"] as const) {
  Deno.test(`gemv on ${backend} matches the reference in f32, q8 and q4 for every variant and shape`, async () => {
    const runner = await openCpu(backend);
    try {
      for (const dtype of ["f32", ...QUANTIZED] as const) {
        const { ran, unsupported } = await checkEveryVariant(runner, dtype);
        assert.equal(unsupported, 0, `${backend} ${dtype} refused a shape`);
        assert.equal(ran, SHAPES.length * variantsOf(backend).length);
      }
    } finally {
      await runner.close();
    }
  });

  Deno.test(`gemv on ${backend} reports f16 unsupported and catches a corrupted scale`, async () => {
    const runner = await openCpu(backend);
    try {
      const { ran } = await checkEveryVariant(runner, "f16");
      assert.equal(ran, 0);
      for (const dtype of QUANTIZED) await assertCorruptScaleFails(runner, dtype);
    } finally {
      await runner.close();
    }
  });
}

for (const dtype of ["f32", "f16", "q8", "q4"] as const) {
  const needsF16 = dtype === "f16" && !hasF16;
  Deno.test({
    name: `gemv on webgpu matches the reference in ${dtype} for every variant and shape${
      needsF16 ? " (skipped: no shader-f16)" : ""
    }`,
    ignore: !hasAdapter || needsF16,
    fn: () =>
      withWebGpuRunner(async (runner) => {
        const { ran, unsupported } = await checkEveryVariant(runner, dtype);
        assert.ok(ran > 0, `no ${dtype} case ran (${unsupported} unsupported)`);
        if (dtype === "q8" || dtype === "q4") await assertCorruptScaleFails(runner, dtype);
      }),
  });
}

Deno.test({
  name: "gemv's webgpu variants say why they cannot run a shape or dtype",
  fn: () => {
    const impl = gemv.impls.webgpu!;
    const v = { tpr: 64, rpw: 1, vec4: true };
    assert.match(impl.unsupported!({ rows: 4, cols: 7 }, "f32", v)!, /cols % 4 == 0/);
    assert.equal(impl.unsupported!({ rows: 4, cols: 7 }, "q4", { ...v, unpack: "bits" }), null);
    assert.match(impl.unsupported!({ rows: 4, cols: 8 }, "q8", { ...v, vec4: false })!, /u32/);
    assert.match(impl.unsupported!({ rows: 4, cols: 8 }, "f32", { ...v, acc: "f16" })!, /f16/);
    assert.throws(() => impl.program({ rows: 4, cols: 8 }, "f32", { tpr: 3, rpw: 1 }), RangeError);
  },
});

Deno.test("measure() verifies and times gemv q4 on wasm-mt", async () => {
  const r = await measure(
    { op: "gemv", shape: { rows: 257, cols: 255 }, dtype: "q4", backend: "wasm-mt" },
    { seed: 3, stopping: { budgetMs: 200 } },
  );
  assert.equal(r.state, "ok", JSON.stringify(r));
  if (r.state === "ok") assert.ok(r.gbps > 0 && r.maxRelError < 1e-5);
});

Deno.test({
  name: "measure() verifies and times gemv q8 on webgpu, device-resident",
  ignore: !hasAdapter,
  fn: async () => {
    const r = await measure(
      {
        op: "gemv",
        shape: { rows: 64, cols: 100 },
        dtype: "q8",
        backend: "webgpu",
        residency: "device-resident",
      },
      { seed: 4, stopping: { budgetMs: 200 } },
    );
    assert.equal(r.state, "ok", JSON.stringify(r));
  },
});
