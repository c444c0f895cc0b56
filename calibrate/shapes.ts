/**
 * Off-axis shapes: the shapes beside an op's sweep axis that a calibration measures after the
 * op's grid, so that predictions at the shapes programs run — a transformer's projections at
 * batch 1 to a few hundred rows, gemvs whose rows and columns differ, softmax over a few rows or
 * many — rest on measurements of such proportions and not on the square axis alone. The models
 * learn from them how proportions change a kernel's time (`models/_shape_model.ts`); fits,
 * crossovers and tuning keep to the axis.
 *
 * The proportions are those of transformer layers (d × d attention projections, d × 4d and
 * 4d × d feed-forward) at two widths; the row counts span decode (1), small batches (8, 16) and
 * prefill chunks (64, 256).
 *
 * @module
 */
import type { Dtype, OpSpec, Shape } from "../kernels/types.ts";
import type { CalibrationMode } from "../core/schema.ts";

const MATMUL_QUICK: readonly Shape[] = [
  { m: 1, k: 1024, n: 1024 },
  { m: 8, k: 1024, n: 4096 },
  { m: 64, k: 4096, n: 1024 },
];

/**
 * After the quick set, a decode-sized matmul whose B outgrows the caches the first one fits in
 * (8 MB against 4 MB in f32) and whose rows are narrow (n = 512): at m = 1 a kernel streams B,
 * and the time per byte changes with where B lives and with how long its rows are. On the 2-vCPU
 * Intel Xeon VM one-thread wasm streamed 1 × k × n at 6.4–6.6 GFLOP/s with n ≥ 1024, 5.0–5.5 at
 * n = 768 and 4.5–4.9 at n = 512 (k = 2048–4096, one process); with every m = 1 shape at
 * n ≥ 1024, 1 × 3072 × 768 was predicted 19–23 % fast in five calibrations, outside its 90 %
 * interval each time. Then each small m the other way round: m = 8 with k > n and a
 * B that fits the caches, m = 1 with n > k. A transformer runs both (its up projections widen,
 * its down projections narrow), and with only one of them measured at a given m, a shape the
 * other way round took that one's efficiency: matmul 8 × 2560 × 640 was predicted 22–126 %
 * slower than it ran on wasm, from 8 × 1024 × 4096 alone. Then the narrow width (k = 512), at
 * a full tile's rows and at a few: every shape before them has k ≥ 1024. On lavapipe, in one
 * process, a tiled kernel ran shapes with k ≥ 1536 at 6–7 GFLOP/s (64 × 4096 × 1024, 64 × 1536 ×
 * 1536, 32 × 2048 × 2048) and shapes with k ≤ 768 at 10–12 (64 × 640 × 2560, 128 × 768 × 768,
 * 512³), and with only large-k shapes to learn from, the shape model priced 64 × 640 × 2560 and
 * 128 × 768 × 768 ×1.43 and ×1.31 slower than the axis. Then a batch of a few rows (m = 4),
 * where a kernel changes how it works: wasm's micro-tiles of mr = 6 rows run fewer rows by
 * columns, as m = 1, and tiles of 4 rows make one block, which wasm-mt cannot split. With
 * m = 1 and m = 8 alone to learn from, the shape model put wasm matmul 4 × 2048 × 2048 43 %
 * slow, between the two. Then a decode shape as deep as it is wide (1 × 4096 × 4096), so that
 * two m = 1 shapes differ in k alone and two in n alone: a kernel streams B at a speed set by
 * its row length (n), not by its depth, and with the depths and widths of the first three tied
 * together the shape model gave each of them half the weight: one-thread wasm 1 × 8192 × 2048 and
 * 1 × 4096 × 4096 came out 32–40 % slow (12.6 GB/s measured, 9.6 predicted), and with the shape
 * measured 10–22 %. Then two rows the other way round from m = 4 (k > n), as a batched decode
 * runs its down projection. Then a batch between the small ones and a tile (m = 32 × 1024²):
 * with no measured m between 16 and 64, two-thread wasm 12 × 1024² and 48 × 1024² ran 37 % and
 * 25 % slower than predicted, each thread packing all of B for a few rows. Then a few rows
 * against a B that stays in cache (2 × 1024 × 256, 1 MB): every shape before it with fewer rows
 * than a micro-tile streams 4–64 MB of B, and on the AMD EPYC VM one-thread wasm ran
 * 3 × 1000 × 300 in 0.061–0.089 ms against 0.199 predicted (two threads 0.072–0.080 against
 * 0.222). Then the same rows and width against a B that does not stay in cache (2 × 6144 × 256,
 * 6 MB): with the first alone, the shape model put the cached one's speed on every narrow B, and
 * one-thread wasm 3 × 5000 × 300 ran in 0.94 ms against 0.32 predicted (two threads 0.72 against
 * 0.18), outside both intervals. Then a tile's rows at a shallow depth (64 × 1024 × 1024), so
 * that the two m = 64 shapes differ in k alone: on lavapipe a tiled kernel slows with the depth
 * its workgroups stream (one process, 8 × 8 outputs an invocation, GFLOP/s: 64 × 4096 × 1024 5.5,
 * 64 × 1024 × 4096 8.5, 64 × 1024 × 1024 8.8, 512³ 10.4), and a shape model that saw 64 rows only
 * at k = 4096 can put the depth's slowness on the rows: the AMD EPYC VM's pooled report prices
 * 64 × 1536 × 1536 ×1.84 its variant's square fit, where truths ran it ×1.0–1.2. In one fresh
 * calibration, with the shape against without it, the device-resident errors of its truths'
 * 1–128-row matmuls moved 0.02–0.04 (ln) toward zero on the built-in set and 0.01–0.06 either way
 * on the held-out shapes: a small step, for a few seconds of a run. A default run measures at
 * least the first fifteen of this list.
 */
