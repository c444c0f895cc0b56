/**
 * The `wasm-mt` runner: the `wasm` kernels spread over every core, the calling thread plus a pool
 * of workers that instantiate the same module on the same shared memory. A run splits the
 * kernel's parts into one contiguous range per thread.
 *
 * @module
 */
import type { Runner } from "../runner.ts";
import { WasmArena } from "./_wasm_arena.ts";
import { WorkerPool } from "./_wasm_pool.ts";
import {
  instantiateRun,
  type LoadedKernel,
  prepareWasm,
  type WasmExecutor,
} from "./_wasm_prepare.ts";

/** Options of {@linkcode createWasmMtRunner}. */
export interface WasmMtOptions {
  /** Threads in all, the caller included; `navigator.hardwareConcurrency` when absent. */
  readonly threads?: number;
}

/**
 * Splits `[0, parts)` into `threads` contiguous ranges of near-equal size (some may be empty).
 *
 * @param parts Number of work items.
 * @param threads Number of threads.
 * @returns One `[start, end)` per thread.
 * @example
 * ```ts
 * import { splitRanges } from "./wasm_mt.ts";
 * console.log(splitRanges(5, 2)); // [[0, 2], [2, 5]]
 * ```
 */
export function splitRanges(parts: number, threads: number): [number, number][] {
  return Array.from({ length: threads }, (_, t) => [
    Math.floor((t * parts) / threads),
    Math.floor(((t + 1) * parts) / threads),
  ]);
}

/**
 * Creates the runner for backend `"wasm-mt"`. Workers start on the first `prepare`, are reused
 * across prepares, and stop in `close()`. Needs no permission beyond reading its own files.
 *
 * @param options Thread count.
 * @returns The runner.
 * @throws {RangeError} when `threads` is not a positive integer.
 * @example
 * ```ts
 * import { createWasmMtRunner } from "./wasm_mt.ts";
 * import { add } from "../../kernels/elementwise/mod.ts";
 * import { seededRng } from "../../kernels/_random.ts";
 * const runner = createWasmMtRunner({ threads: 2 });
 * const shape = { n: 100000 };
 * const inputs = add.inputs(shape, "f32", seededRng(1));
 * const prepared = await runner.prepare(add, shape, "f32", add.impls.wasm!.variants[0]!, inputs, "end-to-end");
 * console.log((await prepared.output()).length); // 100000
 * prepared.dispose();
 * await runner.close();
 * ```
 */
export function createWasmMtRunner(options: WasmMtOptions = {}): Runner {
  const threads = options.threads ?? navigator.hardwareConcurrency;
  if (!Number.isInteger(threads) || threads < 1) {
    throw new RangeError(`Cannot run wasm-mt on ${threads} threads: use a positive integer`);
  }
  const arena = new WasmArena();
  const pool = new WorkerPool(arena.memory, threads - 1);
  const kernels = new WeakMap<WebAssembly.Module, Promise<LoadedKernel>>();
  const executor: WasmExecutor = {
    backend: "wasm-mt",
    arena,
    load: (module) => {
      let kernel = kernels.get(module);
      if (!kernel) {
        kernel = Promise.all([instantiateRun(module, arena.memory), pool.load(module)]).then((
          [run, slot],
        ) => ({
          split: (parts: number) => splitRanges(parts, threads),
          // The caller takes the last range: it starts at once, while the workers wake up.
          run: (args: readonly (readonly number[] | null)[]) => {
            const own = args[threads - 1];
            pool.run(slot, args.slice(0, threads - 1), () => {
              if (own) run(...own);
            });
          },
        }));
        kernels.set(module, kernel);
        kernel.catch(() => kernels.delete(module));
      }
      return kernel;
    },
  };
  return {
    backend: "wasm-mt",
    prepare: (op, shape, dtype, variant, inputs) =>
      prepareWasm(executor, op, shape, dtype, variant, inputs),
    close: () => {
      pool.close();
      return Promise.resolve();
    },
  };
}
