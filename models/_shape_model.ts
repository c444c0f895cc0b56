/**
 * Private: what a cost model misses, learned over shapes. `t0 + max(flops / F, bytes / B)` sees a
 * shape only through its work, but a kernel's efficiency depends on the shape's proportions (a
 * matmul with m = 1 is a gemv that a tiled kernel runs at a tenth of its square-shape rate) and on
 * its working set against the caches (a CPU streams ~3× faster while it fits). This module keeps
 * ln(measured / model) at every measured shape of a series and predicts it at any other shape by
 * Gaussian-process regression in log-dimension space: close to measured shapes it follows them,
 * far from every measured shape it returns to the cost model — and says so through its variance.
 *
 * The variance is calibrated, not assumed: each measured residual is predicted from all the others
 * (leave-one-out, closed form), and the standardized errors' empirical quantile at the stated
 * level becomes the interval's multiplier (split-conformal style), so an interval at level 0.9
 * holds on data the model did not see, at least as far as the calibration's own points tell.
 *
 * ```ts
 * import { correctionAt, fitShapeModel } from "./_shape_model.ts";
 * // ln residuals of a fit at four shapes of (m, k, n): square shapes fit, m = 1 runs 2× slow.
 * const points = [
 *   { features: [64, 64, 64], residual: 0.01, noiseVar: 1e-4 },
 *   { features: [128, 128, 128], residual: -0.02, noiseVar: 1e-4 },
 *   { features: [256, 256, 256], residual: 0.0, noiseVar: 1e-4 },
 *   { features: [1, 256, 256], residual: Math.log(2), noiseVar: 1e-4 },
 * ];
 * const model = fitShapeModel(points)!;
 * const c = correctionAt(model, [1, 256, 256]);
 * console.log(Math.exp(c.mean).toFixed(1)); // "2.0"
 * ```
 *
 * @module
 */
import { normalQuantile } from "../core/numeric.ts";

/** One measured shape of a series, as the model needs it. */
export interface ShapePoint {
  /** The shape's dimensions in the op's order (positive). */
  readonly features: readonly number[];
  /** ln(measured median / cost model). */
  readonly residual: number;
  /** Variance of that ln median from its own confidence interval. */
  readonly noiseVar: number;
  /**
   * A point whose residual is zero by construction (an on-axis size the axis correction passes
   * through): it holds the model to the axis near it, but says nothing about how well the model
   * predicts a left-out shape, so it neither calibrates the interval nor sets the prior spread.
   */
  readonly anchor?: boolean;
}

/** A fitted residual model of one series. */
export interface ShapeModel {
  /** ln of each point's dimensions, row by row (`n × dims`). */
  readonly x: Float64Array;
  readonly dims: number;
  readonly n: number;
  /** (K + Σ)⁻¹ r: the weights of the predictive mean. */
  readonly alpha: Float64Array;
  /** (K + Σ)⁻¹, row-major, for the predictive variance. */
  readonly inverse: Float64Array;
  /**
   * Length scale of the squared-exponential kernel per dimension, in ln units (0.69 = one
   * octave): a dimension that changes the residual slowly (a matmul's k beside its m) gets a
   * longer one, so shapes that differ mostly there still inform each other.
   */
  readonly lengthScales: Float64Array;
  /** Prior variance of a residual far from every measured shape. */
  readonly signalVar: number;
  /** Variance of a new measurement's ln median about the model (window-to-window noise). */
  readonly nuggetVar: number;
  /**
   * The interval multiplier: at the stated level, |left-out residual − its prediction| stayed
   * under `multiplier` × its predictive standard deviation for that share of the points.
   */
  readonly multiplier: number;
  /** The level `multiplier` was calibrated for. */
  readonly level: number;
  /**
   * The least and greatest of 0 (the cost model alone, where the model returns far from every
   * point) and the residuals it learned from: its mean stays between them. A squared-exponential model with a short length scale rings between points of
   * different residuals, and a correction beyond every measured one is that ringing, not a shape
   * effect: gemv 2048 × 768 came out ×1.33 slow from shapes that all ran faster than the axis.
   */
  readonly range: readonly [number, number];
}

