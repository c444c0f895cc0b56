/**
 * Cost models fitted to measured series: `t(work) = t0 + smoothmax(flops / F, bytes / B)`, with
 * the smooth maximum a p-norm (p = {@linkcode SMOOTHMAX_P}). Pure functions, no I/O.
 *
 * @example
 * ```ts
 * import { fitCostModel } from "./fit.ts";
 * import { predictMs } from "../core/costmodel.ts";
 * const points = [256, 1024, 4096, 16384, 65536].map((n) => ({
 *   size: n, flops: n, bytes: 12 * n, ms: 0.02 + 12 * n / 10e6,
 * }));
 * const fit = fitCostModel(points, {
 *   op: "add", dtype: "f32", backend: "wasm", variant: "default", residency: "end-to-end",
 * });
 * console.log(fit.gbps?.toFixed(1), fit.gflops); // "10.0" null
 * console.log(predictMs(fit, 1e6, 12e6).toFixed(2)); // "1.22"
 * ```
 *
 * @module
 */
import type { Backend, Dtype, Residency } from "../kernels/types.ts";
import {
  fitBest,
  fitKind,
  logResiduals,
  modelMs,
  type ModelParams,
  predictMs,
  SMOOTHMAX_P,
} from "../core/costmodel.ts";
import type { CostFit } from "../core/schema.ts";

export { SMOOTHMAX_P };

/**
 * One measured size of a series: its work, its median time and an optional weight (e.g. the
 * inverse relative CI squared; 1 when absent).
 *
 * @example
 * ```ts
 * import type { CostPoint } from "./fit.ts";
 * const p: CostPoint = { size: 1024, flops: 2 * 1024 ** 3, bytes: 12 * 1024 ** 2, ms: 45.1 };
 * ```
 */
export interface CostPoint {
  /** Size in the op's axis units. */
  readonly size: number;
  /** Floating-point operations of one run. */
  readonly flops: number;
  /** Minimum bytes of one run. */
  readonly bytes: number;
  /** Median time of one run, ms. */
  readonly ms: number;
  /** Relative weight in the fit. */
  readonly weight?: number;
}

/**
 * What a series is: everything that identifies a fit except the sizes.
 *
 * @example
 * ```ts
 * import type { FitMeta } from "./fit.ts";
 * const m: FitMeta = { op: "matmul", dtype: "f32", backend: "webgpu", variant: "tile=4", residency: "device-resident" };
 * ```
 */
export interface FitMeta {
  /** Op name from the catalog. */
  readonly op: string;
  /** Element type. */
  readonly dtype: Dtype;
  /** Backend the series ran on. */
  readonly backend: Backend;
  /** Variant id of the series. */
  readonly variant: string;
  /** Where the data lived. */
  readonly residency: Residency;
}

/** Fewest distinct sizes for leave-one-size-out cross-validation to mean anything. */
const MIN_CV_SIZES = 4;

/**
 * Whether a rate term shapes the fitted curve anywhere in the measured range: dropping it must
 * change some prediction by more than 2 %. A series that is all fixed cost (a GPU kernel hidden
 * behind its launch) otherwise reports whatever huge rate the optimiser drifted to.
 */
function identified(
  params: ModelParams,
  points: readonly CostPoint[],
  term: "lnCf" | "lnCb",
): boolean {
  const without: ModelParams = { ...params, [term]: -Infinity };
  return points.some((p) =>
    modelMs(params, p.flops, p.bytes) > 1.02 * modelMs(without, p.flops, p.bytes)
  );
}

/**
 * Fits the cost model to one series (several sizes of one op, backend, dtype, variant, residency).
 *
 * Minimises Σ wᵢ ρ(ln t_pred − ln t_meas) over ln t0, ln(1/F), ln(1/B) (so all stay positive) by
 * Levenberg–Marquardt: Huber (δ = 5 %) from fixed starts, then Tukey's biweight at 4.685 robust
 * standard deviations, so an outlying size ends up with no influence. Deterministic: fixed starts, no randomness.
 *
 * Identifiability: when the data cannot tell F from B, one rate explains the data and the other is
 * `null`. That happens when flops/bytes is (nearly) the same at every size, as for elementwise ops
 * (the time is then attributed to bandwidth below 4 flops per byte, to compute above), when a
 * series never leaves one regime (e.g. a large matmul is compute-bound at every size: `gbps` is
 * null), or when flops (bytes) are zero. The choice between one and two rates is by BIC on the
 * robust loss.
 *
 * Cross-validation leaves out one size at a time, refits the chosen structure on the rest and
 * predicts the left-out size: `cvMape` is the mean and `cvMaxError` the worst |predicted/measured − 1|.
 *
 * @param points The series: at least 2 distinct sizes, positive times, non-negative work.
 * @param meta What the series is.
 * @returns The fit.
 * @throws {RangeError} with fewer than 2 distinct sizes or a non-positive or non-finite time or work.
 * @example
 * ```ts
 * import { fitCostModel } from "./fit.ts";
 * // A matmul-like series: 20 µs launch, 50 GFLOP/s.
 * const points = [64, 128, 256, 512, 1024].map((n) => ({
 *   size: n, flops: 2 * n ** 3, bytes: 12 * n * n, ms: 0.02 + 2 * n ** 3 / 50e6,
 * }));
 * const fit = fitCostModel(points, {
 *   op: "matmul", dtype: "f32", backend: "wasm", variant: "default", residency: "end-to-end",
 * });
 * console.log(fit.gflops?.toFixed(1), fit.t0Us.toFixed(1)); // "50.0" "20.0"
 * ```
 */
