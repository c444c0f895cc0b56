/**
 * Rules every CPU runner shares: which dtypes a CPU backend measures, and how many copies of the
 * operands to rotate through so that repeated runs do not all hit a warm cache.
 *
 * @module
 */
import type { Backend, Dtype, HostArray, OpInputs, OpSpec } from "../../kernels/types.ts";
import { UnsupportedError } from "../runner.ts";

/**
 * Rotation aims for at least this many bytes across all copies, so they spill out of L2 and the
 * last-level cache: the 2-vCPU VMs measured here kept 27–47 MB of operands in theirs, by the
 * host's state. (At a 32 MB target, with one copy from 16 MB up, wasm read gemv f32 1500²
 * (9 MB, four copies) at 10–12 GB/s and 2580² (27 MB, one copy) at 26: the time per byte fell
 * where the operands grew, and 1500² was predicted 50–60 % fast from the sizes around it.)
 */
const ROTATE_TARGET_BYTES = 64 * 1024 * 1024;

/** Most copies of the operands a runner keeps. */
const MAX_COPIES = 4;

/**
 * Throws {@linkcode UnsupportedError} when a CPU backend cannot run `op` in `dtype`.
 *
 * @param backend The CPU backend asking.
 * @param op The op.
 * @param dtype The requested dtype.
 * @throws {UnsupportedError} for `f16` (WebGPU only) or a dtype the op does not declare.
 * @example
 * ```ts
 * import { assertCpuDtype } from "./_cpu.ts";
 * import { add } from "../../kernels/elementwise/mod.ts";
 * assertCpuDtype("js", add, "f32");
 * ```
 */
export function assertCpuDtype(backend: Backend, op: OpSpec, dtype: Dtype): void {
  if (dtype === "f16") {
    throw new UnsupportedError(
      `Backend "${backend}" cannot run dtype "f16": f16 is measured on WebGPU only`,
    );
  }
  if (!op.dtypes.includes(dtype)) {
    throw new UnsupportedError(
      `Op "${op.name}" has no dtype "${dtype}": use one of ${op.dtypes.join(", ")}`,
    );
  }
}

/**
 * How many copies of the operands to keep and rotate between runs: enough for
 * {@linkcode ROTATE_TARGET_BYTES} together, at most {@linkcode MAX_COPIES}. The bytes a run's
 * copies span never fall as the operands grow, except between 64 and 128 MB, all of it beyond
 * the cache: four times the operands up to 16 MB, then 64–128 MB, then the operands alone.
 *
 * @param inputBytes Bytes of all operands of one run.
 * @returns The number of copies, 1 to 4.
 * @example
 * ```ts
 * import { rotationCopies } from "./_cpu.ts";
 * console.log(rotationCopies(1024)); // 4
 * console.log(rotationCopies(24 * 1024 * 1024)); // 3
 * console.log(rotationCopies(64 * 1024 * 1024)); // 1
 * ```
 */
export function rotationCopies(inputBytes: number): number {
  return Math.min(
    MAX_COPIES,
    Math.max(1, Math.ceil(ROTATE_TARGET_BYTES / Math.max(1, inputBytes))),
  );
}

/**
 * Total bytes of the operands.
 *
 * @param inputs The operands.
 * @returns Their summed byte length.
 * @example
 * ```ts
 * import { inputBytes } from "./_cpu.ts";
 * console.log(inputBytes({ arrays: [new Float32Array(4)], outputLength: 4 })); // 16
 * ```
 */
export function inputBytes(inputs: OpInputs): number {
  return inputs.arrays.reduce((sum, a) => sum + a.byteLength, 0);
}

/**
 * A byte view of an operand.
 *
 * @param array The operand.
 * @returns Its bytes, without copying.
 * @example
 * ```ts
 * import { bytesOf } from "./_cpu.ts";
 * console.log(bytesOf(new Float32Array(2)).length); // 8
 * ```
 */
export function bytesOf(array: HostArray): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/**
 * Runs `f` now and returns its result as a promise, so a throw becomes a rejection (callers of a
 * `Prepared` or `Runner` method see one kind of failure on every backend).
 *
 * @param f The synchronous work.
 * @returns A promise of its result.
 * @example
 * ```ts
 * import { settle } from "./_cpu.ts";
 * console.log(await settle(() => 42)); // 42
 * ```
 */
export function settle<T>(f: () => T): Promise<T> {
  return new Promise((resolve) => resolve(f()));
}
