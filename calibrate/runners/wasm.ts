/**
 * The `wasm` runner: WebAssembly SIMD128 kernels on the calling thread, assembled from WAT at run
 * time and run on one shared memory.
 *
 * @module
 */
import type { Runner } from "../runner.ts";
import { WasmArena } from "./_wasm_arena.ts";
import {
  instantiateRun,
  type LoadedKernel,
  prepareWasm,
  type WasmExecutor,
} from "./_wasm_prepare.ts";

/**
 * Creates the runner for backend `"wasm"`. Residency is ignored: a CPU backend is always
 * end-to-end. `compileMs` is what assembling, compiling and instantiating really cost, so it is
 * near 0 when the runner already has the kernel.
 *
 * @returns The runner.
 * @example
 * ```ts
 * import { createWasmRunner } from "./wasm.ts";
 * import { add } from "../../kernels/elementwise/mod.ts";
 * import { seededRng } from "../../kernels/_random.ts";
 * const runner = createWasmRunner();
 * const shape = { n: 8 };
 * const inputs = add.inputs(shape, "f32", seededRng(1));
 * const prepared = await runner.prepare(add, shape, "f32", add.impls.wasm!.variants[0]!, inputs, "end-to-end");
 * console.log((await prepared.output()).length); // 8
 * prepared.dispose();
 * await runner.close();
 * ```
 */
export function createWasmRunner(): Runner {
  const arena = new WasmArena();
  const kernels = new WeakMap<WebAssembly.Module, Promise<LoadedKernel>>();
  const executor: WasmExecutor = {
    backend: "wasm",
    arena,
    load: (module) => {
      let kernel = kernels.get(module);
      if (!kernel) {
        kernel = instantiateRun(module, arena.memory).then((run) => ({
          split: (parts: number): [number, number][] => [[0, parts]],
          run: (args: readonly (readonly number[] | null)[]) => {
            if (args[0]) run(...args[0]);
          },
        }));
        kernels.set(module, kernel);
      }
      return kernel;
    },
  };
  return {
    backend: "wasm",
    prepare: (op, shape, dtype, variant, inputs) =>
      prepareWasm(executor, op, shape, dtype, variant, inputs),
    close: () => Promise.resolve(),
  };
}
