/**
 * WebAssembly SIMD128 softmax, one row per part (so `wasm-mt` splits rows, no combine needed):
 * an f32x4 max pass, an f32x4 `exp` pass that sums (and stores, unless `recompute`), and a
 * scaling pass. Rows need not be 16-byte aligned: SIMD loads in Wasm may be unaligned.
 *
 * Wasm has no `exp`: `$exp4` is Cephes' `expf` on four lanes (round x·log2 e to k, reduce
 * r = x − k·ln 2 in two steps, a degree-7 polynomial, scale by 2^k through the exponent bits),
 * accurate to ~2 ulp. Exps are summed in chunks of 256 vectors, then the chunks are summed,
 * so long rows keep f32 accuracy. Inputs are clamped at −87.3 so 2^k stays a normal float; softmax only ever
 * takes `exp` of x − max ≤ 0.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WasmImpl } from "../types.ts";

function recompute(variant: Variant): boolean {
  const r = variant.recompute;
  if (typeof r !== "boolean") {
    throw new RangeError(
      `Softmax wasm variant recompute is ${JSON.stringify(r)}: use true or false`,
    );
  }
  return r;
}

function dims(shape: Shape): { rows: number; cols: number } {
  const { rows, cols } = shape;
  if (!rows || !cols) {
    throw new RangeError(`Softmax needs rows and cols >= 1, got ${JSON.stringify(shape)}`);
  }
  return { rows, cols };
}

/**
 * Vectors summed per chunk before the chunk joins the row total: one running f32 sum over a
 * million exps would grow so large that later terms fall below its rounding and vanish.
 */
const CHUNK = 256;

const splat = (v: number) => `(v128.const f32x4 ${v} ${v} ${v} ${v})`;

/** Cephes expf polynomial coefficients, highest degree first. */
const POLY = [
  1.9875691500e-4,
  1.3981999507e-3,
  8.3334519073e-3,
  4.1665795894e-2,
  1.6666665459e-1,
  5.0000001201e-1,
];

const EXP4 = `
  (func $exp4 (param $x v128) (result v128)
    (local $k v128) (local $r v128) (local $p v128)
    (local.set $x (f32x4.max (local.get $x) ${splat(-87.3)}))
    (local.set $k (f32x4.nearest (f32x4.mul (local.get $x) ${splat(1.44269504088896341)})))
    (local.set $r (f32x4.sub
      (f32x4.sub (local.get $x) (f32x4.mul (local.get $k) ${splat(0.693359375)}))
      (f32x4.mul (local.get $k) ${splat(-2.12194440e-4)})))
    (local.set $p ${splat(POLY[0]!)})
    ${
  POLY.slice(1).map((c) =>
    `(local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) ${splat(c)}))`
  ).join("\n    ")
}
    (f32x4.mul
      (f32x4.add
        (f32x4.add (f32x4.mul (local.get $p) (f32x4.mul (local.get $r) (local.get $r))) (local.get $r))
        ${splat(1)})
      (i32x4.shl (i32x4.add (i32x4.trunc_sat_f32x4_s (local.get $k)) (i32x4.splat (i32.const 127)))
        (i32.const 23))))`;

/** Loops `$i` over the row in vectors, then lanes; `vector` and `scalar` see `$p` and `$q`. */
function rowLoop(label: string, vector: string, scalar: string): string {
  return `
      (local.set $p (local.get $x))
      (local.set $q (local.get $o))
      (block $${label}_vd (loop $${label}_v
        (br_if $${label}_vd (i32.ge_u (local.get $p) (local.get $vend)))
        ${vector}
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $q (i32.add (local.get $q) (i32.const 16)))
        (br $${label}_v)))
      (block $${label}_td (loop $${label}_t
        (br_if $${label}_td (i32.ge_u (local.get $p) (local.get $end)))
        ${scalar}
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (local.set $q (i32.add (local.get $q) (i32.const 4)))
        (br $${label}_t)))`;
}

