/**
 * What the `wasm` and `wasm-mt` runners share: compile the kernel, lay its operands out in the
 * runner's shared memory (rotated copies of the inputs, then the output), and run or time it. The
 * two differ only in how a run is spread over threads, which a {@linkcode WasmExecutor} decides.
 *
 * @module
 */
import type { Dtype, OpInputs, OpSpec, Shape, Variant } from "../../kernels/types.ts";
import { type Prepared, UnsupportedError } from "../runner.ts";
import { assertCpuDtype, bytesOf, inputBytes, rotationCopies, settle } from "./_cpu.ts";
import { align, type WasmArena } from "./_wasm_arena.ts";
import { compileWat } from "./_wasm_module.ts";

/** A kernel instantiated on every thread that will run it. */
export interface LoadedKernel {
  /**
   * Contiguous ranges `[start, end)` covering `[0, parts)` in order: the whole range on one
   * thread, a few chunks per thread on a pool (one per thread for a kernel that packs per call).
   */
  split(parts: number, packsPerCall: boolean): [number, number][];
  /**
   * Runs every range once, on whichever thread takes it, with `args[i]` the arguments of range
   * `i` (`null` for an empty range); returns when all are done.
   */
  run(args: readonly (readonly number[] | null)[]): void;
}

/**
 * How a WebAssembly backend runs kernels: on one thread, or spread over a worker pool.
 *
 * @example
 * ```ts
 * import type { WasmExecutor } from "./_wasm_prepare.ts";
 * function memoryOf(e: WasmExecutor) { return e.arena.memory; }
 * ```
 */
export interface WasmExecutor {
  /** Backend name, for messages. */
  readonly backend: "wasm" | "wasm-mt";
  /** The runner's shared memory. */
  readonly arena: WasmArena;
  /** Instantiates `module` wherever it will run. */
  load(module: WebAssembly.Module): Promise<LoadedKernel>;
}

/**
 * Prepares `op` on a WebAssembly backend.
 *
 * @param executor The backend's executor.
 * @param op The op.
 * @param shape The shape.
 * @param dtype The dtype (`f16` is unsupported on CPU backends).
 * @param variant A variant of the op's wasm implementation.
 * @param inputs The operands.
 * @returns The prepared kernel.
 * @throws {UnsupportedError} for `f16`, an op without a wasm implementation, or memory limits.
 * @example
 * ```ts ignore
 * const prepared = await prepareWasm(executor, add, { n: 8 }, "f32", { unroll: 4 }, inputs);
 * ```
 */
export async function prepareWasm(
  executor: WasmExecutor,
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  variant: Variant,
  inputs: OpInputs,
): Promise<Prepared> {
  assertCpuDtype(executor.backend, op, dtype);
  const impl = op.impls.wasm;
  if (!impl) throw new UnsupportedError(`Op "${op.name}" has no wasm implementation`);
  const reason = impl.unsupported?.(shape, dtype, variant);
  if (reason) throw new UnsupportedError(reason);
  const start = performance.now();
  const { module } = await compileWat(impl.wat(variant, dtype));
  const kernel = await executor.load(module);
  const compileMs = performance.now() - start;

  const copies = rotationCopies(inputBytes(inputs));
  const copyBytes = inputs.arrays.reduce((sum, a) => sum + align(a.byteLength), 0);
  const arena = executor.arena;
  const outputSlots = Math.max(inputs.outputLength, impl.outputSlots?.(shape, variant) ?? 0);
  const base = arena.alloc(copies * copyBytes + outputSlots * 4);
  const ptrs: number[][] = [];
  let at = base;
  const bytes = new Uint8Array(arena.memory.buffer);
  for (let c = 0; c < copies; c++) {
    ptrs.push(inputs.arrays.map((a) => {
      const ptr = at;
      bytes.set(bytesOf(a), ptr);
      at += align(a.byteLength);
      return ptr;
    }));
  }
  const outPtr = at;
  const ranges = kernel.split(impl.parts(shape, variant), impl.packsPerCall === true);
  const args = ptrs.map((p) =>
    ranges.map(([s, e]) => (s < e ? impl.args(shape, p, outPtr, s, e, variant, dtype) : null))
  );

  let disposed = false;
  const live = () => {
    if (disposed) {
      throw new TypeError(
        `Cannot run ${op.name} on ${executor.backend}: the prepared kernel was disposed`,
      );
    }
  };
  // The memory may have grown (and its buffer changed) since prepare, so views are made per use.
  const out = () => new Float32Array(arena.memory.buffer, outPtr, inputs.outputLength);
  const finish = impl.finish;
  const runOnce = (copy: number) => {
    kernel.run(args[copy]!);
    finish?.(new Float32Array(arena.memory.buffer), outPtr, shape, variant);
  };
  return {
    compileMs,
    output: () =>
      settle(() => {
        live();
        // Unwritten elements stay NaN, so a kernel that skips work fails verification.
        out().fill(NaN);
        runOnce(0);
        return out().slice();
      }),
    time: (reps) =>
      settle(() => {
        live();
        const begin = performance.now();
        for (let r = 0; r < reps; r++) runOnce(r % copies);
        return { wallMs: performance.now() - begin };
      }),
    dispose: () => {
      if (disposed) return;
      disposed = true;
      arena.release();
    },
  };
}

/**
 * Instantiates `module` on the calling thread, importing `memory` as `env.memory`.
 *
 * @param module The compiled kernel.
 * @param memory The shared memory.
 * @returns The exported `run`.
 * @throws {TypeError} when the module exports no `run` function.
 * @example
 * ```ts ignore
 * const run = await instantiateRun(module, arena.memory);
 * ```
 */
export async function instantiateRun(
  module: WebAssembly.Module,
  memory: WebAssembly.Memory,
): Promise<(...args: number[]) => unknown> {
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  const run = instance.exports.run;
  if (typeof run !== "function") {
    throw new TypeError("Cannot use the kernel: its module exports no run()");
  }
  return run as (...args: number[]) => unknown;
}