/** The correction at a shape: mean and standard deviation of ln(time / cost model). */
export interface Correction {
  readonly mean: number;
  /** Standard deviation of a new measurement's ln time about the mean (model + nugget). */
  readonly sd: number;
}

/** Interval level the models state unless asked otherwise. */
export const DEFAULT_LEVEL = 0.9;

/** Length scales tried, ln units: half an octave to four octaves. */
const LENGTH_SCALES = [0.35, 0.7, 1.4, 2.8, 5.6];
/** Window-to-window noise levels tried (standard deviation of ln time). */
const NUGGET_SDS = [0.03, 0.05, 0.08, 0.12, 0.2];
/** Floor of the prior variance: a series whose fit is perfect still allows ±5 % far away. */
const MIN_SIGNAL_VAR = 0.05 ** 2;
/** Fewest points from which leave-one-out errors calibrate the multiplier. */
const MIN_CONFORMAL_POINTS = 8;

/**
 * Fits the residual model of one series: hyperparameters chosen by leave-one-out predictive
 * likelihood over a small grid, interval multiplier by leave-one-out coverage.
 *
 * @param points Measured shapes with their ln residuals (non-finite ones are skipped).
 * @param level Interval level the multiplier is calibrated for (default 0.9).
 * @returns The model, or null without a usable point that is not an anchor.
 * ```ts
 * import { fitShapeModel } from "./_shape_model.ts";
 * console.log(fitShapeModel([])); // null
 * ```
 */
export function fitShapeModel(
  points: readonly ShapePoint[],
  level: number = DEFAULT_LEVEL,
): ShapeModel | null {
  const usable = points.filter((p) =>
    Number.isFinite(p.residual) && p.features.every((f) => f > 0) && p.noiseVar >= 0
  );
  const n = usable.length;
  const learned = usable.flatMap((p, i) => p.anchor ? [] : [i]);
  if (learned.length === 0) return null;
  const dims = usable[0]!.features.length;
  const x = new Float64Array(n * dims);
  usable.forEach((p, i) => p.features.forEach((f, d) => x[i * dims + d] = Math.log(f)));
  const r = Float64Array.from(usable, (p) => p.residual);
  const noise = Float64Array.from(usable, (p) => p.noiseVar);
  const signalVar = Math.max(
    MIN_SIGNAL_VAR,
    learned.reduce((s, i) => s + r[i]! * r[i]!, 0) / learned.length,
  );
  // The prior (0: the cost model alone) and every residual learned from bound the mean.
  const range: [number, number] = [Math.min(0, ...r), Math.max(0, ...r)];
  const candidate = (lengthScales: Float64Array, nuggetVar: number): Candidate | null => {
    const solved = solve(x, dims, n, r, noise, lengthScales, signalVar, nuggetVar);
    if (solved === null) return null;
    const { alpha, inverse } = solved;
    let score = 0;
    const z = new Float64Array(learned.length);
    learned.forEach((i, j) => {
      const looVar = 1 / inverse[i * n + i]!;
      const looError = alpha[i]! * looVar;
      score += 0.5 * Math.log(looVar) + (looError * looError) / (2 * looVar);
      z[j] = Math.abs(looError) / Math.sqrt(looVar);
    });
    const model = { x, dims, n, alpha, inverse, lengthScales, signalVar, nuggetVar, level, range };
    return { score, z, model: { ...model, multiplier: 0 } };
  };
  let best: Candidate | null = null;
  for (const lengthScale of LENGTH_SCALES) {
    for (const sd of NUGGET_SDS) {
      const c = candidate(new Float64Array(dims).fill(lengthScale), sd * sd);
      if (c !== null && (best === null || c.score < best.score)) best = c;
    }
  }
  if (best === null) return null;
  best = perDimension(best, candidate);
  return { ...best.model, multiplier: conformalMultiplier(best.z, level) };
}

