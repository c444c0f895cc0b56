/**
 * WebAssembly SIMD128 elementwise kernels: an `f32x4` loop unrolled ×`unroll`, a one-vector loop
 * and a scalar tail, over blocks of {@linkcode ELEMENTWISE_BLOCK} elements so `wasm-mt` can split
 * the array.
 *
 * @module
 */
import type { Shape, Variant, WasmImpl } from "../types.ts";
import { ELEMENTWISE_ARITY, type ElementwiseKind } from "./_kind.ts";

/** Elements per part: 64 KiB of each operand, small enough to spread 1M elements over 16 threads. */
export const ELEMENTWISE_BLOCK = 16384;

interface Body {
  vec(operands: string[]): string;
  scalar(operands: string[]): string;
}

const OPS: Readonly<Record<ElementwiseKind, Body>> = {
  add: {
    vec: ([a, b]) => `(f32x4.add ${a} ${b})`,
    scalar: ([a, b]) => `(f32.add ${a} ${b})`,
  },
  mul: {
    vec: ([a, b]) => `(f32x4.mul ${a} ${b})`,
    scalar: ([a, b]) => `(f32.mul ${a} ${b})`,
  },
  // Unfused (two roundings) so every engine gives the same bits; relaxed_madd would not.
  fma: {
    vec: ([a, b, c]) => `(f32x4.add (f32x4.mul ${a} ${b}) ${c})`,
    scalar: ([a, b, c]) => `(f32.add (f32.mul ${a} ${b}) ${c})`,
  },
};

function unrollOf(variant: Variant): number {
  const u = variant.unroll;
  if (u !== 1 && u !== 4) {
    throw new RangeError(`Elementwise wasm variant unroll is ${JSON.stringify(u)}: use 1 or 4`);
  }
  return u;
}

function length(shape: Shape): number {
  const n = shape.n;
  if (!n) throw new RangeError(`Elementwise ops need n, got ${JSON.stringify(shape)}`);
  return n;
}

function wat(kind: ElementwiseKind, unroll: number): string {
  const arity = ELEMENTWISE_ARITY[kind];
  const ins = Array.from({ length: arity }, (_, i) => `$in${i}`);
  const params = ins.map((p) => `(param ${p} i32)`).join(" ");
  const at = (load: string, offset: number) =>
    ins.map((p) => `(${load} offset=${offset} (i32.add (local.get ${p}) (local.get $i)))`);
  const vecStep = (offset: number) =>
    `(v128.store offset=${offset} (i32.add (local.get $out) (local.get $i)) ${
      OPS[kind].vec(at("v128.load", offset))
    })`;
  const loop = (name: string, vectors: number) => `
    (local.set $stop (i32.sub (local.get $end) (i32.const ${vectors * 16 - 4})))
    (block $${name}_done (loop $${name}
      (br_if $${name}_done (i32.ge_s (local.get $i) (local.get $stop)))
      ${Array.from({ length: vectors }, (_, v) => vecStep(v * 16)).join("\n")}
      (local.set $i (i32.add (local.get $i) (i32.const ${vectors * 16})))
      (br $${name})))`;
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "run") ${params} (param $out i32) (param $start i32) (param $count i32)
    (local $i i32) (local $end i32) (local $stop i32)
    ;; Byte offsets from the operands' bases; $stop is where the next full step would overrun.
    (local.set $i (i32.shl (local.get $start) (i32.const 2)))
    (local.set $end (i32.add (local.get $i) (i32.shl (local.get $count) (i32.const 2))))
    ${unroll > 1 ? loop("wide", unroll) : ""}
    ${loop("vec", 1)}
    (block $tail_done (loop $tail
      (br_if $tail_done (i32.ge_s (local.get $i) (local.get $end)))
      (f32.store (i32.add (local.get $out) (local.get $i)) ${OPS[kind].scalar(at("f32.load", 0))})
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $tail)))))`;
}

/**
 * The WebAssembly implementation of an elementwise op: `run(...inputs, out, start, count)` over
 * element indices, `parts` are blocks of {@linkcode ELEMENTWISE_BLOCK} elements.
 *
 * @param kind Which elementwise function.
 * @returns Its WebAssembly implementation, variants `unroll` 4 and 1.
 * @example
 * ```ts
 * import { elementwiseWasm } from "./wasm.ts";
 * console.log(elementwiseWasm("add").parts({ n: 100000 }, { unroll: 4 })); // 7
 * ```
 */
export function elementwiseWasm(kind: ElementwiseKind): WasmImpl {
  return {
    variants: [{ unroll: 4 }, { unroll: 1 }],
    wat: (variant) => wat(kind, unrollOf(variant)),
    parts: (shape) => Math.ceil(length(shape) / ELEMENTWISE_BLOCK),
    partLength: (shape) => ({ total: length(shape), per: ELEMENTWISE_BLOCK }),
    args: (shape, inputPtrs, outPtr, start, end) => {
      const first = start * ELEMENTWISE_BLOCK;
      const count = Math.min(length(shape), end * ELEMENTWISE_BLOCK) - first;
      return [...inputPtrs, outPtr, first, count];
    },
  };
}
