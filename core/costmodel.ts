/**
 * Private core of the cost model `t = t0 + smoothmax(flops / F, bytes / B)`: prediction, one
 * robust fit of a given structure, and the choice of structure. `fit.ts` wraps it with
 * cross-validation and the report shape; `crossover.ts` refits with it when bootstrapping.
 *
 * Parameters are logs (ln t0 in ms, ln of ms per flop, ln of ms per byte), so every rate and the
 * overhead stay positive without constraints.
 *
 * @module
 */
import type { CostFit } from "./schema.ts";
import { median } from "./stats.ts";
import { type Loss, robustLeastSquares } from "./numeric.ts";

/**
 * Exponent of the p-norm smooth maximum (fixed: {@linkcode smoothMaxValue} computes the 4th powers by products).
 * With p = 4 the model overshoots the hard maximum by at most 2^(1/4) − 1 ≈ 19 % where both terms
 * are equal and by < 1 % once one term is 3× the other:
 * a smooth ridge, as cache and overlap effects make real machines, while staying close to the
 * roofline elsewhere. Log-sum-exp was rejected because its overshoot depends on the time unit.
 *
 * @example
 * ```ts
 * import { SMOOTHMAX_P } from "./costmodel.ts";
 * console.log(SMOOTHMAX_P); // 4
 * ```
 */
export const SMOOTHMAX_P = 4;

/**
 * Which rate terms a model has.
 *
 * @example
 * ```ts
 * import type { ModelKind } from "./costmodel.ts";
 * const k: ModelKind = "both";
 * ```
 */
export type ModelKind = "compute" | "memory" | "both";

/**
 * A fitted model in log parameters; a term absent from `kind` has its log set to -Infinity.
 *
 * @example
 * ```ts
 * import type { ModelParams } from "./costmodel.ts";
 * const p: ModelParams = { kind: "memory", lnT0: Math.log(0.01), lnCf: -Infinity, lnCb: Math.log(1e-7) };
 * ```
 */
export interface ModelParams {
  readonly kind: ModelKind;
  /** ln of the fixed overhead, ms. */
  readonly lnT0: number;
  /** ln of ms per flop (-Infinity without a compute term). */
  readonly lnCf: number;
  /** ln of ms per byte (-Infinity without a memory term). */
  readonly lnCb: number;
}

/**
 * One size of a series: its work and its median time.
 *
 * @example
 * ```ts
 * import type { WorkPoint } from "./costmodel.ts";
 * const p: WorkPoint = { flops: 1e6, bytes: 12e6, ms: 1.3 };
 * ```
 */
export interface WorkPoint {
  readonly flops: number;
  readonly bytes: number;
  readonly ms: number;
  readonly weight?: number;
}

/**
 * Result of fitting one structure.
 *
 * @example
 * ```ts
 * import type { KindFit } from "./costmodel.ts";
 * function t0Ms(f: KindFit) { return Math.exp(f.params.lnT0); }
 * ```
 */
export interface KindFit {
  readonly params: ModelParams;
  /** Robust scale of the log residuals (≥ {@linkcode SIGMA_FLOOR}). */
  readonly sigma: number;
}

/**
 * Huber δ of the first stage, from the data-derived starts: a 5 % log residual. Plain least
 * squares there lets one slow size drag the fit into a wrong basin that later stages cannot leave.
 */
const START_HUBER_DELTA = 0.05;

/**
 * Smallest robust scale of log residuals: timing noise below 1 % is not believed.
 *
 * @example
 * ```ts
 * import { SIGMA_FLOOR } from "./costmodel.ts";
 * console.log(SIGMA_FLOOR); // 0.01
 * ```
 */
export const SIGMA_FLOOR = 0.01;

/**
 * Flops per byte above which a constant-intensity series is called compute-bound.
 *
 * @example
 * ```ts
 * import { RIDGE_FLOP_PER_BYTE } from "./costmodel.ts";
 * console.log(1 / 12 < RIDGE_FLOP_PER_BYTE); // true: an f32 add is memory-bound
 * ```
 */
export const RIDGE_FLOP_PER_BYTE = 4;

/**
 * Below this spread of flops/bytes across the points, F and B cannot be told apart.
 *
 * @example
 * ```ts
 * import { MIN_INTENSITY_SPREAD } from "./costmodel.ts";
 * console.log(MIN_INTENSITY_SPREAD); // 2
 * ```
 */