/** A model with its leave-one-out score (lower is better) and standardized errors. */
interface Candidate {
  readonly score: number;
  readonly z: Float64Array;
  readonly model: ShapeModel;
}

/** Factors tried on one dimension's length scale at a time, from the best common one. */
const PER_DIMENSION_FACTORS = [0.25, 0.5, 2, 4];
/** Rounds over the dimensions. */
const PER_DIMENSION_ROUNDS = 2;
/**
 * From the best common length scale, each dimension's own, one dimension at a time
 * (coordinate search): a matmul's residual moves with m (how full the tiles are) much faster
 * than with k or n, and one common scale either forgets m's steps or keeps k and n apart. A
 * scale is kept when it lowers the leave-one-out score, which already charges a scale that only
 * fits the points' noise: each point is predicted without itself. Offline, on six reports of
 * this VM against their `bench:regret` truths, matmul with m ∈ {1, 8, 64} and gemv with rows ≠
 * cols came within ±25 % in 75–78 % of cases (66–77 % with one scale), at narrower intervals.
 */
function perDimension(
  start: Candidate,
  candidate: (lengthScales: Float64Array, nuggetVar: number) => Candidate | null,
): Candidate {
  let best = start;
  const { dims, nuggetVar } = start.model;
  const [shortest, longest] = [LENGTH_SCALES[0]!, LENGTH_SCALES[LENGTH_SCALES.length - 1]! * 2];
  for (let round = 0; round < PER_DIMENSION_ROUNDS && dims > 1; round++) {
    for (let d = 0; d < dims; d++) {
      for (const factor of PER_DIMENSION_FACTORS) {
        const scales = Float64Array.from(best.model.lengthScales);
        scales[d] = scales[d]! * factor;
        if (scales[d]! < shortest || scales[d]! > longest) continue;
        const c = candidate(scales, nuggetVar);
        if (c !== null && c.score < best.score) best = c;
      }
    }
  }
  return best;
}

/**
 * The multiplier whose ± band around each left-out prediction held `level` of the points: the
 * ⌈(n + 1)·level⌉-th smallest standardized error. With too few points for that, the normal
 * quantile widened by the largest error seen, so a handful of lucky points cannot shrink it.
 */
function conformalMultiplier(z: Float64Array, level: number): number {
  const n = z.length;
  const sorted = Float64Array.from(z).sort();
  const zLevel = normalQuantile(0.5 + level / 2);
  if (n < MIN_CONFORMAL_POINTS) return Math.max(zLevel * 1.5, sorted[n - 1] ?? 0);
  const rank = Math.ceil((n + 1) * level);
  const q = rank > n ? sorted[n - 1]! * 1.25 : sorted[rank - 1]!;
  // One order statistic of a few dozen errors is itself noisy (its level moves by ±4 points at
  // n = 60); the normal quantile scaled by the errors' root mean square uses them all, and the
  // band takes the wider of the two.
  const rms = Math.sqrt(sorted.reduce((sum, v) => sum + v * v, 0) / n);
  return Math.max(q, zLevel * rms);
}

/**
 * The correction at a shape.
 *
 * @param model A fitted model.
 * @param features The shape's dimensions in the op's order.
 * @returns Mean and standard deviation of ln(time / cost model) for a new measurement there.
 * ```ts
 * import { correctionAt, fitShapeModel } from "./_shape_model.ts";
 * const m = fitShapeModel([{ features: [100], residual: 0.5, noiseVar: 0 }])!;
 * console.log(correctionAt(m, [1e9]).mean.toFixed(2)); // "0.00": far away, the cost model alone
 * ```
 */
export function correctionAt(model: ShapeModel, features: readonly number[]): Correction {
  const k = kernelRow(model, features);
  let mean = 0;
  for (let i = 0; i < model.n; i++) mean += k[i]! * model.alpha[i]!;
  return { mean: withinRange(model, mean), sd: Math.sqrt(varianceWith(model, k)) };
}

