/**
 * A time limit on a WebGPU synchronisation, so a hung device fails one measurement instead of
 * the whole calibration.
 *
 * @module
 */

/**
 * Races `promise` against a timer.
 *
 * @param promise The synchronisation (`mapAsync`, `onSubmittedWorkDone`...).
 * @param ms Longest wait, ms.
 * @param what What is being waited for, for the error message.
 * @returns The promise's value.
 * @throws {Error} when the timer fires first.
 * @example
 * ```ts
 * import { withWatchdog } from "./_watchdog.ts";
 * console.log(await withWatchdog(Promise.resolve(1), 1000, "a test")); // 1
 * ```
 */
export function withWatchdog<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `WebGPU did not finish ${what} within ${
              ms / 1000
            } s: the device may be hung, raise watchdogMs or shrink the case`,
          ),
        ),
      ms,
    );
  });
  // The race handles a late settlement of `promise`; clearing the timer lets the process exit.
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