export function fitCostModel(points: readonly CostPoint[], meta: FitMeta): CostFit {
  validate(points);
  const sorted = [...points].sort((a, b) => a.size - b.size);
  const { params, sigma } = fitBest(sorted);
  const residuals = logResiduals(params, sorted);
  const sizes = [...new Set(sorted.map((p) => p.size))];
  const cv = sizes.length >= MIN_CV_SIZES ? crossValidate(sorted, sizes, params, sigma) : null;
  return {
    op: meta.op,
    dtype: meta.dtype,
    backend: meta.backend,
    variant: meta.variant,
    residency: meta.residency,
    t0Us: 1000 * Math.exp(params.lnT0),
    gflops: params.kind === "memory" || !identified(params, sorted, "lnCf")
      ? null
      : 1e-6 / Math.exp(params.lnCf),
    gbps: params.kind === "compute" || !identified(params, sorted, "lnCb")
      ? null
      : 1e-6 / Math.exp(params.lnCb),
    points: sizes.length,
    sizeRange: [sizes[0]!, sizes[sizes.length - 1]!],
    rmsLogError: Math.sqrt(residuals.reduce((s, r) => s + r * r, 0) / residuals.length),
    cvMape: cv?.mape ?? null,
    cvMaxError: cv?.max ?? null,
  };
}

function validate(points: readonly CostPoint[]): void {
  for (const p of points) {
    if (!(p.ms > 0) || !Number.isFinite(p.ms)) {
      throw new RangeError(
        `Cannot fit a time of ${p.ms} ms at size ${p.size}: times must be positive`,
      );
    }
    if (!(p.flops >= 0 && p.bytes >= 0) || !Number.isFinite(p.flops + p.bytes)) {
      throw new RangeError(
        `Cannot fit work of ${p.flops} flops and ${p.bytes} bytes at size ${p.size}: work must be finite and non-negative`,
      );
    }
    if (p.flops === 0 && p.bytes === 0) {
      throw new RangeError(
        `Cannot fit size ${p.size} with no work at all: give its flops or bytes`,
      );
    }
  }
  const distinct = new Set(points.map((p) => p.size)).size;
  if (distinct < 2) {
    throw new RangeError(
      `Cannot fit a cost model to ${distinct} distinct size(s): measure at least 2`,
    );
  }
}

function crossValidate(
  points: readonly CostPoint[],
  sizes: readonly number[],
  params: ModelParams,
  sigma: number,
): { mape: number; max: number } {
  const errors: number[] = [];
  for (const size of sizes) {
    const train = points.filter((p) => p.size !== size);
    const { params: fold } = fitKind(train, params.kind, [params], sigma);
    for (const p of points) {
      if (p.size === size) errors.push(Math.abs(modelMs(fold, p.flops, p.bytes) / p.ms - 1));
    }
  }
  return { mape: errors.reduce((s, e) => s + e, 0) / errors.length, max: Math.max(...errors) };
}

/**
 * One series to fit: its identity and its points.
 *
 * @example
 * ```ts
 * import type { Series } from "./fit.ts";
 * const s: Series = {
 *   meta: { op: "add", dtype: "f32", backend: "js", variant: "default", residency: "end-to-end" },
 *   points: [],
 * };
 * ```
 */
export interface Series {
  readonly meta: FitMeta;
  readonly points: readonly CostPoint[];
}

/**
 * Fits many series. With `select: "best"` (default) keeps, per (op, backend, dtype, residency),
 * only the variant whose fit has the lowest geometric-mean predicted time over every size measured
 * for any variant of that group; with `"all"` returns every fit. Series with fewer than 2 distinct
 * sizes are skipped (they cannot be fitted).
 *
 * @param series The series.
 * @param options `select`: `"best"` or `"all"`.
 * @returns The fits, in the order their series first appear.
 * @example
 * ```ts
 * import { fitCostModels } from "./fit.ts";
 * const meta = { op: "add", dtype: "f32", backend: "js", residency: "end-to-end" } as const;
 * const pts = (gbps: number) => [1e3, 1e4, 1e5, 1e6].map((n) => ({
 *   size: n, flops: n, bytes: 12 * n, ms: 0.01 + 12 * n / (gbps * 1e6),
 * }));
 * const fits = fitCostModels([
 *   { meta: { ...meta, variant: "slow" }, points: pts(2) },
 *   { meta: { ...meta, variant: "fast" }, points: pts(8) },
 * ]);
 * console.log(fits.map((f) => f.variant)); // ["fast"]
 * ```
 */
export function fitCostModels(
  series: readonly Series[],
  options: { readonly select?: "best" | "all" } = {},
): CostFit[] {
  const fitted = series
    .filter((s) => new Set(s.points.map((p) => p.size)).size >= 2)
    .map((s) => ({ series: s, fit: fitCostModel(s.points, s.meta) }));
  if ((options.select ?? "best") === "all") return fitted.map((f) => f.fit);
  const groups = new Map<string, typeof fitted>();
  for (const f of fitted) {
    const { op, backend, dtype, residency } = f.series.meta;
    const key = JSON.stringify([op, backend, dtype, residency]);
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  return [...groups.values()].map((group) => {
    const work = new Map<number, CostPoint>();
    for (const f of group) for (const p of f.series.points) work.set(p.size, p);
    const score = (fit: CostFit) =>
      [...work.values()].reduce((s, p) => s + Math.log(predictMs(fit, p.flops, p.bytes)), 0);
    return group.reduce((best, f) => score(f.fit) < score(best.fit) ? f : best).fit;
  });
}
