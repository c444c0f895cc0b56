/**
 * What one measurement returns: a union on `state`, so a failed or unsupported measurement
 * carries its reason instead of a fake number.
 *
 * @module
 */
import type { Backend, Dtype, Residency, Shape } from "../kernels/types.ts";

/**
 * Robust summary of timing samples, in milliseconds per run.
 *
 * @example
 * ```ts
 * import type { SampleStats } from "./result.ts";
 * const s: SampleStats = {
 *   n: 30, median: 1.2, p10: 1.1, p90: 1.4, mad: 0.05, min: 1.05, max: 1.9, ciHalfWidth: 0.02, relCi: 0.017,
 * };
 * ```
 */
export interface SampleStats {
  /** Number of samples. */
  readonly n: number;
  /** Median. */
  readonly median: number;
  /** 10th percentile. */
  readonly p10: number;
  /** 90th percentile. */
  readonly p90: number;
  /** Median absolute deviation (unscaled). */
  readonly mad: number;
  /** Smallest sample. */
  readonly min: number;
  /** Largest sample. */
  readonly max: number;
  /** Half-width of the median's 95 % confidence interval (same unit as the median). */
  readonly ciHalfWidth: number;
  /** `ciHalfWidth / median`. */
  readonly relCi: number;
}

/**
 * What to measure.
 *
 * @example
 * ```ts
 * import type { MeasureRequest } from "./result.ts";
 * const r: MeasureRequest = { op: "matmul", shape: { m: 64, k: 64, n: 64 }, dtype: "f32", backend: "wasm" };
 * ```
 */
export interface MeasureRequest {
  /** Op name from the catalog. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** Element type. */
  readonly dtype: Dtype;
  /** Backend to run on. */
  readonly backend: Backend;
  /** Variant id or parameters; the backend's first variant when absent. */
  readonly variant?: string | Readonly<Record<string, number | string | boolean>>;
  /** Where data lives; `end-to-end` when absent. CPU backends are always end-to-end. */
  readonly residency?: Residency;
}

/** Fields every measurement result has. */
export interface MeasureIdentity {
  /** Op name from the catalog. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** Element type. */
  readonly dtype: Dtype;
  /** Backend it ran on. */
  readonly backend: Backend;
  /** Variant id. */
  readonly variant: string;
  /** Where the data lived. */
  readonly residency: Residency;
}

/**
 * A verified, timed measurement.
 *
 * @example
 * ```ts
 * import type { MeasureOk } from "./result.ts";
 * function rate(r: MeasureOk) { return r.gflops; }
 * ```
 */
export interface MeasureOk extends MeasureIdentity {
  /** Verified and timed. */
  readonly state: "ok";
  /** Wall-clock time per run, ms. */
  readonly wall: SampleStats;
  /** GPU time per run from timestamp queries, ms, when the adapter has them. */
  readonly gpu?: SampleStats;
  /** First-run (compile/instantiate) cost, ms. */
  readonly compileMs: number;
  /** Max relative error seen at verification. */
  readonly maxRelError: number;
  /** Floating-point operations of one run. */
  readonly flops: number;
  /** Minimum bytes one run moves. */
  readonly bytes: number;
  /** Compute rate from the wall median, GFLOP/s. */
  readonly gflops: number;
  /** Bandwidth from the wall median, GB/s. */
  readonly gbps: number;
  /** True when the confidence target was not reached within the budget. */
  readonly noisy: boolean;
}

/**
 * A measurement whose kernel gave a wrong answer (never timed) or crashed.
 *
 * @example
 * ```ts
 * import type { MeasureFailed } from "./result.ts";
 * function why(r: MeasureFailed) { return r.error; }
 * ```
 */
export interface MeasureFailed extends MeasureIdentity {
  /** Gave a wrong answer or crashed. */
  readonly state: "failed";
  /** Why it failed. */
  readonly error: string;
  /** Max relative error, when verification ran. */
  readonly maxRelError?: number;
}

/**
 * A measurement that cannot run here (no adapter, no shader-f16, too large for limits...).
 *
 * @example
 * ```ts
 * import type { MeasureUnsupported } from "./result.ts";
 * function why(r: MeasureUnsupported) { return r.reason; }
 * ```
 */
export interface MeasureUnsupported extends MeasureIdentity {
  /** Cannot run here. */
  readonly state: "unsupported";
  /** Why it cannot run here. */
  readonly reason: string;
}

/**
 * Result of {@linkcode MeasureRequest}: a union on `state`.
 *
 * @example
 * ```ts
 * import type { MeasureResult } from "./result.ts";
 * function median(r: MeasureResult) { return r.state === "ok" ? r.wall.median : null; }
 * ```
 */
export type MeasureResult = MeasureOk | MeasureFailed | MeasureUnsupported;
