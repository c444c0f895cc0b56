/**
 * WebAssembly SIMD128 gemv, one module per dtype, each exporting `run` over rows `[r0, r1)`:
 *
 * - `f32`: four `f32x4` accumulators over 16 columns a step, then one vector, then scalars.
 * - `q8`: a full group of 32 int8 weights is two `v128` loads widened i8 → i16 → i32 → f32, its
 *   eight products summed as a tree (short dependency chains), then scaled once into the row's
 *   accumulator.
 * - `q4`: a full group is one 16-byte load: the low nibbles (`v128.and`) hold the even columns, the
 *   high nibbles (`i8x16.shr_u`) the odd ones; minus 8 and interleaved by two `i8x16.shuffle`s they
 *   become the q8 case.
 *
 * A partial last group (cols not a multiple of 32) and column tails are done in scalar code, so
 * any shape runs and nothing is read past a row's end. `parts` are rows, so `wasm-mt` gives each
 * worker a band of rows.
 *
 * @module
 */
import { type Dtype, QUANT_GROUP_SIZE, type Shape, type Variant, type WasmImpl } from "../types.ts";
import { gemvDims } from "./_layout.ts";

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

function f32Module(): string {
  const step = (v: number) =>
    `(local.set $a${v} (f32x4.add (local.get $a${v}) (f32x4.mul
        (v128.load offset=${v * 16} (local.get $p)) (v128.load offset=${v * 16} (local.get $q)))))`;
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "run") (param $w i32) (param $x i32) (param $y i32) (param $cols i32)
      (param $r0 i32) (param $r1 i32)
    (local $r i32) (local $p i32) (local $q i32) (local $end i32) (local $end16 i32)
    (local $end4 i32) (local $rowBytes i32) (local $s f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $rowBytes (i32.shl (local.get $cols) (i32.const 2)))
    (local.set $r (local.get $r0))
    (block $rows_done (loop $rows
      (br_if $rows_done (i32.ge_u (local.get $r) (local.get $r1)))
      (local.set $p (i32.add (local.get $w) (i32.mul (local.get $r) (local.get $rowBytes))))
      (local.set $q (local.get $x))
      (local.set $end (i32.add (local.get $p) (local.get $rowBytes)))
      (local.set $end16 (i32.add (local.get $p)
        (i32.shl (i32.and (local.get $cols) (i32.const -16)) (i32.const 2))))
      (local.set $end4 (i32.add (local.get $p)
        (i32.shl (i32.and (local.get $cols) (i32.const -4)) (i32.const 2))))
      ${range(4).map((v) => `(local.set $a${v} (v128.const i32x4 0 0 0 0))`).join(" ")}
      (block $d16 (loop $l16
        (br_if $d16 (i32.ge_u (local.get $p) (local.get $end16)))
        ${range(4).map(step).join("\n        ")}
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $q (i32.add (local.get $q) (i32.const 64)))
        (br $l16)))
      (block $d4 (loop $l4
        (br_if $d4 (i32.ge_u (local.get $p) (local.get $end4)))
        ${step(0)}
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $q (i32.add (local.get $q) (i32.const 16)))
        (br $l4)))
      (local.set $a0 (f32x4.add (f32x4.add (local.get $a0) (local.get $a1))
        (f32x4.add (local.get $a2) (local.get $a3))))
      (local.set $s (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
        (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
      (block $d1 (loop $l1
        (br_if $d1 (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $s (f32.add (local.get $s)
          (f32.mul (f32.load (local.get $p)) (f32.load (local.get $q)))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $q (i32.add (local.get $q) (i32.const 4)))
        (br $l1)))
      (f32.store (i32.add (local.get $y) (i32.shl (local.get $r) (i32.const 2))) (local.get $s))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows)))))`;
}

/**
 * Sum of one full group: `$b0`, `$b1` hold its 32 int8 weights in column order; the products
 * with x at `$q` are added as a balanced tree into a group sum, which is scaled into `$acc`.
 */
function groupOf32(): string {
  const widen = (b: string, half: "low" | "high", part: "low" | "high") =>
    `(f32x4.convert_i32x4_s (i32x4.extend_${part}_i16x8_s (i16x8.extend_${half}_i8x16_s (local.get ${b}))))`;
  const product = (k: number) => {
    const b = k < 4 ? "$b0" : "$b1";
    const half = (k & 2) === 0 ? "low" : "high";
    const part = (k & 1) === 0 ? "low" : "high";
    return `(f32x4.mul ${widen(b, half, part)} (v128.load offset=${k * 16} (local.get $q)))`;
  };
  const pair = (k: number) => `(f32x4.add ${product(k)} ${product(k + 1)})`;
  return `(local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
          (f32x4.add
            (f32x4.add ${pair(0)} ${pair(2)})
            (f32x4.add ${pair(4)} ${pair(6)}))
          (f32x4.splat (f32.load (local.get $sp))))))`;
}

/** The quantized module: `unpack` sets `$b0`, `$b1` from the group at `$p` and advances `$p`. */
function quantizedModule(dtype: "q8" | "q4"): string {
  const unpack = dtype === "q8"
    ? `(local.set $b0 (v128.load (local.get $p)))
        (local.set $b1 (v128.load offset=16 (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))`
    : `(local.set $b0 (v128.load (local.get $p)))
        (local.set $b1 (i8x16.sub (i8x16.shr_u (local.get $b0) (i32.const 4)) (local.get $eight)))
        (local.set $b0 (i8x16.sub (v128.and (local.get $b0) (local.get $low)) (local.get $eight)))
        (local.set $t (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23
          (local.get $b0) (local.get $b1)))
        (local.set $b1 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31
          (local.get $b0) (local.get $b1)))
        (local.set $b0 (local.get $t))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))`;
  // Column k of the partial group, as an f32 weight before scaling.
  const tailWeight = dtype === "q8"
    ? `(f32.convert_i32_s (i32.load8_s (i32.add (local.get $p) (local.get $k))))`
    : `(f32.convert_i32_s (i32.sub
          (i32.and (i32.shr_u (i32.load8_u (i32.add (local.get $p) (i32.shr_u (local.get $k) (i32.const 1))))
            (i32.shl (i32.and (local.get $k) (i32.const 1)) (i32.const 2)))
            (i32.const 15))
          (i32.const 8)))`;
  const rowBytes = dtype === "q8"
    ? `(local.get $cols)`
    : `(i32.shr_u (i32.add (local.get $cols) (i32.const 1)) (i32.const 1))`;
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "run") (param $w i32) (param $sc i32) (param $x i32) (param $y i32)
      (param $cols i32) (param $r0 i32) (param $r1 i32)
    (local $r i32) (local $p i32) (local $q i32) (local $sp i32) (local $g i32) (local $full i32)
    (local $rest i32) (local $k i32) (local $groups i32) (local $s f32) (local $gs f32)
    (local $acc v128) (local $b0 v128) (local $b1 v128) (local $t v128)
    (local $low v128) (local $eight v128)
    (local.set $low (i8x16.splat (i32.const 15)))
    (local.set $eight (i8x16.splat (i32.const 8)))
    (local.set $full (i32.shr_u (local.get $cols) (i32.const 5)))
    (local.set $rest (i32.and (local.get $cols) (i32.const 31)))
    (local.set $groups (i32.add (local.get $full) (i32.ne (local.get $rest) (i32.const 0))))
    (local.set $r (local.get $r0))
    (block $rows_done (loop $rows
      (br_if $rows_done (i32.ge_u (local.get $r) (local.get $r1)))
      (local.set $p (i32.add (local.get $w) (i32.mul (local.get $r) ${rowBytes})))
      (local.set $sp (i32.add (local.get $sc) (i32.shl (i32.mul (local.get $r) (local.get $groups)) (i32.const 2))))
      (local.set $q (local.get $x))
      (local.set $acc (v128.const i32x4 0 0 0 0))
      (local.set $g (local.get $full))
      (block $groups_done (loop $group
        (br_if $groups_done (i32.eqz (local.get $g)))
        ${unpack}
        ${groupOf32()}
        (local.set $q (i32.add (local.get $q) (i32.const ${QUANT_GROUP_SIZE * 4})))
        (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
        (local.set $g (i32.sub (local.get $g) (i32.const 1)))
        (br $group)))
      (local.set $s (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
        (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
      (if (local.get $rest) (then
        (local.set $gs (f32.const 0))
        (local.set $k (i32.const 0))
        (loop $tail
          (local.set $gs (f32.add (local.get $gs) (f32.mul ${tailWeight}
            (f32.load (i32.add (local.get $q) (i32.shl (local.get $k) (i32.const 2)))))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $tail (i32.lt_u (local.get $k) (local.get $rest))))
        (local.set $s (f32.add (local.get $s) (f32.mul (local.get $gs) (f32.load (local.get $sp)))))))
      (f32.store (i32.add (local.get $y) (i32.shl (local.get $r) (i32.const 2))) (local.get $s))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows)))))`;
}

