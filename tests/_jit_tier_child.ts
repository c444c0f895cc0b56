// Child of js_jit_tier_test.ts, run with V8's default tiers (Maglev on): times js `add` through
// the js runner as the first kernel of a fresh process and again after another kernel has run,
// each as its fastest window over the fastest window of the same sum written as one local
// function (its repetitions inside it, so V8 compiles it on-stack with TurboFan). Prints both
// ratios as JSON.
import { createJsRunner } from "../calibrate/runners/js.ts";
import { add } from "../kernels/elementwise/mod.ts";
import { matmul } from "../kernels/matmul/mod.ts";
import { seededRng } from "../kernels/_random.ts";
import type { OpSpec, Shape, Variant } from "../kernels/types.ts";

const WINDOWS = 200;
const REPS = 10;
const runner = createJsRunner();

async function fastestWindow(op: OpSpec, shape: Shape, variant: Variant): Promise<number> {
  const inputs = op.inputs(shape, "f32", seededRng(7));
  const prepared = await runner.prepare(op, shape, "f32", variant, inputs, "end-to-end");
  await prepared.warm!(2 * REPS);
  let fastest = Infinity;
  for (let w = 0; w < WINDOWS; w++) fastest = Math.min(fastest, (await prepared.time(REPS)).wallMs);
  prepared.dispose();
  return fastest;
}

function referenceAdd(a: Float32Array, b: Float32Array, out: Float32Array, reps: number): void {
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < out.length; i++) out[i] = a[i]! + b[i]!;
  }
}

function fastestReference(n: number): number {
  const [a, b] = add.inputs({ n }, "f32", seededRng(7)).arrays as Float32Array[];
  const out = new Float32Array(n);
  let fastest = Infinity;
  for (let w = 0; w < WINDOWS; w++) {
    const start = performance.now();
    referenceAdd(a!, b!, out, REPS);
    fastest = Math.min(fastest, performance.now() - start);
  }
  return fastest;
}

const n = 77_777;
const first = await fastestWindow(add, { n }, {});
await fastestWindow(matmul, { m: 32, k: 32, n: 32 }, { loop: "naive" });
const later = await fastestWindow(add, { n }, {});
const reference = fastestReference(n);
console.log(JSON.stringify({ first: first / reference, later: later / reference }));
