/**
 * Private: how unevenly a `wasm-mt` run shares its work between threads. A run is cut into parts
 * (a reduction's 65 536-element blocks, a matmul's row blocks), the parts into chunks the threads
 * claim in turn (`calibrate/runners/wasm_mt.ts`), and the run lasts as long as its busiest thread.
 * A sum of 70 001 elements is a full block and 4 465 elements: one thread does nearly all of it,
 * so it took 7.5 µs where the report's curve, drawn between 29 193 (one block, run inline) and
 * 131 072 (two full blocks, 7.1 µs), said 3.6, and single-threaded wasm took 4.1. The index takes
 * each measurement's share out before correcting the fit along the axis, and a prediction puts it
 * back for the shape asked about, as it does a row's alignment (`_alignment.ts`). A matrix op's
 * shape model learns what is left of its row count from measured shapes, but not a switch between
 * them: wasm-mt matmul 4 × 2048 × 2048 is one block of 4 rows on one thread, between m = 1 (split
 * by columns) and m = 8 (two blocks), and without its share here it was predicted 41 % fast; with
 * it, 16 % slow. The even share's time right above the switch from one part to
 * two is measured, not drawn across it: calibrate measures each such series at a block and a
 * quarter (`calibrate/bends.ts` `threadWakePoints`). Without that point the sum of 70 001 (4.4–5.7
 * µs in eleven truths) was predicted 22–48 % slow, at about the time of two full blocks; with it,
 * 8–32 % slow in three truths of two calibrations (the second ran its threads slower throughout).
 *
 * ```ts
 * import { imbalanceLn } from "./_imbalance.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const sum = getOp("sum");
 * const variant = { accs: 4, fma: false };
 * console.log(Math.exp(imbalanceLn(sum, { n: 70001 }, variant, 2)).toFixed(2)); // "1.87"
 * console.log(imbalanceLn(sum, { n: 131072 }, variant, 2)); // 0
 * console.log(imbalanceLn(sum, { n: 29193 }, variant, 2)); // 0: one part runs inline
 * ```
 *
 * @module
 */
import type { OpSpec, Shape, Variant, WasmImpl } from "../kernels/types.ts";
import { chunkRanges, chunksFor } from "../calibrate/wasm_schedule.ts";

/**
 * ln of how much longer the busiest of `threads` threads works than an even share of the run:
 * 0 for a run of one chunk (it runs inline on the caller) or an op without a WebAssembly kernel.
 * Threads claim chunks in order as they come free, as the runner's do.
 *
 * @param op The op.
 * @param shape The shape.
 * @param variant The WebAssembly variant's parameters (a matmul's `mr` sets its parts).
 * @param threads Threads in all, the caller included.
 * @param perCall For a kernel that packs an operand per call (`packsPerCall`), what a call's
 *   packing costs in units of the dimension its parts cut ({@linkcode perCallWork}); each chunk
 *   pays it. With it a two-thread matmul of 16 rows on 6-row blocks, packing worth 11 rows,
 *   is ×1.11 an even share, not ×1.25 (in one process 12 × 1024² ran 0.76–0.90 ms and was
 *   predicted 0.45–0.57 with the rows alone).
 * @returns ln(busiest thread's work / an even share of it), at least 0.
 */
export function imbalanceLn(
  op: OpSpec,
  shape: Shape,
  variant: Variant,
  threads: number,
  perCall = 0,
): number {
  const impl = op.impls.wasm;
  if (impl === undefined || !(threads > 1)) return 0;
  const chunked = chunksOf(impl, shape, variant, threads);
  if (chunked === null) return 0;
  const { parts, ranges } = chunked;
  // One chunk of a reduction or an elementwise op is a small run, inline on the caller, which its
  // fit draws as it is; one chunk of a matrix op (a matmul of 4 × 2048 × 2048 in one block of
  // rows) can be long, and one thread does all of it.
  if (ranges.length === 0 || (ranges.length === 1 && op.dims.length === 1)) return 0;
  const { total, per } = impl.partLength?.(shape, variant) ?? { total: parts, per: 1 };
  const busy = new Array<number>(threads).fill(0);
  // A kernel that packs an operand per call pays it once per chunk, as at the squares, where
  // each thread takes one: only the rest is shared out.
  const fixed = impl.packsPerCall === true ? Math.max(0, perCall) : 0;
  for (const [start, end] of ranges) {
    // Whole parts, less what the last part lacks when the chunk holds it.
    const work = Math.min(end * per, total) - start * per + fixed;
    // The thread that comes free first claims the next chunk.
    let first = 0;
    for (let t = 1; t < threads; t++) if (busy[t]! < busy[first]!) first = t;
    busy[first] = busy[first]! + work;
  }
  const ratio = Math.max(...busy) / (total / threads + fixed);
  return ratio > 1 ? Math.log(ratio) : 0;
}

/**
 * Whether a `wasm-mt` run of a matrix op is one chunk, which one thread runs whole: then it is
 * a one-thread run, packing and all, not a share of one. wasm-mt matmul 6 × 6000 × 256 (one block
 * of six rows) ran 0.83 ms where one-thread wasm ran 0.83, and priced as two threads' work with one
 * idle it came out 0.61. False for a one-dimensional op (one chunk of it runs inline, and its fit
 * draws that, `firstSharedSize`), an op without a WebAssembly kernel, or a single thread.
 *
 * @param op The op.
 * @param shape The shape.
 * @param variant The WebAssembly variant's parameters.
 * @param threads Threads in all, the caller included.
 * @returns Whether one thread runs the whole call.
 * @example
 * ```ts
 * import { runsOnOneThread } from "./_imbalance.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const v = { mr: 6, nr: 8, kc: 256, nc: 512, fma: true };
 * console.log(runsOnOneThread(getOp("matmul"), { m: 6, k: 6000, n: 256 }, v, 2)); // true
 * console.log(runsOnOneThread(getOp("matmul"), { m: 8, k: 6000, n: 256 }, v, 2)); // false
 * ```
 */
