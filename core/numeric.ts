/**
 * Private numeric helpers for the fitters: robust least squares (Levenberg–Marquardt on
 * iteratively reweighted residuals), Gaussian draws, log-log interpolation and rounding.
 *
 * @module
 */
import type { Rng } from "../kernels/types.ts";

/**
 * The loss ρ applied to each residual.
 *
 * - `l2`: ordinary least squares.
 * - `huber`: quadratic within `scale`, linear beyond: bounded influence, convex.
 * - `tukey`: Tukey's biweight with cutoff `scale`: residuals beyond it have no influence at all.
 *
 * @example
 * ```ts
 * import type { Loss } from "./numeric.ts";
 * const loss: Loss = "huber";
 * ```
 */
export type Loss = "l2" | "huber" | "tukey";

/**
 * ρ(r) for a loss with its scale (Huber's δ or Tukey's cutoff c).
 *
 * @param loss The loss.
 * @param r The residual.
 * @param scale δ or c.
 * @returns ρ(r).
 * @example
 * ```ts
 * import { rho } from "./numeric.ts";
 * console.log(rho("huber", 3, 1)); // 2.5
 * ```
 */
export function rho(loss: Loss, r: number, scale: number): number {
  const a = Math.abs(r);
  if (loss === "l2") return r * r / 2;
  if (loss === "huber") return a <= scale ? r * r / 2 : scale * a - scale * scale / 2;
  const c2 = scale * scale / 6;
  if (a >= scale) return c2;
  const u = 1 - (r / scale) ** 2;
  return c2 * (1 - u * u * u);
}

/**
 * IRLS weight ψ(r)/r of a loss.
 *
 * @param loss The loss.
 * @param r The residual.
 * @param scale δ or c.
 * @returns The weight in [0, 1].
 * @example
 * ```ts
 * import { irlsWeight } from "./numeric.ts";
 * console.log(irlsWeight("tukey", 2, 1)); // 0
 * ```
 */
export function irlsWeight(loss: Loss, r: number, scale: number): number {
  const a = Math.abs(r);
  if (loss === "l2") return 1;
  if (loss === "huber") return a <= scale ? 1 : scale / a;
  if (a >= scale) return 0;
  const u = 1 - (r / scale) ** 2;
  return u * u;
}

/**
 * A least-squares problem: `evaluate` fills the residuals `r` (length `n`) and, when `jac` is
 * given, the Jacobian row-major (`n × k`).
 *
 * @example
 * ```ts
 * import type { LeastSquaresProblem } from "./numeric.ts";
 * const p: LeastSquaresProblem = { n: 1, k: 1, evaluate: (x, r) => { r[0] = x[0]! - 1; } };
 * ```
 */
export interface LeastSquaresProblem {
  /** Number of residuals. */
  readonly n: number;
  /** Number of parameters. */
  readonly k: number;
  /** Fill residuals (and the Jacobian) at `x`. */
  evaluate(x: Float64Array, r: Float64Array, jac: Float64Array | null): void;
}

/**
 * How {@linkcode robustLeastSquares} runs.
 *
 * @example
 * ```ts
 * import type { RobustOptions } from "./numeric.ts";
 * const o: RobustOptions = { loss: "huber", scale: 0.05, lower: Float64Array.of(-9), upper: Float64Array.of(9) };
 * ```
 */
export interface RobustOptions {
  /** The loss. */
  readonly loss: Loss;
  /** Huber's δ or Tukey's cutoff (ignored for `l2`). */
  readonly scale: number;
  /** Prior weight of each residual (1 when absent). */
  readonly weights?: Float64Array;
  /** Box bounds on each parameter; steps are clamped into them. */
  readonly lower: Float64Array;
  readonly upper: Float64Array;
  /** Iteration cap. */
  readonly maxIterations?: number;
}

/**
 * Minimises Σ wᵢ ρ(rᵢ(x)) by Levenberg–Marquardt steps on IRLS weights, accepting a step only when
 * the robust objective decreases. Deterministic: no randomness, fixed iteration cap.
 *
 * @param problem The residual function.
 * @param x0 The start (not modified).
 * @param options Loss, scale, weights, bounds.
 * @returns The minimiser and its objective.
 * @example
 * ```ts
 * import { robustLeastSquares } from "./numeric.ts";
 * // Fit y = a·x to (1, 2), (2, 4).
 * const xs = [1, 2], ys = [2, 4];
 * const fit = robustLeastSquares({
 *   n: 2, k: 1,
 *   evaluate: (p, r, j) => xs.forEach((x, i) => { r[i] = p[0]! * x - ys[i]!; if (j) j[i] = x; }),
 * }, Float64Array.of(1), { loss: "l2", scale: 1, lower: Float64Array.of(-9), upper: Float64Array.of(9) });
 * console.log(fit.x[0]!.toFixed(3)); // "2.000"
 * ```
 */
