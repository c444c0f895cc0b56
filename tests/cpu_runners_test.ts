import assert from "node:assert/strict";
import { seededRng } from "../kernels/_random.ts";
import { add, fma, mul } from "../kernels/elementwise/mod.ts";
import { matmul } from "../kernels/matmul/mod.ts";
import type { OpSpec, Shape, Variant } from "../kernels/types.ts";
import { variantId } from "../kernels/types.ts";
import { type Runner, UnsupportedError } from "../calibrate/runner.ts";
import { createJsRunner } from "../calibrate/runners/js.ts";
import { createWasmRunner } from "../calibrate/runners/wasm.ts";
import { createWasmMtRunner } from "../calibrate/runners/wasm_mt.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { rotation, rotationCopies } from "../calibrate/runners/_cpu.ts";

const DIMS = [1, 7, 33, 64, 129];

// Every dim value meets every other on each axis pair (a Latin square), plus shapes that cross
// the wasm kernel's k-block (256) and n-block (512) boundaries, and its column blocks below a
// micro-tile's rows.
const MATMUL_SHAPES: Shape[] = [
  ...DIMS.flatMap((m, i) => DIMS.map((k, j) => ({ m, k, n: DIMS[(i + j) % DIMS.length]! }))),
  { m: 129, k: 129, n: 129 },
  { m: 13, k: 517, n: 1031 },
  { m: 70, k: 300, n: 515 },
  // Fewer rows than a micro-tile: columns split across wasm-mt's threads in blocks of 64.
  { m: 1, k: 70, n: 700 },
  { m: 5, k: 33, n: 517 },
  // Rows of C not whole cache lines, and more columns than the unpacked path sums at a time.
  { m: 3, k: 50, n: 300 },
  { m: 5, k: 3, n: 60001 },
];

const ELEMENTWISE_SHAPES: Shape[] = [{ n: 1 }, { n: 7 }, { n: 1000 }, { n: 100003 }];

const RUNNERS: { name: string; open: () => Runner }[] = [
  { name: "js", open: createJsRunner },
  { name: "wasm", open: createWasmRunner },
  { name: "wasm-mt", open: () => createWasmMtRunner({ threads: 2 }) },
];

function variantsOf(op: OpSpec, backend: string): readonly Variant[] {
  const impl = backend === "js" ? op.impls.js : op.impls.wasm;
  assert.ok(impl, `${op.name} has a ${backend} implementation`);
  return impl.variants;
}

async function checkAll(runner: Runner, op: OpSpec, shapes: Shape[]): Promise<void> {
  for (const variant of variantsOf(op, runner.backend)) {
    for (const [s, shape] of shapes.entries()) {
      const inputs = op.inputs(shape, "f32", seededRng(s + 1));
      const prepared = await runner.prepare(op, shape, "f32", variant, inputs, "end-to-end");
      try {
        const out = await prepared.output();
        const v = verifyOutput(out, op.reference(shape, "f32", inputs), op.tolerance(shape, "f32"));
        assert.ok(
          v.ok,
          `${op.name} ${runner.backend} ${variantId(variant)} ${
            JSON.stringify(shape)
          }: ${v.message}`,
        );
      } finally {
        prepared.dispose();
      }
    }
  }
}

for (const { name, open } of RUNNERS) {
  Deno.test(`${name} runner computes matmul right for every variant and odd shapes`, async () => {
    const runner = open();
    try {
      await checkAll(runner, matmul, MATMUL_SHAPES);
    } finally {
      await runner.close();
    }
  });

  Deno.test(`${name} runner computes add, mul and fma right for every variant`, async () => {
    const runner = open();
    try {
      for (const op of [add, mul, fma]) await checkAll(runner, op, ELEMENTWISE_SHAPES);
    } finally {
      await runner.close();
    }
  });

  Deno.test(`${name} runner times a batch with a positive wall time`, async () => {
    const runner = open();
    try {
      for (const [op, shape] of [[matmul, { m: 33, k: 64, n: 40 }], [add, { n: 40000 }]] as const) {
        const inputs = op.inputs(shape, "f32", seededRng(9));
        const variant = variantsOf(op, name)[0]!;
        const prepared = await runner.prepare(op, shape, "f32", variant, inputs, "end-to-end");
        const t = await prepared.time(5);
        assert.ok(t.wallMs > 0 && Number.isFinite(t.wallMs), `wallMs is ${t.wallMs}`);
        assert.ok(prepared.compileMs >= 0);
        prepared.dispose();
        prepared.dispose();
      }
    } finally {
      await runner.close();
    }
  });

  Deno.test(`${name} runner rejects f16 as unsupported`, async () => {
    const runner = open();
    try {
      const shape = { n: 8 };
      const inputs = add.inputs(shape, "f16", seededRng(3));
      await assert.rejects(
        runner.prepare(add, shape, "f16", variantsOf(add, name)[0]!, inputs, "end-to-end"),
        (e: unknown) => e instanceof UnsupportedError && /WebGPU only/.test(e.message),
      );
    } finally {
      await runner.close();
    }
  });
}

Deno.test("wasm runner reports a near-zero compile time for a kernel it already has", async () => {
  const runner = createWasmRunner();
  try {
    const shape = { n: 64 };
    const inputs = add.inputs(shape, "f32", seededRng(5));
    const variant = { unroll: 4 };
    const first = await runner.prepare(add, shape, "f32", variant, inputs, "end-to-end");
    first.dispose();
    const second = await runner.prepare(add, shape, "f32", variant, inputs, "end-to-end");
    second.dispose();
    // Another test of this process may have compiled the module already, so the first prepare
    // can be as near zero as the second: two sub-millisecond readings are noise to each other.
    assert.ok(
      second.compileMs <= Math.max(first.compileMs, 1),
      `${second.compileMs} > ${first.compileMs}`,
    );
  } finally {
    await runner.close();
  }
});

