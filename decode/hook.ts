/**
 * The LLM decode validation as the hook `calibrate()` calls after the ops, and `calibrate()` with
 * it passed in: the measuring side (`calibrate/`) stays below `models/`, whose estimate the
 * decode checks.
 *
 * @module
 */
import {
  calibrate as calibrateWith,
  type CalibrateOptions,
  type CalibrationResult,
  type LlmValidator,
} from "../calibrate/calibrate.ts";
import type { GpuHandle } from "../calibrate/device.ts";
import type { LlmValidationPlan } from "../calibrate/plan.ts";
import type { Report } from "../core/schema.ts";
import type { DecodeSample } from "./validate.ts";

/**
 * The LLM decode validation, after the decode step probe (`step_probe.ts`) whose figures its
 * estimates use; with a warning and no validations when it cannot run (figures missing, decode
 * failed). Without samples: {@linkcode createLlmValidator} makes one that also samples the
 * decode through the run.
 *
 * @param gpu The run's adapter.
 * @param report The report so far.
 * @param plan The mode's decode options.
 * @param warn Told why the validation was skipped or failed.
 * @returns The validations, or null.
 * @example
 * ```ts ignore
 * import { validateLlm } from "./hook.ts";
 * import { openGpu } from "../calibrate/device.ts";
 * import { loadReport } from "../reports/load.ts";
 * const gpu = await openGpu();
 * if (gpu) console.log(await validateLlm(gpu, await loadReport("/tmp/r.json"), {}, console.warn));
 * ```
 */
export const validateLlm: LlmValidator = createLlmValidator({ samples: false });

/**
 * An LLM decode validation for one run: its `sample` decodes every pair between jobs (once the
 * report can price the decode) and the validation at the end pools those decodes with its own.
 * A sample that fails stops the sampling; the validation at the end says why.
 *
 * @param options `samples: false` leaves `sample` out.
 * @returns The validator.
 * @example
 * ```ts ignore
 * import { createLlmValidator } from "./hook.ts";
 * import { calibrate } from "../calibrate/calibrate.ts";
 * await calibrate({ validateLlm: createLlmValidator() });
 * ```
 */
export function createLlmValidator(options: { readonly samples?: boolean } = {}): LlmValidator {
  const earlier: DecodeSample[] = [];
  let sampling = options.samples ?? true;
  const validate = async (
    gpu: GpuHandle,
    report: Report,
    plan: LlmValidationPlan,
    warn: (message: string) => void,
  ) => {
    // Loaded on demand: a run without an adapter or with --no-llm never needs the decode.
    const { validateDecode } = await import("./validate.ts");
    const { measureStepProbe } = await import("./step_probe.ts");
    const { MissingCalibrationError } = await import("../models/llm/rates.ts");
    // Measured first, so the validations' estimates are the report's: what `deno task estimate`
    // gives on the report as written.
    const stepProbe = await measureStepProbe(gpu).catch((e) => {
      warn(`Decode step probe failed: ${e instanceof Error ? e.message : String(e)}`);
      return null;
    });
    const priced: Report = { ...report, llm: { validations: [], stepProbe } };
    try {
      return { validations: await validateDecode(gpu, priced, { ...plan, earlier }), stepProbe };
    } catch (e) {
      // The op measurements stand on their own: a decode that cannot run must not discard them.
      warn(
        e instanceof MissingCalibrationError
          ? `LLM decode validation skipped: ${e.message}`
          : `LLM decode validation failed: ${e instanceof Error ? e.message : String(e)}`,
      );
      return { validations: [], stepProbe };
    }
  };
  const sample = async (gpu: GpuHandle, report: Report, plan: LlmValidationPlan) => {
    if (!sampling) return false;
    const { sampleDecodes } = await import("./validate.ts");
    const { MissingCalibrationError } = await import("../models/llm/rates.ts");
    try {
      earlier.push(...await sampleDecodes(gpu, report, plan));
      return true;
    } catch (e) {
      if (!(e instanceof MissingCalibrationError)) sampling = false;
      return false;
    }
  };
  return sampling ? Object.assign(validate, { sample }) : validate;
}

/**
 * Calibrates this machine and writes the report, with the LLM decode validation
 * ({@linkcode validateLlm}) unless `options.validateLlm` replaces it.
 *
 * @param options What to calibrate, budget, output, resume, progress, abort signal.
 * @returns The report and where it was written.
 * @throws {RangeError} for an unknown op name.
 * @example
 * ```ts ignore
 * import { calibrate } from "./hook.ts";
 * const { report, path } = await calibrate({ quick: true, ops: ["add"] });
 * console.log(path, report.crossovers.length);
 * ```
 */
export function calibrate(options: CalibrateOptions = {}): Promise<CalibrationResult> {
  return calibrateWith({ validateLlm: createLlmValidator(), ...options });
}
