import assert from "node:assert/strict";
import {
  chunkRanges,
  CHUNKS_PER_THREAD,
  chunksFor,
  createWasmMtRunner,
} from "../calibrate/runners/wasm_mt.ts";
import { getOp } from "../kernels/catalog.ts";
import { WorkerPool } from "../calibrate/runners/_wasm_pool.ts";
import { compileWat } from "../calibrate/runners/_wasm_module.ts";
import {
  claimChunk,
  controlBytes,
  MAX_CHUNKS,
  openRun,
} from "../calibrate/runners/_wasm_control.ts";

// run(out, start, end, value, gate): out[i] = value + i over [start, end). With `gate` non-zero it
// first waits up to 20 ms on the (always 0) word at `gate`, playing a worker that is slow to start
// its chunk; `value` < 0 traps after raising the flag at address 4.
const FILL_WAT = `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "run") (param $out i32) (param $start i32) (param $end i32) (param $value i32)
      (param $gate i32)
    (local $i i32)
    (if (i32.lt_s (local.get $value) (i32.const 0))
      (then (i32.atomic.store (i32.const 4) (i32.const 1))
            (memory.atomic.notify (i32.const 4) (i32.const 1)) drop
            unreachable))
    (if (local.get $gate)
      (then (drop (memory.atomic.wait32 (local.get $gate) (i32.const 0) (i64.const 20000000)))))
    (local.set $i (local.get $start))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
      (i32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
        (i32.add (local.get $value) (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))))`;

const OUT = 1024;
const GATE = 8;

interface Fixture {
  memory: WebAssembly.Memory;
  pool: WorkerPool;
  slot: number;
  words: Int32Array;
}

async function openFixture(chunks: number): Promise<Fixture> {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 16, shared: true });
  const pool = new WorkerPool(memory, 1, chunks);
  const { module } = await compileWat(FILL_WAT);
  const slot = await pool.load(module);
  return { memory, pool, slot, words: new Int32Array(memory.buffer) };
}

// The caller's share, written in JS so it never waits on the gate.
function fillOwn(words: Int32Array): (args: readonly number[]) => void {
  return ([out, start, end, value]) => {
    for (let i = start!; i < end!; i++) words[out! / 4 + i] = value! + i;
  };
}

function argsFor(parts: number, chunks: number, value: number, gate: number): number[][] {
  return chunkRanges(parts, chunks).map(([s, e]) => [OUT, s, e, value, gate]);
}

function assertFilled(words: Int32Array, parts: number, value: number): void {
  for (let i = 0; i < parts; i++) {
    assert.equal(words[OUT / 4 + i], value + i, `part ${i} of a run with value ${value}`);
  }
}

Deno.test("chunkRanges() covers [0, parts) exactly once in ordered, near-equal chunks", () => {
  for (let parts = 0; parts <= 130; parts++) {
    for (let chunks = 1; chunks <= 20; chunks++) {
      const ranges = chunkRanges(parts, chunks);
      assert.equal(ranges.length, Math.min(parts, chunks));
      let next = 0;
      for (const [start, end] of ranges) {
        assert.equal(start, next, `chunkRanges(${parts}, ${chunks}) leaves a gap or overlap`);
        assert.ok(end > start, `chunkRanges(${parts}, ${chunks}) has an empty chunk`);
        next = end;
      }
      assert.equal(next, parts);
      const sizes = ranges.map(([s, e]) => e - s);
      if (parts > 0) assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${sizes}`);
    }
  }
});

Deno.test("claimChunk() hands out each chunk of the open run once, then -1", () => {
  const control = new SharedArrayBuffer(controlBytes(1, 4));
  openRun(control, 5, 3);
  assert.deepEqual([0, 1, 2, 3].map(() => claimChunk(control, 5)), [0, 1, 2, -1]);
});

Deno.test("claimChunk() refuses a late claim for a run that is over, even once the next is open", () => {
  const control = new SharedArrayBuffer(controlBytes(1, 4));
  openRun(control, -1, 2);
  assert.equal(claimChunk(control, -1), 0);
  openRun(control, 0, 4);
  assert.equal(claimChunk(control, -1), -1);
  assert.equal(claimChunk(control, 0), 0);
});

Deno.test("openRun() rejects more chunks than a claim word can count", () => {
  const control = new SharedArrayBuffer(controlBytes(1, 1));
  assert.throws(() => openRun(control, 1, MAX_CHUNKS + 1), RangeError);
  assert.throws(() => controlBytes(1, MAX_CHUNKS + 1), RangeError);
});

Deno.test("WorkerPool.run() fills every part when the worker is slow to start its chunks", async () => {
  const { pool, slot, words } = await openFixture(8);
  try {
    for (const parts of [1, 2, 7, 100]) {
      pool.run(slot, argsFor(parts, 8, 1000 * parts, GATE), fillOwn(words));
      assertFilled(words, parts, 1000 * parts);
    }
  } finally {
    pool.close();
  }
});

Deno.test("WorkerPool.run() back to back never lets a chunk of one run write in another", async () => {
  const { pool, slot, words } = await openFixture(8);
  try {
    for (let run = 1; run <= 300; run++) {
      // Alternate the chunking too, so stale arguments would land on a different range.
      const chunks = run % 2 === 0 ? 8 : 3;
      pool.run(slot, argsFor(50, chunks, run * 100, 0), fillOwn(words));
      assertFilled(words, 50, run * 100);
    }
  } finally {
    pool.close();
  }
});

Deno.test("WorkerPool.run() reports a chunk that trapped on a worker", async () => {
  const { pool, slot, words } = await openFixture(8);
  try {
    // The caller holds its first chunk until a worker has started one (it raises the flag at
    // address 4 before trapping), so a worker surely claims a chunk.
    let waited = false;
    const own = (args: readonly number[]) => {
      if (!waited) {
        waited = true;
        Atomics.wait(words, 1, 0, 10_000);
      }
      fillOwn(words)(args);
    };
    assert.throws(
      () => pool.run(slot, argsFor(16, 8, -100, 0), own),
      (e: unknown) => e instanceof Error && /Worker 0 failed running the kernel/.test(e.message),
    );
    words[1] = 0;
    pool.run(slot, argsFor(16, 8, 7, 0), fillOwn(words));
    assertFilled(words, 16, 7);
  } finally {
    pool.close();
  }
});

Deno.test("WorkerPool.run() refuses more chunks than it was sized for", async () => {
  const { pool, slot, words } = await openFixture(2);
  try {
    assert.throws(() => pool.run(slot, argsFor(9, 3, 0, 0), fillOwn(words)), RangeError);
  } finally {
    pool.close();
  }
});

Deno.test("createWasmMtRunner() rejects a chunk count per thread of 0", () => {
  assert.throws(() => createWasmMtRunner({ threads: 2, chunksPerThread: 0 }), RangeError);
});

Deno.test("a kernel that packs an operand per call runs as one chunk per thread; others as several", () => {
  assert.equal(chunksFor(2, undefined, true), 2);
  assert.equal(chunksFor(2, undefined, false), 2 * CHUNKS_PER_THREAD);
  assert.equal(chunksFor(4, 3, true), 12, "a count the runner was given wins");
  const packs = (op: string) => getOp(op).impls.wasm?.packsPerCall === true;
  assert.equal(packs("matmul"), true, "matmul packs B for its rows on every call");
  assert.equal(packs("gemv") || packs("add") || packs("sum") || packs("softmax"), false);
});