export const MIN_INTENSITY_SPREAD = 2;

const LN_T0_BOUNDS: [number, number] = [Math.log(1e-7), Math.log(1e7)];
const LN_C_BOUNDS: [number, number] = [Math.log(1e-21), Math.log(1e3)];

/**
 * The smooth maximum (A^p + B^p)^(1/p) and the share (A/S)^p of the first term: what the fitter
 * needs for its Jacobian. Its value is {@linkcode smoothMaxValue}'s.
 *
 * @param a The first term, ≥ 0.
 * @param b The second term, ≥ 0.
 * @returns The smooth maximum and the first term's share of it (0.5 when both are 0).
 * @example
 * ```ts
 * import { smoothMax } from "./costmodel.ts";
 * console.log(smoothMax(1, 0).value); // 1
 * console.log(smoothMax(1, 1).shareA); // 0.5
 * ```
 */
export function smoothMax(a: number, b: number): { value: number; shareA: number } {
  const m = Math.max(a, b);
  if (m === 0) return { value: 0, shareA: 0.5 };
  const pa = fourthPower(a / m);
  const pb = fourthPower(b / m);
  return { value: smoothMaxValue(a, b), shareA: pa / (pa + pb) };
}

/**
 * The smooth maximum (A^p + B^p)^(1/p) of two non-negative terms, without allocating: the one
 * place the p-norm is computed. A zero term leaves the other exactly (the general formula gives the
 * same number; the shortcut skips two divisions and two square roots).
 *
 * @param a The first term, ≥ 0.
 * @param b The second term, ≥ 0.
 * @returns The smooth maximum.
 * @example
 * ```ts
 * import { smoothMaxValue } from "./costmodel.ts";
 * console.log(smoothMaxValue(3, 0)); // 3
 * console.log(smoothMaxValue(1, 1).toFixed(4)); // "1.1892": 2^(1/4), the largest overshoot
 * ```
 */
export function smoothMaxValue(a: number, b: number): number {
  if (a === 0 || b === 0) return a + b;
  const m = a > b ? a : b;
  return m * Math.sqrt(Math.sqrt(fourthPower(a / m) + fourthPower(b / m)));
}

/** x^p for p = 4 by products: `**` with a fractional exponent dominated the fit's time. */
function fourthPower(x: number): number {
  return x * x * x * x;
}

/**
 * The cost model's time, ms, from linear coefficients: `t0 + smoothmax(cf × flops, cb × bytes)`.
 * The single evaluator of the model: {@linkcode modelMs} (log parameters, used by the fitter)
 * and the models' compiled fits both call it, so they cannot disagree.
 *
 * @param t0 Fixed overhead, ms.
 * @param msPerFlop ms per flop (0 without a compute term).
 * @param msPerByte ms per byte (0 without a memory term).
 * @param flops Floating-point operations of the run.
 * @param bytes Bytes of the run.
 * @returns The predicted time, ms.
 * @example
 * ```ts
 * import { costMs } from "./costmodel.ts";
 * console.log(costMs(0.01, 1e-6, 0, 1e6, 12e6).toFixed(2)); // "1.01"
 * ```
 */
export function costMs(
  t0: number,
  msPerFlop: number,
  msPerByte: number,
  flops: number,
  bytes: number,
): number {
  return t0 + smoothMaxValue(msPerFlop * flops, msPerByte * bytes);
}

/**
 * Predicted time (ms) of a model for some work.
 *
 * @example
 * ```ts
 * import { modelMs } from "./costmodel.ts";
 * const p = { kind: "compute", lnT0: Math.log(0.01), lnCf: Math.log(1e-6), lnCb: -Infinity } as const;
 * console.log(modelMs(p, 1e6, 0).toFixed(2)); // "1.01"
 * ```
 */
export function modelMs(params: ModelParams, flops: number, bytes: number): number {
  return costMs(Math.exp(params.lnT0), Math.exp(params.lnCf), Math.exp(params.lnCb), flops, bytes);
}

/**
 * Predicted time of one run from a fit, in ms.
 *
 * @param fit The fit.
 * @param flops Floating-point operations of the run.
 * @param bytes Bytes of the run.
 * @returns The predicted time, ms.
 * @example
 * ```ts
 * import { predictMs } from "./costmodel.ts";
 * console.log(predictMs({ t0Us: 10, gflops: null, gbps: 5 }, 1e6, 12e6).toFixed(2)); // "2.41"
 * ```
 */
