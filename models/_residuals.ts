/**
 * Private: the part of the measurements a cost model misses, kept to correct it between measured
 * sizes. `t0 + max(flops / F, bytes / B)` has one bandwidth, but a CPU streams ~3× faster while
 * the working set fits a cache than once it spills, so a single fit is off by tens of percent
 * just inside and outside each cache; interpolating ln(measured / model) in ln(bytes) between
 * the measured sizes restores the measured shape there, while the model still carries the
 * prediction between points and beyond them.
 *
 * The correction's own held-out error comes from leaving each interior point out in turn and
 * interpolating from its neighbours (the fit itself held fixed). A prediction carries the error
 * of the points around it ({@linkcode localLooError}): one regime change (wasm-mt matmul runs
 * inline at 4³ and wakes its workers from 8³, ×36 in time for ×8 in work) must not widen every
 * interval of the series.
 *
 * @example
 * ```ts
 * import { correctionAt, residualCurve } from "./_residuals.ts";
 * const model = (p: { bytes: number }) => p.bytes / 1e6; // 1 GB/s, ms
 * const curve = residualCurve([
 *   { bytes: 1e3, ms: 0.0005 }, { bytes: 1e5, ms: 0.05 }, { bytes: 1e7, ms: 20 },
 * ], model);
 * console.log(correctionAt(curve, 1e5)); // 0.5: the model is 2× slow at 100 kB
 * ```
 *
 * @module
 */

/** Residuals of a fit at its measured sizes, and how well interpolating them predicts. */
export interface ResidualCurve {
  /** ln(bytes) of each measured size, ascending, distinct. */
  readonly x: Float64Array;
  /** ln(measured / model) there (the mean when a size was measured more than once). */
  readonly r: Float64Array;
  /** Leave-one-out mean absolute relative error of the corrected prediction; null under 3 sizes. */
  readonly looMape: number | null;
  /** The worst of those leave-one-out errors; null under 3 sizes. */
  readonly looMax: number | null;
  /**
   * Each size's leave-one-out error, aligned with `x`; NaN at the two ends, and for a size with no
   * neighbour on its side of a break (nothing to test).
   */
  readonly looErrors: Float64Array;
  /**
   * ln(bytes) where the measurements change regime by construction (the CPU runners' switch to
   * streamed operands), ascending: a correction is never interpolated across one.
   */
  readonly breaks: Float64Array;
}

/** A measured point as the correction needs it. */
export interface ResidualPoint {
  readonly bytes: number;
  readonly ms: number;
  /** Half-width of the median's 95 % interval, ms; a point much less sure is not used. */
  readonly ciHalfWidth?: number;
}

/**
 * A median known only to ±this (95 %) or worse says little about where the model misses: taken
 * whole, such a point (a device-resident gemv on lavapipe at ±64 %, whose window medians vary
 * 2.2–4.9 ms) would drag predictions around it by its noise. It is not thrown away either: it
 * is the only word on its size, and at the end of a series the only one beyond it (an AMD EPYC
 * VM's wasm matmul 512³ at ±28 %, 45 GFLOP/s: without it, 611³ and 900³ held the residual of
 * 128³, caught at 29.5 GFLOP/s while the host ran slow, and were priced 57 % and 53 % slow).
 * Its residual is shrunk toward what the sure points say there, each weighted by its precision
 * (see {@linkcode residualCurve}).
 */
export const UNSURE_RESIDUAL = 0.25;

/**
 * The residual curve of a model over measured points.
 *
 * A median less sure than ±{@linkcode UNSURE_RESIDUAL} enters shrunk: its residual moves from
 * the sure points' correction at its size (held at their ends, as in {@linkcode correctionAt})
 * toward its own by the share its precision has of both, the sure points' being their
 * leave-one-out error (±25 % when they have none), compounded once per doubling of bytes beyond
 * their ends as a prediction's is: a ±64 % median between sure points that interpolate to ±20 %
 * keeps 34 % of its own residual; a ±28 % one four doublings beyond sure points at ±34 % keeps
 * 99 %.
 *
 * @param points Measured points of one variant (any order; non-positive values are skipped).
 * @param model The fitted time, ms, of a point's bytes (and whatever else the caller closes over).
 * @returns The curve; empty when no point is usable.
 * @example
 * ```ts
 * import { residualCurve } from "./_residuals.ts";
 * const c = residualCurve([{ bytes: 10, ms: 2 }, { bytes: 10, ms: 8 }], () => 4);
 * console.log(c.x.length, c.r[0]); // 1 0
 * ```
 */
