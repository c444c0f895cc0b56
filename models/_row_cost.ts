/**
 * Private: what each row costs a kernel beyond its elements. A WebGPU softmax runs a workgroup a
 * row, and each workgroup pays its own start, reductions and barriers whatever the row's length:
 * on lavapipe (2-vCPU AMD EPYC VM) 1000 × 100 ran 5.2 ms, 5.2 µs a row, where 32 × 3125 (the
 * same elements in the sweep's 32 rows) runs about a millisecond. The sweep holds its rows fixed,
 * so its fit prices elements alone, and a shape model learning ln(measured / fit) over rows and
 * columns from a few shapes put 1000 × 100 at half its time.
 *
 * The cost is a number of elements a row is worth besides its own (`overhead`): a run's time goes
 * as launch + elements + overhead × rows. The sweep's rows cost the same at every size, so a fit
 * through its shapes holds them in its fixed cost, and beyond it prices the elements alone: a
 * shape of more rows than the sweep's runs (e + o·(rows − sweepRows)) / e the fit's time beyond
 * its launch. (Pricing it (e + o·rows) / (e + o·sweepRows) the fit's, as if that time held the
 * sweep's rows, put lavapipe's 1000 × 16 at 40 % of its time.) Fewer rows than the sweep's give
 * back their share, (e + o·rows) / (e + o·sweepRows), never more. The overhead is measured: the value
 * that best explains the variant's measured shapes beside its axis model; 0 when they say
 * nothing (every shape at the sweep's rows) or a row costs nothing (a real GPU runs many
 * workgroups at once).
 *
 * ```ts
 * import { rowCostLn } from "./_row_cost.ts";
 * // 1000 rows of 100 against the sweep's 32 rows, a row worth 500 elements of work.
 * console.log(Math.exp(rowCostLn(1e5, 1000, 32, 500)).toFixed(2)); // "5.84"
 * ```
 *
 * @module
 */

/**
 * ln of how much longer, beyond the launch, `rows` rows of `elements` in all run than the sweep's
 * `sweepRows` rows of the same elements, when a row is worth `overhead` elements.
 *
 * @param elements Elements of the shape.
 * @param rows Its rows.
 * @param sweepRows The rows the sweep holds fixed.
 * @param overhead Elements' worth of time one row costs besides its own.
 * @returns The ln ratio; 0 at the sweep's rows or with no overhead.
 * @example
 * ```ts
 * import { rowCostLn } from "./_row_cost.ts";
 * console.log(rowCostLn(4096, 32, 32, 500), rowCostLn(4096, 1, 32, 0)); // 0 0
 * ```
 */
export function rowCostLn(
  elements: number,
  rows: number,
  sweepRows: number,
  overhead: number,
): number {
  if (!(overhead > 0) || !(elements > 0)) return 0;
  // The sweep's rows cost the same at every size, so its fit holds them in its launch: more rows
  // add theirs to the elements the fit prices beyond it. Fewer give back a share of the time.
  return rows >= sweepRows
    ? Math.log((elements + overhead * (rows - sweepRows)) / elements)
    : Math.log((elements + overhead * rows) / (elements + overhead * sweepRows));
}

/** A measured shape as {@linkcode fitRowOverhead} reads it. */
export interface RowPoint {
  readonly elements: number;
  readonly rows: number;
  /** ln of the measured time. */
  readonly lnMs: number;
  /** The model's time there, ms, given the ln factor on its time beyond the launch. */
  readonly modelMs: (ln: number) => number;
}

/** Overheads tried, in elements a row: 0, then 1 to 2²⁴ in quarter-octave steps. */
const CANDIDATES: readonly number[] = [
  0,
  ...Array.from({ length: 4 * 24 + 1 }, (_, i) => 2 ** (i / 4)),
];

/**
 * The overhead, in elements a row, whose times best match the measured ones (least squares in ln
 * time) among 0 and 1 to 2²⁴ in quarter-octave steps; 0 with no shape off the sweep's rows.
 *
 * @param points Measured shapes of one variant with the model's time at each.
 * @param sweepRows The rows the sweep holds fixed.
 * @returns The overhead.
 * @example
 * ```ts
 * import { fitRowOverhead, rowCostLn } from "./_row_cost.ts";
 * const truth = 300;
 * const shapes: [number, number][] = [[1, 4096], [256, 1024], [1024, 256]];
 * const points = shapes.map(([rows, cols]) => ({
 *   elements: rows * cols,
 *   rows,
 *   lnMs: rowCostLn(rows * cols, rows, 32, truth),
 *   modelMs: (ln: number) => Math.exp(ln),
 * }));
 * console.log(Math.round(fitRowOverhead(points, 32))); // 304
 * ```
 */
export function fitRowOverhead(points: readonly RowPoint[], sweepRows: number): number {
  const useful = points.filter((p) => p.rows !== sweepRows && p.elements > 0);
  if (useful.length === 0) return 0;
  let best = 0;
  let bestError = Infinity;
  for (const overhead of CANDIDATES) {
    let error = 0;
    for (const p of useful) {
      const ms = p.modelMs(rowCostLn(p.elements, p.rows, sweepRows, overhead));
      error += (p.lnMs - Math.log(ms)) ** 2;
    }
    if (error < bestError) {
      bestError = error;
      best = overhead;
    }
  }
  return best;
}
