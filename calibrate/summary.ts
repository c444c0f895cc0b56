/**
 * The readable end of a calibration: crossovers, peak rates, system figures, the LLM decode
 * check, and what is extrapolated rather than measured.
 *
 * @module
 */
import type { DecodeStepProbe, LlmValidation, Report } from "../core/schema.ts";
import { formatSettings } from "./machine.ts";
import {
  formatFigure,
  formatNumber as fmt,
  formatPercent,
  formatSeconds,
  textTable,
} from "../core/format.ts";

/**
 * What the summary says when the machine has an adapter that the run left out by choice.
 *
 * @example
 * ```ts
 * import { WEBGPU_NOT_CALIBRATED } from "./summary.ts";
 * console.log(WEBGPU_NOT_CALIBRATED); // "webgpu not calibrated (--backends)"
 * ```
 */
export const WEBGPU_NOT_CALIBRATED = "webgpu not calibrated (--backends)";

/**
 * Whether a report measured its adapter: false when it records one but has no WebGPU measurement,
 * as after `--backends js,wasm` (the adapter is recorded so the fingerprint matches a full run's).
 *
 * @param report The report.
 * @returns True when there is no adapter to calibrate or it was measured.
 * @example
 * ```ts ignore
 * import { webgpuCalibrated } from "./summary.ts";
 * console.log(webgpuCalibrated(report));
 * ```
 */
export function webgpuCalibrated(report: Pick<Report, "adapter" | "measurements">): boolean {
  return report.adapter === null || report.measurements.some((m) => m.backend === "webgpu");
}

/** The summary's line on the runs the measurements pool, when they pool more than this run. */
function pooledLine(report: Report): string[] {
  const pooled = report.measurements.filter((m) => (m.runs ?? 1) > 1 && !m.carriedOver);
  const carried = report.measurements.filter((m) => m.carriedOver).length;
  if (report.provenance.pooledWith === undefined || pooled.length === 0) return [];
  const most = Math.max(...pooled.map((m) => m.runs!));
  return [
    `${pooled.length} measurement${
      pooled.length === 1 ? "" : "s"
    } pooled with the report it replaced (${report.provenance.pooledWith}), ` +
    `up to ${most} runs each: the geometric mean of the runs' medians (--fresh keeps a run's own)` +
    (carried === 0
      ? ""
      : `; ${carried} more of its cases carried over as they were: the sweeps of variants ` +
        `this run's screens passed over`),
  ];
}

/**
 * The summary printed at the end of `deno task calibrate`.
 *
 * @param report The report.
 * @param path Where it was written.
 * @returns The text.
 * @example
 * ```ts ignore
 * import { formatSummary } from "./summary.ts";
 * console.log(formatSummary(report, "reports/x.json"));
 * ```
 */
