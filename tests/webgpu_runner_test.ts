import assert from "node:assert/strict";
import { type GpuHandle, openGpu } from "../calibrate/device.ts";
import { UnsupportedError } from "../calibrate/runner.ts";
import { withWatchdog } from "../calibrate/runners/_watchdog.ts";
import { SharedCopies } from "../calibrate/runners/_gpu_operands.ts";
import {
  createWebGpuRunner,
  MAX_ROTATION_COPIES,
  operandCopies,
  rotatedCopies,
  STREAMED_SPAN_BYTES,
} from "../calibrate/runners/webgpu.ts";
import { getOp } from "../kernels/catalog.ts";
import { seededRng } from "../kernels/_random.ts";
import { add, fma, mul } from "../kernels/elementwise/mod.ts";
import { matmul } from "../kernels/matmul/mod.ts";
import { type Dtype, type OpSpec, type Shape, variantId } from "../kernels/types.ts";

const adapter = await navigator.gpu?.requestAdapter();
const hasAdapter = adapter != null;
const hasF16 = adapter?.features.has("shader-f16") ?? false;

const MATMUL_SHAPES: readonly Shape[] = [
  { m: 1, k: 1, n: 1 },
  { m: 7, k: 7, n: 7 },
  { m: 1, k: 33, n: 7 },
  { m: 33, k: 7, n: 1 },
  { m: 64, k: 64, n: 64 },
  { m: 7, k: 257, n: 33 },
  { m: 33, k: 64, n: 257 },
  { m: 257, k: 33, n: 64 },
  { m: 64, k: 1, n: 36 },
];

const ELEMENTWISE_SHAPES: readonly Shape[] = [{ n: 1 }, { n: 7 }, { n: 1000 }, { n: 4099 }];

/** Largest error relative to the reference's largest magnitude, as `calibrate/verify.ts` judges. */
function relativeError(out: Float32Array, ref: Float64Array): number {
  assert.equal(out.length, ref.length);
  let err = 0;
  let scale = 0;
  for (let i = 0; i < ref.length; i++) {
    err = Math.max(err, Math.abs(out[i]! - ref[i]!));
    scale = Math.max(scale, Math.abs(ref[i]!));
  }
  return err / scale;
}

async function withGpu(fn: (gpu: GpuHandle) => Promise<void>): Promise<void> {
  const gpu = await openGpu();
  assert.ok(gpu, "an adapter was found at load time but openGpu() returned null");
  try {
    await fn(gpu);
  } finally {
    gpu.device.destroy();
  }
}

/** Checks every variant of `op` on every shape; returns how many cases ran and were skipped. */
async function checkEveryVariant(
  gpu: GpuHandle,
  op: OpSpec,
  dtype: Dtype,
  shapes: readonly Shape[],
): Promise<{ ran: number; unsupported: number }> {
  const runner = createWebGpuRunner(gpu);
  const counts = { ran: 0, unsupported: 0 };
  for (const shape of shapes) {
    const inputs = op.inputs(shape, dtype, seededRng(shape.n! * 31 + (shape.m ?? 0)));
    const ref = op.reference(shape, dtype, inputs);
    for (const variant of op.impls.webgpu!.variants) {
      const label = `${op.name} ${dtype} ${JSON.stringify(shape)} ${variantId(variant)}`;
      let prepared;
      try {
        prepared = await runner.prepare(op, shape, dtype, variant, inputs, "end-to-end");
      } catch (e) {
        if (!(e instanceof UnsupportedError)) throw e;
        counts.unsupported++;
        continue;
      }
      try {
        const err = relativeError(await prepared.output(), ref);
        assert.ok(err <= op.tolerance(shape, dtype), `${label}: relative error ${err}`);
        counts.ran++;
      } finally {
        prepared.dispose();
      }
    }
  }
  return counts;
}

