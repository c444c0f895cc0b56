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
import type { Backend, Dtype } from "../kernels/types.ts";
import type { Report } from "../core/schema.ts";
import type { Mode } from "./plan.ts";
import type { ProgressEvent } from "./progress.ts";
import type { Runner } from "./runner.ts";
import { CalibrationSession } from "./session.ts";

/**
 * Options of {@linkcode calibrate}.
 *
 * @example
 * ```ts
 * import type { CalibrateOptions } from "./calibrate.ts";
 * const o: CalibrateOptions = { quick: true, ops: ["matmul"], backends: ["wasm", "webgpu"] };
 * ```
 */
export interface CalibrateOptions {
  /**
   * The mode: `quick` (under 45 s here), `default` (a 5-minute plan here) or `thorough` (every
   * size, budget and pass; about half an hour here). Default: `quick` when `quick` is set, else
   * `default`.
   */
  readonly mode?: Mode;
  /** A short run: the same as `mode: "quick"`. */
  readonly quick?: boolean;
  /** Ops to calibrate (default: all in the catalog). */
  readonly ops?: readonly string[];
  /** Dtypes to calibrate (default: all each op supports). */
  readonly dtypes?: readonly Dtype[];
  /** Backends to calibrate (default: all). */
  readonly backends?: readonly Backend[];
  /**
   * A hard wall-clock limit in seconds: when spent, measuring stops and the report is written with
   * `complete: false`. (The modes' own time plans end complete.)
   */
  readonly budgetS?: number;
  /** Report path; the default is `reports/<machine-slug>.json`. */
  readonly out?: string;
  /** A previous report of this machine to continue: finished measurements are not redone. */
  readonly resume?: Report;
  /** Where `resume` came from, for the report's provenance. */
  readonly resumePath?: string;
  /** Aborting it (Ctrl-C) stops measuring and writes a partial report. */
  readonly signal?: AbortSignal;
  /** Told of every step. */
  readonly onProgress?: (event: ProgressEvent) => void;
  /** The command line, for the report's provenance. */
  readonly command?: readonly string[];
  /**
   * Validate the LLM tokens/sec estimate against a synthetic WebGPU decode after the ops
   * (default: on with an adapter, except in a quick run).
   */
  readonly llm?: boolean;
  /**
   * Passes over the sweep: after the first, every point of a fitted series (three sizes or more)
   * is measured again in a window minutes later and the windows are pooled (in the default mode,
   * only the points that missed their confidence target). Default: the mode's (2, or 1 quick).
   */
  readonly passes?: number;
  /**
   * Opens a CPU backend's runner instead of {@linkcode openRunner} (tests wrap a real runner
   * to inject stalls).
   */
  readonly openCpuRunner?: (backend: Backend) => Promise<Runner | string>;
}

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