export function predictMs(
  fit: Pick<CostFit, "t0Us" | "gflops" | "gbps">,
  flops: number,
  bytes: number,
): number {
  return modelMs(paramsFromRates(fit.t0Us, fit.gflops, fit.gbps), flops, bytes);
}

/**
 * Log parameters from reported figures (the inverse of what `fit.ts` reports).
 *
 * @example
 * ```ts
 * import { paramsFromRates } from "./costmodel.ts";
 * console.log(paramsFromRates(10, null, 5).kind); // "memory"
 * ```
 */
export function paramsFromRates(
  t0Us: number,
  gflops: number | null,
  gbps: number | null,
): ModelParams {
  const kind = gflops === null ? "memory" : gbps === null ? "compute" : "both";
  return {
    kind,
    lnT0: Math.log(t0Us / 1000),
    lnCf: gflops === null ? -Infinity : Math.log(1e-6 / gflops),
    lnCb: gbps === null ? -Infinity : Math.log(1e-6 / gbps),
  };
}

function toVector(p: ModelParams): Float64Array {
  if (p.kind === "compute") return Float64Array.of(p.lnT0, p.lnCf);
  if (p.kind === "memory") return Float64Array.of(p.lnT0, p.lnCb);
  return Float64Array.of(p.lnT0, p.lnCf, p.lnCb);
}

function fromVector(kind: ModelKind, x: Float64Array): ModelParams {
  const lnT0 = x[0]!;
  if (kind === "compute") return { kind, lnT0, lnCf: x[1]!, lnCb: -Infinity };
  if (kind === "memory") return { kind, lnT0, lnCf: -Infinity, lnCb: x[1]! };
  return { kind, lnT0, lnCf: x[1]!, lnCb: x[2]! };
}

/**
 * Log residuals ln(predicted / measured) of a model on points.
 *
 * @example
 * ```ts
 * import { logResiduals } from "./costmodel.ts";
 * const p = { kind: "compute", lnT0: Math.log(1), lnCf: Math.log(1), lnCb: -Infinity } as const;
 * console.log(logResiduals(p, [{ flops: 1, bytes: 1, ms: 2 }])); // [0]
 * ```
 */
export function logResiduals(params: ModelParams, points: readonly WorkPoint[]): number[] {
  return points.map((p) => Math.log(modelMs(params, p.flops, p.bytes) / p.ms));
}

/**
 * Robust scale of log residuals: 1.4826 × median |r|, at least {@linkcode SIGMA_FLOOR}.
 *
 * @example
 * ```ts
 * import { robustScale } from "./costmodel.ts";
 * console.log(robustScale([0.1, -0.1, 0.1]).toFixed(3)); // "0.148"
 * ```
 */
export function robustScale(residuals: readonly number[]): number {
  return Math.max(1.4826 * median(residuals.map(Math.abs)), SIGMA_FLOOR);
}

function run(
  points: readonly WorkPoint[],
  kind: ModelKind,
  start: ModelParams,
  loss: Loss,
  scale: number,
): { params: ModelParams; objective: number } {
  const k = kind === "both" ? 3 : 2;
  const lower = new Float64Array(k).fill(LN_C_BOUNDS[0]);
  const upper = new Float64Array(k).fill(LN_C_BOUNDS[1]);
  lower[0] = LN_T0_BOUNDS[0];
  upper[0] = LN_T0_BOUNDS[1];
  const weights = Float64Array.from(points, (p) => p.weight ?? 1);
  const lnMs = points.map((p) => Math.log(p.ms));
  const { x, objective } = robustLeastSquares(
    {
      n: points.length,
      k,
      evaluate(v, r, jac) {
        const t0 = Math.exp(v[0]!);
        const cf = kind === "memory" ? 0 : Math.exp(v[1]!);
        const cb = kind === "compute" ? 0 : Math.exp(v[kind === "both" ? 2 : 1]!);
        for (let i = 0; i < points.length; i++) {
          const p = points[i]!;
          const s = smoothMax(cf * p.flops, cb * p.bytes);
          const pred = t0 + s.value;
          r[i] = Math.log(pred) - lnMs[i]!;
          if (jac === null) continue;
          jac[i * k] = t0 / pred;
          if (kind === "compute") jac[i * k + 1] = s.value / pred;
          else if (kind === "memory") jac[i * k + 1] = s.value / pred;
          else {
            jac[i * k + 1] = s.value * s.shareA / pred;
            jac[i * k + 2] = s.value * (1 - s.shareA) / pred;
          }
        }
      },
    },
    toVector(start),
    { loss, scale, weights, lower, upper },
  );
  return { params: fromVector(kind, x), objective };
}

