/**
 * One colour per kernel variant for the whole report page, so a colour means the same variant
 * in every tuning table.
 *
 * @module
 */
import type { Report } from "../../core/schema.ts";

/** Pastel colours, dark text stays readable on each. */
const PASTELS: readonly string[] = [
  "#a6cee3",
  "#b2df8a",
  "#fdbf6f",
  "#cab2d6",
  "#fb9a99",
  "#ffff99",
  "#8dd3c7",
  "#bebada",
  "#fccde5",
  "#d9d9d9",
  "#ccebc5",
  "#ffed6f",
];

/** Degrees between the hues of colours past the pastels: the golden angle spreads them evenly. */
const GOLDEN_ANGLE = 137.508;

/**
 * The n-th colour: the pastels first, then light colours of hues spread by the golden angle.
 *
 * @param n Index, from 0.
 * @returns A CSS colour.
 * @example
 * ```ts
 * import { variantColor } from "./_variant_colors.ts";
 * console.log(variantColor(0), variantColor(12)); // "#a6cee3 hsl(0 70% 80%)"
 * ```
 */
export function variantColor(n: number): string {
  if (n < PASTELS.length) return PASTELS[n]!;
  const hue = Math.round(((n - PASTELS.length) * GOLDEN_ANGLE) % 360);
  return `hsl(${hue} 70% 80%)`;
}

/**
 * Every best or runner-up variant of the report's tuning table with its colour, in the order
 * they first appear.
 *
 * @param report The report.
 * @returns Variant id → CSS colour.
 * @example
 * ```ts ignore
 * import { variantColors } from "./_variant_colors.ts";
 * console.log(variantColors(report).get("default"));
 * ```
 */
export function variantColors(report: Pick<Report, "tuning">): Map<string, string> {
  const colors = new Map<string, string>();
  for (const t of report.tuning) {
    if (!colors.has(t.best.variant)) colors.set(t.best.variant, variantColor(colors.size));
  }
  return colors;
}
