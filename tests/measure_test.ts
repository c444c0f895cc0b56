import assert from "node:assert/strict";
import {
  isOverdue,
  measure,
  measureMany,
  operandBatches,
  pooledResult,
  remeasureUnsure,
  type RunnerSource,
  type WindowSamples,
  windowsDisagree,
} from "../calibrate/measure.ts";
import type { Prepared, Runner } from "../calibrate/runner.ts";
import { DEFAULT_STOPPING, type StoppingRule } from "../core/stats.ts";
import type { Backend, OpInputs, OpSpec, Shape } from "../kernels/types.ts";

/** A runner whose kernel computes the reference and then perturbs it with `corrupt`. */
function fakeRunner(corrupt: (out: Float32Array) => void, log: string[]): Runner {
  return {
    backend: "js",
    prepare(op: OpSpec, shape: Shape, dtype, _variant, inputs: OpInputs): Promise<Prepared> {
      return Promise.resolve({
        compileMs: 0,
        output() {
          log.push("output");
          const out = Float32Array.from(op.reference(shape, dtype, inputs));
          corrupt(out);
          return Promise.resolve(out);
        },
        time(reps: number) {
          log.push("time");
          return Promise.resolve({ wallMs: 0.5 * reps * (0.95 + 0.1 * Math.random()) });
        },
        dispose() {
          log.push("dispose");
        },
      });
    },
    close: () => Promise.resolve(),
  };
}

const only = (runner: Runner): RunnerSource => () => Promise.resolve(runner);
const quick = { stopping: { budgetMs: 50, minSamples: 5 } };

Deno.test("measure() reports a kernel with a wrong answer as failed and never times it", async () => {
  const log: string[] = [];
  const runner = fakeRunner((out) => out[out.length - 1]! += 1, log);
  const r = await measure(
    { op: "add", shape: { n: 1000 }, dtype: "f32", backend: "js" },
    { runners: only(runner), ...quick },
  );
  assert.equal(r.state, "failed");
  if (r.state !== "failed") return;
  assert.match(r.error, /element 999/);
  assert.ok((r.maxRelError ?? 0) > 1e-3);
  assert.ok(!log.includes("time"), "a wrong kernel is never timed");
  assert.ok(log.includes("dispose"));
});

Deno.test("measure() times a right kernel and summarises its samples", async () => {
  const log: string[] = [];
  const r = await measure(
    { op: "add", shape: { n: 1000 }, dtype: "f32", backend: "js" },
    { runners: only(fakeRunner(() => {}, log)), ...quick },
  );
  assert.equal(r.state, "ok");
  if (r.state !== "ok") return;
  assert.ok(r.wall.n >= 5);
  assert.ok(Math.abs(r.wall.median - 0.5) < 0.05);
  assert.equal(r.flops, 1000);
  assert.equal(r.bytes, 12000);
  assert.ok(r.gbps > 0);
});

Deno.test("measure() says why a backend is unavailable instead of failing", async () => {
  const r = await measure(
    { op: "matmul", shape: { m: 8, k: 8, n: 8 }, dtype: "f32", backend: "webgpu" },
    { runners: () => Promise.resolve("No WebGPU adapter on this machine") },
  );
  assert.equal(r.state, "unsupported");
  if (r.state === "unsupported") assert.match(r.reason, /No WebGPU adapter/);
});

Deno.test("measure() refuses a dtype the op does not support and an unknown variant", async () => {
  const r = await measure(
    { op: "add", shape: { n: 8 }, dtype: "q4", backend: "js" },
    { runners: only(fakeRunner(() => {}, [])) },
  );
  assert.equal(r.state, "unsupported");
  await assert.rejects(
    () => measure({ op: "add", shape: { n: 8 }, dtype: "f32", backend: "js", variant: "tile=99" }),
    /Unknown variant "tile=99"/,
  );
  await assert.rejects(
    () => measure({ op: "conv", shape: { n: 8 }, dtype: "f32", backend: "js" }),
    /Unknown op "conv"/,
  );
});

