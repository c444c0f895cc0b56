/**
 * What the HTML and Markdown pages share: the options, number formatting, the baseline
 * comparison and its moved rows, crossover keys, and a validation's sweep-only estimate.
 *
 * @module
 */
import { formatNumber } from "../../core/format.ts";
import { compareReports, type Comparison, type ComparisonRow } from "../compare.ts";
import type { Crossover, LlmValidation, Report } from "../../core/schema.ts";
import type { SpecsFile } from "../specs_file.ts";

/**
 * Options of `renderHtml` and `renderMarkdown`.
 *
 * @example
 * ```ts ignore
 * import type { RenderOptions } from "./_shared.ts";
 * const o: RenderOptions = { baseline: publishedReport, specs: null };
 * ```
 */
export interface RenderOptions {
  /** An earlier report to compare with; what moved beyond noise is highlighted. */
  readonly baseline?: Report;
  /**
   * The vendor peak figures of `reports/specs.json` (`deno task specs:import`), to draw the
   * adapter's datasheet ceilings on the rooflines; null or absent when there is no such file.
   */
  readonly specs?: SpecsFile["specs"] | null;
}

/**
 * A number in three significant digits, exponent form only when very large or small.
 *
 * @param x The number, or null.
 * @returns The text; `"—"` for null.
 * @example
 * ```ts
 * import { num } from "./_shared.ts";
 * console.log(num(1234567), num(1820.4), num(0.5), num(null)); // "1.23e6 1820 0.500 —"
 * ```
 */
export function num(x: number | null): string {
  return formatNumber(x);
}

/**
 * Compares the report with a baseline for rendering: reports of other machines are compared
 * too (the page says so), since a reader asked for the comparison.
 *
 * @param report The current report.
 * @param baseline The baseline, if any.
 * @returns The comparison, or null without a baseline.
 * @example
 * ```ts ignore
 * import { comparisonFor } from "./_shared.ts";
 * console.log(comparisonFor(report, undefined)); // null
 * ```
 */
export function comparisonFor(report: Report, baseline: Report | undefined): Comparison | null {
  return baseline === undefined
    ? null
    : compareReports(baseline, report, { allowDifferentMachine: true });
}

/**
 * The comparison rows worth a reader's attention: beyond noise, or present on one side only.
 *
 * @param comparison A comparison.
 * @returns The rows.
 * @example
 * ```ts ignore
 * import { movedRows } from "./_shared.ts";
 * console.log(movedRows(comparison).length);
 * ```
 */
export function movedRows(comparison: Comparison): ComparisonRow[] {
  return comparison.rows.filter((r) =>
    r.beyondNoise || (r.baseline === null) !== (r.current === null)
  );
}

/**
 * The key `compareReports` gives a crossover.
 *
 * @param c A crossover.
 * @returns `"op dtype pair residency"`.
 * @example
 * ```ts ignore
 * import { crossoverKey } from "./_shared.ts";
 * console.log(crossoverKey(report.crossovers[0]!)); // "matmul f32 js→wasm end-to-end"
 * ```
 */
export function crossoverKey(c: Crossover): string {
  return `${c.op} ${c.dtype} ${c.pair} ${c.residency}`;
}

/**
 * A validation's second estimate beside its headline, with what it is: in current reports the one
 * priced from kernels timed alongside the decode (`details.alongsideEstimate`, a diagnostic: the
 * headline is the report-only estimate users get); in older reports, whose headline was that
 * one, the sweep's (`details.sweepEstimate`). Null when there is none or it is malformed.
 *
 * @param v One of `report.llm.validations`.
 * @returns Its label, tokens/s and error, or null.
 * @example
 * ```ts
 * import { secondEstimateOf } from "./_shared.ts";
 * const v = { model: "m", quant: "f32", measuredTokensPerSec: 10, estimatedTokensPerSec: 9.5, error: -0.05,
 *   details: { alongsideEstimate: { tokensPerSec: 10.2, error: 0.02 } } };
 * console.log(secondEstimateOf(v)); // { label: "alongside", tokensPerSec: 10.2, error: 0.02 }
 * ```
 */
export function secondEstimateOf(
  v: LlmValidation,
): { label: "alongside" | "from the sweep"; tokensPerSec: number; error: number } | null {
  const alongside = figuresOf(v.details?.alongsideEstimate);
  if (alongside !== null) return { label: "alongside", ...alongside };
  const sweep = figuresOf(v.details?.sweepEstimate);
  return sweep === null ? null : { label: "from the sweep", ...sweep };
}

function figuresOf(s: unknown): { tokensPerSec: number; error: number } | null {
  if (typeof s !== "object" || s === null || Array.isArray(s)) return null;
  const { tokensPerSec, error } = s as Record<string, unknown>;
  return typeof tokensPerSec === "number" && typeof error === "number"
    ? { tokensPerSec, error }
    : null;
}
