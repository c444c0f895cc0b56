/**
 * Numbers for people: every figure gpucal prints (CLI lines, HTML, Markdown) is rounded to the
 * precision it has, through these few functions, so `85.47549601364616 GFLOP/s` prints as
 * `85.5 GFLOP/s` and a run of 1818 s as `30.3 min`. Machine-readable output (`--json`, reports)
 * keeps full precision.
 *
 * @example
 * ```ts
 * import { formatMs, formatNumber, formatSeconds } from "./format.ts";
 * console.log(formatNumber(85.47549601364616), formatSeconds(1818.5), formatMs(0.0000209));
 * // "85.5 30.3 min 20.9 ns"
 * ```
 *
 * @module
 */
import type { Figure } from "./schema.ts";
import { roundSignificant } from "./numeric.ts";

/** Significant digits a timing figure has: the ±2 % target of a median leaves three at most. */
const DIGITS = 3;

/** Below and above these magnitudes a plain number gets too long to read: exponent form. */
const PLAIN_MIN = 1e-3;
const PLAIN_MAX = 1e6;

/**
 * A number in `digits` significant digits: `85.5`, `0.0208`, `1820`, `4.60`; exponent form only
 * below 0.001 or from a million on (`3.47e-5`, `1.19e7`).
 *
 * @param x The number; null, NaN and infinities print as `—` and `∞`.
 * @param digits Significant digits (default 3).
 * @returns The text.
 * @example
 * ```ts
 * import { formatNumber } from "./format.ts";
 * console.log(formatNumber(1818.498), formatNumber(4.6), formatNumber(11863283), formatNumber(null));
 * // "1820 4.60 1.19e7 —"
 * ```
 */
export function formatNumber(x: number | null, digits: number = DIGITS): string {
  if (x === null || Number.isNaN(x)) return "—";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "-∞";
  if (x === 0) return "0";
  const rounded = roundSignificant(x, digits);
  const a = Math.abs(rounded);
  if (a < PLAIN_MIN || a >= PLAIN_MAX) return x.toExponential(digits - 1).replace("e+", "e");
  // toPrecision would write 1820 as "1.82e+3"; integers that long are already rounded.
  return a >= 10 ** (digits - 1) ? String(rounded) : rounded.toPrecision(digits);
}

/** Units of a duration, largest first: seconds per unit and the unit's name. */
const DURATION_UNITS: readonly (readonly [number, string])[] = [
  [3600, "h"],
  [60, "min"],
  [1, "s"],
  [1e-3, "ms"],
  [1e-6, "µs"],
  [1e-9, "ns"],
];

/**
 * A duration in the largest unit that keeps it at least 1: `30.3 min`, `12.2 s`, `20.9 ns`.
 *
 * @param seconds The duration in seconds.
 * @returns The text; `—` for null or NaN.
 * @example
 * ```ts
 * import { formatSeconds } from "./format.ts";
 * console.log(formatSeconds(1818.498), formatSeconds(0.0122), formatSeconds(7200)); // "30.3 min 12.2 ms 2.00 h"
 * ```
 */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null || Number.isNaN(seconds)) return "—";
  if (seconds === 0) return "0 s";
  const a = Math.abs(seconds);
  const [scale, unit] = DURATION_UNITS.find(([s]) => a >= s * (1 - 5e-4)) ??
    DURATION_UNITS[DURATION_UNITS.length - 1]!;
  return `${formatNumber(seconds / scale)} ${unit}`;
}

/**
 * A time given in milliseconds (the unit of gpucal's timings), in the unit that reads best.
 *
 * @param ms The time in ms.
 * @returns The text, e.g. `20.9 ns` for 0.0000209 ms or `12.2 ms`.
 * @example
 * ```ts
 * import { formatMs } from "./format.ts";
 * console.log(formatMs(0.0000209), formatMs(12.2), formatMs(770742)); // "20.9 ns 12.2 ms 12.8 min"
 * ```
 */
export function formatMs(ms: number | null): string {
  return ms === null ? "—" : formatSeconds(ms / 1000);
}

/**
 * A fraction as a percentage with one decimal: `+15.0 %`, `-5.0 %`, `2.4 %`.
 *
 * @param fraction The fraction (0.15 for 15 %).
 * @param signed Whether to write `+` before positive values.
 * @returns The text; `—` for NaN.
 * @example
 * ```ts
 * import { formatPercent } from "./format.ts";
 * console.log(formatPercent(0.15, true), formatPercent(0.024)); // "+15.0 % 2.4 %"
 * ```
 */
export function formatPercent(fraction: number, signed = false): string {
  if (Number.isNaN(fraction)) return "—";
  const text = `${(fraction * 100).toFixed(1)} %`;
  return signed && fraction >= 0 ? `+${text}` : text;
}

/** Metric prefixes for counts, largest first. */
const SI_PREFIXES: readonly (readonly [number, string])[] = [
  [1e12, "T"],
  [1e9, "G"],
  [1e6, "M"],
  [1e3, "k"],
];

/**
 * A count (a size, elements, bytes) in three significant digits with a metric prefix and no
 * trailing zeros: `4`, `61.5`, `22.1k`, `11.9M`.
 *
 * @param x The count.
 * @returns The text; `—` for null or NaN.
 * @example
 * ```ts
 * import { formatCount } from "./format.ts";
 * console.log(formatCount(61.5), formatCount(22100), formatCount(11863283)); // "61.5 22.1k 11.9M"
 * ```
 */
export function formatCount(x: number | null): string {
  if (x === null || Number.isNaN(x)) return "—";
  const a = Math.abs(roundSignificant(x, DIGITS));
  const [scale, suffix] = SI_PREFIXES.find(([scale]) => a >= scale) ?? [1, ""];
  // A count's trailing zeros are not precision: 4 elements, not 4.00.
  return `${Number(roundSignificant(x / scale, DIGITS).toPrecision(DIGITS))}${suffix}`;
}

/**
 * A figure as text: `12.3 GB/s [11.9, 12.6] (measured)` or `— (reason)`.
 *
 * @param f The figure.
 * @returns The text.
 * @example
 * ```ts
 * import { formatFigure } from "./format.ts";
 * console.log(formatFigure({ value: 11.2, unit: "ms", tag: "measured" })); // "11.2 ms (measured)"
 * ```
 */
export function formatFigure(f: Figure): string {
  if (f.value === null) return `— (${f.reason ?? "not measured"})`;
  const ci = f.ci ? ` [${formatNumber(f.ci[0])}, ${formatNumber(f.ci[1])}]` : "";
  return `${formatNumber(f.value)} ${f.unit}${ci} (${f.tag})`;
}

/**
 * Lays rows out as a left-aligned text table.
 *
 * @param header Column titles.
 * @param rows Cells.
 * @returns The table.
 * @example
 * ```ts
 * import { textTable } from "./format.ts";
 * console.log(textTable(["a", "b"], [["1", "22"]]));
 * ```
 */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
