import assert from "node:assert/strict";
import {
  type BackendCurve,
  type CrossoverInput,
  findCrossovers,
  refineBrackets,
} from "../calibrate/crossover.ts";
import { fitCostModel } from "../calibrate/fit.ts";
import { geometricGrid } from "../calibrate/sweep.ts";
import { seededRng } from "../kernels/_random.ts";
import type { Backend } from "../kernels/types.ts";
import { type Crossover, CrossoverSchema } from "../core/schema.ts";
import {
  addWork,
  relError,
  synthesize,
  type Truth,
  truthMs,
  type Work,
} from "./_synthetic_curves.ts";

// js: tiny overhead, 1 GB/s. wasm: 30 µs to enter, 8 GB/s. Equal where
// 0.002 + 12n/1e6 = 0.03 + 12n/8e6, i.e. n = 0.028 / 10.5e-6.
const js: Truth = { t0Us: 2, gflops: null, gbps: 1 };
const wasm: Truth = { t0Us: 30, gflops: null, gbps: 8 };
const jsWasmTruth = 0.028 / 10.5e-6;

/** A measured, fitted curve of synthetic truth. */
function curve(
  backend: Backend,
  sizes: readonly number[],
  truth: Truth | ((n: number) => number),
  seed: number,
  options: { fit?: boolean; work?: Work } = {},
): BackendCurve {
  const points = synthesize(sizes, options.work ?? addWork, truth, seededRng(seed));
  const fit = (options.fit ?? true)
    ? fitCostModel(points, {
      op: "add",
      dtype: "f32",
      backend,
      variant: "default",
      residency: "end-to-end",
    })
    : null;
  return { backend, points, fit };
}

function input(curves: BackendCurve[], extra: Partial<CrossoverInput> = {}): CrossoverInput {
  return {
    op: "add",
    dtype: "f32",
    residency: "end-to-end",
    unit: "elements",
    curves,
    work: addWork,
    ...extra,
  };
}

function only(crossovers: Crossover[], pair: Crossover["pair"]): Crossover {
  const c = crossovers.find((x) => x.pair === pair);
  assert.ok(c, `no ${pair} crossover in ${JSON.stringify(crossovers)}`);
  return c;
}

const grid = geometricGrid(64, 1 << 20);

Deno.test("findCrossovers() finds a single crossover inside its bracket, its CI containing the truth", () => {
  const found = findCrossovers(input([curve("js", grid, js, 1), curve("wasm", grid, wasm, 2)]));
  assert.equal(found.length, 1);
  const c = only(found, "js→wasm");
  assert.equal(c.from, "js");
  assert.equal(c.to, "wasm");
  assert.equal(c.tag, "measured");
  assert.ok(c.fromRaw! > 2048 && c.fromRaw! < 4096, `fromRaw ${c.fromRaw}`);
  assert.ok(c.fromFit! > 2048 && c.fromFit! < 4096, `fromFit ${c.fromFit}`);
  assert.equal(c.size, c.fromFit, "good fits give the headline");
  assert.ok(relError(c.size!, jsWasmTruth) < 0.1, `size ${c.size} vs truth ${jsWasmTruth}`);
  assert.ok(c.ci![0] <= jsWasmTruth && jsWasmTruth <= c.ci![1], `ci ${c.ci} vs ${jsWasmTruth}`);
  assert.ok(c.ci![0] <= c.size! && c.size! <= c.ci![1]);
  assert.deepEqual(c.others, []);
  assert.equal(c.reason, null);
});

Deno.test("findCrossovers() without fits reports the raw crossover, interpolated log-log", () => {
  const noisy = (b: Backend, t: Truth, seed: number) => curve(b, grid, t, seed, { fit: false });
  const c = only(findCrossovers(input([noisy("js", js, 3), noisy("wasm", wasm, 4)])), "js→wasm");
  assert.equal(c.fromFit, null);
  assert.equal(c.size, c.fromRaw);
  assert.ok(relError(c.size!, jsWasmTruth) < 0.15, `size ${c.size}`);
  assert.ok(c.ci !== null, "samples give a bootstrap interval");
});