function wat(again: boolean): string {
  const e = "(call $exp4 (f32x4.sub (v128.load (local.get $p)) (local.get $mv)))";
  const es = "(call $exp4 (f32x4.sub (f32x4.splat (f32.load (local.get $p))) (local.get $mv)))";
  const sumVector =
    (again ? `(local.set $cv (f32x4.add (local.get $cv) ${e}))` : `(local.set $e ${e})
        (v128.store (local.get $q) (local.get $e))
        (local.set $cv (f32x4.add (local.get $cv) (local.get $e)))`) + `
        (local.set $k (i32.sub (local.get $k) (i32.const 1)))
        (if (i32.eqz (local.get $k)) (then
          (local.set $sv (f32x4.add (local.get $sv) (local.get $cv)))
          (local.set $cv (v128.const i32x4 0 0 0 0))
          (local.set $k (i32.const ${CHUNK}))))`;
  const sumScalar = again
    ? `(local.set $s (f32.add (local.get $s) (f32x4.extract_lane 0 ${es})))`
    : `(local.set $t (f32x4.extract_lane 0 ${es}))
        (f32.store (local.get $q) (local.get $t))
        (local.set $s (f32.add (local.get $s) (local.get $t)))`;
  const writeVector = again
    ? `(v128.store (local.get $q) (f32x4.mul ${e} (local.get $inv)))`
    : `(v128.store (local.get $q) (f32x4.mul (v128.load (local.get $q)) (local.get $inv)))`;
  const writeScalar = again
    ? `(f32.store (local.get $q) (f32.mul (f32x4.extract_lane 0 ${es}) (local.get $invs)))`
    : `(f32.store (local.get $q) (f32.mul (f32.load (local.get $q)) (local.get $invs)))`;
  const lane = (v: string, i: number) => `(f32x4.extract_lane ${i} (local.get ${v}))`;
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  ${EXP4}
  (func (export "run") (param $in i32) (param $out i32) (param $cols i32)
      (param $start i32) (param $stop i32)
    (local $row i32) (local $x i32) (local $o i32) (local $vend i32) (local $end i32)
    (local $p i32) (local $q i32) (local $m f32) (local $s f32) (local $t f32) (local $invs f32)
    (local $mv v128) (local $sv v128) (local $cv v128) (local $e v128) (local $inv v128) (local $k i32)
    (local.set $row (local.get $start))
    (block $rows_done (loop $rows
      (br_if $rows_done (i32.ge_u (local.get $row) (local.get $stop)))
      (local.set $x (i32.add (local.get $in)
        (i32.shl (i32.mul (local.get $row) (local.get $cols)) (i32.const 2))))
      (local.set $o (i32.add (local.get $out)
        (i32.shl (i32.mul (local.get $row) (local.get $cols)) (i32.const 2))))
      (local.set $vend (i32.add (local.get $x)
        (i32.shl (i32.and (local.get $cols) (i32.const -4)) (i32.const 2))))
      (local.set $end (i32.add (local.get $x) (i32.shl (local.get $cols) (i32.const 2))))
      (local.set $mv (f32x4.splat (f32.load (local.get $x))))
      ${
    rowLoop(
      "max",
      "(local.set $mv (f32x4.max (local.get $mv) (v128.load (local.get $p))))",
      "(local.set $mv (f32x4.max (local.get $mv) (f32x4.splat (f32.load (local.get $p)))))",
    )
  }
      (local.set $m (f32.max (f32.max ${lane("$mv", 0)} ${lane("$mv", 1)})
        (f32.max ${lane("$mv", 2)} ${lane("$mv", 3)})))
      (local.set $mv (f32x4.splat (local.get $m)))
      (local.set $sv (v128.const i32x4 0 0 0 0))
      (local.set $cv (v128.const i32x4 0 0 0 0))
      (local.set $k (i32.const ${CHUNK}))
      (local.set $s (f32.const 0))
      ${rowLoop("sum", sumVector, sumScalar)}
      (local.set $sv (f32x4.add (local.get $sv) (local.get $cv)))
      (local.set $s (f32.add (local.get $s) (f32.add
        (f32.add ${lane("$sv", 0)} ${lane("$sv", 1)}) (f32.add ${lane("$sv", 2)} ${
    lane("$sv", 3)
  }))))
      (local.set $invs (f32.div (f32.const 1) (local.get $s)))
      (local.set $inv (f32x4.splat (local.get $invs)))
      ${rowLoop("write", writeVector, writeScalar)}
      (local.set $row (i32.add (local.get $row) (i32.const 1)))
      (br $rows)))))`;
}

/**
 * The WebAssembly softmax: variants `{ recompute: false | true }`; `run(x, out, cols, start, end)`
 * over rows `[start, end)`.
 *
 * @example
 * ```ts
 * import { softmaxWasm } from "./wasm.ts";
 * console.log(softmaxWasm.parts({ rows: 32, cols: 1024 }, { recompute: false })); // 32
 * ```
 */
export const softmaxWasm: WasmImpl = {
  variants: [{ recompute: false }, { recompute: true }],
  unsupported: (_shape: Shape, dtype: Dtype, variant: Variant) => {
    recompute(variant);
    return dtype === "f32" ? null : `WebAssembly softmax has no ${dtype} kernel: use f32`;
  },
  wat: (variant) => wat(recompute(variant)),
  parts: (shape) => dims(shape).rows,
  partLength: (shape) => ({ total: dims(shape).rows, per: 1 }),
  args: (shape, [x], outPtr, start, end) => {
    if (x === undefined) throw new RangeError("Softmax needs one input pointer");
    return [x, outPtr, dims(shape).cols, start, end];
  },
};