/**
 * Fits one structure robustly: Huber (δ = 5 %) from each start, keep the best, then Tukey's
 * biweight (c = 4.685 σ̂, σ̂ = 1.4826 × median |log residual| of the Huber fit) so an outlying size
 * ends with no influence.
 *
 * @param points The series (at least as many points as parameters).
 * @param kind The structure.
 * @param starts Starting parameters of that kind.
 * @param sigma A known robust scale: skips the least-squares and Huber stages and runs Tukey's
 *   biweight from the first start only (a warm refit, as in cross-validation and bootstrap).
 * @returns The fit and its robust scale.
 * @example
 * ```ts
 * import { fitKind, initialStarts } from "./costmodel.ts";
 * const pts = [1e6, 1e7, 1e8].map((f) => ({ flops: f, bytes: f, ms: 0.01 + f * 1e-6 }));
 * const fit = fitKind(pts, "compute", initialStarts(pts, "compute"));
 * console.log(Math.exp(fit.params.lnCf).toPrecision(3)); // "0.00000100"
 * ```
 */
export function fitKind(
  points: readonly WorkPoint[],
  kind: ModelKind,
  starts: readonly ModelParams[],
  sigma?: number,
): KindFit {
  if (sigma !== undefined) {
    const warm = run(points, kind, starts[0]!, "tukey", 4.685 * sigma);
    return { params: warm.params, sigma };
  }
  let best: { params: ModelParams; objective: number } | null = null;
  for (const start of starts) {
    const candidate = run(points, kind, start, "huber", START_HUBER_DELTA);
    if (best === null || candidate.objective < best.objective) best = candidate;
  }
  if (best === null) throw new RangeError("Cannot fit a cost model without a start: pass one");
  const scale = robustScale(logResiduals(best.params, points));
  const tukey = run(points, kind, best.params, "tukey", 4.685 * scale);
  return { params: tukey.params, sigma: scale };
}

/**
 * Deterministic starting points for a structure, from the data alone.
 *
 * @example
 * ```ts
 * import { initialStarts } from "./costmodel.ts";
 * const pts = [{ flops: 1, bytes: 1, ms: 1 }, { flops: 10, bytes: 10, ms: 2 }];
 * console.log(initialStarts(pts, "memory").length); // 2
 * ```
 */
export function initialStarts(points: readonly WorkPoint[], kind: ModelKind): ModelParams[] {
  const minMs = Math.min(...points.map((p) => p.ms));
  const rate = (t0: number, work: (p: WorkPoint) => number): number => {
    const byWork = [...points].sort((a, b) => work(a) - work(b));
    const upper = byWork.slice(Math.floor(byWork.length / 2)).filter((p) => work(p) > 0);
    return Math.log(median(upper.map((p) => Math.max(p.ms - t0, 0.5 * p.ms) / work(p))));
  };
  return [0.5, 0.05].map((f) => {
    const t0 = f * minMs;
    return {
      kind,
      lnT0: Math.log(t0),
      lnCf: kind === "memory" ? -Infinity : rate(t0, (p) => p.flops),
      lnCb: kind === "compute" ? -Infinity : rate(t0, (p) => p.bytes),
    };
  });
}

/**
 * Starts for the two-term model from the single-term fits: each single-term fit with the missing
 * term set to explain half the excess time at the point where it is most likely to matter.
 */
function bothStarts(
  points: readonly WorkPoint[],
  compute: ModelParams,
  memory: ModelParams,
): ModelParams[] {
  const byIntensity = [...points].sort((a, b) => a.flops / a.bytes - b.flops / b.bytes);
  const low = byIntensity[0]!;
  const high = byIntensity[byIntensity.length - 1]!;
  const half = (p: WorkPoint, lnT0: number, work: number) =>
    Math.log(Math.max(0.5 * (p.ms - Math.exp(lnT0)), 0.05 * p.ms) / work);
  return [
    {
      kind: "both",
      lnT0: compute.lnT0,
      lnCf: compute.lnCf,
      lnCb: half(low, compute.lnT0, low.bytes),
    },
    {
      kind: "both",
      lnT0: memory.lnT0,
      lnCf: half(high, memory.lnT0, high.flops),
      lnCb: memory.lnCb,
    },
  ];
}

