/**
 * Private: what a matrix op's CPU kernel pays once per call and spreads over its rows. A
 * WebAssembly matmul packs all of B for each call (or, with fewer rows than a micro-tile, streams
 * it once), then each row of C does 2·k·n flops against it: the call costs about `(c + m)` rows'
 * work, where `c` is the packing (or streaming) in rows. A square of the same flops has many more
 * rows, so its fit hides `c`, and a shape with few rows runs at `m / (m + c)` of the square's
 * rate. On the 2-vCPU AMD EPYC VM one-thread wasm ran 8 × 1024 × 4096 at 16 GFLOP/s, 16 × 512 ×
 * 2048 at 25, 32 × 1024² at 29, 64 × 1024² at 40 and 256 × 512² at 48: `m / (m + c)` of 49 with
 * c ≈ 15–20 rows where B is packed a block of columns at a time (n > 512), 7–8 where it is packed
 * whole, and 4 where it is streamed (1 × k × n at 9–10, 2 × 4096 × 1024 at 16, 4 × 1024 × 4096 at
 * 23). A Gaussian process over the shape's logarithms (`_shape_model.ts`) learns that curve from a
 * dozen shapes only near them: far from them it returned to the square fit, or to a neighbour's
 * `n`, and priced 6 × 6000 × 256 at half its time. This module fits `c` per code path from the
 * series' own off-axis shapes and gives the shape model the curve as its prior mean, so that what
 * it learns is what the curve misses.
 *
 * ```ts
 * import { amortizationLn, fitAmortization } from "./_amortization.ts";
 * // Shapes that ran m / (m + 12) of the square's rate, at rows 1, 8 and 64 (squares of ~300 rows).
 * const points = [1, 8, 64].map((rows) => ({
 *   path: 0,
 *   rows,
 *   squareRows: 300,
 *   residual: amortizationLn(rows, 300, 12),
 *   withoutCurve: 1,
 * }));
 * const c = fitAmortization(points).get(0)!;
 * console.log(c.toFixed(0)); // "12"
 * ```
 *
 * @module
 */

/** One off-axis shape of a series as the fit reads it. */
export interface AmortizedPoint {
  /** The kernel's code path at the shape (`codePath` of its WebAssembly impl). */
  readonly path: number;
  /** Rows of the output the call computes (a matmul's m). */
  readonly rows: number;
  /** Rows of the square with the same flops (the fit's point of reference). */
  readonly squareRows: number;
  /** ln(measured / the square of the same flops' time): what the rows' share must explain. */
  readonly residual: number;
  /** ln(measured / the series' own prediction without the curve): what it leaves without one. */
  readonly withoutCurve: number;
}

/**
 * ln of how much longer `rows` take than a square of `squareRows` rows of the same flops, when each
 * call costs `perCall` rows' work besides its own rows.
 *
 * @param rows The shape's rows.
 * @param squareRows The rows of the square with its flops.
 * @param perCall The per-call cost in rows.
 * @returns ln((1 + perCall / rows) / (1 + perCall / squareRows)).
 * @example
 * ```ts
 * import { amortizationLn } from "./_amortization.ts";
 * console.log(Math.exp(amortizationLn(8, 1024, 16)).toFixed(2)); // "2.95"
 * console.log(amortizationLn(64, 64, 16)); // 0
 * ```
 */
export function amortizationLn(rows: number, squareRows: number, perCall: number): number {
  return Math.log1p(perCall / rows) - Math.log1p(perCall / squareRows);
}

/** Per-call costs tried, in rows: 0 (none), then a quarter row to 256 rows, ×√2 apart. */
const PER_CALL_GRID = [0, ...Array.from({ length: 21 }, (_, i) => 0.25 * Math.SQRT2 ** i)];

/** Fewest shapes of a code path from which its per-call cost is read. */
const MIN_POINTS = 2;

/**
 * Each code path's per-call cost in rows: the value of {@linkcode PER_CALL_GRID} whose curve
 * leaves the least squared error over the path's shapes, kept only where it leaves less than the
 * series' prediction without a curve. A path with fewer than {@linkcode MIN_POINTS} shapes gets none.
 *
 * @param points The series' off-axis shapes.
 * @returns Per code path, its per-call cost in rows (absent: no curve for that path).
 * @example
 * ```ts
 * import { fitAmortization } from "./_amortization.ts";
 * console.log(fitAmortization([]).size); // 0
 * ```
 */
export function fitAmortization(points: readonly AmortizedPoint[]): Map<number, number> {
  const byPath = new Map<number, AmortizedPoint[]>();
  for (const p of points) {
    if (!(p.rows > 0 && p.squareRows > 0) || !Number.isFinite(p.residual)) continue;
    byPath.set(p.path, [...byPath.get(p.path) ?? [], p]);
  }
  const out = new Map<number, number>();
  for (const [path, list] of byPath) {
    if (list.length < MIN_POINTS) continue;
    const error = (c: number) =>
      list.reduce((s, p) => s + (p.residual - amortizationLn(p.rows, p.squareRows, c)) ** 2, 0);
    const none = list.reduce((s, p) => s + p.withoutCurve ** 2, 0);
    let best = 0;
    for (const c of PER_CALL_GRID) if (error(c) < error(best)) best = c;
    if (best > 0 && error(best) < none) out.set(path, best);
  }
  return out;
}