export function robustLeastSquares(
  problem: LeastSquaresProblem,
  x0: Float64Array,
  options: RobustOptions,
): { x: Float64Array; objective: number } {
  const { n, k } = problem;
  const { loss, scale, weights, lower, upper } = options;
  const maxIterations = options.maxIterations ?? 60;
  const r = new Float64Array(n);
  const jac = new Float64Array(n * k);
  const rTrial = new Float64Array(n);
  const a = new Float64Array(k * k);
  const damped = new Float64Array(k * k);
  const g = new Float64Array(k);
  const step = new Float64Array(k);
  const objectiveOf = (res: Float64Array): number => {
    let s = 0;
    for (let i = 0; i < n; i++) s += (weights?.[i] ?? 1) * rho(loss, res[i]!, scale);
    return s;
  };
  let x = clampInto(Float64Array.from(x0), lower, upper);
  problem.evaluate(x, r, jac);
  let objective = objectiveOf(r);
  let lambda = 1e-3;
  for (let it = 0; it < maxIterations; it++) {
    a.fill(0);
    g.fill(0);
    for (let i = 0; i < n; i++) {
      const w = (weights?.[i] ?? 1) * irlsWeight(loss, r[i]!, scale);
      if (w === 0) continue;
      for (let p = 0; p < k; p++) {
        const jp = jac[i * k + p]!;
        g[p]! -= w * jp * r[i]!;
        for (let q = 0; q <= p; q++) a[p * k + q]! += w * jp * jac[i * k + q]!;
      }
    }
    for (let p = 0; p < k; p++) for (let q = 0; q < p; q++) a[q * k + p] = a[p * k + q]!;
    let improved = false;
    while (lambda < 1e12) {
      damped.set(a);
      for (let p = 0; p < k; p++) damped[p * k + p]! += lambda * Math.max(a[p * k + p]!, 1e-9);
      if (!solveLinearInto(damped, g, k, step)) {
        lambda *= 10;
        continue;
      }
      const trial = new Float64Array(k);
      for (let p = 0; p < k; p++) trial[p] = x[p]! + step[p]!;
      clampInto(trial, lower, upper);
      problem.evaluate(trial, rTrial, null);
      const trialObjective = objectiveOf(rTrial);
      if (trialObjective < objective) {
        const gain = objective - trialObjective;
        x = trial;
        problem.evaluate(x, r, jac);
        objective = trialObjective;
        lambda = Math.max(lambda / 3, 1e-9);
        improved = gain > 1e-10 * (1e-6 + objective);
        break;
      }
      lambda *= 4;
    }
    if (!improved) break;
  }
  return { x, objective };
}

function clampInto(x: Float64Array, lower: Float64Array, upper: Float64Array): Float64Array {
  for (let p = 0; p < x.length; p++) x[p] = Math.min(Math.max(x[p]!, lower[p]!), upper[p]!);
  return x;
}

/**
 * Solves `a·x = b` for a small dense `k × k` system by Gaussian elimination with partial pivoting.
 *
 * @param a Row-major matrix (not modified).
 * @param b Right-hand side (not modified).
 * @param k Dimension.
 * @returns The solution, or null when `a` is singular.
 * @example
 * ```ts
 * import { solveLinear } from "./numeric.ts";
 * console.log(solveLinear(Float64Array.of(2, 0, 0, 4), Float64Array.of(2, 2), 2)); // Float64Array [1, 0.5]
 * ```
 */
export function solveLinear(a: Float64Array, b: Float64Array, k: number): Float64Array | null {
  const x = new Float64Array(k);
  return solveLinearInto(Float64Array.from(a), b, k, x) ? x : null;
}