export function formatSummary(report: Report, path: string): string {
  const p = report.provenance;
  const adapter = report.adapter
    ? `${report.adapter.description} via ${report.adapter.backend}${
      report.adapter.software ? " (software)" : ""
    }${webgpuCalibrated(report) ? "" : `; ${WEBGPU_NOT_CALIBRATED}`}`
    : "none (CPU-only)";
  const ok = report.measurements.filter((m) => m.state === "ok").length;
  const failed = report.measurements.filter((m) => m.state === "failed");
  const settings = formatSettings(p.driverEnv);
  const lines = [
    `gpucal calibration of ${report.machine.cpuModel} ×${report.machine.cores}, adapter ${adapter}${
      settings === null ? "" : `, driver settings ${settings}`
    }`,
    `${p.complete ? "complete" : `INCOMPLETE (${p.stopReason})`} in ${
      formatSeconds(p.durationS)
    }: ${ok} measurements ok, ${failed.length} failed, ${
      report.measurements.length - ok - failed.length
    } unsupported`,
    ...pooledLine(report),
    "",
    "Crossovers (size where the second backend starts beating the first):",
    textTable(
      ["op", "dtype", "residency", "pair", "size", "95% CI", "tag / note"],
      report.crossovers.map((c) => [
        c.op,
        c.dtype,
        c.residency,
        c.pair,
        c.size === null ? "—" : `${fmt(c.size)}`,
        c.ci ? `[${fmt(c.ci[0])}, ${fmt(c.ci[1])}]` : "",
        c.size === null ? (c.reason ?? "") : `${c.tag} (${c.unit})`,
      ]),
    ),
    "",
    "Peak rates:",
    ...Object.entries(report.system.peakGflops).map(([d, f]) =>
      `  matmul ${d}: ${formatFigure(f!)}`
    ),
    ...Object.entries(report.system.peakGbps).map(([b, f]) =>
      `  bandwidth ${b}: ${formatFigure(f!)}`
    ),
    "",
    "System:",
    `  sync round trip  ${formatFigure(report.system.dispatchRoundTripMs)}`,
    ...(report.system.readbackRoundTripMs
      ? [`  read round trip  ${formatFigure(report.system.readbackRoundTripMs)}`]
      : []),
    `  per dispatch     ${formatFigure(report.system.perDispatchUs)}`,
    ...(report.system.encodePerDispatchUs
      ? [`  host encode      ${formatFigure(report.system.encodePerDispatchUs)}`]
      : []),
    `  upload           ${formatFigure(report.system.uploadGBps)}`,
    `  readback         ${formatFigure(report.system.readbackGBps)}`,
    `  device copy      ${formatFigure(report.system.copyGBps)}`,
    `  compile          ${formatFigure(report.system.compileMs)}`,
  ];
  lines.push(...driftLines(report), ...llmLines(report));
  const extrapolated = report.crossovers.filter((c) => c.tag === "extrapolated");
  if (extrapolated.length > 0) {
    lines.push(
      "",
      `Extrapolated beyond measured sizes: ${
        extrapolated.map((c) => `${c.op} ${c.dtype} ${c.pair} ${c.residency}`).join("; ")
      }`,
    );
  }
  if (failed.length > 0) {
    lines.push("", "Failed (wrong results are never timed):");
    for (const m of failed.slice(0, 10)) {
      lines.push(
        `  ${m.op} ${m.dtype} ${m.backend} ${m.variant} ${
          Object.values(m.shape).join("x")
        }: ${m.error}`,
      );
    }
  }
  if (p.warnings.length > 0) lines.push("", "Warnings:", ...p.warnings.map((w) => `  ${w}`));
  lines.push("", `Report: ${path}`);
  return lines.join("\n");
}

/**
 * How far each backend and the host itself moved: the drift probes' σ of ln time over this run,
 * and between runs when the report carries earlier ones. Nothing without stability data.
 */
function driftLines(report: Report): string[] {
  const s = report.stability;
  if (s === undefined || Object.keys(s.driftSigma).length === 0) return [];
  const sigmas = (bySigma: Partial<Record<string, number>>) =>
    Object.entries(bySigma).map(([b, sigma]) => `${b} ${formatPercent(sigma!)}`).join(", ");
  return [
    "",
    `Drift (σ of ln time of ${s.op} ${s.dtype} ${Object.values(s.shape).join("x")} per backend, ` +
    `${s.probes.length} probes):`,
    `  within this run   ${sigmas(s.driftSigma)}`,
    ...(s.hostDriftSigma === undefined ? [] : [
      `  the host alone    ${formatPercent(s.hostDriftSigma)} (a loop with none of gpucal's code)`,
    ]),
    ...(s.memoryDriftSigma === undefined ? [] : [
      `  the host's memory ${
        formatPercent(s.memoryDriftSigma)
      } (a sum over 32 MiB, the memory's speed)`,
    ]),
    ...(s.betweenRunSigma === undefined ? [] : [
      `  between runs      ${sigmas(s.betweenRunSigma)} (${(s.earlierRuns?.length ?? 0) + 1} runs)`,
    ]),
  ];
}

/**
 * The LLM decode check: per model and weight format, the report-only tokens/s against the
 * measured decode, with how many decodes over how long it pooled.
 */
