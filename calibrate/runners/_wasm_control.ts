/**
 * Layout of the small `SharedArrayBuffer` through which the `wasm-mt` pool hands work to its
 * workers: a header (generation, pending count, module slot), then one block per worker with its
 * arguments and, after a trap, its error text. Shared by the pool and the worker module.
 *
 * @module
 */

/** Int32 index of the generation counter, bumped once per run to wake the workers. */
export const GEN = 0;
/** Int32 index of the number of workers that have not finished the current run. */
export const PENDING = 1;
/** Int32 index of the module slot the current run executes. */
export const SLOT = 2;

const HEADER_BYTES = 64;
const WORKER_BYTES = 512;
const ARGS_OFFSET = 16;

/** Most arguments a kernel's `run` may take. */
export const MAX_ARGS = 16;

const ERROR_OFFSET = ARGS_OFFSET + 8 * MAX_ARGS;
const ERROR_MAX = WORKER_BYTES - ERROR_OFFSET;

/**
 * Bytes of a control buffer for `workers` workers.
 *
 * @param workers Number of workers.
 * @returns The byte length.
 * @example
 * ```ts
 * import { controlBytes } from "./_wasm_control.ts";
 * console.log(controlBytes(1)); // 576
 * ```
 */
export function controlBytes(workers: number): number {
  return HEADER_BYTES + WORKER_BYTES * workers;
}

/**
 * One worker's block: whether it has work, its arguments, and its error text.
 *
 * @example
 * ```ts
 * import { WorkerSlot, controlBytes } from "./_wasm_control.ts";
 * const slot = new WorkerSlot(new SharedArrayBuffer(controlBytes(1)), 0);
 * slot.setArgs([1, 2]);
 * console.log(slot.args()); // [1, 2]
 * ```
 */
export class WorkerSlot {
  readonly #ints: Int32Array;
  readonly #args: Float64Array;
  readonly #error: Uint8Array;

  /**
   * @param control The control buffer.
   * @param index The worker's index.
   */
  constructor(control: SharedArrayBuffer, index: number) {
    const base = HEADER_BYTES + WORKER_BYTES * index;
    this.#ints = new Int32Array(control, base, 4);
    this.#args = new Float64Array(control, base + ARGS_OFFSET, MAX_ARGS);
    this.#error = new Uint8Array(control, base + ERROR_OFFSET, ERROR_MAX);
  }

  /** Gives the worker `args` for the next run, or no work (`null`). */
  setArgs(args: readonly number[] | null): void {
    if (args && args.length > MAX_ARGS) {
      throw new RangeError(`A wasm kernel takes at most ${MAX_ARGS} arguments, got ${args.length}`);
    }
    this.#ints[0] = args ? args.length : -1;
    this.#ints[1] = 0;
    if (args) this.#args.set(args);
  }

  /** The arguments of the current run, or `null` when the worker has no work. */
  args(): number[] | null {
    const count = this.#ints[0]!;
    return count < 0 ? null : Array.from(this.#args.subarray(0, count));
  }

  /** Records why the run failed (truncated to fit). */
  setError(message: string): void {
    const { written } = new TextEncoder().encodeInto(message, this.#error);
    this.#ints[1] = written;
  }

  /** Why the last run failed, or `null`. */
  error(): string | null {
    const length = this.#ints[1]!;
    return length === 0 ? null : new TextDecoder().decode(this.#error.slice(0, length));
  }
}

/** Main thread → worker: share the control buffer and memory, start serving runs. */
export interface InitMessage {
  readonly kind: "init";
  readonly control: SharedArrayBuffer;
  readonly memory: WebAssembly.Memory;
  readonly index: number;
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