for (const dtype of ["f32", "f16"] as const) {
  const missingF16 = dtype === "f16" && !hasF16;
  Deno.test({
    name: `every WebGPU matmul variant matches the reference in ${dtype} on ragged shapes${
      missingF16 ? " (skipped: adapter lacks shader-f16)" : ""
    }`,
    ignore: !hasAdapter || missingF16,
    fn: () =>
      withGpu(async (gpu) => {
        const { ran, unsupported } = await checkEveryVariant(gpu, matmul, dtype, MATMUL_SHAPES);
        // The six variants without vec4 take every shape; vec4 ones need n % 4 == 0.
        assert.ok(ran >= MATMUL_SHAPES.length * 6, `only ${ran} cases ran`);
        assert.ok(unsupported > 0);
      }),
  });

  for (const op of [add, mul, fma]) {
    Deno.test({
      name:
        `every WebGPU ${op.name} variant matches the reference in ${dtype} for n in 1, 7, 1000, 4099${
          missingF16 ? " (skipped: adapter lacks shader-f16)" : ""
        }`,
      ignore: !hasAdapter || missingF16,
      fn: () =>
        withGpu(async (gpu) => {
          const { ran, unsupported } = await checkEveryVariant(gpu, op, dtype, ELEMENTWISE_SHAPES);
          assert.equal(unsupported, 0);
          assert.equal(ran, ELEMENTWISE_SHAPES.length * op.impls.webgpu!.variants.length);
        }),
    });
  }
}

Deno.test("rotatedCopies() keeps small operand sets out of cache by copies or by span", () => {
  const byCount = { rotateBelowBytes: 32 * 2 ** 20, rotationCopies: 3, rotationSpanBytes: null };
  assert.equal(rotatedCopies(160e3, byCount), 3);
  assert.equal(rotatedCopies(64 * 2 ** 20, byCount), 1);
  // A span: as many copies as put that many bytes between two uses of one, never fewer than one
  // and at most MAX_ROTATION_COPIES.
  const span = { ...byCount, rotationSpanBytes: 10e6 };
  assert.equal(rotatedCopies(160e3, span), 63);
  assert.equal(rotatedCopies(64 * 2 ** 20, span), 1);
  assert.equal(rotatedCopies(16, span), MAX_ROTATION_COPIES);
});

Deno.test({
  name: "an elementwise dispatch wider than 65535 workgroups folds into y and covers every element",
  ignore: !hasAdapter,
  fn: () =>
    withGpu(async (gpu) => {
      const shape = { n: 65535 * 64 + 7 };
      const variant = { wg: 64, ept: 1 };
      const program = add.impls.webgpu!.program(shape, "f32", variant);
      assert.deepEqual(program.workgroups, [65535, 2, 1]);
      const inputs = add.inputs(shape, "f32", seededRng(5));
      const runner = createWebGpuRunner(gpu, { rotationCopies: 1 });
      const prepared = await runner.prepare(add, shape, "f32", variant, inputs, "end-to-end");
      try {
        const err = relativeError(await prepared.output(), add.reference(shape, "f32", inputs));
        assert.ok(err <= add.tolerance(shape, "f32"), `relative error ${err}`);
      } finally {
        prepared.dispose();
      }
    }),
});

Deno.test({
  name: "time() returns positive wall and GPU times in both residencies",
  ignore: !hasAdapter,
  fn: () =>
    withGpu(async (gpu) => {
      const runner = createWebGpuRunner(gpu);
      const timestamps = gpu.device.features.has("timestamp-query");
      const cases = [
        { op: matmul, shape: { m: 33, k: 64, n: 36 } },
        { op: add, shape: { n: 4099 } },
      ];
      for (const { op, shape } of cases) {
        const inputs = op.inputs(shape, "f32", seededRng(9));
        for (const residency of ["end-to-end", "device-resident"] as const) {
          const variant = op.impls.webgpu!.variants[0]!;
          const prepared = await runner.prepare(op, shape, "f32", variant, inputs, residency);
          try {
            assert.ok(prepared.compileMs > 0);
            const timing = await prepared.time(3);
            assert.ok(timing.wallMs > 0, `${op.name} ${residency} wall ${timing.wallMs}`);
            if (timestamps) {
              assert.ok(
                timing.gpuMs !== undefined && timing.gpuMs > 0,
                `${op.name} ${residency} gpu`,
              );
            }
            // Verification after timing still sees the right answer, from every operand copy.
            const ref = op.reference(shape, "f32", inputs);
            for (let i = 0; i < 3; i++) {
              assert.ok(relativeError(await prepared.output(), ref) <= op.tolerance(shape, "f32"));
            }
            await assert.rejects(() => prepared.time(0), RangeError);
            if (residency === "device-resident" && op === add && timestamps) {
              // Past 2048 runs the begin/end pairs spill into a second query set.
              const many = await prepared.time(2100);
              assert.ok(many.gpuMs !== undefined && many.gpuMs > 0 && many.wallMs > 0);
            }
          } finally {
            prepared.dispose();
          }
        }
      }
    }),
});

