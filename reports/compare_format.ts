/**
 * Renders a report comparison as plain text (terminal), Markdown (a pull-request comment) or
 * JSON (other tools).
 *
 * @module
 */
import { textTable } from "../core/format.ts";
import type { BackendShift } from "./backend_shift.ts";
import type { Interval } from "../core/schema.ts";
import type { Comparison, ComparisonRow } from "./compare.ts";
import type { Tie } from "./near_tie.ts";

/**
 * The output formats of {@linkcode formatComparison}.
 *
 * @example
 * ```ts
 * import { COMPARISON_FORMATS } from "./compare_format.ts";
 * console.log(COMPARISON_FORMATS.join("|")); // "text|markdown|json"
 * ```
 */
export const COMPARISON_FORMATS = ["text", "markdown", "json"] as const;

/**
 * One of {@linkcode COMPARISON_FORMATS}.
 *
 * @example
 * ```ts
 * import type { ComparisonFormat } from "./compare_format.ts";
 * const f: ComparisonFormat = "markdown";
 * ```
 */
export type ComparisonFormat = typeof COMPARISON_FORMATS[number];

/**
 * What was compared, for the headline.
 *
 * @example
 * ```ts
 * import type { ComparisonLabels } from "./compare_format.ts";
 * const l: ComparisonLabels = { baseline: "reports/a.json", current: "current.json" };
 * ```
 */
export interface ComparisonLabels {
  /** How to name the baseline (usually its path). */
  readonly baseline: string;
  /** How to name the current report. */
  readonly current: string;
}

function num(x: number | null): string {
  if (x === null) return "—";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (Number.isInteger(x) && a < 1e5) return String(x);
  return a >= 1e5 || a < 1e-2 ? x.toExponential(2) : x.toPrecision(3);
}

function interval(x: Interval | null): string {
  return x === null ? "" : `[${num(x[0])}, ${num(x[1])}]`;
}

function change(r: ComparisonRow): string {
  if (r.change !== null) return `${r.change >= 0 ? "+" : ""}${(r.change * 100).toFixed(1)} %`;
  if (r.baseline === null && r.current !== null) return "new";
  if (r.baseline !== null && r.current === null) return "gone";
  return "";
}

function verdict(r: ComparisonRow): string {
  if (r.baseline === null && r.current === null) return "n/a";
  if (r.kind === "series") return r.regressed ? "regressed" : "skipped";
  if (r.regressed) {
    return r.kind === "crossover" && r.current !== null ? "threshold moved" : "regressed";
  }
  if (r.beyondNoise) return r.kind === "crossover" ? "no effect" : "improved";
  if (r.kind !== "crossover" && r.baseline !== null && r.current === null) return "not judged";
  return "within noise";
}

/** A value, or the near-tie that stands for a crossover's value. */
function valueCell(value: number | null, unit: string, tie: Tie | null | undefined): string {
  if (tie) return `either ${num(tie.from)}–${num(tie.to)} ${unit} (within ${pct(tie.within)})`;
  return `${num(value)} ${unit}`.trim();
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)} %`;
}

function signedPct(x: number): string {
  return `${x >= 0 ? "+" : ""}${pct(x)}`;
}

/**
 * Rows worth a reader's attention: beyond noise, or present in only one report (a threshold that
 * appeared or vanished within drift is listed with the excused rows instead).
 */
function moved(c: Comparison): ComparisonRow[] {
  const within = new Set(excused(c));
  return c.rows.filter((r) =>
    r.beyondNoise || r.kind === "series" ||
    ((r.baseline === null) !== (r.current === null) && r.change === null && !within.has(r))
  );
}

/**
 * Rows a reader might expect to be flagged and are not: moved more than the tolerance but
 * within noise (their note says which noise), or a threshold that appeared or vanished within
 * drift.
 */
function excused(c: Comparison): ComparisonRow[] {
  return c.rows.filter((r) =>
    !r.beyondNoise &&
    (r.change !== null
      ? Math.abs(r.change) > c.tolerance
      : r.kind === "crossover" && (r.baseline === null) !== (r.current === null))
  );
}

/** The interval a verdict used: with run-to-run drift when the report had stability data. */
function verdictCi(ci: Interval | null, driftCi: Interval | null): string {
  return driftCi !== null ? `${interval(driftCi)} with drift` : interval(ci);
}

function headline(c: Comparison): string {
  if (!c.comparable) return "Reports are not comparable";
  const regressions = c.rows.filter((r) => r.regressed).length;
  const improvements = c.rows.filter((r) => r.beyondNoise && !r.regressed && r.kind !== "crossover")
    .length;
  const slower = c.backends.filter((b) => b.regressed).map((b) => b.backend);
  const tol = `${(c.tolerance * 100).toFixed(0)} %`;
  const backends = slower.length === 0
    ? ""
    : `; ${slower.join(", ")} slower as a whole beyond noise`;
  return c.regressed
    ? `${regressions} of ${c.rows.length} figures regressed beyond noise (tolerance ${tol}), ${improvements} improved${backends}`
    : `No regression beyond noise in ${c.rows.length} figures and ${c.backends.length} backends (tolerance ${tol}), ${improvements} improved`;
}

const BACKEND_HEADER = ["backend", "figures", "own change", "99% interval", "verdict", "note"];

function backendVerdict(b: BackendShift): string {
  return b.regressed ? "slower" : b.beyondNoise ? "faster" : "within noise";
}

function backendCells(b: BackendShift): string[] {
  return [
    b.backend,
    String(b.points.length),
    signedPct(b.change),
    `[${signedPct(b.ci[0])}, ${signedPct(b.ci[1])}]`,
    backendVerdict(b),
    b.note,
  ];
}

const HEADER = ["kind", "figure", "baseline", "current", "change", "verdict", "note"];

function cells(r: ComparisonRow): string[] {
  return [
    r.kind,
    r.key,
    valueCell(r.baseline, r.unit, r.ties?.baseline),
    valueCell(r.current, r.unit, r.ties?.current),
    change(r),
    verdict(r),
    r.note,
  ];
}

function text(c: Comparison, labels: ComparisonLabels): string {
  const lines = [
    `gpucal check: ${labels.current} against ${labels.baseline}`,
    `${c.comparable ? (c.regressed ? "REGRESSED" : "OK") : "NOT COMPARABLE"}: ${headline(c)}`,
  ];
  if (c.reasons.length > 0) lines.push("", ...c.reasons.map((r) => `  ${r}`));
  if (!c.comparable) return lines.join("\n");
  const rows = moved(c);
  lines.push("");
  lines.push(
    rows.length === 0 ? "Nothing moved beyond noise." : textTable(HEADER, rows.map(cells)),
  );
  if (c.backends.length > 0) {
    lines.push("", "Backends, each judged as a whole against those using as many cores:");
    lines.push(textTable(BACKEND_HEADER, c.backends.map(backendCells)));
  }
  const within = excused(c);
  if (within.length > 0) {
    lines.push("", "Moved more than the tolerance, but within noise:");
    lines.push(textTable(HEADER, within.map(cells)));
  }
  return lines.join("\n");
}

function escapeCell(s: string): string {
  return s.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.map(escapeCell).join(" | ")} |`),
  ].join("\n");
}