Deno.test("wasm-mt runner keeps two prepared kernels apart in its shared memory", async () => {
  const runner = createWasmMtRunner({ threads: 2 });
  try {
    const sa = { n: 50000 }, sm = { m: 40, k: 20, n: 30 };
    const ia = add.inputs(sa, "f32", seededRng(1)), im = matmul.inputs(sm, "f32", seededRng(2));
    const pa = await runner.prepare(add, sa, "f32", { unroll: 4 }, ia, "end-to-end");
    const pm = await runner.prepare(
      matmul,
      sm,
      "f32",
      matmul.impls.wasm!.variants[0]!,
      im,
      "end-to-end",
    );
    for (const [p, op, s, i] of [[pa, add, sa, ia], [pm, matmul, sm, im]] as const) {
      const v = verifyOutput(await p.output(), op.reference(s, "f32", i), op.tolerance(s, "f32"));
      assert.ok(v.ok, v.message);
    }
    pa.dispose();
    pm.dispose();
  } finally {
    await runner.close();
  }
});

Deno.test("variants prepared on the same streamed operands share their copies and outlive each other's dispose", async () => {
  const runner = createWasmRunner();
  try {
    const shape = { n: 600_000 }; // 7.2 MB a run: streamed
    const inputs = add.inputs(shape, "f32", seededRng(3));
    const reference = add.reference(shape, "f32", inputs);
    const prepare = (unroll: number) =>
      runner.prepare(add, shape, "f32", { unroll }, inputs, "end-to-end");
    const check = async (p: Awaited<ReturnType<typeof prepare>>) => {
      const v = verifyOutput(await p.output(), reference, add.tolerance(shape, "f32"));
      assert.ok(v.ok, v.message);
    };
    const first = await prepare(1);
    const second = await prepare(4);
    first.dispose();
    await second.time(3);
    await check(second);
    second.dispose();
    const third = await prepare(4);
    await check(third);
    third.dispose();
  } finally {
    await runner.close();
  }
});

Deno.test("wasm-mt runner refuses a prepared kernel after dispose", async () => {
  const runner = createWasmMtRunner({ threads: 2 });
  try {
    const shape = { n: 10 };
    const prepared = await runner.prepare(
      add,
      shape,
      "f32",
      { unroll: 1 },
      add.inputs(shape, "f32", seededRng(1)),
      "end-to-end",
    );
    prepared.dispose();
    await assert.rejects(prepared.output(), TypeError);
  } finally {
    await runner.close();
  }
});

Deno.test("createWasmMtRunner() rejects a thread count of 0", () => {
  assert.throws(() => createWasmMtRunner({ threads: 0 }), RangeError);
});

Deno.test("a CPU run moving under 4 MiB rotates through two copies; from 4 MiB up a copy returns only after 128 MiB of others", () => {
  const MiB = 2 ** 20;
  for (const bytes of [1024, MiB, 3.99 * MiB]) assert.equal(rotationCopies(bytes, bytes), 2);
  // The reuse distance: the other copies read between two reads of one copy.
  const reuse = (bytes: number) => (rotationCopies(bytes, bytes) - 1) * bytes;
  for (let bytes = 4 * MiB; bytes < 256 * MiB; bytes *= 1.07) {
    assert.ok(reuse(bytes) >= 128 * MiB, `${(bytes / MiB).toFixed(1)} MiB`);
    assert.ok(bytes * rotationCopies(bytes, bytes) < 520 * MiB, `${(bytes / MiB).toFixed(1)} MiB`);
  }
  // An operand set beyond the span is its own: one copy.
  assert.equal(rotationCopies(300 * MiB, 300 * MiB), 1);
  // What decides is the bytes the run moves (the models' axis), not the operands alone.
  assert.equal(rotationCopies(5 * MiB, 3 * MiB), Math.ceil(256 / 3));
});

Deno.test("rotation() carries on across batches, so a sample never starts on the copy just read", () => {
  const copies = rotation(3);
  const warmUp = [copies.next(), copies.next()];
  const batch = [copies.next(), copies.next(), copies.next()];
  assert.deepEqual(warmUp, [0, 1]);
  assert.deepEqual(batch, [2, 0, 1]);
  copies.back(4);
  assert.deepEqual(
    [copies.next(), copies.next()],
    [1, 2],
    "back(4) goes round: the last four read 1, 2, 0, 1",
  );
});

Deno.test("warm() reads the copies the next batch reads when they stay in cache, other copies when they stream", async () => {
  const read: unknown[] = [];
  const js = add.impls.js!;
  const spy: OpSpec = {
    ...add,
    impls: {
      js: {
        ...js,
        run: (arrays, out, shape, v) => (read.push(arrays[0]), js.run(arrays, out, shape, v)),
      },
    },
  };
  const runner = createJsRunner();
  try {
    for (const [n, cached] of [[50_000, true], [600_000, false]] as const) {
      const shape = { n }; // 0.6 MB a run: held in cache; 7.2 MB: streamed
      const variant = js.variants[0]!;
      const prepared = await runner.prepare(
        spy,
        shape,
        "f32",
        variant,
        add.inputs(shape, "f32", seededRng(9)),
        "end-to-end",
      );
      await prepared.time(1);
      read.length = 0;
      await prepared.warm!(2);
      const warmed = read.splice(0);
      await prepared.time(2);
      const timed = read.splice(0);
      assert.equal(warmed.length, 2);
      assert.equal(warmed.every((a, i) => a === timed[i]), cached, `n = ${n}`);
      prepared.dispose();
    }
  } finally {
    await runner.close();
  }
});