Deno.test("findCrossovers() gives null and a reason naming the range when webgpu never wins", () => {
  const gpu: Truth = { t0Us: 10_000, gflops: null, gbps: 5 };
  const found = findCrossovers(
    input([curve("wasm", grid, wasm, 5), curve("webgpu", grid, gpu, 6)]),
  );
  const c = only(found, "cpu→webgpu");
  assert.equal(c.size, null);
  assert.equal(c.ci, null);
  assert.equal(c.to, "webgpu");
  assert.equal(c.reason, "webgpu never wins up to 1048576 elements end-to-end (measured from 64)");
});

Deno.test("findCrossovers() gives null and says so when webgpu wins at every measured size", () => {
  const gpu: Truth = { t0Us: 1, gflops: null, gbps: 100 };
  const c = only(
    findCrossovers(input([curve("wasm", grid, wasm, 7), curve("webgpu", grid, gpu, 8)])),
    "cpu→webgpu",
  );
  assert.equal(c.size, null);
  assert.equal(c.reason, "webgpu wins at every measured size (from 64 elements)");
});

Deno.test("findCrossovers() tags a crossover beyond the measured sizes as extrapolated", () => {
  const small = geometricGrid(64, 1024);
  const c = only(
    findCrossovers(
      input([curve("js", small, js, 9), curve("wasm", small, wasm, 10)], { range: [64, 1 << 20] }),
    ),
    "js→wasm",
  );
  assert.equal(c.tag, "extrapolated");
  assert.equal(c.fromRaw, null);
  assert.equal(c.size, c.fromFit);
  assert.ok(c.size! > 1024, `size ${c.size}`);
  assert.ok(relError(c.size!, jsWasmTruth) < 0.1, `size ${c.size} vs truth ${jsWasmTruth}`);
  assert.match(c.reason!, /outside the measured sizes \[64, 1024\] elements/);
});

Deno.test("findCrossovers() lists further crossings in others when the curves cross more than once", () => {
  // `to` is 30 % slower, then faster, then slower again: sin(ln n) changes sign at e^π, e^2π, e^3π.
  const sizes = geometricGrid(1, 1 << 16);
  const base = (n: number) => 0.01 + n * 1e-5;
  const c = only(
    findCrossovers(input([
      curve("wasm", sizes, base, 11, { fit: false }),
      curve("wasm-mt", sizes, (n) => base(n) * (1 + 0.3 * Math.sin(Math.log(n))), 12, {
        fit: false,
      }),
    ])),
    "wasm→wasm-mt",
  );
  assert.equal(c.from, "wasm");
  assert.equal(c.to, "wasm-mt");
  assert.ok(c.size! > 16 && c.size! < 32, `first crossing ${c.size} near e^π`);
  assert.equal(c.others.length, 2);
  assert.ok(c.others[0]! > 256 && c.others[0]! < 1024, `second crossing ${c.others[0]} near e^2π`);
  assert.ok(c.others[1]! > 8192 && c.others[1]! < 16384, `third crossing ${c.others[1]} near e^3π`);
});

Deno.test("findCrossovers() compares webgpu with the fastest CPU backend at each size", () => {
  const sizes = geometricGrid(64, 1 << 24);
  const mt: Truth = { t0Us: 50, gflops: null, gbps: 12 };
  const gpu: Truth = { t0Us: 2000, gflops: null, gbps: 40 };
  // wasm-mt is the fastest CPU backend above ~45k elements; the GPU catches it at 1.95 / 7e-7.
  const truth = 1.95 / 7e-7;
  const found = findCrossovers(input([
    curve("js", sizes, js, 13),
    curve("wasm", sizes, wasm, 14),
    curve("wasm-mt", sizes, mt, 15),
    curve("webgpu", sizes, gpu, 16),
  ]));
  assert.deepEqual(found.map((c) => c.pair), ["js→wasm", "wasm→wasm-mt", "cpu→webgpu"]);
  const c = only(found, "cpu→webgpu");
  assert.equal(c.from, "wasm-mt");
  assert.equal(c.to, "webgpu");
  assert.ok(relError(c.size!, truth) < 0.1, `size ${c.size} vs truth ${truth}`);
});

