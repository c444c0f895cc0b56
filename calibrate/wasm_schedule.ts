/**
 * How a `wasm-mt` run shares a kernel's parts between threads: it cuts them into a few contiguous
 * chunks per thread, which the threads claim one at a time until none is left. Pure, so the models
 * can price a run's uneven shares (`models/_imbalance.ts`) without loading the runner.
 *
 * @module
 */

/**
 * Chunks per thread a run is cut into by default. One per thread is the static split that lets a
 * straggler hold the whole run back; more chunks balance finer but cost one claim each. Four
 * leaves a thread that never wakes at most a quarter of its share to hand over in pieces.
 */
export const CHUNKS_PER_THREAD = 4;

/**
 * How many chunks a run of `parts` work items is cut into. A kernel that packs a shared operand
 * per call gets one chunk per thread unless the runner was given a count: each further chunk
 * packs it again. On this 2-vCPU VM, wasm-mt matmul at four chunks per thread ran 10–55 % slower
 * than at one (32 × 2048 × 2048: 7.3 against 4.7 ms; 64 × 1536 × 1536: 5.9 against 3.7 ms;
 * 32³: 9.6 against 4.3 µs), and slower than single-threaded wasm at m = 32.
 *
 * @param threads Threads in all.
 * @param perThread Chunks per thread the runner was given, or undefined for the default.
 * @param packsPerCall Whether the kernel packs an operand per call.
 * @returns The number of chunks to cut a run into (at most, when there are fewer parts).
 * @example
 * ```ts
 * import { chunksFor } from "./wasm_schedule.ts";
 * console.log(chunksFor(2, undefined, false), chunksFor(2, undefined, true), chunksFor(2, 3, true)); // 8 2 6
 * ```
 */
export function chunksFor(
  threads: number,
  perThread: number | undefined,
  packsPerCall: boolean,
): number {
  return threads * (perThread ?? (packsPerCall ? 1 : CHUNKS_PER_THREAD));
}

/**
 * Cuts `[0, parts)` into `min(parts, chunks)` contiguous, non-empty ranges of near-equal size,
 * in order.
 *
 * @param parts Number of work items.
 * @param chunks Most ranges wanted.
 * @returns The ranges `[start, end)`, none when `parts` is 0.
 * @example
 * ```ts
 * import { chunkRanges } from "./wasm_schedule.ts";
 * console.log(chunkRanges(5, 2)); // [[0, 2], [2, 5]]
 * console.log(chunkRanges(2, 8)); // [[0, 1], [1, 2]]
 * ```
 */
export function chunkRanges(parts: number, chunks: number): [number, number][] {
  const count = Math.min(parts, chunks);
  return Array.from({ length: count }, (_, c) => [
    Math.floor((c * parts) / count),
    Math.floor(((c + 1) * parts) / count),
  ]);
}
