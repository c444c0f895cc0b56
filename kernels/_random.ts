/**
 * Seeded random operands. Values are uniform in ±[0.25, 1): never zero, never tiny, so a kernel
 * that skips work or reads the wrong element shows up in verification.
 *
 * @module
 */
import type { Dtype, HostArray, Rng } from "./types.ts";

/**
 * A small, fast, seeded generator (mulberry32) returning floats in [0, 1).
 *
 * @param seed Any 32-bit integer.
 * @returns The generator.
 * @example
 * ```ts
 * import { seededRng } from "./_random.ts";
 * const rng = seededRng(42);
 * console.log(rng() === seededRng(42)()); // true
 * ```
 */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A random value in ±[0.25, 1).
 *
 * @param rng The generator.
 * @returns The value.
 * @example
 * ```ts
 * import { randomValue, seededRng } from "./_random.ts";
 * const v = randomValue(seededRng(1));
 * console.log(Math.abs(v) >= 0.25); // true
 * ```
 */
export function randomValue(rng: Rng): number {
  const magnitude = 0.25 + 0.75 * rng();
  return rng() < 0.5 ? -magnitude : magnitude;
}

/**
 * A random float array of `length` in the storage format of `dtype` (`f32` or `f16`).
 *
 * @param length Number of elements.
 * @param dtype `f32` or `f16`.
 * @param rng The generator.
 * @returns The array.
 * @throws {TypeError} for a quantized dtype (quantized weights are built by their op).
 * @example
 * ```ts
 * import { randomFloats, seededRng } from "./_random.ts";
 * console.log(randomFloats(3, "f16", seededRng(7)) instanceof Float16Array); // true
 * ```
 */
export function randomFloats(length: number, dtype: Dtype, rng: Rng): Float32Array | Float16Array {
  let out: Float32Array | Float16Array;
  if (dtype === "f32") out = new Float32Array(length);
  else if (dtype === "f16") out = new Float16Array(length);
  else throw new TypeError(`Cannot make random floats of dtype "${dtype}": use "f32" or "f16"`);
  for (let i = 0; i < length; i++) out[i] = randomValue(rng);
  return out;
}

/**
 * Reads any operand as float64 values (quantized arrays as their raw integers).
 *
 * @param a The operand.
 * @returns A float64 copy.
 * @example
 * ```ts
 * import { toFloat64 } from "./_random.ts";
 * console.log(toFloat64(new Float32Array([1.5]))[0]); // 1.5
 * ```
 */
export function toFloat64(a: HostArray): Float64Array {
  return Float64Array.from(a as ArrayLike<number>);
}
