/**
 * Rules every CPU runner shares: which dtypes a CPU backend measures, and how many copies of the
 * operands to rotate through so that repeated runs do not all hit a warm cache.
 *
 * @module
 */
import type { Backend, Dtype, HostArray, OpInputs, OpSpec } from "../../kernels/types.ts";
import { UnsupportedError } from "../runner.ts";

/** Operands smaller than this (all of them together) are copied and rotated between runs. */
export const ROTATE_BELOW_BYTES = 16 * 1024 * 1024;

/** Rotation aims for at least this many bytes across all copies, so they spill out of L2/L3. */
const ROTATE_TARGET_BYTES = 32 * 1024 * 1024;

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
 * How many copies of the operands to keep: 2–4 when together they are under
 * {@linkcode ROTATE_BELOW_BYTES}, otherwise 1 (one copy already streams from memory).
 *
 * @param inputBytes Bytes of all operands of one run.
 * @returns The number of copies, 1 to 4.
 * @example
 * ```ts
 * import { rotationCopies } from "./_cpu.ts";
 * console.log(rotationCopies(1024)); // 4
 * console.log(rotationCopies(64 * 1024 * 1024)); // 1
 * ```
 */
export function rotationCopies(inputBytes: number): number {
  if (inputBytes >= ROTATE_BELOW_BYTES) return 1;
  return Math.min(
    MAX_COPIES,
    Math.max(2, Math.ceil(ROTATE_TARGET_BYTES / Math.max(1, inputBytes))),
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
