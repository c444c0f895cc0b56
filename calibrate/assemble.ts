/**
 * Puts a report together from a run's context, its raw measurements and its system figures.
 * Pure apart from reading the clock through the context it is given.
 *
 * @module
 */
import config from "../deno.json" with { type: "json" };
import type { OpSpec } from "../kernels/types.ts";
import {
  type CalibrationMode,
  type Report,
  SCHEMA_VERSION,
  type SystemFigures,
} from "../core/schema.ts";
import type { EarlierRun, Measurement } from "../core/schema.ts";
import { allCrossovers, fitAll, peakRates, thresholdTable, tuningTable } from "./analyze.ts";
import type { GpuInfo } from "./device.ts";
import type { MachineInfo } from "./machine.ts";
import { WEBGPU_NOT_CALIBRATED } from "./summary.ts";
import { type StabilityProbe, summarizeStability } from "./stability.ts";

/** gpucal's version, written into every report: `deno.json`'s, so there is one source. */
export const GPUCAL_VERSION: string = config.version;

/**
 * What a run knows about itself.
 *
 * @example
 * ```ts
 * import type { RunContext } from "./assemble.ts";
 * function label(c: RunContext) { return c.slug; }
 * ```
 */
export interface RunContext {
  readonly machine: MachineInfo;
  /** The adapter the run measured, or null. */
  readonly gpu: GpuInfo | null;
  /**
   * The machine's adapter when the run left WebGPU out by choice (`--backends` without it):
   * recorded, so the fingerprint and `adapter` match a full run's, but not measured.
   */
  readonly unmeasuredAdapter?: GpuInfo | null;
  readonly fingerprint: string;
  readonly slug: string;
  readonly quick: boolean;
  /** The calibration mode, when the run had one. */
  readonly mode?: CalibrationMode;
  readonly budgetS: number | null;
  readonly command: readonly string[];
  readonly resumedFrom: string | null;
  readonly warnings: readonly string[];
  readonly startedAt: Date;
  readonly durationS: number;
  /** Git commit of the gpucal checkout, when known. */
  readonly commit?: string | null;
  /** Drift probes taken so far (`calibrate/stability.ts`); no `stability` section when absent. */
  readonly probes?: readonly StabilityProbe[];
  /** Earlier calibrations of this machine, carried over from the report this run replaces. */
  readonly earlierRuns?: readonly EarlierRun[];
  /** The date of the report whose measurements the run's pool with (`calibrate/pool.ts`). */
  readonly pooledWith?: string;
}

/**
 * Recognises the warning {@linkcode assembleReport} adds for a noisy run, so a resumed run
 * recomputes it instead of repeating it.
 *
 * @example
 * ```ts
 * import { NOISY_WARNING } from "./assemble.ts";
 * console.log(NOISY_WARNING.test("3 of 9 measurements missed the ±2 % confidence target")); // true
 * ```
 */
export const NOISY_WARNING = /measurements missed the ±2 % confidence target/;

const MISSING = (reason: string, unit: string) =>
  ({ value: null, unit, tag: "measured", reason }) as const;

/**
 * System figures for a run that has none (CPU-only, or interrupted before they were measured).
 *
 * @param reason Why they are missing.
 * @returns Figures whose values are null with the reason.
 * @example
 * ```ts
 * import { missingSystemFigures } from "./assemble.ts";
 * console.log(missingSystemFigures("No WebGPU adapter").uploadGBps.value); // null
 * ```
 */
export function missingSystemFigures(reason: string): SystemFigures {
  return {
    dispatchRoundTripMs: MISSING(reason, "ms"),
    perDispatchUs: MISSING(reason, "us"),
    encodePerDispatchUs: MISSING(reason, "us"),
    readbackRoundTripMs: MISSING(reason, "ms"),
    uploadGBps: MISSING(reason, "GB/s"),
    readbackGBps: MISSING(reason, "GB/s"),
    copyGBps: MISSING(reason, "GB/s"),
    compileMs: MISSING(reason, "ms"),
    peakGflops: {},
    peakGbps: {},
  };
}

