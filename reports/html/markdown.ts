/**
 * A calibration report as compact Markdown, for terminals and pull-request comments: status,
 * what to use where, crossovers, peaks, system figures, the LLM validation and, with a
 * baseline, what moved.
 *
 * @example
 * ```ts ignore
 * import { renderMarkdown } from "./markdown.ts";
 * console.log(renderMarkdown(report));
 * ```
 *
 * @module
 */
import { formatFigure, formatPercent, formatSeconds } from "../../core/format.ts";
import { describeEstimate, describeStepProbe } from "../../calibrate/summary.ts";
import type { Figure, Report } from "../../core/schema.ts";
import { describeRow, usageMap } from "./_map.ts";
import { comparisonFor, movedRows, num, type RenderOptions, secondEstimateOf } from "./_shared.ts";

/** Keeps a cell on one table row and inert: no column breaks, no raw HTML in a PR comment. */
function cell(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll("|", "\\|").replace(/[\r\n]+/g, " ");
}

function mdTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
  ].join("\n");
}

function percent(x: number): string {
  return formatPercent(x, true);
}

/**
 * Renders a report as Markdown: a headline with machine, adapter and status, the crossover
 * table, peak rates, system figures, the LLM tokens/s validation when present, and, with a
 * baseline, the figures that moved beyond noise. Strings from the report are escaped so they
 * cannot break a table or inject HTML.
 *
 * @param report The report.
 * @param options An optional baseline to compare with.
 * @returns The Markdown, without a final newline.
 * @example
 * ```ts ignore
 * import { renderMarkdown } from "./markdown.ts";
 * const md = renderMarkdown(report, { baseline });
 * console.log(md.split("\n")[0]); // "### gpucal calibration: …"
 * ```
 */
export function renderMarkdown(report: Report, options: RenderOptions = {}): string {
  return [
    ...headline(report),
    ...usageSection(report),
    ...changesSection(report, options),
    ...crossoverSection(report),
    ...systemSection(report),
    ...llmSection(report),
  ].join("\n");
}

