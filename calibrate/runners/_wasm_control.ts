/**
 * Layout of the small `SharedArrayBuffer` through which the `wasm-mt` pool hands work to its
 * workers: a header (generation, pending chunks, module slot, claim word), one error block per
 * worker, then the current run's table of chunk argument lists. Shared by the pool and the worker
 * module.
 *
 * A run is a list of chunks that every thread, the caller included, claims one at a time with a
 * compare-and-swap on the claim word. The word carries the run's generation next to the next
 * chunk's index and the chunk count, so a worker that wakes late can only claim chunks of the
 * run it woke for, and only while that run is still open: once the caller has claimed what was
 * left and every claimed chunk is finished, no claim of that generation can succeed again, and
 * the caller may rewrite the table for the next run.
 *
 * @module
 */

/** Int32 index of the generation counter, bumped once per run to wake the workers. */
export const GEN = 0;
/** Int32 index of the number of chunks of the current run not finished yet. */
export const PENDING = 1;
/** Int32 index of the module slot the current run executes. */
export const SLOT = 2;
// BigUint64 index of the claim word (bytes 16..24): generation (high 32 bits), next chunk (16
// bits), chunk count (16 bits).
const CLAIM = 2;

const HEADER_BYTES = 64;
const ERROR_BYTES = 256;
// Each chunk's entry: its argument count (Int32, padded to 8 bytes), then its Float64 arguments.
const CHUNK_HEADER = 8;

/** Most arguments a kernel's `run` may take. */
export const MAX_ARGS = 16;
/** Most chunks one run may have: a chunk index must fit the claim word's 16 bits. */
export const MAX_CHUNKS = 0xffff;

/**
 * How long a thread polls before it sleeps, ms: a worker for the next generation after a run, the
 * caller for the workers' last chunks. Back-to-back runs (a timed batch) follow each other within
 * tens of µs, and catching them by polling skips the wake-up of `Atomics.waitAsync` (a promise
 * settled through the worker's event loop) or of a blocking `Atomics.wait`. Measured interleaved
 * here, 50 µs on both sides cut `wasm-mt`'s per-run time by 5–15 % (sum f32 900000: 0.35 → 0.32
 * ms) and left `wasm` alone.
 */
export const SPIN_MS = 0.05;

const CHUNK_BYTES = CHUNK_HEADER + 8 * MAX_ARGS;
const ERROR_MAX = ERROR_BYTES - 4;

/**
 * Bytes of a control buffer for `workers` workers and runs of at most `chunks` chunks.
 *
 * @param workers Number of workers.
 * @param chunks Most chunks one run may have.
 * @returns The byte length.
 * @throws {RangeError} when `chunks` exceeds {@linkcode MAX_CHUNKS}.
 * @example
 * ```ts
 * import { controlBytes } from "./_wasm_control.ts";
 * console.log(controlBytes(1, 8)); // 1408
 * ```
 */
export function controlBytes(workers: number, chunks: number): number {
  if (chunks > MAX_CHUNKS) {
    throw new RangeError(`Cannot plan runs of ${chunks} chunks: use at most ${MAX_CHUNKS}`);
  }
  return HEADER_BYTES + ERROR_BYTES * workers + CHUNK_BYTES * chunks;
}

/**
 * Opens run `gen` of `count` chunks for claiming. Call it after the run's chunk table, slot and
 * pending count are written and before the generation is published, so a worker woken by the
 * new generation finds the run open.
 *
 * @param control The control buffer.
 * @param gen The run's generation (the value {@linkcode GEN} is about to take).
 * @param count Number of chunks.
 * @throws {RangeError} when `count` is not in `[0, MAX_CHUNKS]`.
 * @example
 * ```ts
 * import { claimChunk, controlBytes, openRun } from "./_wasm_control.ts";
 * const control = new SharedArrayBuffer(controlBytes(1, 2));
 * openRun(control, 7, 2);
 * console.log(claimChunk(control, 7), claimChunk(control, 7), claimChunk(control, 7)); // 0 1 -1
 * ```
 */
export function openRun(control: SharedArrayBuffer, gen: number, count: number): void {
  if (!Number.isInteger(count) || count < 0 || count > MAX_CHUNKS) {
    throw new RangeError(`Cannot open a run of ${count} chunks: use 0 to ${MAX_CHUNKS}`);
  }
  Atomics.store(claimWord(control), CLAIM, (BigInt(gen >>> 0) << 32n) | BigInt(count));
}

/**
 * Claims the next unclaimed chunk of run `gen`.
 *
 * @param control The control buffer.
 * @param gen The generation the caller woke for.
 * @returns The chunk's index, or -1 when run `gen` has no chunk left or is no longer the open run.
 * @example
 * ```ts
 * import { claimChunk, controlBytes, openRun } from "./_wasm_control.ts";
 * const control = new SharedArrayBuffer(controlBytes(1, 1));
 * openRun(control, 2, 1);
 * console.log(claimChunk(control, 1)); // -1
 * ```
 */
export function claimChunk(control: SharedArrayBuffer, gen: number): number {
  const word = claimWord(control);
  for (;;) {
    const seen = Atomics.load(word, CLAIM);
    if (Number(seen >> 32n) !== gen >>> 0) return -1;
    const next = Number((seen >> 16n) & 0xffffn);
    if (next >= Number(seen & 0xffffn)) return -1;
    if (Atomics.compareExchange(word, CLAIM, seen, seen + 0x10000n) === seen) return next;
  }
}

