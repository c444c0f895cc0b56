/**
 * What a calibration run is told: its mode, ops, backends, budget, output and resume, and the
 * hooks it calls back (progress, the LLM decode validation, CPU runners).
 *
 * @module
 */
import type { Backend, Dtype } from "../kernels/types.ts";
import type { CalibrationMode, Report } from "../core/schema.ts";
import type { GpuHandle } from "./device.ts";
import type { LlmValidationPlan } from "./plan.ts";
import type { ProgressEvent } from "./progress.ts";
import type { Runner } from "./runner.ts";
import type { Checkout } from "./checkout.ts";

/**
 * Validates the LLM decode estimate on the run's adapter against the report so far; it warns
 * through `warn` and returns null when the validation cannot run, so the op measurements stand.
 * With `sample`, the run also calls it between jobs (every `plan.sampleEveryS`), so the decode is
 * measured through the run and not only in its last minute.
 *
 * @example
 * ```ts
 * import type { LlmValidator } from "./options.ts";
 * const skip: LlmValidator = (_gpu, _report, _plan, warn) => {
 *   warn("LLM decode validation skipped: no model");
 *   return Promise.resolve(null);
 * };
 * ```
 */
export interface LlmValidator {
  (
    gpu: GpuHandle,
    report: Report,
    plan: LlmValidationPlan,
    warn: (message: string) => void,
  ): Promise<Report["llm"]>;
  /**
   * Decodes once now, with the report so far, for the validation at the end to pool; false when
   * the report cannot price the decode yet (the run asks again after the next job).
   */
  readonly sample?: (gpu: GpuHandle, report: Report, plan: LlmValidationPlan) => Promise<boolean>;
}

/**
 * Options of `calibrate()` (`calibrate.ts`).
 *
 * @example
 * ```ts
 * import type { CalibrateOptions } from "./options.ts";
 * const o: CalibrateOptions = { quick: true, ops: ["matmul"], backends: ["wasm", "webgpu"] };
 * ```
 */
export interface CalibrateOptions {
  /**
   * The mode: `quick` (about 50 s here), `default` (a 5-minute plan here) or `thorough` (every
   * size, budget and pass; about half an hour here). Default: `quick` when `quick` is set, else
   * `default`.
   */
  readonly mode?: CalibrationMode;
  /** A short run: the same as `mode: "quick"`. */
  readonly quick?: boolean;
  /** Ops to calibrate (default: all in the catalog). */
  readonly ops?: readonly string[];
  /**
   * Dtypes to calibrate (default: all each op supports; in a quick run all but f16, and the
   * report says f16 was not measured).
   */
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
  /**
   * Earlier reports of this machine (the report this run replaces, and any named with
   * `--earlier-runs-from`): those whose fingerprint is this run's give their median probe times,
   * and the earlier runs they carried, to `stability.earlierRuns`, from which the report states
   * how far whole runs of this machine move (`betweenRunSigma`).
   */
  readonly earlier?: readonly Report[];
  /**
   * The report this run replaces: a run that finishes its measurements pools them with it
   * (`calibrate/pool.ts`) when it is of this machine and mode, complete, run on the same Deno,
   * measured by the code this checkout measures with and with the same driver settings; otherwise
   * the run says why not and keeps its own.
   */
  readonly poolWith?: Report;
  /** The gpucal checkout (`checkout.ts`); read with git when absent. */
  readonly checkout?: Checkout;
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
   * Runs the LLM decode validation: gpucal's own is `validateLlm` in `decode/hook.ts`, which the
   * `calibrate` CLI and `mod.ts`'s `calibrate` pass in. Without it the run has no LLM step.
   */
  readonly validateLlm?: LlmValidator;
  /**
   * Passes over the sweep: after the first, every point of a fitted series (three sizes or more)
   * is measured again in a window minutes later and the windows are pooled (in the default mode,
   * only the points that missed their confidence target). Default: the mode's (2, or 1 quick).
   */
  readonly passes?: number;
  /**
   * Opens a CPU backend's runner instead of `openRunner` (tests wrap a real runner
   * to inject stalls).
   */
  readonly openCpuRunner?: (backend: Backend) => Promise<Runner | string>;
}
