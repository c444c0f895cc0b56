/**
 * What the `wasm` and `wasm-mt` runners share: compile the kernel, lay its operands out in the
 * runner's shared memory (rotated copies of the inputs, then the output), and run or time it. The
 * two differ only in how a run is spread over threads, which a {@linkcode WasmExecutor} decides.
 *
 * @module
 */
import type { Dtype, OpInputs, OpSpec, Shape, Variant } from "../../kernels/types.ts";
import { type Prepared, UnsupportedError } from "../runner.ts";
import {
  assertCpuDtype,
  bytesOf,
  heldInCache,
  inputBytes,
  rotation,
  rotationCopies,
  settle,
  warmRuns,
} from "./_cpu.ts";
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

  const copies = rotationCopies(op.bytes(shape, dtype), inputBytes(inputs));
  const arena = executor.arena;
  const laid = layOut(arena, inputs, copies);
  const outputSlots = Math.max(inputs.outputLength, impl.outputSlots?.(shape, variant) ?? 0);
  const outPtr = arena.alloc(outputSlots * 4);
  const cursor = rotation(copies);
  const cached = heldInCache(op.bytes(shape, dtype));
  const ranges = kernel.split(impl.parts(shape, variant), impl.packsPerCall === true);
  const args = laid.ptrs.map((p) =>
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
        for (let r = 0; r < reps; r++) runOnce(cursor.next());
        return { wallMs: performance.now() - begin };
      }),
    warm: (reps) =>
      settle(() => {
        live();
        warmRuns(cursor, cached, reps, runOnce);
      }),
    dispose: () => {
      if (disposed) return;
      disposed = true;
      arena.release();
      laid.release();
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

/** Operand copies laid out in an arena, and how many prepared kernels use them. */
interface LaidOut {
  /** Each copy's operand addresses, in the order of `inputs.arrays`. */
  readonly ptrs: readonly (readonly number[])[];
  users: number;
}

const laidOutIn = new WeakMap<WasmArena, Map<OpInputs, LaidOut>>();

/**
 * Lays `copies` copies of the operands out in `arena`, or shares the copies laid out already for
 * the same operands: a call's variants of one shape run on one set, so a streamed set (256 MiB)
 * is written once per shape, not once per variant.
 */
function layOut(
  arena: WasmArena,
  inputs: OpInputs,
  copies: number,
): { readonly ptrs: readonly (readonly number[])[]; release(): void } {
  let byInputs = laidOutIn.get(arena);
  if (!byInputs) laidOutIn.set(arena, byInputs = new Map());
  let entry = byInputs.get(inputs);
  if (!entry || entry.ptrs.length !== copies) {
    const copyBytes = inputs.arrays.reduce((sum, a) => sum + align(a.byteLength), 0);
    let at = arena.alloc(copies * copyBytes);
    const bytes = new Uint8Array(arena.memory.buffer);
    const ptrs = Array.from({ length: copies }, () =>
      inputs.arrays.map((a) => {
        const ptr = at;
        bytes.set(bytesOf(a), ptr);
        at += align(a.byteLength);
        return ptr;
      }));
    entry = { ptrs, users: 0 };
    byInputs.set(inputs, entry);
  }
  const shared = entry;
  shared.users++;
  let released = false;
  return {
    ptrs: shared.ptrs,
    release: () => {
      if (released) return;
      released = true;
      if (--shared.users > 0) return;
      if (byInputs.get(inputs) === shared) byInputs.delete(inputs);
      arena.release();
    },
  };
}
