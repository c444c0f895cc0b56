/**
 * Scalar TypeScript matmul: the i-k-j loop (`naive`: streams rows of B and C, no cache reuse
 * beyond a row) and a cache-blocked i-k-j loop (`blocked`: `block`×`block` tiles of A and B, so a
 * tile of B is reused across `block` rows of C while it is in L1/L2).
 *
 * @module
 */
import type { JsImpl, Shape, Variant } from "../types.ts";
import { loopBound } from "../_loop_bounds.ts";
import { outOfLine } from "../_out_of_line.ts";

/**
 * m, k and n as int32 loop bounds, in an array: an object with those names would share its map
 * with every shape, whose fields hold boxed doubles once any of them held one (`_loop_bounds.ts`).
 */
function dims(shape: Shape): readonly [number, number, number] {
  const { m, k, n } = shape;
  if (!m || !k || !n) throw new RangeError(`matmul needs m, k and n, got ${JSON.stringify(shape)}`);
  return [loopBound(m), loopBound(k), loopBound(n)];
}

function naive(a: Float32Array, b: Float32Array, c: Float32Array, m: number, k: number, n: number) {
  c.fill(0);
  for (let i = 0; i < m; i++) {
    const ci = i * n;
    for (let p = 0; p < k; p++) {
      const aip = a[i * k + p]!;
      const bp = p * n;
      for (let j = 0; j < n; j++) c[ci + j] = c[ci + j]! + aip * b[bp + j]!;
    }
  }
}

function blocked(
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  m: number,
  k: number,
  n: number,
  block: number,
) {
  c.fill(0);
  for (let i0 = 0; i0 < m; i0 += block) {
    const i1 = Math.min(m, i0 + block);
    for (let p0 = 0; p0 < k; p0 += block) {
      const p1 = Math.min(k, p0 + block);
      for (let j0 = 0; j0 < n; j0 += block) {
        const j1 = Math.min(n, j0 + block);
        for (let i = i0; i < i1; i++) {
          const ci = i * n;
          for (let p = p0; p < p1; p++) {
            const aip = a[i * k + p]!;
            const bp = p * n;
            for (let j = j0; j < j1; j++) c[ci + j] = c[ci + j]! + aip * b[bp + j]!;
          }
        }
      }
    }
  }
}

function blockOf(variant: Variant): number {
  const { block } = variant;
  if (typeof block !== "number" || !Number.isInteger(block) || block < 1) {
    throw new RangeError(
      `matmul js variant block is ${JSON.stringify(block)}: use a positive integer`,
    );
  }
  return block;
}

/**
 * The scalar matmul implementation (f32). Variants: `{ loop: "naive" }` and
 * `{ loop: "blocked", block: 32 | 64 }`.
 *
 * @example
 * ```ts
 * import { matmulJs } from "./js.ts";
 * const c = new Float32Array(1);
 * matmulJs.run([new Float32Array([1, 2]), new Float32Array([3, 4])], c, { m: 1, k: 2, n: 1 }, { loop: "naive" });
 * console.log(c[0]); // 11
 * ```
 */
export const matmulJs: JsImpl = {
  variants: [{ loop: "blocked", block: 64 }, { loop: "blocked", block: 32 }, { loop: "naive" }],
  run: (ins, out, shape, variant) => {
    const [m, k, n] = dims(shape);
    const [a, b] = ins as readonly Float32Array[];
    if (variant.loop === "naive") outOfLine(naive, a!, b!, out, m, k, n);
    else if (variant.loop === "blocked") outOfLine(blocked, a!, b!, out, m, k, n, blockOf(variant));
    else {
      throw new RangeError(
        `matmul js variant loop is ${JSON.stringify(variant.loop)}: use "naive" or "blocked"`,
      );
    }
  },
};
