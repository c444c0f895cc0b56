/**
 * The `wasm-mt` runner: the `wasm` kernels spread over every core, the calling thread plus a pool
 * of workers that instantiate the same module on the same shared memory. A run cuts the kernel's
 * parts into a few contiguous chunks per thread, which the threads claim one at a time until none
 * is left (dynamic scheduling), so a late or descheduled worker does not hold the run back.
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
import { chunkRanges, chunksFor } from "../wasm_schedule.ts";

export { chunkRanges, CHUNKS_PER_THREAD, chunksFor } from "../wasm_schedule.ts";

/** Options of {@linkcode createWasmMtRunner}. */
export interface WasmMtOptions {
  /** Threads in all, the caller included; `navigator.hardwareConcurrency` when absent. */
  readonly threads?: number;
  /**
   * Chunks per thread a run is cut into, for every kernel. When absent: one for a kernel that packs
   * an operand per call, {@linkcode CHUNKS_PER_THREAD} for the others ({@linkcode chunksFor}).
   */
  readonly chunksPerThread?: number;
}

/**
 * Creates the runner for backend `"wasm-mt"`. Workers start on the first `prepare`, are reused
 * across prepares, and stop in `close()`. Needs no permission beyond reading its own files.
 *
 * @param options Thread count and chunking.
 * @returns The runner.
 * @throws {RangeError} when `threads` or `chunksPerThread` is not a positive integer, or their
 * product exceeds the pool's chunk limit.
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
  const perThread = options.chunksPerThread;
  if (perThread !== undefined && (!Number.isInteger(perThread) || perThread < 1)) {
    throw new RangeError(
      `Cannot cut a run into ${perThread} chunks per thread: use a positive integer`,
    );
  }
  const chunks = Math.max(
    chunksFor(threads, perThread, false),
    chunksFor(threads, perThread, true),
  );
  const arena = new WasmArena();
  const pool = new WorkerPool(arena.memory, threads - 1, chunks);
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
          split: (parts: number, packsPerCall: boolean) =>
            chunkRanges(parts, chunksFor(threads, perThread, packsPerCall)),
          run: (args: readonly (readonly number[] | null)[]) =>
            pool.run(slot, args, (own) => run(...own)),
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