function pointers(ptrs: readonly number[], count: number): number[] {
  if (ptrs.length !== count) {
    throw new RangeError(`gemv wasm needs ${count} input pointers, got ${ptrs.length}`);
  }
  return [...ptrs];
}

/**
 * The gemv WebAssembly implementation for `f32`, `q8` and `q4` (f16 is WebGPU only).
 * `run(w, x, y, cols, r0, r1)` for f32, `run(w, scales, x, y, cols, r0, r1)` for q8 and q4.
 *
 * @example
 * ```ts
 * import { gemvWasm } from "./wasm.ts";
 * console.log(gemvWasm.parts({ rows: 7, cols: 33 }, {})); // 7
 * console.log(gemvWasm.args({ rows: 7, cols: 33 }, [0, 64, 128], 256, 2, 5, {}, "q8"));
 * // [0, 64, 128, 256, 33, 2, 5]
 * ```
 */
export const gemvWasm: WasmImpl = {
  variants: [{}],
  unsupported: (_shape: Shape, dtype: Dtype) =>
    dtype === "f16" ? "gemv f16 is WebGPU only: use f32, q8 or q4 on the CPU" : null,
  wat: (_variant: Variant, dtype: Dtype) => {
    if (dtype === "f32") return f32Module();
    if (dtype === "q8" || dtype === "q4") return quantizedModule(dtype);
    throw new RangeError(`gemv wasm has no ${JSON.stringify(dtype)} module: use f32, q8 or q4`);
  },
  parts: (shape) => gemvDims(shape).rows,
  partLength: (shape) => ({ total: gemvDims(shape).rows, per: 1 }),
  args: (shape, ptrs, out, start, end, _variant, dtype) => {
    const { rows, cols } = gemvDims(shape);
    const range = [cols, Math.max(0, start), Math.min(rows, end)];
    if (dtype === "f32") return [...pointers(ptrs, 2), out, ...range];
    if (dtype === "q8" || dtype === "q4") return [...pointers(ptrs, 3), out, ...range];
    throw new RangeError(`gemv wasm has no ${JSON.stringify(dtype)} module: use f32, q8 or q4`);
  },
};