const MATMUL: readonly Shape[] = [
  ...MATMUL_QUICK,
  { m: 1, k: 4096, n: 512 },
  { m: 8, k: 2048, n: 512 },
  { m: 1, k: 1024, n: 4096 },
  { m: 256, k: 512, n: 512 },
  { m: 4, k: 1024, n: 4096 },
  { m: 16, k: 512, n: 2048 },
  { m: 1, k: 4096, n: 4096 },
  { m: 2, k: 4096, n: 1024 },
  { m: 32, k: 1024, n: 1024 },
  { m: 2, k: 1024, n: 256 },
  { m: 2, k: 6144, n: 256 },
  { m: 64, k: 1024, n: 1024 },
  { m: 64, k: 1024, n: 4096 },
  { m: 8, k: 4096, n: 1024 },
  { m: 16, k: 2048, n: 512 },
  { m: 8, k: 1024, n: 1024 },
  { m: 256, k: 1024, n: 4096 },
];

const GEMV_QUICK: readonly Shape[] = [
  { rows: 4096, cols: 1024 },
  { rows: 1024, cols: 4096 },
];

/** The twin of 1024 × 3008 whose rows are whole words but not whole 32-weight groups in q8. */
const GEMV_TWIN_WORDS: Shape = { rows: 1024, cols: 3000 };

/**
 * A gemv whose weights outgrow any CPU's last-level cache (268 MB in f32): a model's weights
 * stream from memory, and the largest axis sizes fit in a server's cache. On a 2-vCPU EPYC VM
 * wasm-mt streamed f32 gemv at 44 GB/s at 2580² (27 MB) and 29.5 GB/s at 8192² (268 MB).
 */
const GEMV_STREAMING: Shape = { rows: 8192, cols: 8192 };

/**
 * After the quick pair, the same two proportions at a quarter of the width (2048 × 512 and
 * 512 × 2048, 4 MB in f32): a small model's projections (a decode of tiny-16m runs 1536 × 512,
 * 512 × 1536, 4096 × 512 and 128 × 512), whose few rows or short rows leave a kernel's
 * per-launch cost and its workgroups' share of the rows a larger part of the time than at
 * 4096 × 1024. With the large pair alone, the shape model took the small projections'
 * proportions from shapes 4–16× their size: on lavapipe, in nine default runs, it priced
 * 1536 × 512 and 512 × 1536 f32 at 0.45–1.27× what they took beside the decode, and
 * 128 × 512 at 1.14–2.21×.
 */
