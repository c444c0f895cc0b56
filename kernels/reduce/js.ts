/**
 * Scalar TypeScript `sum` and `dot`: one accumulator, or four independent ones so consecutive
 * additions do not wait on each other.
 *
 * JS numbers are float64, so even the plain loop is far more accurate than any f32 kernel: a
 * compensated (Kahan) or pairwise variant would cost time and buy nothing measurable.
 *
 * @module
 */
import type { HostArray, JsImpl, Variant } from "../types.ts";
import { outOfLine } from "../_out_of_line.ts";

function unroll(variant: Variant): 1 | 4 {
  const u = variant.unroll;
  if (u !== 1 && u !== 4) {
    throw new RangeError(`Reduction js variant unroll is ${JSON.stringify(u)}: use 1 or 4`);
  }
  return u;
}

function floats(ins: readonly HostArray[], i: number): Float32Array {
  const a = ins[i];
  if (!(a instanceof Float32Array)) {
    throw new TypeError(`Operand ${i} of a js reduction must be a Float32Array, got ${a}`);
  }
  return a;
}

function sumOf(a: Float32Array, u: 1 | 4): number {
  const n = a.length;
  if (u === 1) {
    let s = 0;
    for (let i = 0; i < n; i++) s += a[i]!;
    return s;
  }
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i]!;
    s1 += a[i + 1]!;
    s2 += a[i + 2]!;
    s3 += a[i + 3]!;
  }
  for (; i < n; i++) s0 += a[i]!;
  return (s0 + s1) + (s2 + s3);
}

function dotOf(a: Float32Array, b: Float32Array, u: 1 | 4): number {
  const n = a.length;
  if (u === 1) {
    let s = 0;
    for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
    return s;
  }
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i]! * b[i]!;
    s1 += a[i + 1]! * b[i + 1]!;
    s2 += a[i + 2]! * b[i + 2]!;
    s3 += a[i + 3]! * b[i + 3]!;
  }
  for (; i < n; i++) s0 += a[i]! * b[i]!;
  return (s0 + s1) + (s2 + s3);
}

/**
 * The js `sum`: variants `{ unroll: 1 | 4 }` (accumulators).
 *
 * @example
 * ```ts
 * import { sumJs } from "./js.ts";
 * const out = new Float32Array(1);
 * sumJs.run([Float32Array.of(1, 2, 3)], out, { n: 3 }, { unroll: 4 });
 * console.log(out[0]); // 6
 * ```
 */
export const sumJs: JsImpl = {
  variants: [{ unroll: 4 }, { unroll: 1 }],
  run: (ins, out, _shape, variant) => {
    out[0] = outOfLine(sumOf, floats(ins, 0), unroll(variant));
  },
};

/**
 * The js `dot`: variants `{ unroll: 1 | 4 }` (accumulators).
 *
 * @example
 * ```ts
 * import { dotJs } from "./js.ts";
 * const out = new Float32Array(1);
 * dotJs.run([Float32Array.of(1, 2), Float32Array.of(3, 4)], out, { n: 2 }, { unroll: 1 });
 * console.log(out[0]); // 11
 * ```
 */
export const dotJs: JsImpl = {
  variants: [{ unroll: 4 }, { unroll: 1 }],
  run: (ins, out, _shape, variant) => {
    out[0] = outOfLine(dotOf, floats(ins, 0), floats(ins, 1), unroll(variant));
  },
};