Deno.test("measureMany() interleaves the samples of the cases it compares", async () => {
  const order: string[] = [];
  const tagged = (tag: string): Runner => {
    const inner = fakeRunner(() => {}, []);
    return {
      ...inner,
      async prepare(...args) {
        const p = await inner.prepare(...args);
        return { ...p, time: (reps: number) => (order.push(tag), p.time(reps)) };
      },
    };
  };
  const runners: RunnerSource = (b) => Promise.resolve(tagged(b));
  await measureMany([
    { op: "add", shape: { n: 64 }, dtype: "f32", backend: "js" },
    { op: "add", shape: { n: 64 }, dtype: "f32", backend: "wasm" },
  ], { runners, ...quick });
  const firstWasm = order.indexOf("wasm");
  const lastJs = order.lastIndexOf("js");
  assert.ok(firstWasm >= 0 && firstWasm < lastJs, `samples alternate: ${order.join(",")}`);
});

Deno.test("measureMany() sizes a batch from warm runs when the first run was cold", async () => {
  // The first run after a pause is 100× a warm one, as a wasm-mt run that wakes its workers.
  const batches: number[] = [];
  let calls = 0;
  const cold: Runner = {
    ...fakeRunner(() => {}, []),
    prepare: async (...args: Parameters<Runner["prepare"]>) => {
      const p = await fakeRunner(() => {}, []).prepare(...args);
      return {
        ...p,
        time: (reps) => {
          batches.push(reps);
          return Promise.resolve({ wallMs: (calls++ === 0 ? 1 : 0) + 0.01 * reps });
        },
      };
    },
  };
  const [r] = await measureMany(
    [{ op: "add", shape: { n: 64 }, dtype: "f32", backend: "wasm-mt" }],
    { runners: only(cold), ...quick },
  );
  assert.ok(r?.state === "ok");
  assert.equal(batches[0], 1, "one run first");
  // Sized from the cold run alone, every batch would be 2 runs (0.02 ms, a tenth of the target).
  assert.ok(batches.at(-1)! >= 100, `timed batches: ${batches.join(",")}`);
  assert.ok(Math.abs(r.wall.median / 0.01 - 1) < 0.01, `median ${r.wall.median}`);
});

/**
 * Cases sharing one cache: a case's first run after another case ran costs `coldMs` more, as wasm
 * gemv q8 1024 × 3000 did interleaved with WebGPU (×2–2.7 for its first two runs). `log` records
 * each batch as `backend:reps`.
 */
function sharedCacheRunners(runMs: number, coldMs: number, log: string[]): RunnerSource {
  let lastToRun = "";
  const runner = (backend: Backend): Runner => ({
    ...fakeRunner(() => {}, []),
    backend,
    prepare: async (...args: Parameters<Runner["prepare"]>) => {
      const p = await fakeRunner(() => {}, []).prepare(...args);
      return {
        ...p,
        time: (reps) => {
          log.push(`${backend}:${reps}`);
          const cold = lastToRun !== backend;
          lastToRun = backend;
          return Promise.resolve({ wallMs: runMs * reps + (cold ? coldMs : 0) });
        },
      };
    },
  });
  return (b) => Promise.resolve(runner(b));
}

Deno.test("measureMany() starts every CPU sample warm when other cases ran in between", async () => {
  const [wasm, js] = await measureMany([
    { op: "add", shape: { n: 64 }, dtype: "f32", backend: "wasm" },
    { op: "add", shape: { n: 64 }, dtype: "f32", backend: "js" },
  ], { runners: sharedCacheRunners(0.5, 2, []), ...quick });
  // Without the untimed pass, every interleaved sample of 4 runs carried the cold 2 ms: 1 ms a run.
  for (const r of [wasm, js]) {
    assert.ok(r?.state === "ok");
    assert.ok(Math.abs(r.wall.median / 0.5 - 1) < 0.01, `${r.backend} median ${r.wall.median}`);
  }
});

Deno.test("measureMany() gives a CPU run of 20 ms or more no untimed pass before its samples", async () => {
  const log: string[] = [];
  await measureMany([
    { op: "add", shape: { n: 64 }, dtype: "f32", backend: "wasm" },
    { op: "add", shape: { n: 64 }, dtype: "f32", backend: "js" },
  ], { runners: sharedCacheRunners(25, 0, log), stopping: { budgetMs: 200, minSamples: 3 } });
  // Warm-up: one run each; then one batch of one run per sample, alternating.
  const sampled = log.slice(2);
  assert.ok(sampled.length >= 6, log.join(","));
  assert.deepEqual(sampled.slice(0, 4), ["wasm:1", "js:1", "wasm:1", "js:1"], log.join(","));
});