Deno.test({
  name: "prepare() throws UnsupportedError for variants that do not fit the shape or dtype",
  ignore: !hasAdapter,
  fn: () =>
    withGpu(async (gpu) => {
      const runner = createWebGpuRunner(gpu);
      const vec4 = { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: true, kt: 0 };
      const shape = { m: 7, k: 7, n: 7 };
      const inputs = matmul.inputs(shape, "f32", seededRng(1));
      await assert.rejects(
        () => runner.prepare(matmul, shape, "f32", vec4, inputs, "end-to-end"),
        UnsupportedError,
      );
      const square = { m: 8, k: 8, n: 8 };
      await assert.rejects(
        () =>
          runner.prepare(
            matmul,
            square,
            "f32",
            { ...vec4, acc: "f16" },
            matmul.inputs(square, "f32", seededRng(1)),
            "end-to-end",
          ),
        UnsupportedError,
      );
    }),
});

Deno.test({
  name: "prepare() throws UnsupportedError past the adapter's buffer and dispatch limits",
  ignore: !hasAdapter,
  fn: () =>
    withGpu(async (gpu) => {
      const runner = createWebGpuRunner(gpu);
      const variant = { algo: "naive", wg: 8 };
      const tiny = { arrays: [new Float32Array(4), new Float32Array(4)], outputLength: 4 };
      // Checked before any buffer exists, so nothing this large is ever allocated.
      const huge = { n: 2 ** 30 };
      await assert.rejects(
        () =>
          runner.prepare(
            add,
            huge,
            "f32",
            { wg: 64, ept: 1 },
            { ...tiny, outputLength: 2 ** 30 },
            "end-to-end",
          ),
        (e) => e instanceof UnsupportedError && /storage binding/.test(e.message),
      );
      const tall = { m: 8 * (gpu.device.limits.maxComputeWorkgroupsPerDimension + 1), k: 1, n: 1 };
      await assert.rejects(
        () => runner.prepare(matmul, tall, "f32", variant, tiny, "end-to-end"),
        (e) => e instanceof UnsupportedError && /maxComputeWorkgroupsPerDimension/.test(e.message),
      );
    }),
});

Deno.test("prepare() throws UnsupportedError when the device lacks a dtype's feature", async () => {
  // A stand-in device without shader-f16: the feature check comes before any GPU call.
  const gpu = {
    loss: null,
    device: { features: new Set<string>(), limits: {} },
  } as unknown as GpuHandle;
  const runner = createWebGpuRunner(gpu);
  const shape = { m: 4, k: 4, n: 4 };
  await assert.rejects(
    () =>
      runner.prepare(
        matmul,
        shape,
        "f16",
        matmul.impls.webgpu!.variants[0]!,
        matmul.inputs(shape, "f16", seededRng(1)),
        "end-to-end",
      ),
    (e) => e instanceof UnsupportedError && /shader-f16/.test(e.message),
  );
});