Deno.test("findCrossovers() is deterministic for a seed", () => {
  const curves = [curve("js", grid, js, 17), curve("wasm", grid, wasm, 18)];
  assert.deepEqual(findCrossovers(input(curves)), findCrossovers(input(curves)));
});

Deno.test("Crossover matches the report schema", () => {
  const curves = [curve("js", grid, js, 19), curve("wasm", grid, wasm, 20)];
  for (const c of findCrossovers(input(curves))) {
    assert.deepEqual(CrossoverSchema.parse(c), c);
  }
});

Deno.test("refineBrackets() converges to ±10 % of a synthetic truth in a few rounds", () => {
  const sizes = new Set(geometricGrid(64, 1 << 20, { factor: 4 }));
  let rounds = 0;
  let c: Crossover;
  for (;;) {
    const measured = [...sizes].sort((a, b) => a - b);
    const curves = [
      curve("js", measured, js, 21 + rounds),
      curve("wasm", measured, wasm, 41 + rounds),
    ];
    c = only(findCrossovers(input(curves, { bootstrap: 0 })), "js→wasm");
    const next = refineBrackets(measured, [c], { min: 1, max: 1 << 20 });
    if (next.length === 0) break;
    for (const s of next) sizes.add(s);
    rounds++;
    assert.ok(rounds <= 6, `still refining after ${rounds} rounds: ${next}`);
  }
  const measured = [...sizes].sort((a, b) => a - b);
  const x = c.fromRaw!;
  const lo = measured.findLast((s) => s <= x)!;
  const hi = measured.find((s) => s >= x)!;
  assert.ok(lo >= x / 1.1 && hi <= x * 1.1, `bracket [${lo}, ${hi}] around ${x}`);
  assert.ok(relError(x, jsWasmTruth) < 0.1, `crossover ${x} vs truth ${jsWasmTruth}`);
});

Deno.test("refineBrackets() bisects in log space, aims at extrapolated crossovers, stops when tight", () => {
  const at = (fromRaw: number | null, size: number | null): Crossover => ({
    op: "add",
    dtype: "f32",
    residency: "end-to-end",
    pair: "js→wasm",
    from: "js",
    to: "wasm",
    size,
    unit: "elements",
    ci: null,
    fromFit: size,
    fromRaw,
    tag: fromRaw === null ? "extrapolated" : "measured",
    reason: null,
    others: [],
  });
  assert.deepEqual(refineBrackets([100, 400], [at(200, 200)]), [200]);
  assert.deepEqual(refineBrackets([100, 400], [at(null, 5000)], { max: 4096 }), [4096]);
  assert.deepEqual(refineBrackets([95, 105], [at(100, 100)]), []);
  assert.deepEqual(refineBrackets([3, 4], [at(3.5, 3.5)]), [], "integers leave no room");
  assert.deepEqual(refineBrackets([100, 400], [at(null, null)]), []);
  assert.throws(() => refineBrackets([1], [], { tolerance: 0 }), RangeError);
});

Deno.test("findCrossovers() uses the fitted curves between measured sizes", () => {
  // The fits, not the raw medians, decide where between 2048 and 4096 the crossover lies.
  const c = only(
    findCrossovers(
      input([curve("js", grid, js, 22), curve("wasm", grid, wasm, 23)], { bootstrap: 0 }),
    ),
    "js→wasm",
  );
  const { flops, bytes } = addWork(c.fromFit!);
  assert.ok(relError(truthMs(js, flops, bytes), truthMs(wasm, flops, bytes)) < 0.05);
});
