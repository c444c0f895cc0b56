/**
 * The `js` runner: plain TypeScript kernels on typed arrays, on the calling thread.
 *
 * @module
 */
import { seededRng } from "../../kernels/_random.ts";
import { primeOutOfLine } from "../../kernels/_out_of_line.ts";
import type {
  Dtype,
  HostArray,
  JsImpl,
  OpInputs,
  OpSpec,
  Shape,
  Variant,
} from "../../kernels/types.ts";
import { type Prepared, type Runner, UnsupportedError } from "../runner.ts";
import {
  assertCpuDtype,
  heldInCache,
  inputBytes,
  rotation,
  rotationCopies,
  settle,
  warmRuns,
} from "./_cpu.ts";

/**
 * Creates the runner for backend `"js"`. Residency is ignored: a CPU backend is always end-to-end.
 *
 * @returns The runner.
 * @example
 * ```ts
 * import { createJsRunner } from "./js.ts";
 * import { add } from "../../kernels/elementwise/mod.ts";
 * import { seededRng } from "../../kernels/_random.ts";
 * const runner = createJsRunner();
 * const shape = { n: 8 };
 * const inputs = add.inputs(shape, "f32", seededRng(1));
 * const prepared = await runner.prepare(add, shape, "f32", {}, inputs, "end-to-end");
 * console.log((await prepared.output()).length); // 8
 * prepared.dispose();
 * await runner.close();
 * ```
 */
export function createJsRunner(): Runner {
  return {
    backend: "js",
    prepare: (op, shape, dtype, variant, inputs) =>
      settle(() => prepareJs(op, shape, dtype, variant, inputs)),
    close: () => Promise.resolve(),
  };
}

function prepareJs(
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  variant: Variant,
  inputs: OpInputs,
): Prepared {
  assertCpuDtype("js", op, dtype);
  const impl = op.impls.js;
  if (!impl) throw new UnsupportedError(`Op "${op.name}" has no js implementation`);
  const reason = impl.unsupported?.(shape, dtype, variant);
  if (reason) throw new UnsupportedError(reason);
  primeFeedback(op, dtype, variant, impl);
  let copies = copiesOf(inputs, rotationCopies(op.bytes(shape, dtype), inputBytes(inputs)));
  const cursor = rotation(copies.length);
  const cached = heldInCache(op.bytes(shape, dtype));
  let out: Float32Array | null = new Float32Array(inputs.outputLength);
  const live = (): Float32Array => {
    if (!out) throw new TypeError(`Cannot run ${op.name} on js: the prepared kernel was disposed`);
    return out;
  };
  return {
    compileMs: 0,
    output: () =>
      settle(() => {
        const o = live();
        // Unwritten elements stay NaN, so a kernel that skips work fails verification.
        o.fill(NaN);
        impl.run(copies[0]!, o, shape, variant);
        return o.slice();
      }),
    time: (reps) =>
      settle(() => {
        const o = live();
        const start = performance.now();
        for (let r = 0; r < reps; r++) impl.run(copies[cursor.next()]!, o, shape, variant);
        return { wallMs: performance.now() - start };
      }),
    warm: (reps) =>
      settle(() => {
        const o = live();
        warmRuns(cursor, cached, reps, (copy) => impl.run(copies[copy]!, o, shape, variant));
      }),
    dispose: () => {
      out = null;
      copies = [];
    },
  };
}

const copiesByInputs = new WeakMap<OpInputs, readonly (readonly HostArray[])[]>();

/**
 * `count` copies of the operands (the first the operands themselves), shared by every variant
 * prepared on the same operands while they live: a streamed set spans 256 MiB.
 */
function copiesOf(inputs: OpInputs, count: number): readonly (readonly HostArray[])[] {
  const known = copiesByInputs.get(inputs);
  if (known?.length === count) return known;
  const copies = [inputs.arrays];
  for (let c = 1; c < count; c++) copies.push(inputs.arrays.map((a) => a.slice()));
  copiesByInputs.set(inputs, copies);
  return copies;
}

/** Small odd sizes whose runs reach every branch of a kernel: its main loop and its tails. */
const PRIMING_SIZES = [3, 7, 13];
/** Calls per priming size: more than V8's lazy feedback allocation waits for. */
const PRIMING_CALLS = 8;

/**
 * Runs the kernel on a few tiny inputs before its case is timed, so every branch has type
 * feedback before V8 compiles the long loop on-stack. Otherwise the first large run is compiled
 * while the tail loop (`i < n` after an unrolled body) has never run; the compiled code then
 * deoptimises on "insufficient type feedback" each time it reaches that tail, and under load
 * V8 fell into a loop of it (sum n = 2^20: 529 deoptimisations, a first window 10× slow).
 */
function primeFeedback(op: OpSpec, dtype: Dtype, variant: Variant, impl: JsImpl): void {
  primeOutOfLine();
  const rng = seededRng(1);
  for (const size of PRIMING_SIZES) {
    const shape = op.axis.shape(Math.max(op.axis.min, size));
    if (impl.unsupported?.(shape, dtype, variant)) continue;
    const inputs = op.inputs(shape, dtype, rng);
    const out = new Float32Array(inputs.outputLength);
    // V8 gives a function its feedback vector only after several calls; until then its runs
    // record nothing.
    for (let r = 0; r < PRIMING_CALLS; r++) impl.run(inputs.arrays, out, shape, variant);
  }
}
