/**
 * Private: what each row costs a kernel beyond its elements. A WebGPU softmax runs a workgroup a
 * row, and each workgroup pays its own start, reductions and barriers whatever the row's length:
 * on lavapipe (2-vCPU AMD EPYC VM) 1000 × 100 ran 5.2 ms, 5.2 µs a row, where 32 × 3125 (the
 * same elements in the sweep's 32 rows) runs about a millisecond. The sweep holds its rows fixed,
 * so its fit prices elements alone, and a shape model learning ln(measured / fit) over rows and
 * columns from a few shapes put 1000 × 100 at half its time.
 *
 * The cost is a number of elements a row is worth besides its own (`overhead`) and how many rows
 * run at once (`parallel`: lavapipe's threads, a GPU's cores). A run goes in waves of `parallel`
 * rows, each as long as one row's elements and overhead, so its time beyond the launch goes as
 * ⌈rows / parallel⌉ × (elements / rows + overhead). The sweep's rows cost the same at every size,
 * so a fit through its shapes holds their overhead in its fixed cost and beyond it prices the
 * elements alone: a shape of more rows than the sweep's adds its rows' overhead to those elements.
 * (Pricing it against the whole, as if the fit's time held the sweep's rows, put lavapipe's
 * 1000 × 16 at 40 % of its time.) Fewer rows than the sweep's give back their share of the whole
 * time, and take longer where they leave threads idle: one row of 50 000 runs on one of
 * lavapipe's two threads (0.59–0.74 ms, about what 32 rows of 1 562 take on both), and with rows
 * priced one after another it was predicted 0.22. Both numbers are measured: the pair that best
 * explains the variant's measured shapes beside its axis model; no cost when they say nothing
 * (every shape at the sweep's rows).
 *
 * ```ts
 * import { rowsMs } from "./_row_cost.ts";
 * // 1000 rows of 100 against the sweep's 32, a row worth 500 elements, one at a time.
 * const at = { ms: 0.05 + 0.16 + 1e-5 * 1e5, t0: 0.05 + 0.16, elementMs: 1e-5 };
 * console.log(rowsMs(1e5, 1000, 32, { overhead: 500, parallel: 1 }, at).toFixed(2)); // "6.05"
 * ```
 *
 * @module
 */

/** What a row costs a kernel beyond its elements, as {@linkcode fitRowCost} measures it. */
export interface RowCost {
  /** Elements' worth of time each row costs besides its own. */
  readonly overhead: number;
  /** Rows that run at once: 1 where they run one after another. */
  readonly parallel: number;
}

/** Rows that cost nothing and run one after another: a run's time goes with its elements alone. */
export const NO_ROW_COST: RowCost = { overhead: 0, parallel: 1 };

/** A time at a shape's elements in the sweep's rows, and the fit it comes from. */
export interface SweepTime {
  /** The time, ms. */
  readonly ms: number;
  /** The fit's fixed cost, ms: the launch and the sweep's rows' overhead. */
  readonly t0: number;
  /** The time per element beyond the fixed cost, ms. */
  readonly elementMs: number;
  /**
   * The launch, ms, where it is known apart from `t0` (a variant without a fit shares the fitted
   * one's); else `t0` less the sweep's rows' overhead ({@linkcode launchMs}).
   */
  readonly launch?: number;
}

/**
 * The time of `rows` rows of `elements` in all, from the time of the sweep's `sweepRows` rows of
 * the same elements, by the rows' work, ⌈rows / parallel⌉ × (elements / rows + overhead), against
 * the sweep's: more rows add theirs at the time an element; fewer scale all but the launch (the
 * fit's fixed cost less its rows' overhead) by it.
 *
 * @param elements Elements of the shape.
 * @param rows Its rows.
 * @param sweepRows The rows the sweep holds fixed.
 * @param cost What a row costs and how many run at once.
 * @param at The time in the sweep's rows.
 * @returns The time, ms; `at.ms` at the sweep's rows or with {@linkcode NO_ROW_COST}.
 * @example
 * ```ts
 * import { rowsMs } from "./_row_cost.ts";
 * // A fit of 0.25 ms fixed (a 0.09 ms launch and 32 rows of 500 elements' overhead at 10 ns an
 * // element on two threads) and 10 ns an element beyond it.
 * const at = { ms: 0.25 + 1e-5 * 50000, t0: 0.25, elementMs: 1e-5 };
 * // One row of 50 000 on one of the two threads: the launch and one row's work at half the rate.
 * console.log(rowsMs(50000, 1, 32, { overhead: 500, parallel: 2 }, at).toFixed(2)); // "1.10"
 * ```
 */