Deno.test({
  name: "prepare() refuses a lost device and says to reopen it",
  ignore: !hasAdapter,
  fn: async () => {
    const gpu = await openGpu();
    assert.ok(gpu);
    gpu.device.destroy();
    await gpu.lost;
    const runner = createWebGpuRunner(gpu);
    const shape = { n: 8 };
    await assert.rejects(
      () =>
        runner.prepare(
          add,
          shape,
          "f32",
          { wg: 64, ept: 1 },
          add.inputs(shape, "f32", seededRng(1)),
          "end-to-end",
        ),
      /reopen/,
    );
  },
});

Deno.test({
  name: "device-resident variants on the same streamed operands share one set of copies",
  ignore: !hasAdapter,
  fn: () =>
    withGpu((gpu) => {
      const shared = new SharedCopies(gpu.device);
      const inputs = add.inputs({ n: 64 }, "f32", seededRng(2));
      const make = (r: Parameters<Parameters<SharedCopies["acquire"]>[2]>[0]) =>
        [0, 1, 2].map(() => [r.buffer(256, GPUBufferUsage.STORAGE)]);
      const first = shared.acquire(inputs, 3, make);
      const second = shared.acquire(inputs, 3, make);
      assert.ok(first.fresh && !second.fresh);
      assert.equal(second.sets, first.sets);
      assert.ok(shared.acquire(add.inputs({ n: 64 }, "f32", seededRng(3)), 3, make).fresh);
      first.release();
      first.release(); // twice counts once
      const third = shared.acquire(inputs, 3, make);
      assert.ok(!third.fresh, "a holder is left: the copies stay");
      second.release();
      third.release();
      assert.ok(
        shared.acquire(inputs, 3, make).fresh,
        "the last holder gone, copies are made anew",
      );
      return Promise.resolve();
    }),
});

Deno.test({
  name: "device-resident variants sharing streamed copies stay right after each other's dispose",
  ignore: !hasAdapter,
  fn: () =>
    withGpu(async (gpu) => {
      const runner = createWebGpuRunner(gpu);
      const shape = { n: 400_000 }; // 4.8 MB a run: streamed
      const inputs = add.inputs(shape, "f32", seededRng(4));
      const reference = add.reference(shape, "f32", inputs);
      const prepare = (variant: { wg: number; ept: number }) =>
        runner.prepare(add, shape, "f32", variant, inputs, "device-resident");
      const check = async (p: Awaited<ReturnType<typeof prepare>>) => {
        const err = relativeError(await p.output(), reference);
        assert.ok(err <= add.tolerance(shape, "f32"), `relative error ${err}`);
      };
      const first = await prepare({ wg: 64, ept: 1 });
      const second = await prepare({ wg: 256, ept: 4 });
      first.dispose();
      await second.time(3);
      await check(second);
      second.dispose();
      const third = await prepare({ wg: 64, ept: 4 });
      await check(third);
      third.dispose();
      await runner.close();
    }),
});

Deno.test("withWatchdog() rejects a synchronisation that never finishes", async () => {
  const never = new Promise<never>(() => {});
  await assert.rejects(
    () => withWatchdog(never, 10, "a test sync"),
    /did not finish a test sync within 0\.01 s/,
  );
  assert.equal(await withWatchdog(Promise.resolve(7), 1000, "a quick sync"), 7);
});

Deno.test("an op that streams its operands (gemv) is timed with copies spanning more than a last-level cache", () => {
  const settings = { rotateBelowBytes: 32 * 2 ** 20, rotationCopies: 3, rotationSpanBytes: null };
  const weights = 512 * 512 * 4;
  assert.equal(operandCopies(getOp("add"), weights, settings), 3);
  assert.ok(operandCopies(getOp("gemv"), weights, settings) * weights >= STREAMED_SPAN_BYTES);
  assert.equal(
    operandCopies(getOp("gemv"), weights, { ...settings, rotationSpanBytes: 4 * weights }),
    4,
    "a runner's own span wins",
  );
  // Device-resident runs moving 4 MiB or more span 256 MiB, any op; smaller ones keep the rule.
  const large = 60e6;
  assert.ok(operandCopies(getOp("add"), large, settings, true) * large >= 256 * 2 ** 20);
  assert.equal(operandCopies(getOp("add"), large, settings, false), 1);
});