/** {@linkcode solveLinear} into `x`, destroying `m`; false when singular. */
function solveLinearInto(m: Float64Array, b: Float64Array, k: number, x: Float64Array): boolean {
  x.set(b);
  for (let c = 0; c < k; c++) {
    let pivot = c;
    for (let r = c + 1; r < k; r++) {
      if (Math.abs(m[r * k + c]!) > Math.abs(m[pivot * k + c]!)) pivot = r;
    }
    const pv = m[pivot * k + c]!;
    if (!Number.isFinite(pv) || Math.abs(pv) < 1e-300) return false;
    if (pivot !== c) {
      for (let q = 0; q < k; q++) {
        const t = m[c * k + q]!;
        m[c * k + q] = m[pivot * k + q]!;
        m[pivot * k + q] = t;
      }
      const t = x[c]!;
      x[c] = x[pivot]!;
      x[pivot] = t;
    }
    for (let r = c + 1; r < k; r++) {
      const f = m[r * k + c]! / pv;
      for (let q = c; q < k; q++) m[r * k + q]! -= f * m[c * k + q]!;
      x[r]! -= f * x[c]!;
    }
  }
  for (let c = k - 1; c >= 0; c--) {
    let s = x[c]!;
    for (let q = c + 1; q < k; q++) s -= m[c * k + q]! * x[q]!;
    x[c] = s / m[c * k + c]!;
  }
  return x.every(Number.isFinite);
}

/**
 * A standard normal draw (Box–Muller) from a uniform generator.
 *
 * @param rng Uniform [0, 1) generator.
 * @returns A draw from N(0, 1).
 * @example
 * ```ts
 * import { normal } from "./numeric.ts";
 * import { seededRng } from "../kernels/_random.ts";
 * console.log(Number.isFinite(normal(seededRng(3)))); // true
 * ```
 */
export function normal(rng: Rng): number {
  const u = 1 - rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}

/**
 * The standard normal CDF Φ(x), from the complementary error function (Numerical Recipes'
 * Chebyshev fit, relative error under 1.2e-7).
 *
 * @param x Any number.
 * @returns P(Z ≤ x) for Z ~ N(0, 1).
 * @example
 * ```ts
 * import { normalCdf } from "./numeric.ts";
 * console.log(normalCdf(1.96).toFixed(3)); // "0.975"
 * ```
 */
export function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + z / 2);
  const erfc = t * Math.exp(
    -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
                  t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
                                  t * (-0.82215223 + t * 0.17087277)))))))),
  );
  return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/**
 * The standard normal quantile Φ⁻¹(p), by bisection of {@linkcode normalCdf}.
 *
 * @param p A probability in (0, 1).
 * @returns x with Φ(x) = p (±1e-9).
 * @throws {RangeError} When `p` is not in (0, 1).
 * @example
 * ```ts
 * import { normalQuantile } from "./numeric.ts";
 * console.log(normalQuantile(0.975).toFixed(2)); // "1.96"
 * ```
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) {
    throw new RangeError(`Cannot take the normal quantile of ${p}: use 0 < p < 1`);
  }
  let lo = -40;
  let hi = 40;
  while (hi - lo > 1e-9) {
    const mid = (lo + hi) / 2;
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Where the log-ratio `d` of two curves, linear in ln(size) between two sizes, crosses zero.
 *
 * @param s0 Lower size.
 * @param d0 Log-ratio at `s0`.
 * @param s1 Upper size.
 * @param d1 Log-ratio at `s1` (of opposite sign to `d0`, or zero).
 * @returns The crossing size, in [s0, s1].
 * @example
 * ```ts
 * import { logLogZero } from "./numeric.ts";
 * console.log(logLogZero(10, 1, 1000, -1)); // 100 (up to rounding)
 * ```
 */
export function logLogZero(s0: number, d0: number, s1: number, d1: number): number {
  const t = d0 === d1 ? 0.5 : d0 / (d0 - d1);
  return Math.exp(Math.log(s0) + (Math.log(s1) - Math.log(s0)) * t);
}

/**
 * Rounds to a number of significant digits, so reported sizes do not claim false precision.
 *
 * @param x The value.
 * @param digits Significant digits.
 * @returns The rounded value.
 * @example
 * ```ts
 * import { roundSignificant } from "./numeric.ts";
 * console.log(roundSignificant(1234567, 3)); // 1230000
 * ```
 */
export function roundSignificant(x: number, digits: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const e = Math.floor(Math.log10(Math.abs(x))) - digits + 1;
  const f = 10 ** Math.abs(e);
  return e >= 0 ? Math.round(x / f) * f : Math.round(x * f) / f;
}
