/**
 * Synthetic measured series for the fitting tests: times from a known cost model, each size a
 * median of seeded samples with multiplicative log-normal noise.
 *
 * @module
 */
import { normal } from "../core/numeric.ts";
import { median } from "../core/stats.ts";
import type { CurvePoint } from "../calibrate/crossover.ts";
import type { Rng } from "../kernels/types.ts";

/** A known cost model: launch overhead (µs) and rates (a null rate is an absent term). */
export interface Truth {
  readonly t0Us: number;
  readonly gflops: number | null;
  readonly gbps: number | null;
}

/** Work of one run at a size. */
export type Work = (size: number) => { flops: number; bytes: number };

/** Square matmul: 2n³ flops, three n×n f32 matrices. */
export const matmulWork: Work = (n) => ({ flops: 2 * n ** 3, bytes: 12 * n * n });

/** Elementwise add of f32: one flop and 12 bytes per element. */
export const addWork: Work = (n) => ({ flops: n, bytes: 12 * n });

/** The noiseless time (ms) of the model `t0 + (a⁴ + b⁴)^¼` that the fitter assumes. */
export function truthMs(truth: Truth, flops: number, bytes: number): number {
  const a = truth.gflops === null ? 0 : flops / (truth.gflops * 1e6);
  const b = truth.gbps === null ? 0 : bytes / (truth.gbps * 1e6);
  return truth.t0Us / 1000 + (a ** 4 + b ** 4) ** 0.25;
}

/** Options of {@linkcode synthesize}. */
export interface SynthOptions {
  /** Samples per size. */
  readonly samples?: number;
  /** Log-normal σ of one sample (0.03 ≈ 3 %). */
  readonly noise?: number;
  /** Multiplies the median at these sizes (outliers). */
  readonly distort?: ReadonlyMap<number, number>;
}

/** Points at `sizes`, each the median of noisy samples of the truth, samples kept for bootstraps. */
export function synthesize(
  sizes: readonly number[],
  work: Work,
  truth: Truth | ((size: number) => number),
  rng: Rng,
  options: SynthOptions = {},
): CurvePoint[] {
  const { samples = 9, noise = 0.03 } = options;
  return sizes.map((size) => {
    const { flops, bytes } = work(size);
    const t = typeof truth === "function" ? truth(size) : truthMs(truth, flops, bytes);
    const k = options.distort?.get(size) ?? 1;
    const raw = Array.from({ length: samples }, () => k * t * Math.exp(noise * normal(rng)));
    return { size, flops, bytes, ms: median(raw), samples: raw };
  });
}

/** Relative error |a/b − 1|. */
export function relError(a: number, b: number): number {
  return Math.abs(a / b - 1);
}