Deno.test("remeasureUnsure() repeats only unsure CPU results and returns the surer repeats", async () => {
  const log: string[] = [];
  const runner = fakeRunner(() => {}, log);
  const asked: string[] = [];
  const source: RunnerSource = (b) => {
    asked.push(b);
    return Promise.resolve(runner);
  };
  const id = {
    op: "add",
    shape: { n: 1000 },
    dtype: "f32" as const,
    variant: "default",
    residency: "end-to-end" as const,
  };
  const repeats = await remeasureUnsure([
    { ...id, backend: "js", state: "ok", wall: { relCi: 0.5 } },
    { ...id, backend: "js", state: "ok", wall: { relCi: 0.02 } },
    { ...id, backend: "webgpu", state: "ok", wall: { relCi: 0.5 } },
    { ...id, backend: "js", state: "failed" },
  ], { runners: source, ...quick });
  assert.equal(repeats.length, 4);
  // The fake kernel's samples spread ±5 %: its median is surer than ±50 %, so the repeat is kept.
  assert.equal(repeats[0]?.state, "ok");
  assert.ok(repeats[0]!.wall.relCi < 0.5);
  assert.deepEqual(repeats.slice(1), [undefined, undefined, undefined]);
  assert.deepEqual(asked, ["js"], "the sure, the WebGPU and the failed results are not repeated");
});

Deno.test("remeasureUnsure() keeps the first result when the repeat is no surer", async () => {
  const repeats = await remeasureUnsure(
    [{
      op: "add",
      shape: { n: 1000 },
      dtype: "f32",
      backend: "js",
      variant: "default",
      residency: "end-to-end",
      state: "ok",
      wall: { relCi: 0.11 },
    }],
    {
      // Batches take 1×, 1×, 3×, 3×, …: whichever of them are timed, half are slow, so the
      // median is no surer than the first one's ±11 %.
      runners: only({
        ...fakeRunner(() => {}, []),
        prepare: async (...args: Parameters<Runner["prepare"]>) => {
          const p = await fakeRunner(() => {}, []).prepare(...args);
          let i = 0;
          return {
            ...p,
            time: (reps) => Promise.resolve({ wallMs: reps * (Math.floor(i++ / 2) % 2 ? 3 : 1) }),
          };
        },
      }),
      ...quick,
    },
  );
  assert.deepEqual(repeats, [undefined]);
});

Deno.test("measureMany() hands the samples behind every ok result to onSamples", async () => {
  const seen: { n: number; samples: WindowSamples }[] = [];
  const [r] = await measureMany(
    [{ op: "add", shape: { n: 64 }, dtype: "f32", backend: "js" }],
    {
      runners: only(fakeRunner(() => {}, [])),
      ...quick,
      onSamples: (result, samples) => seen.push({ n: result.wall.n, samples }),
    },
  );
  assert.equal(r!.state, "ok");
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.samples.wall.length, seen[0]!.n);
  assert.deepEqual(seen[0]!.samples.gpu, [], "no timestamps, no GPU samples");
});

Deno.test("pooledResult() pools the windows of a case and rederives its rates", async () => {
  const windows: WindowSamples[] = [];
  const req = { op: "add", shape: { n: 64 }, dtype: "f32", backend: "js" } as const;
  const options = { runners: only(fakeRunner(() => {}, [])), ...quick };
  const [first] = await measureMany([req], { ...options, onSamples: (_, w) => windows.push(w) });
  assert.ok(first?.state === "ok");
  // A second window twice as slow.
  windows.push({ wall: windows[0]!.wall.map((x) => 2 * x), gpu: [] });
  const pooled = pooledResult(first, windows);
  assert.ok(Math.abs(pooled.wall.median / first.wall.median - 1.5) < 0.05);
  assert.equal(pooled.wall.n, 2 * first.wall.n);
  assert.ok(pooled.wall.relCi > 0.3, "as unsure as the windows disagree");
  assert.equal(pooled.noisy, true);
  assert.ok(Math.abs(pooled.gflops * pooled.wall.median - first.gflops * first.wall.median) < 1e-9);
  assert.equal(pooled.gpu, undefined);
});