/**
 * Builds the report.
 *
 * @param ctx The run's context.
 * @param measurements Every raw measurement.
 * @param system Transfer/dispatch figures, or null when not measured.
 * @param complete Whether the run finished everything it planned.
 * @param stopReason Why it stopped.
 * @param ops The op catalog (for axes and complexity classes).
 * @returns The report (schema version {@linkcode SCHEMA_VERSION}).
 * @example
 * ```ts ignore
 * import { assembleReport } from "./assemble.ts";
 * const report = assembleReport(ctx, measurements, null, false, "interrupted", OPS);
 * ```
 */
export function assembleReport(
  ctx: RunContext,
  measurements: readonly Measurement[],
  system: SystemFigures | null,
  complete: boolean,
  stopReason: Report["provenance"]["stopReason"],
  ops: readonly OpSpec[],
): Report {
  const fits = fitAll(measurements);
  const stability = ctx.probes && ctx.probes.length > 0
    ? summarizeStability(ctx.probes, ctx.earlierRuns)
    : null;
  const crossovers = allCrossovers(measurements, fits, ops, stability?.driftSigma);
  const peaks = peakRates(measurements, ops);
  const base = ctx.unmeasuredAdapter
    ? missingSystemFigures(WEBGPU_NOT_CALIBRATED)
    : system ?? missingSystemFigures(
      ctx.gpu ? "Not measured: the run stopped before the system figures" : "No WebGPU adapter",
    );
  const adapter = ctx.gpu ?? ctx.unmeasuredAdapter ?? null;
  const ok = measurements.filter((m) => m.state === "ok");
  const noisyCount = ok.filter((m) => m.state === "ok" && m.noisy).length;
  const noisy = ok.length > 0 && noisyCount / ok.length > 0.25;
  const warnings = [...ctx.warnings];
  if (noisy) {
    warnings.push(
      `${noisyCount} of ${ok.length} measurements missed the ±2 % confidence target: this machine was noisy; treat close crossovers with care`,
    );
  }
  const memoryGiB = ctx.machine.memoryBytes === null ? 0 : ctx.machine.memoryBytes / 2 ** 30;
  return {
    schemaVersion: SCHEMA_VERSION,
    gpucal: { version: GPUCAL_VERSION, commit: ctx.commit ?? null },
    provenance: {
      date: ctx.startedAt.toISOString(),
      denoVersion: ctx.machine.denoVersion,
      command: [...ctx.command],
      durationS: ctx.durationS,
      complete,
      stopReason,
      budgetS: ctx.budgetS,
      quick: ctx.quick,
      ...(ctx.mode ? { mode: ctx.mode } : {}),
      noisy,
      warnings,
      resumedFrom: ctx.resumedFrom,
      glibcTunables: ctx.machine.glibcTunables,
      ...(ctx.machine.driverEnv === null ? {} : { driverEnv: { ...ctx.machine.driverEnv } }),
      ...(ctx.pooledWith ? { pooledWith: ctx.pooledWith } : {}),
    },
    machine: {
      cpuModel: ctx.machine.cpuModel,
      cores: ctx.machine.cores,
      memoryGiB: Math.round(memoryGiB * 10) / 10,
      os: ctx.machine.os,
      osRelease: ctx.machine.osRelease,
      arch: ctx.machine.arch,
    },
    adapter: adapter
      ? {
        description: adapter.description,
        vendor: adapter.vendor,
        architecture: adapter.architecture,
        device: adapter.device,
        backend: adapter.backend,
        backendSource: adapter.backendSource,
        software: adapter.software,
        features: [...adapter.features],
        limits: { ...adapter.limits },
      }
      : null,
    fingerprint: ctx.fingerprint,
    slug: ctx.slug,
    measurements: [...measurements],
    fits,
    crossovers,
    tuning: tuningTable(measurements, ops),
    system: { ...base, peakGflops: peaks.peakGflops, peakGbps: peaks.peakGbps },
    thresholds: thresholdTable(crossovers),
    ...(stability ? { stability } : {}),
  };
}
