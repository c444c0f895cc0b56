/**
 * Private: what a cost model misses, learned over shapes. `t0 + max(flops / F, bytes / B)` sees a
 * shape only through its work, but a kernel's efficiency depends on the shape's proportions (a
 * matmul with m = 1 is a gemv that a tiled kernel runs at a tenth of its square-shape rate) and on
 * its working set against the caches (a CPU streams ~3× faster while it fits). This module keeps
 * ln(measured / model) at every measured shape of a series and predicts it at any other shape by
 * Gaussian-process regression in log-dimension space: close to measured shapes it follows them,
 * far from every measured shape it returns to the cost model — and says so through its variance.
 * Past the measured span of a dimension a series' model (`beyond: "edge"`) keeps the correction of
 * the nearest shape inside it instead, while its variance still grows with the distance.
 *
 * Its length scales and noise level are not one choice but a mixture of the likely ones, weighted by
 * how well each predicted the measured shapes left out in turn: a dozen shapes leave them unsure.
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
  /**
   * The hyperparameters whose leave-one-out scores came within {@linkcode MIX_SPAN} of the best,
   * each a model of its own, weighted by its leave-one-out likelihood; the correction is their
   * mixture. Absent: this model alone.
   */
  readonly members?: readonly { readonly model: ShapeModel; readonly weight: number }[];
  /**
   * For a model whose mean keeps its edge beyond the measured shapes (`beyond: "edge"`), the
   * least and greatest ln of each dimension they span: a shape past them takes its mean where
   * they end ({@linkcode BeyondData}). Absent: the mean returns to the cost model with the
   * distance. The spread widens with the distance either way.
   */
  readonly span?: { readonly lo: Float64Array; readonly hi: Float64Array };
}

/**
 * What a shape model's mean does past the largest or smallest measured value of a dimension.
 * `"edge"`: what a series misses against its own square-shape fit at the edge of its measured
 * proportions is the proportions' effect, and it holds further out: one row of wasm-mt matmul
 * streams B at about a sixth of the time the square fit gives, at n = 512 to 4096 alike, and
 * returning to the fit past n = 4096 priced 1 × 1536 × 6144 at 1.95 ms where it ran 1.25–1.35
 * (held at n = 4096: 1.20). `"prior"`: a ratio between two variants scatters from shape to shape
 * as their tiles fit, so far out it is a guess about its mean.
 */
export type BeyondData = "prior" | "edge";

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
 * Fits the residual model of one series: hyperparameters weighed by leave-one-out predictive
 * likelihood over a small grid (a mixture of the likely ones), interval multiplier by
 * leave-one-out coverage.
 *
 * @param points Measured shapes with their ln residuals (non-finite ones are skipped).
 * @param level Interval level the multiplier is calibrated for (default 0.9).
 * @param beyond What the mean does beyond the measured shapes (default `"prior"`).
 * @returns The model, or null without a usable point that is not an anchor.
 * ```ts
 * import { fitShapeModel } from "./_shape_model.ts";
 * console.log(fitShapeModel([])); // null
 * ```
 */
export function fitShapeModel(
  points: readonly ShapePoint[],
  level: number = DEFAULT_LEVEL,
  beyond: BeyondData = "prior",
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
    const errors = new Float64Array(learned.length);
    const variances = new Float64Array(learned.length);
    learned.forEach((i, j) => {
      const looVar = 1 / inverse[i * n + i]!;
      const looError = alpha[i]! * looVar;
      score += 0.5 * Math.log(looVar) + (looError * looError) / (2 * looVar);
      errors[j] = looError;
      variances[j] = looVar;
    });
    const model = { x, dims, n, alpha, inverse, lengthScales, signalVar, nuggetVar, level, range };
    const c = { score, errors, variances, model: { ...model, multiplier: 0 } };
    tried.push(c);
    return c;
  };
  const tried: Candidate[] = [];
  let best: Candidate | null = null;
  for (const lengthScale of LENGTH_SCALES) {
    for (const sd of NUGGET_SDS) {
      const c = candidate(new Float64Array(dims).fill(lengthScale), sd * sd);
      if (c !== null && (best === null || c.score < best.score)) best = c;
    }
  }
  if (best === null) return null;
  best = perDimension(best, candidate);
  const model = mixture(best, tried, level);
  return beyond === "edge" ? { ...model, span: spanOf(x, dims, n) } : model;
}

/**
 * Scores (negative ln leave-one-out likelihood) this far above the best still join the mixture:
 * a member there is e³ = 20 times less likely than the best, and weighs as much less.
 */
const MIX_SPAN = 3;
/** Most members of a mixture, the likeliest first. */
const MIX_MEMBERS = 12;

/**
 * The models whose scores came within {@linkcode MIX_SPAN} of the best, weighted by their
 * leave-one-out likelihood (`exp(−score)`), with the multiplier calibrated on the mixture's own
 * leave-one-out errors. A dozen shapes cannot tell which length scales are right: on one wasm-mt
 * matmul report of the Intel Xeon VM, m's scale at 5.6 (m barely matters) scored −10.0, and m at
 * 1.4–2.8 with k and n at 5.6–11.2 −12.3 to −13.6; 32 × 2048 × 2048 came out ×2.40 its
 * square-shape time from the one and ×1.76–1.98 from the others, ×1.84 from their mixture (its
 * truth ran ×1.61). The likely models together say what the shapes say, and their spread widens
 * the interval where they disagree. Offline, re-predicting 19 `bench:regret` truths of 16
 * calibrations of that VM: matmul with m ∈ {1, 8, 64} and gemv with rows ≠ cols within ±25 % in
 * 82.8 % of cases (82.0 % with the best model of the search one dimension at a time), 90 %
 * intervals covering 89.5 % (89.1 %) at a median width of ×1.57 (×1.55).
 */