Deno.test("windowsDisagree() asks for another window only when window medians differ by > 10 %", () => {
  const w = (...wall: number[]): WindowSamples => ({ wall, gpu: [] });
  assert.equal(windowsDisagree([w(1, 1, 1)]), false);
  assert.equal(windowsDisagree([w(1, 1, 1), w(1.15, 1.15)]), false);
  assert.equal(windowsDisagree([w(1, 1, 1), w(1.3, 1.3)]), true);
  assert.equal(windowsDisagree([w(1), w(), w(5)]), true);
});

Deno.test("measureMany() hands the cases of one op, shape and dtype the same operands, and other shapes their own", async () => {
  const seen: { backend: string; n: number; inputs: OpInputs }[] = [];
  const base = fakeRunner(() => {}, []);
  const recording = (backend: "js" | "wasm"): Runner => ({
    ...base,
    backend,
    prepare(op, shape, dtype, variant, inputs, residency) {
      seen.push({ backend, n: shape.n!, inputs });
      return base.prepare(op, shape, dtype, variant, inputs, residency);
    },
  });
  const runners: RunnerSource = (backend) =>
    Promise.resolve(recording(backend === "wasm" ? "wasm" : "js"));
  const results = await measureMany([
    { op: "add", shape: { n: 1000 }, dtype: "f32", backend: "js" },
    { op: "add", shape: { n: 1000 }, dtype: "f32", backend: "wasm" },
    { op: "add", shape: { n: 2000 }, dtype: "f32", backend: "js" },
  ], { runners, ...quick });
  assert.deepEqual(results.map((r) => r.state), ["ok", "ok", "ok"]);
  assert.equal(seen[0]!.inputs, seen[1]!.inputs, "js and wasm at n = 1000 share their operands");
  assert.notEqual(seen[2]!.inputs, seen[0]!.inputs, "n = 2000 has its own");
});

Deno.test("operandBatches() keeps the cases in order and closes a batch before its copies pass the budget", () => {
  const streamed = { op: "add", shape: { n: 2 ** 22 }, dtype: "f32", backend: "wasm" } as const;
  const small = { ...streamed, shape: { n: 4096 } };
  const mib = 2 ** 20;
  // A streamed add's copies span 256 MiB; a small one's, two copies of 48 KiB.
  const batches = operandBatches([small, streamed, streamed, small, streamed, streamed], 600 * mib);
  assert.deepEqual(batches.map((b) => b.map((r) => r.shape.n)), [
    [4096, 2 ** 22, 2 ** 22, 4096],
    [2 ** 22, 2 ** 22],
  ]);
  assert.deepEqual(operandBatches([streamed], mib).map((b) => b.length), [1], "alone if too big");
  assert.equal(operandBatches(Array(50).fill(small), 600 * mib).length, 1);
  assert.deepEqual(operandBatches([], mib), []);
});

Deno.test("measureMany() of many streamed cases never holds more than 2 GiB of their copies at once", async () => {
  const live = new Set<number>();
  let most = 0;
  let next = 0;
  const base = fakeRunner(() => {}, []);
  const counting: Runner = {
    ...base,
    backend: "wasm",
    async prepare(...args) {
      const p = await base.prepare(...args);
      const id = next++;
      live.add(id);
      most = Math.max(most, live.size);
      return { ...p, dispose: () => void live.delete(id) };
    },
  };
  const streamed = { op: "add", shape: { n: 2 ** 22 }, dtype: "f32", backend: "wasm" } as const;
  const results = await measureMany(Array(12).fill(streamed), {
    runners: only(counting),
    stopping: { budgetMs: 5, minSamples: 2 },
  });
  assert.deepEqual(new Set(results.map((r) => r.state)), new Set(["ok"]));
  assert.equal(most, 8, "eight cases of 256 MiB of copies at a time");
});

