/**
 * Checks a kernel's output against the float64 reference before anything is timed.
 *
 * @module
 */

/**
 * Outcome of a verification.
 *
 * @example
 * ```ts
 * import type { Verification } from "./verify.ts";
 * const v: Verification = { ok: true, maxRelError: 1e-7, worstIndex: 3 };
 * ```
 */
export interface Verification {
  /** True when every element is within tolerance. */
  readonly ok: boolean;
  /** Largest |out − ref| divided by the reference's scale; Infinity for NaN or a length mismatch. */
  readonly maxRelError: number;
  /** Index of the worst element (−1 when the lengths differ). */
  readonly worstIndex: number;
  /** What went wrong, for people, when not ok. */
  readonly message?: string;
}

/**
 * Compares `out` with `ref`: the error of each element is |out − ref| / scale, where scale is the
 * reference's largest magnitude (so elements near zero don't turn rounding into huge relative
 * errors, and a kernel that writes zeros or skips a tile fails). NaN anywhere fails.
 *
 * @param out The kernel's output.
 * @param ref The float64 reference.
 * @param tolerance Largest acceptable error.
 * @returns The verification.
 * @example
 * ```ts
 * import { verifyOutput } from "./verify.ts";
 * const v = verifyOutput(new Float32Array([1, 2.5]), new Float64Array([1, 2]), 1e-4);
 * console.log(v.ok, v.maxRelError); // false 0.2
 * ```
 */
export function verifyOutput(
  out: ArrayLike<number>,
  ref: ArrayLike<number>,
  tolerance: number,
): Verification {
  if (out.length !== ref.length) {
    return {
      ok: false,
      maxRelError: Infinity,
      worstIndex: -1,
      message: `Output has ${out.length} elements, the reference ${ref.length}`,
    };
  }
  let scale = 0;
  for (let i = 0; i < ref.length; i++) scale = Math.max(scale, Math.abs(ref[i]!));
  if (scale === 0) scale = 1;
  let worst = 0;
  let worstIndex = 0;
  for (let i = 0; i < out.length; i++) {
    const e = Math.abs(out[i]! - ref[i]!) / scale;
    if (!(e <= worst)) {
      worst = Number.isNaN(e) ? Infinity : e;
      worstIndex = i;
      if (worst === Infinity) break;
    }
  }
  const ok = worst <= tolerance;
  if (ok) return { ok, maxRelError: worst, worstIndex };
  return {
    ok,
    maxRelError: worst,
    worstIndex,
    message: `Wrong result: element ${worstIndex} is ${out[worstIndex]}, expected ${
      ref[worstIndex]
    } (error ${worst.toExponential(2)} > tolerance ${tolerance.toExponential(2)})`,
  };
}
