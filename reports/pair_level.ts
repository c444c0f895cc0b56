/**
 * Whether a crossover moved because one of its backends' whole curve moved up or down, and by
 * how much. Two backends whose curves lie close together (wasm and wasm-mt on a busy 2-core VM)
 * cross at a size that a small change of either one's level moves far, or out of the measured
 * range. When the two curves kept their shapes and only their relative level changed, the move is
 * the level's change, and that is judged with the backends' own run-to-run noise
 * (`backend_shift.ts`), not as a threshold that a kernel change moved. Pure.
 *
 * @example
 * ```ts ignore
 * import { pairLevelShift } from "./pair_level.ts";
 * const s = pairLevelShift(baseline, b, current, c, () => 0.05);
 * if (s?.shapeKept) console.log(`second side ${(Math.exp(s.logShift) * 100 - 100).toFixed(0)} % against the first`);
 * ```
 *
 * @module
 */
import { median } from "../core/stats.ts";
import type { Crossover, Report } from "../core/schema.ts";
import { pairTimes, type PointNoise } from "./threshold_cost.ts";

/** z of the 95 % test a residual must pass against the runs' noise at its size. */
const Z95 = 1.96;

/** Fewest shared sizes from which a level shift is estimated. */
const MIN_SIZES = 2;

/**
 * How the second side of a crossover's pair moved against the first between two reports.
 *
 * @example
 * ```ts
 * import type { PairLevelShift } from "./pair_level.ts";
 * const s: PairLevelShift = {
 *   logShift: 0.4,
 *   sizes: 5,
 *   worstResidual: 0.06,
 *   shapeKept: true,
 *   flipped: 1,
 *   explainsFlips: true,
 * };
 * ```
 */
export interface PairLevelShift {
  /**
   * Median over the shared sizes of the change of ln(second side's time / first side's): positive
   * when the second side got slower against the first.
   */
  readonly logShift: number;
  /** Measured sizes both reports share. */
  readonly sizes: number;
  /** The largest |change − logShift| over the shared sizes, ln units. */
  readonly worstResidual: number;
  /**
   * Every shared size's change is the level shift to within the tolerance or the two runs' 95 %
   * noise there: the curves kept their shapes and only their level moved.
   */
  readonly shapeKept: boolean;
  /** Shared sizes where the faster side changed between the two reports. */
  readonly flipped: number;
  /**
   * At least one size flipped, and the level shift alone flips each of them: applied to the
   * baseline's ratio, it gives the side the current report measured faster.
   */
  readonly explainsFlips: boolean;
}

/**
 * The relative level shift of a crossover's two sides between two reports, from the sizes both
 * measured (the CPU side of `cpu→webgpu` is the fastest CPU backend at each size).
 *
 * @param baseline The baseline report.
 * @param base The baseline's crossover.
 * @param current The current report.
 * @param cur The current report's crossover of the same op, dtype, residency and pair.
 * @param noise One run's σ of ln time of a backend's point at a size.
 * @param tolerance Relative change that counts as the same even when the noise is smaller.
 * @returns The shift, or null with fewer than two shared sizes.
 * @example
 * ```ts ignore
 * import { pairLevelShift } from "./pair_level.ts";
 * console.log(pairLevelShift(baseline, b, current, c, () => 0.05, 0.1));
 * ```
 */
export function pairLevelShift(
  baseline: Report,
  base: Crossover,
  current: Report,
  cur: Crossover,
  noise: PointNoise,
  tolerance = 0.1,
): PairLevelShift | null {
  const before = pairTimes(baseline, base);
  const after = pairTimes(current, cur);
  const changes: { size: number; before: number; change: number; sigma: number }[] = [];
  for (const [size, [first, second]] of before) {
    const now = after.get(size);
    if (now === undefined) continue;
    const before = Math.log(second.ms / first.ms);
    const change = Math.log(now[1].ms / now[0].ms) - before;
    const sigma = Math.SQRT2 * Math.hypot(noise(first.backend, size), noise(second.backend, size));
    changes.push({ size, before, change, sigma });
  }
  if (changes.length < MIN_SIZES) return null;
  const logShift = median(changes.map((c) => c.change));
  const residuals = changes.map((c) => ({ ...c, residual: Math.abs(c.change - logShift) }));
  const flips = changes.filter((c) => Math.sign(c.before) !== Math.sign(c.before + c.change));
  return {
    logShift,
    sizes: changes.length,
    flipped: flips.length,
    explainsFlips: flips.length > 0 &&
      flips.every((c) => Math.sign(c.before + logShift) === Math.sign(c.before + c.change)),
    worstResidual: Math.max(...residuals.map((r) => r.residual)),
    shapeKept: residuals.every((r) =>
      r.residual <= Math.max(Math.log(1 + tolerance), Z95 * r.sigma)
    ),
  };
}
