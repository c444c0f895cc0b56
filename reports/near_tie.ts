/**
 * Near-ties: where the two backends of a crossover stay within the tolerance, or within their
 * measurements' noise, of each other over a range of measured sizes, the size where their
 * medians happen to cross is not a threshold. On a 2-core VM wasm and wasm-mt (which runs on one
 * thread at small sizes) nearly coincide at matmul n ≈ 4, and the crossing there moved ×20 between
 * two runs. Such a range is reported as a tie ("either; within x %"): choosing either backend
 * anywhere in it costs at most x %, which is what the check prices. Pure.
 *
 * @example
 * ```ts ignore
 * import { nearTie } from "./near_tie.ts";
 * const tie = nearTie(report, crossover, 0.1);
 * if (tie) console.log(`either from ${tie.from} to ${tie.to}, within ${(tie.within * 100).toFixed(0)} %`);
 * ```
 *
 * @module
 */
import type { Crossover, Report } from "../core/schema.ts";
import { pairTimes, type SideTime } from "./threshold_cost.ts";

/**
 * A range of measured sizes over which two backends are level.
 *
 * @example
 * ```ts
 * import type { Tie } from "./near_tie.ts";
 * const t: Tie = { from: 4, to: 48, within: 0.06, sizes: 3 };
 * ```
 */
export interface Tie {
  /** Smallest measured size of the range, the op's axis unit. */
  readonly from: number;
  /** Largest measured size of the range. */
  readonly to: number;
  /** Largest gap over the range: the slower side's median over the faster's, less 1. */
  readonly within: number;
  /** Measured sizes in the range. */
  readonly sizes: number;
}

/** Whether two sides are level at one size: within the tolerance or their combined 95 % noise. */
function level([a, b]: readonly [SideTime, SideTime], tolerance: number): boolean {
  const gap = Math.abs(Math.log(a.ms / b.ms));
  return gap <= Math.max(Math.log(1 + tolerance), Math.hypot(a.relCi, b.relCi));
}

/**
 * The tie a crossover falls in, if any: the longest run of consecutive measured sizes, at least
 * two, where both sides are level and which holds or borders the crossing (a size of the run is
 * one of the two measured sizes around it). A crossover that never happens in range is a tie
 * over the whole range when the sides are level at every measured size.
 *
 * @param report The report whose measurements are read.
 * @param c One of its crossovers.
 * @param tolerance The relative gap that counts as level even when the noise is smaller.
 * @returns The tie, or null when the crossing is a threshold.
 * @example
 * ```ts ignore
 * import { nearTie } from "./near_tie.ts";
 * console.log(nearTie(report, report.crossovers[0]!, 0.1));
 * ```
 */
export function nearTie(report: Report, c: Crossover, tolerance: number): Tie | null {
  const points = [...pairTimes(report, c)];
  const flags = points.map(([, times]) => level(times, tolerance));
  let around: number[];
  if (c.size === null) {
    around = flags.every(Boolean) ? points.map((_, i) => i) : [];
  } else {
    const above = points.findIndex(([size]) => size >= c.size!);
    around = above === -1 ? [points.length - 1] : above === 0 ? [0] : [above - 1, above];
  }
  let best: [number, number] | null = null;
  for (const i of around) {
    if (!flags[i]) continue;
    let lo = i;
    let hi = i;
    while (lo > 0 && flags[lo - 1]) lo--;
    while (hi < points.length - 1 && flags[hi + 1]) hi++;
    if (best === null || hi - lo > best[1] - best[0]) best = [lo, hi];
  }
  if (best === null || best[1] === best[0]) return null;
  const range = points.slice(best[0], best[1] + 1);
  return {
    from: range[0]![0],
    to: range[range.length - 1]![0],
    within: Math.max(...range.map(([, [a, b]]) => Math.max(a.ms, b.ms) / Math.min(a.ms, b.ms))) -
      1,
    sizes: range.length,
  };
}
