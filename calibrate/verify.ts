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

/**
 * `count` distinct output indices in `[0, length)`, drawn from a seeded generator (so a kernel
 * cannot know in advance which elements are checked, yet a failure reproduces), ascending; the
 * first and last index always among them. All indices when `length ≤ count`.
 *
 * @param length Output length.
 * @param count How many to check.
 * @param seed The seed.
 * @returns The indices.
 * @example
 * ```ts
 * import { sampleIndices } from "./verify.ts";
 * const i = sampleIndices(1000, 8, 7);
 * console.log(i.length, i[0], i[7]); // 8 0 999
 * ```
 */
export function sampleIndices(length: number, count: number, seed: number): number[] {
  if (length <= count) return Array.from({ length }, (_, i) => i);
  const picked = new Set<number>([0, length - 1]);
  let s = seed >>> 0;
  while (picked.size < count) {
    // mulberry32: small, seeded, uniform enough to spread the checks over the output.
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    picked.add(Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * length));
  }
  return [...picked].sort((a, b) => a - b);
}

/**
 * Like {@linkcode verifyOutput}, on sampled elements only: for outputs whose full float64
 * reference would cost more than the kernel's whole measurement (a 2048³ matmul). The scale is
 * the sampled reference's largest magnitude. A kernel that skips rows or tiles fails as soon as
 * one sampled element falls in them; with seeded indices spread over the output it cannot tell.
 *
 * @param out The kernel's output.
 * @param referenceAt The float64 reference of one element.
 * @param indices The elements to check (see {@linkcode sampleIndices}).
 * @param tolerance Largest acceptable error.
 * @returns The verification (`worstIndex` is an index of `out`).
 * @example
 * ```ts
 * import { verifySampled } from "./verify.ts";
 * const out = new Float32Array([1, 2, 0, 4]);
 * console.log(verifySampled(out, (i) => i + 1, [0, 2, 3], 1e-4).ok); // false
 * ```
 */
export function verifySampled(
  out: ArrayLike<number>,
  referenceAt: (index: number) => number,
  indices: readonly number[],
  tolerance: number,
): Verification {
  const ref = new Float64Array(indices.map(referenceAt));
  const sampled = Float64Array.from(indices, (i) => i < out.length ? out[i]! : NaN);
  const v = verifyOutput(sampled, ref, tolerance);
  const worstIndex = indices[v.worstIndex] ?? -1;
  if (v.ok) return { ...v, worstIndex };
  return {
    ...v,
    worstIndex,
    message: `Wrong result: sampled element ${worstIndex} is ${out[worstIndex]}, expected ${
      ref[v.worstIndex]
    } (error ${v.maxRelError.toExponential(2)} > tolerance ${tolerance.toExponential(2)})`,
  };
}