function markdown(c: Comparison, labels: ComparisonLabels): string {
  const icon = !c.comparable ? "⚠️" : c.regressed ? "❌" : "✅";
  const lines = [
    `### ${icon} gpucal calibration check`,
    "",
    `**${headline(c)}**`,
    "",
    `Current \`${escapeCell(labels.current)}\` against baseline \`${
      escapeCell(labels.baseline)
    }\`. A figure moved beyond noise when it changed by more than the tolerance and its 95 % intervals do not overlap (widened by each report's measured run-to-run drift when it has one); rates and host-bound system figures are judged against the other backends' common change over the same runs, absolute values shown. Crossover thresholds count as regressions in either direction, except within a near-tie of their backends; a series or figure that disappeared counts unless the current run's command skipped it.`,
  ];
  if (c.reasons.length > 0) lines.push("", ...c.reasons.map((r) => `- ${r}`));
  if (!c.comparable) return lines.join("\n");
  const rows = moved(c);
  lines.push(
    "",
    rows.length === 0 ? "_Nothing moved beyond noise._" : markdownTable(HEADER, rows.map(cells)),
  );
  if (c.backends.length > 0) {
    lines.push(
      "",
      "**Backends**, each judged as a whole: the median change of its figures less the common change over the run of the backends that use as many cores, with a 99 % interval that allows for its run-to-run drift.",
      "",
      markdownTable(BACKEND_HEADER, c.backends.map(backendCells)),
    );
  }
  const within = excused(c);
  if (within.length > 0) {
    lines.push(
      "",
      `<details><summary>${within.length} figure${
        within.length === 1 ? "" : "s"
      } moved more than the tolerance but within noise</summary>`,
      "",
      markdownTable(HEADER, within.map(cells)),
      "",
      "</details>",
    );
  }
  lines.push(
    "",
    "<details><summary>All compared figures</summary>",
    "",
    markdownTable(
      ["kind", "figure", "baseline", "95% CI", "current", "95% CI", "change", "verdict"],
      c.rows.map((r) => [
        r.kind,
        r.key,
        valueCell(r.baseline, r.unit, r.ties?.baseline),
        verdictCi(r.baselineCi, r.baselineDriftCi),
        valueCell(r.current, r.unit, r.ties?.current),
        verdictCi(r.currentCi, r.currentDriftCi),
        change(r),
        verdict(r),
      ]),
    ),
    "",
    "</details>",
  );
  return lines.join("\n");
}

/**
 * Renders a comparison for people (text, Markdown) or programs (JSON).
 *
 * Text and Markdown list what moved beyond noise or exists in one report only, then what moved
 * more than the tolerance but stayed within noise (the note says which: within-run intervals or
 * a backend's run-to-run drift); Markdown adds a headline with ✅ / ❌, collapses the second list,
 * and lists every compared figure in a collapsed `<details>` block.
 *
 * @param comparison The result of `compareReports`.
 * @param format `"text"`, `"markdown"` or `"json"`.
 * @param labels How to name the two reports.
 * @returns The rendered comparison, without a final newline.
 * @example
 * ```ts
 * import { formatComparison } from "./compare_format.ts";
 * const c = { rows: [], backends: [], regressed: false, comparable: true, reasons: [], tolerance: 0.1 };
 * console.log(formatComparison(c, "markdown", { baseline: "a.json", current: "b.json" }));
 * ```
 */
export function formatComparison(
  comparison: Comparison,
  format: ComparisonFormat,
  labels: ComparisonLabels,
): string {
  switch (format) {
    case "json":
      return JSON.stringify({ ...labels, ...comparison }, null, 2);
    case "markdown":
      return markdown(comparison, labels);
    case "text":
      return text(comparison, labels);
  }
}
