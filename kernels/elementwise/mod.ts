/**
 * Elementwise ops: `add` (a + b), `mul` (a · b) and `fma` (a · b + c) over n elements, the
 * bandwidth-bound ops of the seeds' "Low" class.
 *
 * @module
 */
import { randomFloats, toFloat64 } from "../_random.ts";
import { BYTES_PER_ELEMENT, type OpSpec, type Shape } from "../types.ts";
import { ELEMENTWISE_ARITY, type ElementwiseKind } from "./_kind.ts";
import { elementwiseJs } from "./js.ts";
import { elementwiseWasm } from "./wasm.ts";
import { elementwiseWebGpu } from "./webgpu.ts";

export { ELEMENTWISE_ARITY, type ElementwiseKind };

function length(shape: Shape): number {
  const n = shape.n;
  if (!n) throw new RangeError(`Elementwise ops need n, got ${JSON.stringify(shape)}`);
  return n;
}

function apply(kind: ElementwiseKind, a: number, b: number, c: number): number {
  if (kind === "add") return a + b;
  if (kind === "mul") return a * b;
  return a * b + c;
}

function elementwise(kind: ElementwiseKind, summary: string): OpSpec {
  const arity = ELEMENTWISE_ARITY[kind];
  return {
    name: kind,
    summary,
    complexity: "elementwise",
    dims: ["n"],
    dtypes: ["f32", "f16"],
    axis: { unit: "elements", min: 1, max: 1 << 26, shape: (n) => ({ n }), size: (s) => s.n ?? 0 },
    flops: (s) => (kind === "fma" ? 2 : 1) * length(s),
    bytes: (s, dtype) => (arity + 1) * length(s) * BYTES_PER_ELEMENT[dtype],
    largestBufferBytes: (s, dtype) => length(s) * BYTES_PER_ELEMENT[dtype],
    inputs: (s, dtype, rng) => ({
      arrays: Array.from({ length: arity }, () => randomFloats(length(s), dtype, rng)),
      outputLength: length(s),
    }),
    reference: (s, _dtype, inputs) => {
      const [a, b, c] = inputs.arrays.map(toFloat64);
      const out = new Float64Array(length(s));
      for (let i = 0; i < out.length; i++) out[i] = apply(kind, a![i]!, b![i]!, c?.[i] ?? 0);
      return out;
    },
    tolerance: (_s, dtype) => (dtype === "f16" ? 2e-3 : 1e-6),
    impls: {
      js: elementwiseJs(kind),
      wasm: elementwiseWasm(kind),
      webgpu: elementwiseWebGpu(kind),
    },
  };
}

/**
 * `add`: out = a + b.
 *
 * @example
 * ```ts
 * import { add } from "./mod.ts";
 * console.log(add.bytes({ n: 1024 }, "f32")); // 12288
 * ```
 */
export const add: OpSpec = elementwise("add", "out = a + b");

/**
 * `mul`: out = a · b.
 *
 * @example
 * ```ts
 * import { mul } from "./mod.ts";
 * console.log(mul.flops({ n: 10 })); // 10
 * ```
 */
export const mul: OpSpec = elementwise("mul", "out = a · b");

/**
 * `fma`: out = a · b + c.
 *
 * @example
 * ```ts
 * import { fma } from "./mod.ts";
 * console.log(fma.flops({ n: 10 })); // 20
 * ```
 */
export const fma: OpSpec = elementwise("fma", "out = a · b + c");