export function residualCurve<P extends ResidualPoint>(
  points: readonly P[],
  model: (p: P) => number,
  breakBytes: readonly number[] = [],
): ResidualCurve {
  const usable = points.filter((p) => p.bytes > 0 && p.ms > 0 && model(p) > 0);
  const unsure = (p: P) => (p.ciHalfWidth ?? 0) > UNSURE_RESIDUAL * p.ms;
  const residualOf = (p: P) => Math.log(p.ms / model(p));
  const sure = usable.filter((p) => !unsure(p));
  const doubtful = usable.filter(unsure);
  const byX = new Map<number, number[]>();
  const add = (bytes: number, residual: number) => {
    const x = Math.log(bytes);
    byX.set(x, [...byX.get(x) ?? [], residual]);
  };
  for (const p of sure) add(p.bytes, residualOf(p));
  if (doubtful.length > 0) {
    const prior = residualCurve(sure, model, breakBytes);
    const interpolated = Math.log1p(prior.looMape ?? UNSURE_RESIDUAL);
    for (const p of doubtful) {
      const priorSd = interpolated * (1 + doublingsBeyond(prior, Math.log(p.bytes)));
      const ownSd = Math.log1p(p.ciHalfWidth! / p.ms) / 1.96;
      const weight = priorSd ** 2 / (priorSd ** 2 + ownSd ** 2);
      const expected = Math.log(correctionAt(prior, p.bytes));
      add(p.bytes, expected + weight * (residualOf(p) - expected));
    }
  }
  const xs = [...byX.keys()].sort((a, b) => a - b);
  const x = Float64Array.from(xs);
  const r = Float64Array.from(xs, (k) => {
    const list = byX.get(k)!;
    return list.reduce((s, v) => s + v, 0) / list.length;
  });
  const breaks = Float64Array.from(breakBytes.map(Math.log)).sort();
  let looMape: number | null = null;
  let looMax: number | null = null;
  const looErrors = new Float64Array(x.length).fill(NaN);
  if (x.length >= 3) {
    let sum = 0;
    let max = 0;
    let tested = 0;
    for (let i = 1; i < x.length - 1; i++) {
      const side = segmentOf(breaks, x[i]!);
      const before = segmentOf(breaks, x[i - 1]!) === side;
      const after = segmentOf(breaks, x[i + 1]!) === side;
      if (!before && !after) continue;
      // With a neighbour on one side only, the prediction there carries that neighbour's level.
      const w = !before ? 1 : !after ? 0 : (x[i]! - x[i - 1]!) / (x[i + 1]! - x[i - 1]!);
      const predicted = r[i - 1]! + w * (r[i + 1]! - r[i - 1]!);
      const error = Math.abs(Math.expm1(predicted - r[i]!));
      looErrors[i] = error;
      sum += error;
      tested++;
      if (error > max) max = error;
    }
    if (tested > 0) {
      looMape = sum / tested;
      looMax = max;
    }
  }
  return { x, r, looMape, looMax, looErrors, breaks };
}

