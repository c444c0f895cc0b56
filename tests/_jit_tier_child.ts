// Child of js_jit_tier_test.ts, run with V8's default tiers (Maglev on): times js `add` through
// the js runner as the first kernel of a fresh process and again after another kernel has run,
// each as its fastest window over the fastest window of the same sum written as one local
// function (its repetitions inside it, so V8 compiles it on-stack with TurboFan), the two timed in
// alternate windows so that a host that slows for a few seconds slows both (timed one after the
// other, a CI run on a noisy 2-vCPU VM once read 1.56 for a kernel that reads 1.0–1.1). Prints
// both ratios as JSON.
import { createJsRunner } from "../calibrate/runners/js.ts";
import { add } from "../kernels/elementwise/mod.ts";
import { matmul } from "../kernels/matmul/mod.ts";
import { seededRng } from "../kernels/_random.ts";
import type { OpSpec, Shape, Variant } from "../kernels/types.ts";

const WINDOWS = 200;
const REPS = 10;
const runner = createJsRunner();

/** The fastest window of the kernel and, in the windows between, of the local loop at `n`. */
async function fastestWindows(
  op: OpSpec,
  shape: Shape,
  variant: Variant,
  n: number,
): Promise<{ kernel: number; reference: number }> {
  const inputs = op.inputs(shape, "f32", seededRng(7));
  const prepared = await runner.prepare(op, shape, "f32", variant, inputs, "end-to-end");
  await prepared.warm!(2 * REPS);
  const local = referenceOperands(n);
  let kernel = Infinity;
  let reference = Infinity;
  for (let w = 0; w < WINDOWS; w++) {
    kernel = Math.min(kernel, (await prepared.time(REPS)).wallMs);
    reference = Math.min(reference, referenceWindow(local));
  }
  prepared.dispose();
  return { kernel, reference };
}

function referenceAdd(a: Float32Array, b: Float32Array, out: Float32Array, reps: number): void {
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < out.length; i++) out[i] = a[i]! + b[i]!;
  }
}

interface Operands {
  readonly a: Float32Array;
  readonly b: Float32Array;
  readonly out: Float32Array;
}

function referenceOperands(n: number): Operands {
  const [a, b] = add.inputs({ n }, "f32", seededRng(7)).arrays as Float32Array[];
  return { a: a!, b: b!, out: new Float32Array(n) };
}

function referenceWindow({ a, b, out }: Operands): number {
  const start = performance.now();
  referenceAdd(a, b, out, REPS);
  return performance.now() - start;
}

const n = 77_777;
const first = await fastestWindows(add, { n }, {}, n);
await fastestWindows(matmul, { m: 32, k: 32, n: 32 }, { loop: "naive" }, n);
const later = await fastestWindows(add, { n }, {}, n);
console.log(JSON.stringify({
  first: first.kernel / first.reference,
  later: later.kernel / later.reference,
}));