/**
 * The mean correction alone, without allocating: what selection needs, many times a second.
 *
 * @param model A fitted model.
 * @param features The shape's dimensions in the op's order.
 * @returns The mean of ln(time / cost model) there.
 * ```ts
 * import { correctionMean, fitShapeModel } from "./_shape_model.ts";
 * const m = fitShapeModel([{ features: [100], residual: 0.5, noiseVar: 0 }])!;
 * console.log(correctionMean(m, [100]) > 0.4); // true
 * ```
 */
export function correctionMean(model: ShapeModel, features: readonly number[]): number {
  const { n, dims, x, alpha, lengthScales } = model;
  let mean = 0;
  for (let i = 0; i < n; i++) {
    let d2 = 0;
    for (let d = 0; d < dims; d++) {
      const diff = (Math.log(features[d] ?? 1) - x[i * dims + d]!) / lengthScales[d]!;
      d2 += diff * diff;
    }
    mean += model.signalVar * Math.exp(-d2 / 2) * alpha[i]!;
  }
  return withinRange(model, mean);
}

function withinRange(model: ShapeModel, mean: number): number {
  return Math.min(model.range[1], Math.max(model.range[0], mean));
}

function kernelRow(model: ShapeModel, features: readonly number[]): Float64Array {
  const { n, dims, x, lengthScales } = model;
  const k = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let d2 = 0;
    for (let d = 0; d < dims; d++) {
      const diff = (Math.log(features[d] ?? 1) - x[i * dims + d]!) / lengthScales[d]!;
      d2 += diff * diff;
    }
    k[i] = model.signalVar * Math.exp(-d2 / 2);
  }
  return k;
}

function varianceWith(model: ShapeModel, k: Float64Array): number {
  const { n, inverse } = model;
  let explained = 0;
  for (let i = 0; i < n; i++) {
    if (k[i] === 0) continue;
    let row = 0;
    for (let j = 0; j < n; j++) row += inverse[i * n + j]! * k[j]!;
    explained += k[i]! * row;
  }
  return Math.max(0, model.signalVar - explained) + model.nuggetVar;
}

function solve(
  x: Float64Array,
  dims: number,
  n: number,
  r: Float64Array,
  noise: Float64Array,
  lengthScales: Float64Array,
  signalVar: number,
  nuggetVar: number,
): { alpha: Float64Array; inverse: Float64Array } | null {
  const c = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let d2 = 0;
      for (let d = 0; d < dims; d++) {
        const diff = (x[i * dims + d]! - x[j * dims + d]!) / lengthScales[d]!;
        d2 += diff * diff;
      }
      const v = signalVar * Math.exp(-d2 / 2);
      c[i * n + j] = v;
      c[j * n + i] = v;
    }
    c[i * n + i] = c[i * n + i]! + noise[i]! + nuggetVar;
  }
  const inverse = invertSpd(c, n);
  if (inverse === null) return null;
  const alpha = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < n; j++) s += inverse[i * n + j]! * r[j]!;
    alpha[i] = s;
  }
  return { alpha, inverse };
}

/** Inverse of a symmetric positive-definite matrix by Cholesky; null when not positive-definite. */
function invertSpd(a: Float64Array, n: number): Float64Array | null {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = a[i * n + j]!;
      for (let k = 0; k < j; k++) s -= l[i * n + k]! * l[j * n + k]!;
      if (i === j) {
        if (!(s > 0)) return null;
        l[i * n + i] = Math.sqrt(s);
      } else {
        l[i * n + j] = s / l[j * n + j]!;
      }
    }
  }
  // L⁻¹ (lower triangular), then A⁻¹ = L⁻ᵀ L⁻¹.
  const li = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    li[i * n + i] = 1 / l[i * n + i]!;
    for (let j = 0; j < i; j++) {
      let s = 0;
      for (let k = j; k < i; k++) s -= l[i * n + k]! * li[k * n + j]!;
      li[i * n + j] = s / l[i * n + i]!;
    }
  }
  const inv = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = 0;
      for (let k = i; k < n; k++) s += li[k * n + i]! * li[k * n + j]!;
      inv[i * n + j] = s;
      inv[j * n + i] = s;
    }
  }
  return inv;
}
