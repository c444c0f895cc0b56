/**
 * Private: what partly empty tiles cost. A kernel that tiles its output dispatches whole tiles:
 * a 260³ matmul on lavapipe's 64 × 128 tiles runs 320 × 384 outputs' worth of threads, and a
 * partial tile's threads run their loops all the same (guarded loads, wasted arithmetic). A
 * cost model of the work alone misses it: in one process 256³ took 1.25–1.32 ms, 260³ 1.95–1.99
 * and 388³ 5.67–5.84 against 3.98–4.17 at 384³, while a fit through the grid's powers of two
 * (every one of them whole tiles) put 300³ at two thirds of its time.
 *
 * A run pays part of the idle share: its time beyond the launch grows as utilisation^−penalty,
 * where utilisation is the share of the dispatched tiles' area the output covers
 * (`utilisation` of the kernel). Padding in full would be a penalty of 1; the two sizes above
 * gave 0.7–0.8 (guards skip the loads). The penalty is measured, not assumed: calibrate times
 * the winning variant at sizes a little past the grid's, whose tiles are partly empty, and each
 * gives one estimate beside the fit corrected along the axis there; with none, it is 0 and
 * nothing changes. Tiles emptier than any measured are priced as the emptiest measured.
 *
 * ```ts
 * import { fitTilePenalty, tileLn } from "./_tiles.ts";
 * // 260³ on 64 × 128 tiles covers 55 % of them and ran 1.57× the fit beyond its launch.
 * const tiles = fitTilePenalty([
 *   { ms: 1.25, fitMs: 1.25, t0: 0.03, utilisation: 1 },
 *   { ms: 0.03 + 1.57 * 1.29, fitMs: 1.32, t0: 0.03, utilisation: 0.55 },
 * ]);
 * console.log(tiles.penalty.toFixed(2), Math.exp(tileLn(tiles, 0.55)).toFixed(2)); // "0.75" "1.57"
 * ```
 *
 * @module
 */
import { median } from "../core/stats.ts";
import { FULL_TILES } from "../kernels/types.ts";

/** A point as {@linkcode fitTilePenalty} reads it. */
export interface TilePoint {
  /** Measured median, ms. */
  readonly ms: number;
  /** The model's time there without the tiles (the fit, corrected along the axis), ms. */
  readonly fitMs: number;
  /** The model's fixed cost, ms. */
  readonly t0: number;
  /** Share of the dispatched tiles' area the output covers. */
  readonly utilisation: number;
}

/** Least share of a point's modelled time beyond its launch for it to estimate the penalty. */
const MIN_VARIABLE_SHARE = 2 / 3;

/** What partly empty tiles cost a variant, as measured. */
export interface TileModel {
  /** The share of the idle area a run pays: 0 (nothing) to 1 (in full). */
  readonly penalty: number;
  /**
   * The emptiest tiles measured (least utilisation): emptier ones are priced as these, not
   * extrapolated (77³ on 64 × 64 tiles is four workgroups that leave a 2-core adapter idle).
   */
  readonly leastUtilisation: number;
}

/** No partial tiles measured: nothing charged. */
export const NO_TILE_COST: TileModel = Object.freeze({ penalty: 0, leastUtilisation: 1 });

/**
 * The cost of partly empty tiles: the median over points with tiles under 95 % full (and
 * mostly work, not launch) of ln(measured beyond the launch / modelled beyond it) over
 * −ln(utilisation), between 0 (partial tiles cost nothing) and 1 (they cost in full), and the
 * least utilisation among them; {@linkcode NO_TILE_COST} without such points.
 *
 * @param points Measured points with the model's time there.
 * @returns The model.
 * @example
 * ```ts
 * import { fitTilePenalty } from "./_tiles.ts";
 * console.log(fitTilePenalty([{ ms: 2, fitMs: 1, t0: 0, utilisation: 1 }]).penalty); // 0
 * ```
 */
export function fitTilePenalty(points: readonly TilePoint[]): TileModel {
  const used = points.filter((p) =>
    p.utilisation < FULL_TILES && p.utilisation > 0 && p.ms > p.t0 &&
    p.fitMs - p.t0 >= MIN_VARIABLE_SHARE * p.fitMs
  );
  if (used.length === 0) return NO_TILE_COST;
  const estimates = used.map((p) =>
    Math.log((p.ms - p.t0) / (p.fitMs - p.t0)) / -Math.log(p.utilisation)
  );
  return {
    penalty: Math.min(1, Math.max(0, median(estimates))),
    leastUtilisation: Math.min(...used.map((p) => p.utilisation)),
  };
}

/**
 * ln of the factor on a run's time beyond its launch for partly empty tiles.
 *
 * @param model A {@linkcode fitTilePenalty}.
 * @param utilisation Share of the tiles' area the output covers.
 * @returns −penalty × ln(utilisation, at least the least measured), 0 for full tiles.
 * @example
 * ```ts
 * import { tileLn } from "./_tiles.ts";
 * const full = { penalty: 1, leastUtilisation: 0.25 };
 * console.log(tileLn(full, 0.5) === Math.log(2), tileLn(full, 0.1) === Math.log(4)); // true true
 * ```
 */
export function tileLn(model: TileModel, utilisation: number): number {
  const u = Math.max(utilisation, model.leastUtilisation);
  return u > 0 && u < 1 ? -model.penalty * Math.log(u) : 0;
}
