/**
 * Private: sizes as the plain integers a JavaScript loop should count to. V8 compiles a kernel's
 * loops with its indices as small integers while every size it has seen was one. Objects built
 * with the same properties in the same order share one hidden class, and once any of them held a
 * fraction in a field (`{ m: 0.5, k, n }` anywhere in the process), that field holds a boxed
 * double in every one of them, `{ m: 300, k: 300, n: 300 }` included: a kernel handed such a size
 * deoptimises ("not a Smi") and V8 recompiles it with its indices in floating point for the rest
 * of the process. In one `bench:regret` run every js matmul then ran 2.0–2.3× its calibrated time
 * and gemv f32 1.3–1.9× (matmul 300³ 70.9 ms against 31.3 in the run before, whose host probe was
 * the same); a scratch script that made one such shape ran the kernel at 300³ in 34 ms before and
 * 69 ms after. `x | 0` into a local hands the loop an int32 whatever the field held; an object
 * returned with the same property names would carry the box again.
 *
 * ```ts
 * import { loopBound } from "./_loop_bounds.ts";
 * console.log(loopBound(Math.sqrt(169))); // 13
 * ```
 *
 * @module
 */

/**
 * A size as an int32 loop bound.
 *
 * @param size A non-negative integer below 2³¹ (callers validate it first).
 * @returns The same value, as an int32.
 * @example
 * ```ts
 * import { loopBound } from "./_loop_bounds.ts";
 * console.log(loopBound(300)); // 300
 * ```
 */
export function loopBound(size: number): number {
  return size | 0;
}
