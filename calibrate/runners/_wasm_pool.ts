/**
 * The `wasm-mt` worker pool: workers that instantiate the same modules on one shared memory and
 * run their share of a kernel when the main thread bumps a generation counter.
 *
 * A run costs one `Atomics.notify` and one blocking `Atomics.wait` on the main thread; that is
 * about 6 µs here, against about 220 µs for a `postMessage` round trip.
 *
 * @module
 */
import {
  controlBytes,
  GEN,
  type InitMessage,
  type LoadedMessage,
  type LoadMessage,
  PENDING,
  SLOT,
  WorkerSlot,
} from "./_wasm_control.ts";

/** Longest a run waits for its workers before the pool is declared hung, ms. */
export const WORKER_HANG_MS = 30_000;
/** The blocking wait is cut into slices this long, so the hang check runs, ms. */
const WAIT_SLICE_MS = 100;

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/**
 * A pool of `size` workers on `memory`; the calling thread is the pool's extra thread.
 *
 * @example
 * ```ts
 * import { WorkerPool } from "./_wasm_pool.ts";
 * const memory = new WebAssembly.Memory({ initial: 1, maximum: 16, shared: true });
 * const pool = new WorkerPool(memory, 1);
 * pool.close();
 * ```
 */
export class WorkerPool {
  /** Number of workers (threads besides the caller). */
  readonly size: number;
  readonly #memory: WebAssembly.Memory;
  readonly #control: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #slots: WorkerSlot[];
  #workers: Worker[] = [];
  readonly #loaded = new WeakMap<WebAssembly.Module, number>();
  readonly #waiters = new Map<string, Waiter>();
  #nextSlot = 0;
  #broken: Error | null = null;

  /**
   * @param memory The shared memory every instance imports.
   * @param size Number of workers.
   */
  constructor(memory: WebAssembly.Memory, size: number) {
    this.size = size;
    this.#memory = memory;
    this.#control = new SharedArrayBuffer(controlBytes(size));
    this.#header = new Int32Array(this.#control);
    this.#slots = Array.from({ length: size }, (_, i) => new WorkerSlot(this.#control, i));
  }

  /**
   * Instantiates `module` in every worker (once per module).
   *
   * @param module The compiled kernel.
   * @returns The slot to pass to {@linkcode WorkerPool.run}.
   * @throws {Error} when a worker fails to instantiate it or has died.
   */
  async load(module: WebAssembly.Module): Promise<number> {
    this.#check();
    const known = this.#loaded.get(module);
    if (known !== undefined) return known;
    this.#spawn();
    const slot = this.#nextSlot++;
    await Promise.all(this.#workers.map((worker, index) =>
      new Promise<void>((resolve, reject) => {
        this.#waiters.set(`${index}:${slot}`, { resolve, reject });
        const message: LoadMessage = { kind: "load", slot, module };
        worker.postMessage(message);
      })
    ));
    this.#loaded.set(module, slot);
    return slot;
  }

  /**
   * Runs slot `slot` with `args[i]` on worker `i` (`null`: no work) while the caller runs `own`,
   * and returns when all are done.
   *
   * @param slot A slot from {@linkcode WorkerPool.load}.
   * @param args One argument list (or `null`) per worker.
   * @param own The caller's share.
   * @throws {Error} when a worker trapped (after every thread has stopped).
   */
  run(slot: number, args: readonly (readonly number[] | null)[], own: () => void): void {
    this.#check();
    const busy = args.some((a) => a !== null);
    if (busy) {
      args.forEach((a, i) => this.#slots[i]!.setArgs(a));
      Atomics.store(this.#header, SLOT, slot);
      Atomics.store(this.#header, PENDING, this.size);
      Atomics.add(this.#header, GEN, 1);
      Atomics.notify(this.#header, GEN);
    }
    try {
      own();
    } finally {
      if (busy) this.#awaitWorkers();
    }
    if (busy) {
      for (const [i, s] of this.#slots.entries()) {
        const error = s.error();
        if (error) throw new Error(`Worker ${i} failed running the kernel: ${error}`);
      }
    }
  }

  /**
   * Blocks until every worker finished this generation. The wait is sliced so a worker that
   * never answers (died, or stuck) cannot hang the process: past {@linkcode WORKER_HANG_MS} the
   * pool is closed and the run throws, and the measurement is recorded as failed.
   */
  #awaitWorkers(): void {
    const started = performance.now();
    let pending: number;
    while ((pending = Atomics.load(this.#header, PENDING)) !== 0) {
      if (pending < 0) {
        this.#broken = new Error(`wasm-mt workers finished ${-pending} time(s) too often`);
        this.close();
        throw this.#broken;
      }
      Atomics.wait(this.#header, PENDING, pending, WAIT_SLICE_MS);
      if (performance.now() - started > WORKER_HANG_MS) {
        const error = new Error(
          `${pending} of ${this.size} wasm-mt workers did not finish within ${
            WORKER_HANG_MS / 1000
          } s; the worker pool was stopped`,
        );
        this.#broken = error;
        this.close();
        throw error;
      }
    }
  }

  /** Terminates the workers. Safe to call twice. */
  close(): void {
    for (const worker of this.#workers) worker.terminate();
    this.#workers = [];
    this.#broken ??= new Error("The worker pool is closed");
    for (const waiter of this.#waiters.values()) waiter.reject(this.#broken);
    this.#waiters.clear();
  }

  #check(): void {
    if (this.#broken) throw this.#broken;
  }

  #spawn(): void {
    if (this.#workers.length === this.size) return;
    const gen = Atomics.load(this.#header, GEN);
    this.#workers = Array.from({ length: this.size }, (_, index) => {
      const worker = new Worker(new URL("./_wasm_worker.ts", import.meta.url), { type: "module" });
      worker.onmessage = (event: MessageEvent<LoadedMessage>) => {
        const { slot, error } = event.data;
        const key = `${index}:${slot}`;
        const waiter = this.#waiters.get(key);
        this.#waiters.delete(key);
        if (error) {
          waiter?.reject(new Error(`Worker ${index} cannot instantiate the kernel: ${error}`));
        } else waiter?.resolve();
      };
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault();
        this.#broken = new Error(`Worker ${index} died: ${event.message}`);
        this.close();
      };
      const init: InitMessage = {
        kind: "init",
        control: this.#control,
        memory: this.#memory,
        index,
        gen,
      };
      worker.postMessage(init);
      return worker;
    });
  }
}
