/**
 * The `wasm-mt` worker pool: workers that instantiate the same modules on one shared memory and
 * help run a kernel's chunks when the main thread bumps a generation counter.
 *
 * Chunks are self-scheduled (like OpenMP `schedule(dynamic)`): the caller and the workers claim
 * them one at a time from a shared counter, so a worker that wakes late or loses its core to
 * another process leaves its share to the others instead of holding the run back. The caller
 * waits only for chunks that were claimed and are still running, never for a worker that has
 * not woken up yet.
 *
 * A run costs one `Atomics.notify`, one compare-and-swap per chunk and, when a worker is still
 * busy at the end, a short poll then one blocking `Atomics.wait` on the main thread; waking is
 * about 6 µs here, against about 220 µs for a `postMessage` round trip.
 *
 * @module
 */
import {
  ChunkTable,
  claimChunk,
  controlBytes,
  GEN,
  type InitMessage,
  type LoadedMessage,
  type LoadMessage,
  openRun,
  PENDING,
  SLOT,
  SPIN_MS,
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
 * const pool = new WorkerPool(memory, 1, 8);
 * pool.close();
 * ```
 */
export class WorkerPool {
  /** Number of workers (threads besides the caller). */
  readonly size: number;
  readonly #memory: WebAssembly.Memory;
  readonly #control: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #table: ChunkTable;
  readonly #slots: WorkerSlot[];
  #workers: Worker[] = [];
  readonly #loaded = new WeakMap<WebAssembly.Module, number>();
  readonly #waiters = new Map<string, Waiter>();
  #nextSlot = 0;
  #broken: Error | null = null;

  /**
   * @param memory The shared memory every instance imports.
   * @param size Number of workers.
   * @param chunks Most chunks one run may have.
   * @throws {RangeError} when `chunks` exceeds `MAX_CHUNKS`.
   */
  constructor(memory: WebAssembly.Memory, size: number, chunks: number) {
    this.size = size;
    this.#memory = memory;
    this.#control = new SharedArrayBuffer(controlBytes(size, chunks));
    this.#header = new Int32Array(this.#control);
    this.#table = new ChunkTable(this.#control, size, chunks);
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
   * Runs every chunk of `args` once, on whichever thread claims it first: the workers run slot
   * `slot` with the chunk's arguments, the caller passes them to `own`. Returns when every chunk
   * is done; a run of one chunk stays on the caller.
   *
   * @param slot A slot from {@linkcode WorkerPool.load}.
   * @param args One argument list per chunk (`null`: no work).
   * @param own Runs one chunk on the caller.
   * @throws {RangeError} when there are more chunks than the pool was sized for.
   * @throws {Error} when a chunk failed (after every thread has stopped).
   */
  run(
    slot: number,
    args: readonly (readonly number[] | null)[],
    own: (args: readonly number[]) => void,
  ): void {
    this.#check();
    if (this.size === 0 || args.length <= 1) {
      for (const a of args) if (a) own(a);
      return;
    }
    if (args.length > this.#table.capacity) {
      throw new RangeError(
        `Cannot run ${args.length} chunks: this pool holds ${this.#table.capacity} per run`,
      );
    }
    // Everything a worker reads is written before the run opens and the generation moves; no
    // worker is mid-chunk here, since the last run returned only once its chunks were done.
    args.forEach((a, i) => this.#table.set(i, a));
    for (const s of this.#slots) s.clear();
    Atomics.store(this.#header, SLOT, slot);
    Atomics.store(this.#header, PENDING, args.length);
    const gen = (Atomics.load(this.#header, GEN) + 1) | 0;
    openRun(this.#control, gen, args.length);
    Atomics.store(this.#header, GEN, gen);
    Atomics.notify(this.#header, GEN);
    let failed = false;
    let failure: unknown;
    for (let chunk: number; (chunk = claimChunk(this.#control, gen)) >= 0;) {
      // The caller keeps claiming after a failure, so no chunk is left unclaimed and the wait
      // below ends.
      try {
        const a = args[chunk];
        if (a) own(a);
      } catch (error) {
        if (!failed) [failed, failure] = [true, error];
      }
      Atomics.sub(this.#header, PENDING, 1);
    }
    this.#awaitWorkers();
    if (failed) throw failure;
    for (const [i, s] of this.#slots.entries()) {
      const error = s.error();
      if (error) throw new Error(`Worker ${i} failed running the kernel: ${error}`);
    }
  }

  /**
   * Blocks until the chunks the workers claimed are done, polling for {@linkcode SPIN_MS} before
   * it sleeps. The sleep is sliced so a worker that never finishes its chunk (died, or stuck)
   * cannot hang the process: past {@linkcode WORKER_HANG_MS} the pool is closed and the run
   * throws, and the measurement is recorded as failed.
   */
  #awaitWorkers(): void {
    const started = performance.now();
    let pending = Atomics.load(this.#header, PENDING);
    while (pending > 0 && performance.now() - started < SPIN_MS) {
      pending = Atomics.load(this.#header, PENDING);
    }
    while ((pending = Atomics.load(this.#header, PENDING)) !== 0) {
      if (pending < 0) {
        this.#broken = new Error(`wasm-mt chunks finished ${-pending} time(s) too often`);
        this.close();
        throw this.#broken;
      }
      Atomics.wait(this.#header, PENDING, pending, WAIT_SLICE_MS);
      if (performance.now() - started > WORKER_HANG_MS) {
        const error = new Error(
          `${pending} wasm-mt chunk(s) claimed by workers did not finish within ${
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
        workers: this.size,
        chunks: this.#table.capacity,
        gen,
      };
      worker.postMessage(init);
      return worker;
    });
  }
}