const GEMV: readonly Shape[] = [
  GEMV_QUICK[0]!,
  // Second, so that the variants are screened (`off_axis_steps.ts`) at rows 4 KiB apart and at
  // rows 32 bytes apart in f32 (16 in f16): on lavapipe the variant summing 16 rows per
  // invocation ran 4096-column f32 rows ×1.7 slower than the one summing 4, and 3000-column ones
  // as fast, and in f16 ×1.37 slower at 1000 × 3000 while all tied at 1024 × 4096.
  GEMV_TWIN_WORDS,
  GEMV_QUICK[1]!,
  { rows: 2048, cols: 512 },
  { rows: 512, cols: 2048 },
  // Twins a few columns apart, one per way the kernel loads a row: in vectors (3008 columns, for
  // every dtype), in words (q8 and q4 at 3000, whole words but not whole 32-weight groups) and
  // across words (q8 and q4 at 3002; f32 and f16 there load unaligned vectors). Their differences
  // are the alignment offsets with size and proportions held (see `models/_alignment.ts`): q8
  // at 6000 columns ran 1.6× slower than at 6016 on lavapipe, and without twins the offset
  // drowned in how the sweep's sizes scatter about the fit, so q8 1500 × 6000 was predicted at
  // half its time.
  { rows: 1024, cols: 3008 },
  { rows: 1024, cols: 3002 },
  GEMV_STREAMING,
  { rows: 8192, cols: 2048 },
  { rows: 256, cols: 8192 },
  { rows: 2048, cols: 1150 },
];

const SOFTMAX_QUICK: readonly Shape[] = [
  { rows: 1, cols: 4096 },
  { rows: 256, cols: 1024 },
];

/**
 * The shapes a default run measures whatever the clock says span rows × columns: one long row and
 * many mid-length ones (the quick pair), few rows short (8 × 1024), many rows short (128 × 512)
 * and many rows long (128 × 4096). With the last of them missing, lavapipe's device-resident
 * 300 × 3000 took its proportions from 256 × 1024, whose short rows ran at half the axis' rate,
 * and was predicted 17–38 % slow in six calibrations. Then attention's scores: a thousand rows
 * short. Lavapipe's device-resident kernel runs a workgroup a row at 3–7 µs each, and with 256
 * rows the most measured, 1000 × 100 ran 3.6 ms against 0.8 predicted.
 */
const SOFTMAX: readonly Shape[] = [
  ...SOFTMAX_QUICK,
  { rows: 8, cols: 1024 },
  { rows: 128, cols: 512 },
  { rows: 128, cols: 4096 },
  { rows: 1024, cols: 256 },
];

/** An op's shapes, and how many of the full list a run measures however late its job runs. */
interface OffAxisSet {
  readonly quick: readonly Shape[];
  readonly full: readonly Shape[];
  readonly sure: number;
}

const BY_OP: Readonly<Record<string, OffAxisSet>> = {
  matmul: { quick: MATMUL_QUICK, full: MATMUL, sure: 15 },
  // The quick pair with a twin between them, the pair at a quarter of the width, the other two
  // twins and the streaming size.
  gemv: { quick: GEMV_QUICK, full: GEMV, sure: 8 },
  softmax: { quick: SOFTMAX_QUICK, full: SOFTMAX, sure: 6 },
};

/** Off-axis shapes a quick run measures however late: one. */
const SURE_QUICK = 1;

/**
 * How many of {@linkcode offAxisShapes}' first shapes a run measures whatever the clock says, as
 * it measures the grid's first sizes: without any, a prediction off the axis can only say it does
 * not know the shape's effect.
 *
 * @param op The op.
 * @param mode The calibration mode.
 * @returns The count (0 for ops without off-axis shapes).
 * @example
 * ```ts
 * import { sureOffAxisShapes } from "./shapes.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * console.log(sureOffAxisShapes(getOp("gemv"), "default")); // 8
 * console.log(sureOffAxisShapes(getOp("gemv"), "quick")); // 1
 * ```
 */
export function sureOffAxisShapes(op: OpSpec, mode: CalibrationMode): number {
  const sets = BY_OP[op.name];
  if (sets === undefined) return 0;
  return mode === "quick" ? SURE_QUICK : sets.sure;
}

/**
 * The off-axis shapes to measure for `op` at `dtype` in `mode`, in the order to measure them
 * (the most different proportions first, since a late job measures only its first few): none for
 * ops with one dimension, a few in a quick run, the full set otherwise.
 *
 * @param op The op.
 * @param _dtype The dtype (every dtype of an op takes the same shapes).
 * @param mode The calibration mode.
 * @returns The shapes, in the op's dims.
 * @example
 * ```ts
 * import { offAxisShapes } from "./shapes.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * console.log(offAxisShapes(getOp("matmul"), "f32", "quick")[0]); // { m: 1, k: 1024, n: 1024 }
 * console.log(offAxisShapes(getOp("add"), "f32", "default")); // []
 * ```
 */
export function offAxisShapes(op: OpSpec, _dtype: Dtype, mode: CalibrationMode): Shape[] {
  const sets = BY_OP[op.name];
  if (sets === undefined) return [];
  return [...(mode === "quick" ? sets.quick : sets.full)];
}
