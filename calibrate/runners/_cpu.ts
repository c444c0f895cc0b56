/**
 * Rules every CPU runner shares: which dtypes a CPU backend measures, and how many copies of the
 * operands to rotate through so that repeated runs do not all hit a warm cache.
 *
 * @module
 */
import type { Backend, Dtype, HostArray, OpInputs, OpSpec } from "../../kernels/types.ts";
import { UnsupportedError } from "../runner.ts";
import { COLD_SPAN_BYTES, STREAMED_FROM_BYTES } from "../../core/operand_rotation.ts";

/**
 * Copies of the operands a run under {@linkcode STREAMED_FROM_BYTES} rotates through: two, so a
 * run never reads what the run just before it left in the nearest caches, and its copies span at
 * most 8 MiB. Four (up to 16 MiB) were not held by one thread: in one process beside the other
 * CPU backends, one-thread wasm gemv q8 1024 × 3000 ran at 2.8–3.0 GB/s in most rounds of three
 * processes with four copies and 6.4–7.1 in every round with two; js sum of 950 000 at 2.6–3.1
 * against 5.6–6.8 GB/s, wasm gemv q8 1149² at 2.8–3.0 against 5.9–6.6.
 */
const CACHED_COPIES = 2;

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
 * How many copies of the operands to keep and rotate between runs: {@linkcode CACHED_COPIES} for
 * a run that moves fewer than {@linkcode STREAMED_FROM_BYTES}, else enough copies to span
 * {@linkcode COLD_SPAN_BYTES} (one copy from there up). Taken in turn
 * ({@linkcode rotation}), a copy comes back after the others have all been read: at least
 * 128 MiB later for a streamed run.
 *
 * @param runBytes Bytes one run moves (the op's `bytes(shape, dtype)`, as the models count them,
 *   so that the switch sits at one size on the models' axis for every op).
 * @param operandBytes Bytes of all operands of one run.
 * @returns The number of copies.
 * @example
 * ```ts
 * import { rotationCopies } from "./_cpu.ts";
 * console.log(rotationCopies(1536, 1024)); // 2
 * console.log(rotationCopies(36e6, 36e6)); // 8
 * console.log(rotationCopies(300e6, 300e6)); // 1
 * ```
 */
export function rotationCopies(runBytes: number, operandBytes: number): number {
  if (heldInCache(runBytes)) return CACHED_COPIES;
  return Math.max(1, Math.ceil(COLD_SPAN_BYTES / Math.max(1, operandBytes)));
}

/**
 * Copy numbers handed out in turn, carrying on across batches: the first run of a batch reads the
 * copy after the one the last batch read last, so no sample starts on operands a run just left in
 * the cache.
 *
 * @example
 * ```ts
 * import { rotation } from "./_cpu.ts";
 * const copies = rotation(3);
 * console.log([copies.next(), copies.next(), copies.next(), copies.next()]); // [0, 1, 2, 0]
 * ```
 */
export interface Rotation {
  /** The next copy's number, 0 to `copies − 1`. */
  next(): number;
  /** Steps back `runs` copies: the next runs read again what the last `runs` read, in order. */
  back(runs: number): void;
}

/**
 * A {@linkcode Rotation} over `copies` copies, from copy 0.
 *
 * @param copies How many copies there are.
 * @returns The rotation.
 * @example
 * ```ts
 * import { rotation } from "./_cpu.ts";
 * const copies = rotation(4);
 * const warm = [copies.next(), copies.next()];
 * copies.back(2);
 * console.log(warm, [copies.next(), copies.next()]); // [ 0, 1 ] [ 0, 1 ]
 * ```
 */
export function rotation(copies: number): Rotation {
  let next = 0;
  return {
    next: () => {
      const copy = next;
      next = (next + 1) % copies;
      return copy;
    },
    back: (runs) => {
      next = (((next - runs) % copies) + copies) % copies;
    },
  };
}

/**
 * Runs `reps` untimed runs for a runner's `warm()`: on copies held in cache
 * ({@linkcode heldInCache}) the cursor steps back after them, so the next batch reads the very
 * copies just warmed; on streamed copies it goes on, and the batch's own stay cold.
 *
 * @param cursor The case's rotation.
 * @param cached Whether its copies stay in the caches.
 * @param reps Runs.
 * @param run Runs the kernel once on a copy.
 * @example
 * ```ts
 * import { rotation, warmRuns } from "./_cpu.ts";
 * const cursor = rotation(4);
 * const read: number[] = [];
 * warmRuns(cursor, true, 2, (copy) => read.push(copy));
 * console.log(read, cursor.next()); // [ 0, 1 ] 0
 * ```
 */
export function warmRuns(
  cursor: Rotation,
  cached: boolean,
  reps: number,
  run: (copy: number) => void,
): void {
  for (let r = 0; r < reps; r++) run(cursor.next());
  if (cached) cursor.back(reps);
}

/**
 * Whether a run's operand copies stay in the caches between its runs ({@linkcode CACHED_COPIES}
 * of them, under {@linkcode STREAMED_FROM_BYTES}) rather than stream from memory.
 *
 * @param runBytes Bytes one run moves (the op's `bytes(shape, dtype)`).
 * @returns True under the switch.
 * @example
 * ```ts
 * import { heldInCache } from "./_cpu.ts";
 * console.log(heldInCache(2 ** 20), heldInCache(2 ** 23)); // true false
 * ```
 */
export function heldInCache(runBytes: number): boolean {
  return runBytes < STREAMED_FROM_BYTES;
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
