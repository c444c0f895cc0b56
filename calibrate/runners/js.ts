/**
 * The `js` runner: plain TypeScript kernels on typed arrays, on the calling thread.
 *
 * @module
 */
import type { Dtype, HostArray, OpInputs, OpSpec, Shape, Variant } from "../../kernels/types.ts";
import { type Prepared, type Runner, UnsupportedError } from "../runner.ts";
import { assertCpuDtype, inputBytes, rotationCopies, settle } from "./_cpu.ts";

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
  const copies: (readonly HostArray[])[] = [inputs.arrays];
  const count = rotationCopies(inputBytes(inputs));
  for (let c = 1; c < count; c++) copies.push(inputs.arrays.map((a) => a.slice()));
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
        for (let r = 0; r < reps; r++) impl.run(copies[r % copies.length]!, o, shape, variant);
        return { wallMs: performance.now() - start };
      }),
    dispose: () => {
      out = null;
      copies.length = 0;
    },
  };
}