function llmLines(report: Report): string[] {
  const validations = report.llm?.validations ?? [];
  if (validations.length === 0) return [];
  return [
    "",
    "LLM decode check (tokens/s estimated from this report alone, against a measured decode):",
    textTable(
      ["model", "weights", "estimated (range)", "measured", "error", "decodes"],
      validations.map((v) => {
        const d = v.details ?? {};
        const span = typeof d.decodeSpanS === "number" ? ` over ${d.decodeSpanS} s` : "";
        return [
          v.model,
          v.quant,
          describeEstimate(v),
          fmt(v.measuredTokensPerSec),
          formatPercent(v.error, true),
          typeof d.decodes === "number" ? `${d.decodes}${span}` : "",
        ];
      }),
    ),
    ...rangeHeld(validations),
    ...(report.llm?.stepProbe ? [describeStepProbe(report.llm.stepProbe)] : []),
  ];
}

/** How many measured decodes fell inside the range their estimate stated; nothing without one. */
function rangeHeld(validations: readonly LlmValidation[]): string[] {
  const ranged = validations.filter((v) => v.estimatedInterval);
  if (ranged.length === 0) return [];
  const inside = ranged.filter((v) => {
    const [slow, fast] = v.estimatedInterval!.tokensPerSec;
    return v.measuredTokensPerSec >= slow && v.measuredTokensPerSec <= fast;
  });
  return [
    `${inside.length} of ${ranged.length} measured decodes fell inside the range their estimate ` +
    `stated.`,
  ];
}

/**
 * A validation's estimate with the range it stated, as the summary, HTML and Markdown print it:
 * `42.4 (31.4–53.0 at 90 %)`, or the rate alone when the report has no range.
 *
 * @param v One LLM validation.
 * @returns The cell.
 * @example
 * ```ts
 * import { describeEstimate } from "./summary.ts";
 * console.log(describeEstimate({
 *   model: "tiny-16m", quant: "f32", measuredTokensPerSec: 34.4, estimatedTokensPerSec: 42.4,
 *   error: 0.23, estimatedInterval: { level: 0.9, tokensPerSec: [31.4, 53] },
 * })); // "42.4 (31.4–53 at 90 %)"
 * ```
 */
export function describeEstimate(v: LlmValidation): string {
  const range = v.estimatedInterval;
  if (!range) return fmt(v.estimatedTokensPerSec);
  const [slow, fast] = range.tokensPerSec;
  return `${fmt(v.estimatedTokensPerSec)} (${fmt(slow)}–${fmt(fast)} at ${
    Math.round(range.level * 100)
  } %)`;
}

/**
 * What the tokens/s estimate charges a decode step beyond its kernels, from the report's step
 * probe, in one sentence; or why the probe has no figures. The summary, HTML and Markdown say it
 * alike.
 *
 * @param probe The report's `llm.stepProbe`.
 * @returns The sentence.
 * @example
 * ```ts
 * import { describeStepProbe } from "./summary.ts";
 * const fig = (value: number, unit: string) => ({ value, unit, tag: "measured" as const });
 * console.log(describeStepProbe({
 *   model: "step-probe-8m", dispatches: 68, chainFactor: fig(1.05, "x"),
 *   hostFixedMs: fig(12, "ms"), hostPerDispatchUs: fig(5, "us"),
 * }));
 * // "Decode step probe (step-probe-8m): kernels chained ×1.050 their time alone; host part of a step 12.00 ms + 5.0 µs a launch"
 * ```
 */
export function describeStepProbe(probe: DecodeStepProbe): string {
  const { chainFactor: chain, hostFixedMs: fixed, hostPerDispatchUs: per } = probe;
  if (chain.value === null || fixed.value === null || per.value === null) {
    return `Decode step probe: not measured (${chain.reason ?? fixed.reason ?? per.reason})`;
  }
  return `Decode step probe (${probe.model}): kernels chained ×${chain.value.toFixed(3)} their ` +
    `time alone; host part of a step ${fixed.value.toFixed(2)} ms + ${per.value.toFixed(1)} µs ` +
    `a launch`;
}