/**
 * The held-out error of the corrected prediction at some bytes: the worst leave-one-out error of
 * the tested sizes nearest to it, one on each side (between two measured sizes: the ones whose
 * leave-one-out gaps overlap it; beyond the measured range: the two nearest its end), and never
 * under the series' median leave-one-out error (a gap's neighbours can all be quiet by luck) or
 * `floor`.
 *
 * Between measured sizes the error shrinks with the distance to the nearest of them: a size left
 * out was predicted across the gap its absence opened, from neighbours as far as the sizes
 * around it; a size between two measured ones is at most half its own gap from one of them, and
 * at a measured size the curve is the measurement. Each neighbour's error, and `floor`, is scaled
 * by the square root of the query's distance to the nearest measured size over the left-out
 * size's distance to its nearest neighbour, in ln(bytes), capped at 1: between a smooth bend,
 * whose error shrinks with the square of the distance, and a cache step, whose error anywhere
 * between the two sizes around it is as large as leaving one of them out showed. The median
 * stays whole: it is mostly the scatter of the medians themselves, which no nearness removes.
 * Re-predicting `bench:regret`'s held-out truths of four calibrations of an Intel Xeon VM, the
 * 90 % intervals held 94.4 % of them at a median width of ×1.92 unscaled, 92.6 % at ×1.81 scaled.
 *
 * @param curve A residual curve.
 * @param bytes The work's bytes.
 * @param floor Least error to claim before the distance scaling (a fit's own held-out error).
 * @returns The relative error (0.1 is 10 %), or null.
 * @example
 * ```ts
 * import { localLooError, residualCurve } from "./_residuals.ts";
 * // Smooth from 10 to 10⁴ bytes, then a 4× jump: only predictions near the jump carry it.
 * const c = residualCurve(
 *   [10, 100, 1e3, 1e4, 1e5, 1e6].map((bytes, i) => ({ bytes, ms: i < 4 ? 1 : 4 })),
 *   () => 1,
 * );
 * console.log(localLooError(c, 30)! < 0.01, localLooError(c, 3e4)! > 0.5); // true true
 * ```
 */
export function localLooError(curve: ResidualCurve, bytes: number, floor = 0): number | null {
  const { x, looErrors } = curve;
  const n = x.length;
  if (n < 3) return null;
  const tested = Array.from({ length: n - 2 }, (_, k) => k + 1)
    .filter((i) => !Number.isNaN(looErrors[i]!));
  if (tested.length === 0) return null;
  const lx = Math.log(bytes);
  // The sizes on the query's side of a break, or all of them when it has none.
  const [start, end] = sideOf(curve, lx);
  const first = x[start]!;
  const last = x[end - 1]!;
  const mine = tested.filter((i) => i >= start && i < end);
  const below = mine.filter((i) => x[i]! <= lx);
  const above = mine.filter((i) => x[i]! > lx);
  // Beyond the measured range, the two sizes tested nearest its end; within it, the nearest
  // tested size on each side that has one.
  const inside = lx >= first && lx <= last;
  const near = lx < first ? above.slice(0, 2) : lx > last ? below.slice(-2) : [
    ...below.slice(-1),
    ...above.slice(0, 1),
  ];
  const errors = tested.map((i) => looErrors[i]!).sort((a, b) => a - b);
  const medianError = (errors[(errors.length - 1) >> 1]! + errors[errors.length >> 1]!) / 2;
  const gapOf = (i: number) => Math.min(x[i]! - x[i - 1]!, x[i + 1]! - x[i]!);
  const gaps = tested.map(gapOf).sort((a, b) => a - b);
  const medianGap = (gaps[(gaps.length - 1) >> 1]! + gaps[gaps.length >> 1]!) / 2;
  const distance = inside ? nearestDistance(x.subarray(start, end), lx) : Infinity;
  const scale = (gap: number) => Math.sqrt(Math.min(1, distance / gap));
  return Math.max(
    medianError,
    floor * scale(medianGap),
    ...near.map((i) => looErrors[i]! * scale(gapOf(i))),
  );
}

/**
 * Doublings of bytes from `lx` to the nearest end of the curve's sizes on its side of every
 * break; 0 within them, and with no sizes (then nothing is known anywhere).
 */
function doublingsBeyond(curve: ResidualCurve, lx: number): number {
  if (curve.x.length === 0) return 0;
  const [start, end] = sideOf(curve, lx);
  const outside = Math.max(0, curve.x[start]! - lx, lx - curve.x[end - 1]!);
  return outside / Math.LN2;
}

