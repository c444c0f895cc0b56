/**
 * Pure sweep planning: which sizes to measure, and when growing the size stops telling anything
 * new. Pure functions, no I/O.
 *
 * @example
 * ```ts
 * import { geometricGrid, rateConverged } from "./sweep.ts";
 * const sizes = geometricGrid(1, 1 << 20, { pointsPerOctave: 1 });
 * console.log(sizes.length); // 21
 * console.log(rateConverged([1 << 18, 1 << 19, 1 << 20], [9.8, 10.0, 10.1])); // true
 * ```
 *
 * @module
 */

/**
 * Spacing of a geometric grid: a number of points per doubling, or the ratio between neighbours.
 *
 * @example
 * ```ts
 * import type { GridSpacing } from "./sweep.ts";
 * const s: GridSpacing = { factor: 4 };
 * ```
 */
export type GridSpacing = { readonly pointsPerOctave: number } | { readonly factor: number };

/**
 * Integer sizes from `min` to `max` spaced geometrically, both ends included, ascending and
 * deduplicated (at small sizes rounding merges neighbours, so there may be fewer points than the
 * spacing suggests).
 *
 * @param min Smallest size, a positive integer.
 * @param max Largest size, an integer ≥ `min`.
 * @param spacing Points per octave (default 1: powers of two times `min`) or a ratio > 1.
 * @returns The sizes.
 * @throws {RangeError} when the bounds are not integers with 1 ≤ min ≤ max, or the spacing is not > 0 (points) or > 1 (factor).
 * @example
 * ```ts
 * import { geometricGrid } from "./sweep.ts";
 * console.log(geometricGrid(1, 16)); // [1, 2, 4, 8, 16]
 * console.log(geometricGrid(1, 8, { pointsPerOctave: 2 })); // [1, 2, 3, 4, 6, 8]
 * console.log(geometricGrid(100, 1000, { factor: 3 })); // [100, 300, 900, 1000]
 * ```
 */
export function geometricGrid(
  min: number,
  max: number,
  spacing: GridSpacing = { pointsPerOctave: 1 },
): number[] {
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max < min) {
    throw new RangeError(
      `Cannot build a grid from ${min} to ${max}: give integers with 1 ≤ min ≤ max`,
    );
  }
  let lnFactor: number;
  if ("factor" in spacing) {
    if (!(spacing.factor > 1) || !Number.isFinite(spacing.factor)) {
      throw new RangeError(
        `Cannot build a grid with factor ${spacing.factor}: give a ratio above 1`,
      );
    }
    lnFactor = Math.log(spacing.factor);
  } else {
    const ppo = spacing.pointsPerOctave;
    if (!(ppo > 0) || !Number.isFinite(ppo)) {
      throw new RangeError(
        `Cannot build a grid with ${ppo} points per octave: give a positive number`,
      );
    }
    lnFactor = Math.LN2 / ppo;
  }
  const out = new Set<number>();
  // Index-based powers avoid the drift of repeated multiplication, so 2^k stays exact.
  const steps = Math.floor(Math.log(max / min) / lnFactor + 1e-9);
  for (let i = 0; i <= steps; i++) out.add(Math.min(Math.round(min * Math.exp(i * lnFactor)), max));
  out.add(max);
  return [...out].sort((a, b) => a - b);
}

/**
 * Whether the rate of the fastest backend has stopped growing: its last three values (two grid
 * steps) lie within `tolerance` of each other, i.e. max/min − 1 < tolerance. The calibrator stops
 * growing sizes once this holds. Points are taken in ascending size order.
 *
 * @param sizes Measured sizes.
 * @param rates The rate of the fastest backend at each size (GFLOP/s or GB/s), same length.
 * @param tolerance Relative change counted as converged; 0.05 when absent.
 * @returns True with at least three points whose last three rates agree within the tolerance.
 * @throws {RangeError} when the arrays differ in length or a rate is not positive and finite.
 * @example
 * ```ts
 * import { rateConverged } from "./sweep.ts";
 * console.log(rateConverged([1024, 2048, 4096], [5, 8, 9])); // false
 * console.log(rateConverged([1024, 2048, 4096, 8192], [5, 8.8, 9, 9.1])); // true
 * ```
 */
export function rateConverged(
  sizes: readonly number[],
  rates: readonly number[],
  tolerance = 0.05,
): boolean {
  if (sizes.length !== rates.length) {
    throw new RangeError(
      `Cannot test convergence of ${rates.length} rates at ${sizes.length} sizes: give one rate per size`,
    );
  }
  const bad = rates.find((r) => !(r > 0) || !Number.isFinite(r));
  if (bad !== undefined) {
    throw new RangeError(`Cannot test convergence with a rate of ${bad}: rates must be positive`);
  }
  if (rates.length < 3) return false;
  const last = sizes
    .map((size, i) => ({ size, rate: rates[i]! }))
    .sort((a, b) => a.size - b.size)
    .slice(-3)
    .map((p) => p.rate);
  return Math.max(...last) / Math.min(...last) - 1 < tolerance;
}