/** The title, machine, adapter, run and warnings. */
function headline(report: Report): string[] {
  const p = report.provenance;
  const m = report.machine;
  const a = report.adapter;
  const ok = report.measurements.filter((x) => x.state === "ok").length;
  const failed = report.measurements.filter((x) => x.state === "failed").length;
  const adapter = a === null
    ? "no WebGPU adapter"
    : `${a.description} via ${a.backend}${a.software ? " (software)" : ""}`;
  const lines = [
    `### gpucal calibration: ${cell(report.slug)}`,
    "",
    `- **Machine:** ${
      cell(`${m.cpuModel} ×${m.cores}, ${num(m.memoryGiB)} GiB, ${m.os} ${m.osRelease} ${m.arch}`)
    }`,
    `- **Adapter:** ${cell(adapter)}`,
    `- **Run:** ${cell(p.date)}, gpucal ${cell(report.gpucal.version)}${
      report.gpucal.commit ? ` (\`${report.gpucal.commit.slice(0, 12)}\`)` : ""
    }, ${formatSeconds(p.durationS)}, ${
      p.complete ? "complete" : `**incomplete (${p.stopReason})**`
    }${p.quick ? ", quick" : ""}${
      p.noisy ? ", noisy machine" : ""
    }; ${ok} measurements ok, ${failed} failed`,
  ];
  if (p.warnings.length > 0) {
    lines.push(`- **Warnings:** ${p.warnings.map(cell).join("; ")}`);
  }
  return lines;
}

/** The fastest backend by size for each op and dtype; nothing when the report has none. */
function usageSection(report: Report): string[] {
  const map = usageMap(report);
  if (map.length === 0) return [];
  return [
    "",
    "#### What to use where",
    "",
    mdTable(
      ["op", "dtype", "WebGPU data", "fastest backend by size (≈: a tie)"],
      map.map((row) => [
        row.group.op,
        row.group.dtype,
        row.residency === "any" ? "either" : row.residency,
        `${describeRow(row)} ${row.group.unit}${row.cpuInF32 ? " (CPU in f32)" : ""}`,
      ]),
    ),
  ];
}

/** What moved beyond noise since the baseline; nothing without one. */
function changesSection(report: Report, options: RenderOptions): string[] {
  const comparison = comparisonFor(report, options.baseline);
  if (comparison === null) return [];
  const rows = movedRows(comparison);
  const lines = ["", "#### Changes since the baseline", ""];
  if (comparison.reasons.length > 0) {
    lines.push(...comparison.reasons.map((r) => `- ${cell(r)}`), "");
  }
  lines.push(
    rows.length === 0
      ? `Nothing moved beyond noise in ${comparison.rows.length} figures.`
      : mdTable(
        ["", "figure", "baseline", "current", "change", "note"],
        rows.map((r) => [
          r.regressed ? "❌" : r.beyondNoise ? "✅" : "•",
          r.key,
          `${num(r.baseline)} ${r.unit}`.trim(),
          `${num(r.current)} ${r.unit}`.trim(),
          r.change === null ? "" : percent(r.change),
          r.note,
        ]),
      ),
  );
  return lines;
}

/** The crossover table. */
function crossoverSection(report: Report): string[] {
  return [
    "",
    "#### Crossovers",
    "",
    report.crossovers.length === 0 ? "None in this report." : mdTable(
      ["op", "dtype", "pair", "residency", "size", "95 % CI", "unit", "note"],
      report.crossovers.map((c) => [
        c.op,
        c.dtype,
        c.pair,
        c.residency,
        num(c.size),
        c.ci ? `${num(c.ci[0])} – ${num(c.ci[1])}` : "",
        c.unit,
        c.size === null ? (c.reason ?? "") : c.tag,
      ]),
    ),
  ];
}

/** Peak rates and the system figures. */
function systemSection(report: Report): string[] {
  const s = report.system;
  const figures: [string, Figure][] = [
    ...Object.entries(s.peakGflops).map(([d, f]) => [`peak compute ${d}`, f!] as [string, Figure]),
    ...Object.entries(s.peakGbps).map(([b, f]) => [`peak bandwidth ${b}`, f!] as [string, Figure]),
    ["sync round trip", s.dispatchRoundTripMs],
    ...(s.readbackRoundTripMs
      ? [["read round trip", s.readbackRoundTripMs] as [string, Figure]]
      : []),
    ["per dispatch", s.perDispatchUs],
    ...(s.encodePerDispatchUs
      ? [["host encode per dispatch", s.encodePerDispatchUs] as [string, Figure]]
      : []),
    ["upload", s.uploadGBps],
    ["readback", s.readbackGBps],
    ["device copy", s.copyGBps],
    ["pipeline compile", s.compileMs],
  ];
  return [
    "",
    "#### Peaks and system figures",
    "",
    mdTable(
      ["figure", "value [95 % CI] (provenance)"],
      figures.map(([n, f]) => [n, formatFigure(f)]),
    ),
  ];
}

/** The LLM decode validation: estimated against measured tokens/s; nothing without one. */
function llmSection(report: Report): string[] {
  const validations = report.llm?.validations ?? [];
  if (validations.length === 0) return [];
  return [
    "",
    "#### LLM decode: estimated against measured tokens/s",
    "",
    mdTable(
      [
        "model",
        "quant",
        "estimated tok/s (range)",
        "measured tok/s",
        "error",
        "second estimate (error)",
      ],
      validations.map((v) => {
        const second = secondEstimateOf(v);
        return [
          v.model,
          v.quant,
          describeEstimate(v),
          num(v.measuredTokensPerSec),
          percent(v.error),
          second ? `${num(second.tokensPerSec)} (${percent(second.error)}, ${second.label})` : "—",
        ];
      }),
    ),
    ...(report.llm?.stepProbe ? ["", describeStepProbe(report.llm.stepProbe)] : []),
  ];
}