/** Distance from `lx` to the nearest of `x`. */
function nearestDistance(x: Float64Array, lx: number): number {
  let best = Infinity;
  for (const v of x) best = Math.min(best, Math.abs(v - lx));
  return best;
}

/** How many of the ascending `breaks` lie at or below `lx`: which side of them it is on. */
function segmentOf(breaks: Float64Array, lx: number): number {
  let k = 0;
  while (k < breaks.length && breaks[k]! <= lx) k++;
  return k;
}

/**
 * The index range `[start, end)` of the curve's sizes on the same side of every break as `lx`;
 * the whole curve when none is.
 */
function sideOf(curve: ResidualCurve, lx: number): [number, number] {
  const { x, breaks } = curve;
  if (breaks.length === 0) return [0, x.length];
  const side = segmentOf(breaks, lx);
  let start = 0;
  while (start < x.length && segmentOf(breaks, x[start]!) < side) start++;
  let end = start;
  while (end < x.length && segmentOf(breaks, x[end]!) === side) end++;
  return end > start ? [start, end] : [0, x.length];
}

/**
 * Between two measured sizes on one side of every break: how far each of them lies from the
 * correction interpolated at `bytes`, in ln, lower first. Interpolating says the truth is in
 * between; where the two differ a lot (a sum of 953 248 that streamed its operands at 2.9 GB/s
 * beside 588 493 held in cache at 6.7) it may sit at either: the js sum of 900 000 was priced at
 * 3.2 GB/s and ran at 6.9. Null outside the measured sizes or on one of them.
 *
 * @param curve A residual curve.
 * @param bytes The work's bytes.
 * @returns ln(neighbour's correction / the one at `bytes`), the lower and the higher; or null.
 * @example
 * ```ts
 * import { neighboursAt, residualCurve } from "./_residuals.ts";
 * const c = residualCurve([{ bytes: 1, ms: 1 }, { bytes: 100, ms: 4 }], () => 1);
 * console.log(neighboursAt(c, 10)!.map((d) => Math.exp(d))); // [ 0.5, 2 ]
 * ```
 */
export function neighboursAt(curve: ResidualCurve, bytes: number): [number, number] | null {
  const { x, r } = curve;
  const lx = Math.log(bytes);
  const [start, end] = sideOf(curve, lx);
  if (end - start < 2 || !(lx > x[start]!) || !(lx < x[end - 1]!)) return null;
  let lo = start;
  while (x[lo + 1]! <= lx) lo++;
  if (x[lo] === lx) return null;
  const at = Math.log(correctionAt(curve, bytes));
  const a = r[lo]! - at;
  const b = r[lo + 1]! - at;
  return a < b ? [a, b] : [b, a];
}

/**
 * The multiplicative correction at some bytes: e^(residual), interpolated linearly in ln(bytes)
 * between measured sizes and held at the end value beyond them; 1 for an empty curve.
 *
 * @param curve A residual curve.
 * @param bytes The work's bytes.
 * @returns The factor to multiply the model's time by.
 * @example
 * ```ts
 * import { correctionAt, residualCurve } from "./_residuals.ts";
 * const c = residualCurve([{ bytes: 1, ms: 1 }, { bytes: 100, ms: 4 }], () => 1);
 * console.log(correctionAt(c, 10)); // 2: halfway in ln(bytes), geometric mean of 1 and 4
 * ```
 */
export function correctionAt(curve: ResidualCurve, bytes: number): number {
  const { x, r } = curve;
  if (x.length === 0) return 1;
  const lx = Math.log(bytes);
  const [start, end] = sideOf(curve, lx);
  if (!(lx > x[start]!)) return Math.exp(r[start]!);
  if (lx >= x[end - 1]!) return Math.exp(r[end - 1]!);
  let lo = start;
  let hi = end - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (x[mid]! <= lx) lo = mid;
    else hi = mid;
  }
  const w = (lx - x[lo]!) / (x[hi]! - x[lo]!);
  return Math.exp(r[lo]! + w * (r[hi]! - r[lo]!));
}