/**
 * Fits every structure the data can identify and keeps the one with the lowest BIC, computed on
 * the Tukey loss at a common scale (so an outlier costs every candidate the same). Simpler
 * structures win ties.
 *
 * A structure that explains the points only by setting aside more of them than one in five (one
 * of up to nine) as outliers is not a candidate: with five sizes of a lavapipe matmul, a bandwidth
 * fit through 4³–128³ cast 256³ and 512³ aside, priced 512³ at 5 ms where it ran 16.9, and by its
 * low times became the backend's fit. The flexible fit stays a candidate whatever it sets aside.
 *
 * When flops/bytes hardly varies across the points (spread < {@linkcode MIN_INTENSITY_SPREAD}),
 * the data cannot tell F from B: only one single-term model is fitted, compute when the
 * intensity exceeds {@linkcode RIDGE_FLOP_PER_BYTE} flops per byte, memory otherwise. A series
 * with zero flops (or zero bytes) only gets the memory (or compute) model.
 *
 * @param points The series, at least 2 points with positive times.
 * @returns The chosen fit.
 * @example
 * ```ts
 * import { fitBest } from "./costmodel.ts";
 * const pts = [1e3, 1e4, 1e5, 1e6].map((n) => ({ flops: n, bytes: 12 * n, ms: 0.02 + n * 12e-7 }));
 * console.log(fitBest(pts).params.kind); // "memory"
 * ```
 */
export function fitBest(points: readonly WorkPoint[]): KindFit {
  const kinds = candidateKinds(points);
  const fits = new Map<ModelKind, KindFit>();
  for (const kind of kinds) {
    if (kind !== "both") fits.set(kind, fitKind(points, kind, initialStarts(points, kind)));
  }
  const compute = fits.get("compute");
  const memory = fits.get("memory");
  if (kinds.includes("both") && compute && memory) {
    fits.set("both", fitKind(points, "both", bothStarts(points, compute.params, memory.params)));
  }
  const flexible = fits.get("both") ?? [...fits.values()][0]!;
  const cutoff = 4.685 * flexible.sigma;
  const n = points.length;
  let chosen: KindFit | null = null;
  let chosenBic = Infinity;
  // More than one point in five beyond the cutoff is a structure that does not fit, not outliers.
  const mostAside = Math.max(1, Math.floor(n / 5));
  for (const kind of kinds) {
    const fit = fits.get(kind)!;
    const residuals = logResiduals(fit.params, points);
    const aside = residuals.filter((r) => Math.abs(r) >= cutoff).length;
    if (fit !== flexible && aside > mostAside) continue;
    const loss = residuals.reduce(
      (s, r, i) => s + (points[i]!.weight ?? 1) * tukeyRho(r, cutoff),
      0,
    );
    const k = kind === "both" ? 3 : 2;
    const bic = n * Math.log(Math.max(2 * loss / n, 1e-12)) + k * Math.log(n);
    if (bic < chosenBic) {
      chosen = fit;
      chosenBic = bic;
    }
  }
  return chosen!;
}

function tukeyRho(r: number, c: number): number {
  if (Math.abs(r) >= c) return c * c / 6;
  const u = 1 - (r / c) ** 2;
  return c * c / 6 * (1 - u * u * u);
}

function candidateKinds(points: readonly WorkPoint[]): ModelKind[] {
  if (points.every((p) => p.flops === 0)) return ["memory"];
  if (points.every((p) => p.bytes === 0)) return ["compute"];
  if (points.some((p) => p.flops === 0)) return ["memory"];
  if (points.some((p) => p.bytes === 0)) return ["compute"];
  const intensity = points.map((p) => p.flops / p.bytes);
  const spread = Math.max(...intensity) / Math.min(...intensity);
  if (spread < MIN_INTENSITY_SPREAD) {
    return [median(intensity) > RIDGE_FLOP_PER_BYTE ? "compute" : "memory"];
  }
  return points.length >= 4 ? ["compute", "memory", "both"] : ["compute", "memory"];
}