export function rowsMs(
  elements: number,
  rows: number,
  sweepRows: number,
  cost: RowCost,
  at: SweepTime,
): number {
  const { overhead, parallel } = cost;
  if (!(elements > 0) || !(rows > 0) || rows === sweepRows) return at.ms;
  if (!(overhead > 0) && parallel <= 1) return at.ms;
  const waves = (r: number) => Math.ceil(r / parallel);
  const work = (r: number) => waves(r) * (elements / r + overhead);
  if (rows > sweepRows) {
    // More rows add their waves' work at the rate of one wave's element.
    return at.ms + at.elementMs * sweepRows / waves(sweepRows) * (work(rows) - work(sweepRows));
  }
  // Fewer give back their share of all but the launch.
  const launch = Math.min(at.launch ?? launchMs(sweepRows, overhead, at), at.ms);
  return launch + (at.ms - launch) * work(rows) / work(sweepRows);
}

/**
 * The launch in a fit's fixed cost: what is left of it without the overhead of the sweep's rows.
 *
 * @param sweepRows The rows the sweep holds fixed.
 * @param overhead Elements' worth of time a row costs besides its own.
 * @param at The fit's fixed cost and time per element.
 * @returns The launch, ms, at least 0.
 * @example
 * ```ts
 * import { launchMs } from "./_row_cost.ts";
 * console.log(launchMs(32, 500, { ms: 1, t0: 0.25, elementMs: 1e-5 }).toFixed(2)); // "0.09"
 * ```
 */
export function launchMs(sweepRows: number, overhead: number, at: SweepTime): number {
  return Math.max(at.t0 - at.elementMs * sweepRows * overhead, 0);
}

/** A measured shape as {@linkcode fitRowCost} reads it. */
export interface RowPoint {
  readonly elements: number;
  readonly rows: number;
  /** ln of the measured time. */
  readonly lnMs: number;
  /** The model's time there, ms, with its rows at `cost`. */
  readonly modelMs: (cost: RowCost) => number;
}

/** Overheads tried, in elements a row: 0, then 1 to 2²⁴ in quarter-octave steps. */
const OVERHEADS: readonly number[] = [
  0,
  ...Array.from({ length: 4 * 24 + 1 }, (_, i) => 2 ** (i / 4)),
];

/** Rows at once tried: one after another, a CPU's threads, a GPU's cores. */
const PARALLEL: readonly number[] = [
  1,
  2,
  3,
  4,
  6,
  8,
  12,
  16,
  24,
  32,
  48,
  64,
  128,
  256,
  1024,
];

/**
 * The row cost whose times best match the measured ones (least squares in ln time): an overhead
 * among 0 and 1 to 2²⁴ elements in quarter-octave steps, rows at once among 1 to 1024; the
 * simpler (fewer at once, less overhead) where two explain the times alike; no overhead with no
 * shape off the sweep's rows.
 *
 * @param points Measured shapes of one variant with the model's time at each.
 * @param sweepRows The rows the sweep holds fixed.
 * @param parallel Rows at once where they are known already (another variant's on the same
 *   device), so that a few shapes fit only the overhead.
 * @returns The row cost.
 * @example
 * ```ts
 * import { fitRowCost, rowsMs } from "./_row_cost.ts";
 * const truth = { overhead: 300, parallel: 2 };
 * const shapes: [number, number][] = [[1, 4096], [8, 1024], [256, 1024], [1024, 256]];
 * const timeAt = (rows: number, cols: number, cost: typeof truth) =>
 *   rowsMs(rows * cols, rows, 32, cost, { ms: 0.1 + 1e-5 * rows * cols, t0: 0.1, elementMs: 1e-5 });
 * const points = shapes.map(([rows, cols]) => ({
 *   elements: rows * cols,
 *   rows,
 *   lnMs: Math.log(timeAt(rows, cols, truth)),
 *   modelMs: (cost: typeof truth) => timeAt(rows, cols, cost),
 * }));
 * const found = fitRowCost(points, 32);
 * console.log(Math.round(found.overhead), found.parallel); // 304 2
 * ```
 */
export function fitRowCost(
  points: readonly RowPoint[],
  sweepRows: number,
  parallel?: number,
): RowCost {
  const useful = points.filter((p) => p.rows !== sweepRows && p.elements > 0);
  if (useful.length === 0) return parallel === undefined ? NO_ROW_COST : { overhead: 0, parallel };
  let best: RowCost | null = null;
  let bestError = Infinity;
  for (const atOnce of parallel === undefined ? PARALLEL : [parallel]) {
    for (const overhead of OVERHEADS) {
      const cost = { overhead, parallel: atOnce };
      let error = 0;
      for (const p of useful) {
        const ms = p.modelMs(cost);
        error += (p.lnMs - Math.log(ms)) ** 2;
      }
      // Another that only matches as well is no better: the simplest stays.
      if (error < bestError - 1e-12) {
        bestError = error;
        best = cost;
      }
    }
  }
  return best!;
}
