/**
 * `calibrate()`: sweeps every op over sizes, dtypes, backends and variants on this machine, fits
 * cost models and crossovers, and writes the report — atomically after every op, so an
 * interrupted or over-budget run keeps what it measured and `--resume` continues it.
 *
 * It is a loop: a `Planner` (`planner.ts`) decides what to measure next and when to stop, a
 * `CalibrationSession` (`session.ts`) performs each step on this machine.
 *
 * @module
 */
import type { Report } from "../core/schema.ts";
import type { CalibrateOptions } from "./options.ts";
import { CalibrationSession } from "./session.ts";

export type { CalibrateOptions, LlmValidator } from "./options.ts";

/**
 * What {@linkcode calibrate} returns.
 *
 * @example
 * ```ts
 * import type { CalibrationResult } from "./calibrate.ts";
 * function where(r: CalibrationResult) { return r.path; }
 * ```
 */
export interface CalibrationResult {
  /** The report as written. */
  readonly report: Report;
  /** Where it was written. */
  readonly path: string;
}

/**
 * Calibrates this machine and writes the report.
 *
 * @param options What to calibrate, budget, output, resume, progress, abort signal.
 * @returns The report and where it was written.
 * @throws {RangeError} for an unknown op name.
 * @example
 * ```ts ignore
 * import { calibrate } from "./calibrate.ts";
 * const { report, path } = await calibrate({ quick: true, ops: ["add"] });
 * console.log(path, report.crossovers.length);
 * ```
 */
export async function calibrate(options: CalibrateOptions = {}): Promise<CalibrationResult> {
  const session = await CalibrationSession.open(options);
  const planner = session.planner();
  let stopReason: Report["provenance"]["stopReason"] = "finished";
  let report: Report;
  try {
    for (let step = planner.next(); step && !session.signal.aborted; step = planner.next()) {
      planner.observe(await session.perform(step));
    }
    stopReason = session.stopReason();
  } catch (e) {
    stopReason = "error";
    session.warn(`Calibration stopped by an error: ${e instanceof Error ? e.message : String(e)}`);
    throw e;
  } finally {
    report = await session.finish(stopReason);
  }
  return { report, path: session.path };
}