/** A WebGPU runner whose cases answer right and take the times `time` gives. */
function fakeGpuRunner(time: (reps: number) => { wallMs: number; gpuMs?: number }): Runner {
  return {
    backend: "webgpu",
    prepare(op: OpSpec, shape: Shape, dtype, _variant, inputs: OpInputs): Promise<Prepared> {
      return Promise.resolve({
        compileMs: 0,
        output: () => Promise.resolve(Float32Array.from(op.reference(shape, dtype, inputs))),
        time: (reps: number) => Promise.resolve(time(reps)),
        dispose() {},
      });
    },
    close: () => Promise.resolve(),
  };
}

/** One device-resident add on `runner`, by default at least four samples. */
async function measureResident(
  runner: Runner,
  stopping: Partial<StoppingRule> = { budgetMs: 400, minSamples: 4 },
) {
  const r = await measure(
    {
      op: "add",
      shape: { n: 1000 },
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
    },
    { runners: only(runner), stopping },
  );
  assert.equal(r.state, "ok");
  if (r.state !== "ok") throw new Error("unreachable");
  return r;
}

Deno.test("measure() drops a device-resident sample whose wall time per dispatch is under the GPU's own", async () => {
  // The GPU runs each dispatch in 0.4 ms, but the two batches' syncs came back 0.03 ms per
  // dispatch apart every other sample: those samples are impossible, the others are kept.
  let call = 0;
  const r = await measureResident(fakeGpuRunner((reps) => {
    const pair = Math.floor(call++ / 2);
    const perRun = pair % 2 === 0 ? 0.03 : 0.42;
    return { wallMs: 11 + perRun * reps, gpuMs: 0.4 * reps };
  }));
  assert.ok(r.wall.min >= 0.2, `an impossible sample was kept: ${r.wall.min}`);
  assert.ok(Math.abs(r.wall.median - 0.42) < 1e-6, `${r.wall.median}`);
});

Deno.test("measure() times a device-resident dispatch as a batch of 3R less a batch of one, over 3R − 1", async () => {
  // Each batch pays an 11 ms sync that comes back up to 4 ms late; a dispatch takes 0.5 ms. The
  // late syncs are the same size in both designs, but spread over 3R − 1 dispatches, not R.
  const asked: number[] = [];
  let call = 0;
  const r = await measureResident(fakeGpuRunner((reps) => {
    asked.push(reps);
    return { wallMs: 11 + 4 * (call++ % 2) + 0.5 * reps };
  }));
  const samples = asked.slice(2); // after the warm-up's batches of 1 and 8
  const batch = samples[1]!;
  assert.equal(batch % 3, 0);
  assert.deepEqual(samples, samples.map((_, i) => (i % 2 === 0 ? 1 : batch)));
  // The sync came back 4 ms late in every long batch: 4 / (3R − 1) per dispatch, not 4 / R.
  assert.ok(Math.abs(r.wall.median - (0.5 + 4 / (batch - 1))) < 1e-9, `${r.wall.median}`);
});

Deno.test("measure() takes three samples of a long device-resident kernel although one spends three budgets", async () => {
  // A 90 ms dispatch: each sample is a batch of one and a batch of three, 371 ms of a 120 ms
  // budget. One such sample used to end the case; its median was then one draw of a kernel whose
  // runs spread ×1.5–2.5 on lavapipe.
  let samples = 0;
  const r = await measureResident(
    fakeGpuRunner((reps) => {
      samples++;
      return { wallMs: 11 + 90 * reps, gpuMs: 90 * reps };
    }),
    { budgetMs: 120, minSamples: 5 },
  );
  assert.equal(r.wall.n, 3, `${r.wall.n} samples`);
  assert.ok(samples >= 6, `${samples} batches`);
});

Deno.test("isOverdue() stops a case after three budgets only once it made three attempts", () => {
  const rule = { ...DEFAULT_STOPPING, budgetMs: 120 };
  assert.equal(isOverdue(1, 1000, rule), false);
  assert.equal(isOverdue(2, 1000, rule), false);
  assert.equal(isOverdue(3, 359, rule), false);
  assert.equal(isOverdue(3, 360, rule), true);
});
