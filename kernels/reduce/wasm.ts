/**
 * WebAssembly SIMD128 `sum` and `dot`: `accs` independent f32x4 accumulators (so the adds of one
 * step do not wait on the previous step's), a scalar tail, and a pairwise fold at the end.
 *
 * The work is cut into blocks of {@linkcode BLOCK} elements, the `parts` `wasm-mt` spreads over
 * its workers. Each block writes its partial sum to its own slot after the result
 * (`out[1 + block]`), so any split of the blocks gives the same slots, and `finish` folds the
 * slots into `out[0]` once every part is done.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WasmImpl } from "../types.ts";

/** Elements per part: 256 KiB of f32, big enough that the per-part fold is noise. */
export const BLOCK = 65536;

function accumulators(variant: Variant): number {
  const a = variant.accs;
  if (a !== 1 && a !== 4 && a !== 8) {
    throw new RangeError(`Reduction wasm variant accs is ${JSON.stringify(a)}: use 1, 4 or 8`);
  }
  return a;
}

function length(shape: Shape): number {
  const n = shape.n;
  if (!n) throw new RangeError(`Reductions need n >= 1, got ${JSON.stringify(shape)}`);
  return n;
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The f32x4 sum of accumulators `$acc0..` folded pairwise into `$acc0`. */
function foldAccumulators(accs: number): string {
  const out: string[] = [];
  for (let width = accs; width > 1; width /= 2) {
    for (const k of range(width / 2)) {
      out.push(
        `(local.set $acc${k} (f32x4.add (local.get $acc${k}) (local.get $acc${k + width / 2})))`,
      );
    }
  }
  return out.join("\n");
}

function wat(dot: boolean, accs: number, fma: boolean): string {
  const bParam = dot ? "(param $b i32)" : "";
  const term = (offset: number) => {
    const a = `(v128.load offset=${offset} (local.get $a))`;
    return dot ? [a, `(v128.load offset=${offset} (local.get $b))`] : [a];
  };
  const step = range(accs).map((k) => {
    const [a, b] = term(16 * k);
    const acc = `(local.get $acc${k})`;
    if (!dot) return `(local.set $acc${k} (f32x4.add ${acc} ${a}))`;
    if (fma) return `(local.set $acc${k} (f32x4.relaxed_madd ${a} ${b} ${acc}))`;
    return `(local.set $acc${k} (f32x4.add ${acc} (f32x4.mul ${a} ${b})))`;
  }).join("\n");
  const scalar = dot
    ? "(f32.mul (f32.load (local.get $a)) (f32.load (local.get $b)))"
    : "(f32.load (local.get $a))";
  const advance = (bytes: string) =>
    `(local.set $a (i32.add (local.get $a) ${bytes}))` +
    (dot ? `(local.set $b (i32.add (local.get $b) ${bytes}))` : "");
  const lane = (i: number) => `(f32x4.extract_lane ${i} (local.get $acc0))`;
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func $block (param $a i32) ${bParam} (param $len i32) (result f32)
    (local $vend i32) (local $end i32) (local $t f32)
    ${range(accs).map((k) => `(local $acc${k} v128)`).join(" ")}
    (local.set $vend (i32.add (local.get $a)
      (i32.shl (i32.and (local.get $len) (i32.const ${-4 * accs})) (i32.const 2))))
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $len) (i32.const 2))))
    (block $vdone (loop $vloop
      (br_if $vdone (i32.ge_u (local.get $a) (local.get $vend)))
      ${step}
      ${advance(`(i32.const ${16 * accs})`)}
      (br $vloop)))
    (block $tdone (loop $tloop
      (br_if $tdone (i32.ge_u (local.get $a) (local.get $end)))
      (local.set $t (f32.add (local.get $t) ${scalar}))
      ${advance("(i32.const 4)")}
      (br $tloop)))
    ${foldAccumulators(accs)}
    (f32.add (f32.add (f32.add ${lane(0)} ${lane(1)}) (f32.add ${lane(2)} ${lane(3)}))
      (local.get $t)))
  (func (export "run") (param $a i32) ${bParam} (param $out i32) (param $n i32)
      (param $start i32) (param $stop i32)
    (local $p i32) (local $base i32) (local $len i32)
    (local.set $p (local.get $start))
    (block $done (loop $parts
      (br_if $done (i32.ge_u (local.get $p) (local.get $stop)))
      (local.set $base (i32.mul (local.get $p) (i32.const ${BLOCK})))
      (local.set $len (i32.sub (local.get $n) (local.get $base)))
      (if (i32.gt_u (local.get $len) (i32.const ${BLOCK}))
        (then (local.set $len (i32.const ${BLOCK}))))
      (f32.store offset=4 (i32.add (local.get $out) (i32.shl (local.get $p) (i32.const 2)))
        (call $block
          (i32.add (local.get $a) (i32.shl (local.get $base) (i32.const 2)))
          ${dot ? "(i32.add (local.get $b) (i32.shl (local.get $base) (i32.const 2)))" : ""}
          (local.get $len)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $parts)))))`;
}

function reductionWasm(dot: boolean): WasmImpl {
  const name = dot ? "dot" : "sum";
  const fmaVariants = dot ? [{ accs: 4, fma: true }, { accs: 8, fma: true }] : [];
  return {
    variants: [
      { accs: 4, fma: false },
      { accs: 1, fma: false },
      { accs: 8, fma: false },
      ...fmaVariants,
    ],
    unsupported: (_shape: Shape, dtype: Dtype, variant: Variant) => {
      accumulators(variant);
      return dtype === "f32" ? null : `WebAssembly ${name} has no ${dtype} kernel: use f32`;
    },
    wat: (variant) => wat(dot, accumulators(variant), dot && variant.fma === true),
    parts: (shape) => Math.ceil(length(shape) / BLOCK),
    partLength: (shape) => ({ total: length(shape), per: BLOCK }),
    args: (shape, ptrs, outPtr, start, end) => {
      const [a, b] = ptrs;
      if (a === undefined || (dot && b === undefined)) {
        throw new RangeError(`${name} needs ${dot ? 2 : 1} input pointers, got ${ptrs.length}`);
      }
      return [a, ...(dot ? [b!] : []), outPtr, length(shape), start, end];
    },
    outputSlots: (shape) => 1 + Math.ceil(length(shape) / BLOCK),
    finish: (memory, outPtr, shape) => {
      const first = outPtr / 4 + 1;
      const parts = Math.ceil(length(shape) / BLOCK);
      let total = 0;
      for (let p = 0; p < parts; p++) total += memory[first + p]!;
      memory[outPtr / 4] = total;
    },
  };
}

/**
 * The WebAssembly `sum`: variants `{ accs: 1 | 4 | 8, fma: false }`; `run(a, out, n, start, end)`
 * over blocks `[start, end)`, then `finish` folds the per-block partials.
 *
 * @example
 * ```ts
 * import { sumWasm } from "./wasm.ts";
 * console.log(sumWasm.parts({ n: 100000 }, { accs: 4, fma: false })); // 2
 * ```
 */
export const sumWasm: WasmImpl = reductionWasm(false);

/**
 * The WebAssembly `dot`: variants `{ accs: 1 | 4 | 8, fma }` (`fma` uses `f32x4.relaxed_madd`);
 * `run(a, b, out, n, start, end)` over blocks `[start, end)`, then `finish` folds the partials.
 *
 * @example
 * ```ts
 * import { dotWasm } from "./wasm.ts";
 * console.log(dotWasm.outputSlots?.({ n: 1 << 20 }, { accs: 4, fma: false })); // 17
 * ```
 */
export const dotWasm: WasmImpl = reductionWasm(true);