function mixture(best: Candidate, tried: readonly Candidate[], level: number): ShapeModel {
  const seen = new Set<string>();
  const close = [...tried].sort((a, b) => a.score - b.score).filter((c) => {
    const key = `${[...c.model.lengthScales].join(",")}|${c.model.nuggetVar}`;
    if (seen.has(key) || c.score > best.score + MIX_SPAN) return false;
    seen.add(key);
    return true;
  }).slice(0, MIX_MEMBERS);
  const raw = close.map((c) => Math.exp(best.score - c.score));
  const total = raw.reduce((a, b) => a + b, 0);
  const weights = raw.map((w) => w / total);
  // Each learned point's left-out error over the mixture's spread there: its mean error over the
  // root of its members' variances and the spread of their errors.
  const z = close[0]!.errors.map((_, j) => {
    let mean = 0;
    let second = 0;
    close.forEach((c, h) => {
      mean += weights[h]! * c.errors[j]!;
      second += weights[h]! * (c.variances[j]! + c.errors[j]! ** 2);
    });
    return Math.abs(mean) / Math.sqrt(Math.max(second - mean * mean, 1e-12));
  });
  if (close.length === 1) return { ...best.model, multiplier: conformalMultiplier(z, level) };
  return {
    ...close[0]!.model,
    multiplier: conformalMultiplier(z, level),
    members: close.map((c, h) => ({ model: c.model, weight: weights[h]! })),
  };
}

/** A model with its leave-one-out score (lower is better) and errors. */
interface Candidate {
  readonly score: number;
  /** Each learned point's leave-one-out error (ln), and its predictive variance. */
  readonly errors: Float64Array;
  readonly variances: Float64Array;
  readonly model: ShapeModel;
}

/** Per-dimension length scales tried: the common ones and one octave longer (eight octaves). */
const DIMENSION_SCALES = [...LENGTH_SCALES, LENGTH_SCALES[LENGTH_SCALES.length - 1]! * 2];

/**
 * Each dimension's own length scale, every combination of {@linkcode DIMENSION_SCALES} at the best
 * common model's noise level, then the noise level again at the best of them: a matmul's residual
 * moves with m (how full the tiles are) much faster than with k or n, and one common scale either
 * forgets m's steps or keeps k and n apart. The leave-one-out score already charges a scale that
 * only fits the points' noise: each point is predicted without itself. (A search one dimension at
 * a time from the best common scale stopped short of the likeliest scales, which the mixture of
 * the likely ones needs to see.)
 */
function perDimension(
  start: Candidate,
  candidate: (lengthScales: Float64Array, nuggetVar: number) => Candidate | null,
): Candidate {
  const { dims } = start.model;
  if (dims < 2) return start;
  let best = start;
  const scales = new Float64Array(dims);
  const visit = (d: number) => {
    if (d === dims) {
      const c = candidate(Float64Array.from(scales), start.model.nuggetVar);
      if (c !== null && c.score < best.score) best = c;
      return;
    }
    for (const scale of DIMENSION_SCALES) {
      scales[d] = scale;
      visit(d + 1);
    }
  };
  visit(0);
  for (const sd of NUGGET_SDS) {
    const c = candidate(best.model.lengthScales, sd * sd);
    if (c !== null && c.score < best.score) best = c;
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
  const inside = withinData(model, features);
  return inside === features ? correctionOf(model, features) : {
    mean: correctionOf(model, inside).mean,
    sd: correctionOf(model, features).sd,
  };
}

function correctionOf(model: ShapeModel, features: readonly number[]): Correction {
  if (model.members !== undefined) {
    let mean = 0;
    let second = 0;
    for (const { model: m, weight } of model.members) {
      const c = correctionOf(m, features);
      mean += weight * c.mean;
      second += weight * (c.sd * c.sd + c.mean * c.mean);
    }
    return { mean, sd: Math.sqrt(Math.max(0, second - mean * mean)) };
  }
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
  return meanOf(model, withinData(model, features));
}

function meanOf(model: ShapeModel, features: readonly number[]): number {
  if (model.members !== undefined) {
    let mean = 0;
    for (const { model: m, weight } of model.members) mean += weight * meanOf(m, features);
    return mean;
  }
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

/** The least and greatest of each dimension over `n` points of ln features, row by row. */
function spanOf(x: Float64Array, dims: number, n: number): NonNullable<ShapeModel["span"]> {
  const lo = new Float64Array(dims).fill(Infinity);
  const hi = new Float64Array(dims).fill(-Infinity);
  for (let i = 0; i < n; i++) {
    for (let d = 0; d < dims; d++) {
      lo[d] = Math.min(lo[d]!, x[i * dims + d]!);
      hi[d] = Math.max(hi[d]!, x[i * dims + d]!);
    }
  }
  return { lo, hi };
}

/**
 * `features` moved, dimension by dimension, into the span of the measured shapes when the model
 * keeps its edge (`span`); else as they are.
 */
function withinData(model: ShapeModel, features: readonly number[]): readonly number[] {
  const span = model.span;
  if (span === undefined) return features;
  let out: number[] | null = null;
  for (let d = 0; d < model.dims; d++) {
    const v = Math.log(features[d] ?? 1);
    const c = Math.min(span.hi[d]!, Math.max(span.lo[d]!, v));
    if (c !== v) (out ??= [...features])[d] = Math.exp(c);
  }
  return out ?? features;
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
