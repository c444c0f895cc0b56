/**
 * The host's `throughput` reference timed on every core at once, one worker per core, the
 * slowest of them kept: what a multi-threaded backend waits for. The main-thread reference sees
 * one core; wasm-mt's chunks and lavapipe's threads finish when their slowest core does, and on a
 * 2-vCPU VM one vCPU ran a cache-resident sum ×1.35 slower than the other (both pinned with
 * `taskset`) while a synthetic decode ran 29–31 ms a token instead of 21.
 *
 * @module
 */

/**
 * Workers timing the throughput reference together.
 *
 * @example
 * ```ts ignore
 * import { AllCoresReference } from "./_all_cores.ts";
 * const all = new AllCoresReference(2);
 * console.log(await all.time()); // the slowest core's median ms
 * all.close();
 * ```
 */
export class AllCoresReference {
  readonly #workers: Worker[];

  /**
   * Starts one worker per core.
   *
   * @param cores How many workers (the machine's logical cores).
   */
  constructor(cores: number) {
    this.#workers = Array.from(
      { length: Math.max(1, cores) },
      () => new Worker(new URL("./_host_worker.ts", import.meta.url), { type: "module" }),
    );
  }

  /**
   * Times the reference on every worker at the same moment.
   *
   * @returns The slowest worker's median ms.
   */
  async time(): Promise<number> {
    const times = await Promise.all(
      this.#workers.map((w) =>
        new Promise<number>((resolve, reject) => {
          w.onmessage = (e: MessageEvent<number>) => resolve(e.data);
          w.onerror = (e) => reject(new Error(`host reference worker failed: ${e.message}`));
          w.postMessage(null);
        })
      ),
    );
    return Math.max(...times);
  }

  /** Stops the workers. */
  close(): void {
    for (const w of this.#workers) w.terminate();
  }
}