export function runsOnOneThread(
  op: OpSpec,
  shape: Shape,
  variant: Variant,
  threads: number,
): boolean {
  const impl = op.impls.wasm;
  if (impl === undefined || op.dims.length === 1 || !(threads > 1)) return false;
  return chunksOf(impl, shape, variant, threads)?.ranges.length === 1;
}

/**
 * How the runner cuts a run into parts and the parts into the chunks its threads claim
 * (`calibrate/runners/wasm_mt.ts`); null for a shape the kernel cannot take.
 */
function chunksOf(
  impl: WasmImpl,
  shape: Shape,
  variant: Variant,
  threads: number,
): { parts: number; ranges: [number, number][] } | null {
  try {
    const parts = impl.parts(shape, variant);
    const chunks = chunksFor(threads, undefined, impl.packsPerCall === true);
    return { parts, ranges: chunkRanges(parts, chunks) };
  } catch {
    return null;
  }
}

/** A one-thread run of a kernel that packs per call, as {@linkcode perCallWork} reads it. */
export interface PackedRun {
  /** Its time beyond the launch, ms. */
  readonly ms: number;
  /** The length of the dimension its parts cut (`partLength().total`: a matmul's rows). */
  readonly total: number;
  /** Its flops. */
  readonly flops: number;
}

/**
 * What one call's packing costs, in units of the dimension the parts cut: a matmul packs all of
 * B for each call, which on one thread of the 2-vCPU Xeon cost as much as 8–12 rows of C by
 * five calibrations' runs (13–18 through their runs up to 256 rows alone; wasm 6 × 1024² took
 * 0.90 ms, 48 × 1024² 2.7 and 100 × 1024² 4.9). Per unit of `flops /
 * total` (a row's work), the time is the packing and then `total` rows: a least-squares line
 * through one-thread runs gives the packing as its intercept over its slope. 0 with fewer than
 * three runs, two totals, or a line that says nothing is packed.
 *
 * @param runs One-thread runs of the packing path.
 * @returns The packing's cost in rows (or the unit of `total`), at least 0.
 * @example
 * ```ts
 * import { perCallWork } from "./_imbalance.ts";
 * // Each run: 14 rows' worth of packing, then its rows, at 1 µs a row of 1 MFLOP.
 * const runs = [8, 32, 100].map((m) => ({ ms: (14 + m) * 1e-3, total: m, flops: m * 1e6 }));
 * console.log(perCallWork(runs).toFixed(1)); // "14.0"
 * ```
 */
export function perCallWork(runs: readonly PackedRun[]): number {
  const used = runs.filter((r) => r.ms > 0 && r.total > 0 && r.flops > 0);
  if (used.length < 3 || new Set(used.map((r) => r.total)).size < 2) return 0;
  // Time per row's work against rows: intercept = packing, slope = one row.
  const xs = used.map((r) => r.total);
  const ys = used.map((r) => r.ms * r.total / r.flops);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let sxy = 0;
  let sxx = 0;
  xs.forEach((x, i) => {
    sxy += (x - mx) * (ys[i]! - my);
    sxx += (x - mx) * (x - mx);
  });
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  return slope > 0 && intercept > 0 ? intercept / slope : 0;
}

/** Largest axis size searched for a one-dimensional op's first run on more than one thread. */
const MAX_INLINE_SEARCH = 2 ** 31;

/**
 * The smallest axis size at which a one-dimensional op's `wasm-mt` run leaves the caller: from
 * it up, the run is cut into chunks the threads share; below it, one chunk runs inline on one
 * thread at one thread's speed. A curve drawn across the switch puts an inline run between the
 * two: wasm-mt dot of 50 001 (one 65 536-element part, inline) was predicted 5–39 % fast in
 * fourteen truths, drawn toward 81 920 (two parts on two threads). Null for an op of more than
 * one dimension, one without a WebAssembly kernel, or a single thread.
 *
 * @param op The op.
 * @param variant The WebAssembly variant's parameters.
 * @param threads Threads in all, the caller included.
 * @returns The first size run on more than one thread, or null.
 * @example
 * ```ts
 * import { firstSharedSize } from "./_imbalance.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * console.log(firstSharedSize(getOp("dot"), { accs: 8, fma: true }, 2)); // 65537
 * ```
 */
export function firstSharedSize(op: OpSpec, variant: Variant, threads: number): number | null {
  const impl = op.impls.wasm;
  if (impl === undefined || op.dims.length !== 1 || !(threads > 1)) return null;
  const shared = (size: number): boolean =>
    (chunksOf(impl, op.axis.shape(size), variant, threads)?.ranges.length ?? 0) > 1;
  if (!shared(MAX_INLINE_SEARCH)) return null;
  let lo = 1;
  let hi = MAX_INLINE_SEARCH;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (shared(mid)) hi = mid;
    else lo = mid;
  }
  return shared(lo) ? lo : hi;
}