/**
 * Polls `words[index]` with `Atomics.load` while it equals `value`, at most `ms` milliseconds.
 *
 * @param words The shared words.
 * @param index Which word.
 * @param value The value to wait out.
 * @param ms Longest poll, ms.
 * @returns Whether the word changed.
 * @example
 * ```ts
 * import { spinWhile } from "./_wasm_control.ts";
 * const words = new Int32Array(new SharedArrayBuffer(4));
 * console.log(spinWhile(words, 0, 1, 0.05)); // true
 * ```
 */
export function spinWhile(words: Int32Array, index: number, value: number, ms: number): boolean {
  const until = performance.now() + ms;
  for (;;) {
    if (Atomics.load(words, index) !== value) return true;
    if (performance.now() >= until) return false;
  }
}

function claimWord(control: SharedArrayBuffer): BigUint64Array {
  return new BigUint64Array(control, 0, CLAIM + 1);
}

/**
 * The argument lists of the current run's chunks.
 *
 * @example
 * ```ts
 * import { ChunkTable, controlBytes } from "./_wasm_control.ts";
 * const table = new ChunkTable(new SharedArrayBuffer(controlBytes(1, 2)), 1, 2);
 * table.set(1, [3, 4]);
 * console.log(table.args(1)); // [3, 4]
 * ```
 */
export class ChunkTable {
  /** Most chunks the table holds. */
  readonly capacity: number;
  readonly #counts: Int32Array;
  readonly #args: Float64Array;

  /**
   * @param control The control buffer.
   * @param workers Number of workers it was sized for.
   * @param capacity Most chunks it was sized for.
   */
  constructor(control: SharedArrayBuffer, workers: number, capacity: number) {
    const base = HEADER_BYTES + ERROR_BYTES * workers;
    this.capacity = capacity;
    this.#counts = new Int32Array(control, base, (CHUNK_BYTES / 4) * capacity);
    this.#args = new Float64Array(control, base, (CHUNK_BYTES / 8) * capacity);
  }

  /**
   * Sets chunk `index`'s arguments, or no work (`null`).
   *
   * @throws {RangeError} when `index` is past the capacity or `args` is too long.
   */
  set(index: number, args: readonly number[] | null): void {
    if (index >= this.capacity) {
      throw new RangeError(`Cannot store chunk ${index}: the table holds ${this.capacity}`);
    }
    if (args && args.length > MAX_ARGS) {
      throw new RangeError(`A wasm kernel takes at most ${MAX_ARGS} arguments, got ${args.length}`);
    }
    this.#counts[(CHUNK_BYTES / 4) * index] = args ? args.length : -1;
    if (args) this.#args.set(args, (CHUNK_BYTES / 8) * index + CHUNK_HEADER / 8);
  }

  /** Chunk `index`'s arguments, or `null` when it has no work. */
  args(index: number): number[] | null {
    const count = this.#counts[(CHUNK_BYTES / 4) * index]!;
    if (count < 0) return null;
    const at = (CHUNK_BYTES / 8) * index + CHUNK_HEADER / 8;
    return Array.from(this.#args.subarray(at, at + count));
  }
}

/**
 * One worker's error block: why its last chunk failed, if one did.
 *
 * @example
 * ```ts
 * import { WorkerSlot, controlBytes } from "./_wasm_control.ts";
 * const slot = new WorkerSlot(new SharedArrayBuffer(controlBytes(1, 1)), 0);
 * slot.setError("trap");
 * console.log(slot.error()); // "trap"
 * ```
 */
export class WorkerSlot {
  readonly #length: Int32Array;
  readonly #error: Uint8Array;

  /**
   * @param control The control buffer.
   * @param index The worker's index.
   */
  constructor(control: SharedArrayBuffer, index: number) {
    const base = HEADER_BYTES + ERROR_BYTES * index;
    this.#length = new Int32Array(control, base, 1);
    this.#error = new Uint8Array(control, base + 4, ERROR_MAX);
  }

  /** Forgets the last error, before a new run. */
  clear(): void {
    this.#length[0] = 0;
  }

  /** Records why a chunk failed (truncated to fit). */
  setError(message: string): void {
    const { written } = new TextEncoder().encodeInto(message, this.#error);
    this.#length[0] = written;
  }

  /** Why a chunk of the last run failed, or `null`. */
  error(): string | null {
    const length = this.#length[0]!;
    return length === 0 ? null : new TextDecoder().decode(this.#error.slice(0, length));
  }
}

/** Main thread → worker: share the control buffer and memory, start serving runs. */
export interface InitMessage {
  readonly kind: "init";
  readonly control: SharedArrayBuffer;
  readonly memory: WebAssembly.Memory;
  readonly index: number;
  /** Workers in the pool, which places the chunk table. */
  readonly workers: number;
  /** Chunks the table holds. */
  readonly chunks: number;
  /** The generation counter when the message was posted: runs after it are new. */
  readonly gen: number;
}

/** Main thread → worker: instantiate `module` on the shared memory as `slot`. */
export interface LoadMessage {
  readonly kind: "load";
  readonly slot: number;
  readonly module: WebAssembly.Module;
}

/** Worker → main thread: the answer to a {@linkcode LoadMessage}. */
export interface LoadedMessage {
  readonly kind: "loaded";
  readonly slot: number;
  /** Why instantiation failed, when it did. */
  readonly error?: string;
}
