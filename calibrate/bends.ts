/**
 * Where a measured curve bends between grid points: the sizes to measure next so that a
 * prediction between two grid points does not cross a bend it never saw. Pure, no I/O.
 *
 * A series' time is smooth in log-log space almost everywhere, and a prediction between two grid
 * points interpolates there. Where a point lies far off the line through its two neighbours, the
 * curve bends between them — a cache level, the end of a sync-dominated plateau, a transfer path
 * that changes with size (on lavapipe an end-to-end fma took 50 ms at 2.6 M elements, 59–69 at 5 M
 * and 208–236 at 11.9 M: no straight line through the grid's points predicts 5 M) — and the
 * geometric midpoints on either side of that point are measured too.
 *
 * @module
 */
import {
  type Backend,
  type Dtype,
  type OpSpec,
  type Residency,
  variantId,
} from "../kernels/types.ts";
import type { Measurement } from "../core/schema.ts";
import { STREAMED_FROM_BYTES } from "../core/operand_rotation.ts";

/**
 * One extra size to measure, on the series whose bend asked for it.
 *
 * @example
 * ```ts
 * import type { BendPoint } from "./bends.ts";
 * const p: BendPoint = {
 *   size: 3_600_000, backend: "webgpu", residency: "end-to-end", variant: "ept=16,wg=256", miss: 0.45,
 * };
 * ```
 */
export interface BendPoint {
  readonly size: number;
  readonly backend: Backend;
  readonly residency: Residency;
  /** Variant id of the series. */
  readonly variant: string;
  /**
   * How far the bending point lies from its neighbours' line: max(line / measured, measured / line) − 1.
   */
  readonly miss: number;
}

/**
 * Options of {@linkcode bendPoints}.
 *
 * @example
 * ```ts
 * import type { BendOptions } from "./bends.ts";
 * const o: BendOptions = { tolerance: 0.25, max: 6 };
 * ```
 */
export interface BendOptions {
  /** A point more than this factor − 1 off its neighbours' log-log line is a bend; default 0.25. */
  readonly tolerance?: number;
  /** Most sizes returned, the worst bends first; default 6. */
  readonly max?: number;
  /** Neighbours closer than this ratio are not split again; default 1.5. */
  readonly minRatio?: number;
}

/** Sizes are rounded to a multiple of this (vector kernels want multiples of 4 or 8). */
const ROUND_TO = 8;
/** Most sizes one series gets: the two sides of its worst bend, so no one series takes all. */
const PER_SERIES = 2;

/**
 * The sizes to measure next around the bends of each (backend, residency, variant) series of one
 * op and dtype: for every interior point whose time is more than a factor 1 + `tolerance` off the
 * log-log line through its two neighbours (either way), beyond what the three medians' confidence
 * intervals could explain, the geometric midpoints between it and each neighbour (rounded to a
 * multiple of 8 when above 64), unless the neighbours are already close or the size measured.
 *
 * @param measurements Raw measurements (any op; only `op` and `dtype`'s ok ones are read).
 * @param op The op, for its size axis bounds.
 * @param dtype The dtype.
 * @param options Tolerance, cap and closeness.
 * @returns The sizes with their series, worst bend first, at most `max` and two per series.
 * @example
 * ```ts
 * import { bendPoints } from "./bends.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * import type { Measurement } from "../core/schema.ts";
 * const at = (size: number, ms: number) =>
 *   ({ op: "add", dtype: "f32", backend: "wasm", residency: "end-to-end", variant: "default",
 *      state: "ok", size, wall: { median: ms, relCi: 0.02 } }) as unknown as Measurement;
 * // 1000 took 400 ms: the line from (100, 4 ms) to (10000, 400 ms) says 40.
 * const points = bendPoints([at(100, 4), at(1000, 400), at(10000, 400)], getOp("add"), "f32");
 * console.log(points.map((p) => p.size)); // [320, 3160]
 * ```
 */
export function bendPoints(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  options: BendOptions = {},
): BendPoint[] {
  const tolerance = options.tolerance ?? 0.25;
  const max = options.max ?? 6;
  const minRatio = options.minRatio ?? 1.5;
  const series = fastestBySize(measurements, op, dtype, () => true);
  const found: (BendPoint & { excess: number; series: string })[] = [];
  for (const [key, bySize] of series) {
    const [backend, residency, variant] = key.split("|") as [Backend, Residency, string];
    const sizes = [...bySize.keys()].sort((a, b) => a - b);
    const measured = (s: number) => sizes.some((t) => Math.abs(t - s) <= 0.1 * s);
    for (let i = 1; i + 1 < sizes.length; i++) {
      const [a, b, c] = [sizes[i - 1]!, sizes[i]!, sizes[i + 1]!];
      const [pa, pb, pc] = [bySize.get(a)!, bySize.get(b)!, bySize.get(c)!];
      const [ta, tb, tc] = [pa.ms, pb.ms, pc.ms];
      if (!(ta > 0 && tb > 0 && tc > 0)) continue;
      const along = Math.log(b / a) / Math.log(c / a);
      const line = Math.exp(Math.log(ta) + along * Math.log(tc / ta));
      const miss = Math.max(line / tb, tb / line) - 1;
      // What the medians' own intervals could explain is not a bend: a device-resident kernel of
      // a few µs wobbles by tens of percent between neighbouring sizes.
      const excess = miss - pb.relCi - Math.max(pa.relCi, pc.relCi);
      if (excess <= tolerance) continue;
      for (const [lo, hi] of [[a, b], [b, c]] as const) {
        if (hi / lo < minRatio) continue;
        const size = roundSize(Math.sqrt(lo * hi), op);
        if (size <= lo || size >= hi || measured(size)) continue;
        found.push({ size, backend, residency, variant, miss, excess, series: key });
      }
    }
  }
  const seen = new Set<string>();
  const perSeries = new Map<string, number>();
  return found
    .sort((x, y) => y.excess - x.excess)
    .filter((p) => {
      const id = `${p.series}|${p.size}`;
      const taken = perSeries.get(p.series) ?? 0;
      if (seen.has(id) || taken >= PER_SERIES) return false;
      seen.add(id);
      perSeries.set(p.series, taken + 1);
      return true;
    })
    .slice(0, max)
    .map(({ size, backend, residency, variant, miss }) => ({
      size,
      backend,
      residency,
      variant,
      miss,
    }));
}

/**
 * Bytes in f32 from which a WebGPU device-resident series of an op that streams its operands gets
 * the grid's midpoints (a mebibyte of f32 weights, 512²: a decode's projections, where the rate
 * and not the launch sets the time; the same shapes in q8 or q4 are a quarter or an eighth of it).
 */
export const STREAMING_MIDPOINT_BYTES = 2 ** 20;

/**
 * The geometric midpoints between neighbouring grid sizes of every WebGPU device-resident series
 * of an op that streams its operands (a gemv's weights), from {@linkcode STREAMING_MIDPOINT_BYTES}
 * up, the smallest first, at most `perSeries` per series, where the midpoint should run in at most
 * {@linkcode CHEAP_STEP_RUN_MS}. There a device's rate depends on how the rows fill its workgroups,
 * not smoothly on size: on lavapipe a gemv f32 of 768² ran at 3.4–4.0 GB/s, below 512² (3.9–4.5),
 * 704² (4.4) and 976² (5.6–6.5) around it (each in one process), and a decode's 768-wide
 * projections were predicted 30 % fast; no bend shows at a grid point there, so
 * {@linkcode bendPoints} never asks for it.
 * The gaps are the grid's: a size {@linkcode cacheEdgePoints} added beside the switch to streamed
 * operands (976² in f32) does not split them; where a midpoint lies within ×1.1 of a measured size
 * (q8's 1722² beside its 1840²), what that size left of the gap is split instead (512² to 1840²).
 *
 * @param measurements Raw measurements (any op; only `op` and `dtype`'s ok on-axis ones are read).
 * @param op The op.
 * @param dtype The dtype.
 * @param perSeries Most sizes per series.
 * @returns The sizes with their series (`miss` 0: nothing bent).
 * @example
 * ```ts
 * import { streamingMidpoints } from "./bends.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * import type { Measurement } from "../core/schema.ts";
 * const at = (size: number) =>
 *   ({ op: "gemv", dtype: "f32", backend: "webgpu", residency: "device-resident", variant: "v",
 *      state: "ok", size, wall: { median: size * size * 2.5e-7, relCi: 0.02 } }) as unknown as Measurement;
 * const points = streamingMidpoints([at(228), at(512), at(1149), at(2580)], getOp("gemv"), "f32", 2);
 * console.log(points.map((p) => p.size)); // [768, 1720]
 * ```
 */
export function streamingMidpoints(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  perSeries: number,
): BendPoint[] {
  if (op.streamsOperands !== true || perSeries <= 0) return [];
  const bytesAt = (size: number) => op.bytes(op.axis.shape(size), dtype);
  const edges = switchSides(op, bytesAt);
  const series = new Map<string, Map<number, number>>();
  for (const m of measurements) {
    if (
      m.op !== op.name || m.dtype !== dtype || m.state !== "ok" || m.offAxis ||
      m.backend !== "webgpu" || m.residency !== "device-resident"
    ) continue;
    const runs = series.get(m.variant) ?? new Map<number, number>();
    series.set(m.variant, runs.set(m.size, Math.min(runs.get(m.size) ?? Infinity, m.wall.median)));
  }
  const found: BendPoint[] = [];
  for (const [variant, runs] of series) {
    const sizes = [...runs.keys()].sort((a, b) => a - b);
    const measured = (s: number) => sizes.some((t) => t <= s * 1.1 && t >= s / 1.1);
    // The grid's gaps first, then what the sizes beside the switch leave of them, smallest first.
    const gaps = [...neighbours(sizes.filter((s) => !edges.includes(s))), ...neighbours(sizes)]
      .sort(([a], [b]) => a - b);
    const asked = new Set<number>();
    for (const [lo, hi] of gaps) {
      if (asked.size >= perSeries) break;
      const size = roundSize(Math.sqrt(lo * hi), op);
      if (
        hi / lo < MIN_MIDPOINT_RATIO || size <= lo || size >= hi || measured(size) ||
        asked.has(size) || op.bytes(op.axis.shape(size), "f32") < STREAMING_MIDPOINT_BYTES ||
        Math.sqrt(runs.get(lo)! * runs.get(hi)!) > CHEAP_STEP_RUN_MS
      ) continue;
      asked.add(size);
      found.push({ size, backend: "webgpu", residency: "device-resident", variant, miss: 0 });
    }
  }
  return found;
}

/**
 * Longest run, ms, of the midpoint {@linkcode rateStepMidpoints} asks for (the geometric mean of
 * its ends' runs): a point there costs a few tenths of a second to measure (seven samples, a
 * device's runs batched inside one submit). At one millisecond the top gaps of the slower CPU
 * series stayed open, where the operands leave the last-level cache: scalar `fma` was measured
 * at 131 072 and 4 194 304 elements only, and held-out `fma` and `add` of 900 000 elements were
 * predicted 18–33 % fast in three calibrations.
 */
export const CHEAP_STEP_RUN_MS = 5;
/**
 * Fewest sizes a series has for {@linkcode rateStepMidpoints} (on WebGPU) and
 * {@linkcode threadWakePoints} to add to it: the grid's variant, not the ones the variant search
 * timed at its anchors.
 */
const MIN_GRID_SERIES_SIZES = 4;
/**
 * A gap is split when its ends' rates differ by more than this factor beyond their medians' own
 * intervals: interpolating across a step of ×1.2 can be 10–20 % off inside it.
 */
const STEP_RATE_RATIO = 1.2;
/**
 * A cheap gap this wide (in elements) is split whatever its ends' rates: a cache can lift the
 * rate inside it and drop it back. On the Intel Xeon VM two-thread wasm `add`, `fma` and `sum`
 * ran 72 and 56 GB/s at 6502 and 131 072 elements and faster between them, where held-out sizes
 * of 70 001 were predicted 34–44 % slow.
 */
const WIDE_CHEAP_GAP = 8;
/**
 * A point is past its series' launch when its run is this many times the series' shortest:
 * below it the rate climbs because a fixed cost fades, which the fit models, not a cache.
 */
const PAST_LAUNCH = 4;

/**
 * The geometric midpoints of the gaps where a series' rate (bytes per ms) steps between two
 * neighbouring sizes (or that span ×{@linkcode WIDE_CHEAP_GAP} or more), the largest step first, at
 * most `perSeries` per series, for elementwise ops and reductions, past the series' launch and
 * where the midpoint should run in at most {@linkcode CHEAP_STEP_RUN_MS} (on WebGPU,
 * device-resident only, and a wide gap there needs only its upper end past the launch, which is
 * tens of microseconds of a device's run). On lavapipe a device-resident `sum` measured at 29 193,
 * 588 493 and 2.6·10⁶ elements (0.15, 1.45 and 4.4 ms) ran 2.8 ms at a held-out 900 000, predicted
 * 2.0, and 5·10⁶ at 5.2, predicted 8.7: its rate climbs from 1.6 to 4.8 GB/s above a million
 * elements. A cache level is a cliff in the rate a few tens of percent of a size wide, and the
 * grid's steps (×4.5 in elements) are wider than it: on a 2-vCPU Intel Xeon VM a one-thread wasm
 * `dot` streamed 60–72 GB/s up to 400 kB of operands and 27–30 GB/s from 800 kB, measured at 52 kB
 * and 1 MB only, and a held-out `dot` of 50 001 elements was predicted 62–80 % slow, a `sum` of
 * 70 001 26–46 %, in four calibrations. No point is off the line through its neighbours there
 * ({@linkcode bendPoints} asks nothing), but the rate between them says the cliff is somewhere
 * inside; each call halves the gaps it finds, so a caller that measures them and asks again narrows
 * the cliff down.
 *
 * @param measurements Raw measurements (any op; only `op` and `dtype`'s ok on-axis CPU and
 * WebGPU device-resident ones are read).
 * @param op The op.
 * @param dtype The dtype.
 * @param perSeries Most sizes per series.
 * @returns The sizes with their series, largest step first; `miss` is the rates' ratio − 1.
 * @example
 * ```ts
 * import { rateStepMidpoints } from "./bends.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * import type { Measurement } from "../core/schema.ts";
 * // 12 bytes per element: 70 GB/s up to 6502 elements, 30 GB/s from 131 072.
 * const at = (size: number, gbps: number) =>
 *   ({ op: "add", dtype: "f32", backend: "wasm", residency: "end-to-end", variant: "v",
 *      state: "ok", size, bytes: 12 * size,
 *      wall: { median: 12 * size / gbps / 1e6, relCi: 0.02 } }) as unknown as Measurement;
 * const series = [at(16, 1), at(323, 20), at(6502, 70), at(131072, 30)];
 * const points = rateStepMidpoints(series, getOp("add"), "f32", 2);
 * console.log(points.map((p) => p.size)); // [29192]
 * ```
 */
export function rateStepMidpoints(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  perSeries: number,
): BendPoint[] {
  if (op.complexity === "matrix" || perSeries <= 0) return [];
  const series = fastestBySize(
    measurements,
    op,
    dtype,
    (m) =>
      (m.backend !== "webgpu" || m.residency === "device-resident") && m.bytes > 0 &&
      m.wall.median > 0,
  );
  const found: BendPoint[] = [];
  for (const [key, bySize] of series) {
    const [backend, residency, variant] = key.split("|") as [Backend, Residency, string];
    const device = backend === "webgpu";
    if (device && bySize.size < MIN_GRID_SERIES_SIZES) continue;
    const sizes = [...bySize.keys()].sort((a, b) => a - b);
    const shortest = Math.min(...[...bySize.values()].map((p) => p.ms));
    const steps: BendPoint[] = [];
    for (let i = 0; i + 1 < sizes.length; i++) {
      const [lo, hi] = [bySize.get(sizes[i]!)!, bySize.get(sizes[i + 1]!)!];
      const ratio = sizes[i + 1]! / sizes[i]!;
      if (ratio < MIN_MIDPOINT_RATIO || Math.sqrt(lo.ms * hi.ms) > CHEAP_STEP_RUN_MS) continue;
      const step = Math.abs(Math.log((lo.bytes / lo.ms) / (hi.bytes / hi.ms)));
      const rateSteps = lo.ms >= PAST_LAUNCH * shortest &&
        step - lo.relCi - hi.relCi > Math.log(STEP_RATE_RATIO);
      const wide = ratio >= WIDE_CHEAP_GAP && (device ? hi : lo).ms >= PAST_LAUNCH * shortest;
      if (!rateSteps && !wide) continue;
      const size = roundSize(Math.sqrt(sizes[i]! * sizes[i + 1]!), op);
      if (size <= sizes[i]! || size >= sizes[i + 1]!) continue;
      steps.push({ size, backend, residency, variant, miss: Math.expm1(step) });
    }
    found.push(...steps.sort((a, b) => b.miss - a.miss).slice(0, perSeries));
  }
  return found.sort((a, b) => b.miss - a.miss);
}

/**
 * Where each `wasm-mt` series of a one-dimensional op (elementwise ops, reductions) first wakes a
 * worker: one of the kernel's parts and a quarter, a run cut in two of which one thread does four
 * fifths. Up to one part a run stays on the calling thread; from two it shares its parts, and
 * lasts as long as its busiest thread (`models/_imbalance.ts`). Between a grid size on either side
 * the curve crosses that change unseen: on the Intel Xeon VM a two-thread `sum` ran 29 193
 * elements inline in 1.6 µs and 131 072 in two even parts in 7.1, and a held-out 70 001 (a full
 * 65 536-element part and a sliver) ran 4.4–5.7 µs, predicted 6.1–7.0 in eleven calibrations.
 * Nothing where the size is measured already (within 5 %) or lies outside the series' range.
 *
 * @param measurements Raw measurements (any op; only `op` and `dtype`'s ok on-axis wasm-mt ones are read).
 * @param op The op.
 * @param dtype The dtype.
 * @returns One size per series (`miss` 0: nothing bent).
 * @example
 * ```ts
 * import { threadWakePoints } from "./bends.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * import type { Measurement } from "../core/schema.ts";
 * const at = (size: number) =>
 *   ({ op: "sum", dtype: "f32", backend: "wasm-mt", residency: "end-to-end",
 *      variant: "accs=4,fma=false", state: "ok", size, bytes: 4 * size,
 *      wall: { median: size * 5e-8, relCi: 0.02 } }) as unknown as Measurement;
 * const series = [16, 6502, 29193, 131072, 588493].map(at);
 * console.log(threadWakePoints(series, getOp("sum"), "f32").map((p) => p.size)); // [81920]
 * ```
 */
export function threadWakePoints(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
): BendPoint[] {
  const impl = op.impls.wasm;
  if (op.dims.length !== 1 || impl?.partLength === undefined) return [];
  const series = fastestBySize(measurements, op, dtype, (m) => m.backend === "wasm-mt");
  const found: BendPoint[] = [];
  for (const [key, bySize] of series) {
    if (bySize.size < MIN_GRID_SERIES_SIZES) continue;
    const [backend, residency, id] = key.split("|") as [Backend, Residency, string];
    const variant = impl.variants.find((v) => variantId(v) === id);
    if (variant === undefined) continue;
    const sizes = [...bySize.keys()].sort((a, b) => a - b);
    const largest = sizes.at(-1)!;
    const per = impl.partLength(op.axis.shape(largest), variant).per;
    const size = per + Math.ceil(per / 4);
    const twoParts = impl.parts(op.axis.shape(size), variant) === 2 &&
      impl.parts(op.axis.shape(per), variant) === 1;
    const measured = sizes.some((s) => Math.abs(Math.log(s / size)) < Math.log(1.05));
    if (!twoParts || measured || size < sizes[0]! || size > largest) continue;
    found.push({ size, backend, residency, variant: id, miss: 0 });
  }
  return found;
}

/**
 * Sizes this many times under and over the runners' switch to streamed operands
 * ({@linkcode STREAMED_FROM_BYTES}) are measured on either side of it.
 */
const CACHE_EDGE = 1.1;
/** A side of the switch is covered already by a measured size within this factor of it. */
const CACHE_EDGE_COVERED = 1.3;
/** Ops whose flops per byte grow less than this much across the grid are bound by their bytes. */
const BYTE_BOUND_INTENSITY_GROWTH = 1.5;

/**
 * Where each CPU or device-resident series of a byte-bound op (elementwise ops, reductions,
 * softmax, gemv) meets the runners' switch to streamed operands: a size just under
 * {@linkcode STREAMED_FROM_BYTES} a run and one just over. Under it a run's few operand copies stay
 * in the caches, over it every run reads its operands from memory (`runners/_cpu.ts`,
 * `runners/webgpu.ts`), and the time per byte steps there: wasm gemv f32 1000² ran at 27–28 GB/s
 * and 1024² at 9–9.4. Interpolating across the step from grid sizes ×2 apart misprices everything
 * between them; with a size beside each side of it, only sizes within 10 % of the switch are.
 * Nothing on a side where a size within ×1.3 of the switch is measured, or for a series that does
 * not reach across it.
 *
 * @param measurements Raw measurements (any op; only `op` and `dtype`'s ok on-axis CPU and
 *   device-resident ones are read).
 * @param op The op.
 * @param dtype The dtype.
 * @returns Up to two sizes per series (`miss` 0: nothing bent).
 * @example
 * ```ts
 * import { cacheEdgePoints } from "./bends.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * import type { Measurement } from "../core/schema.ts";
 * const sum = getOp("sum");
 * const at = (size: number) =>
 *   ({ op: "sum", dtype: "f32", backend: "wasm", residency: "end-to-end",
 *      variant: "accs=4,fma=false", state: "ok", size,
 *      bytes: sum.bytes(sum.axis.shape(size), "f32"),
 *      wall: { median: size * 5e-8, relCi: 0.02 } }) as unknown as Measurement;
 * const series = [16, 6502, 29193, 131072, 588493, 2640000].map(at);
 * console.log(cacheEdgePoints(series, sum, "f32").map((p) => p.size)); // [953248, 1153432]
 * ```
 */
export function cacheEdgePoints(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
): BendPoint[] {
  const bytesAt = (size: number) => op.bytes(op.axis.shape(size), dtype);
  const intensity = (size: number) => op.flops(op.axis.shape(size)) / bytesAt(size);
  const edge = sizeWithBytes(op, bytesAt, STREAMED_FROM_BYTES);
  if (edge === null) return [];
  if (
    intensity(edge) >
      BYTE_BOUND_INTENSITY_GROWTH * intensity(Math.max(op.axis.min, Math.round(edge / 16)))
  ) {
    return [];
  }
  const series = fastestBySize(
    measurements,
    op,
    dtype,
    (m) => (m.backend === "webgpu") === (m.residency === "device-resident"),
  );
  const edgeBytes = STREAMED_FROM_BYTES;
  // The sizes either side are the same for every series; each series asks for those it lacks.
  const [under, over] = switchSides(op, bytesAt);
  const sides = [
    {
      size: under !== null && bytesAt(under) < edgeBytes ? under : null,
      lo: edgeBytes / CACHE_EDGE_COVERED,
      hi: edgeBytes,
    },
    {
      size: over !== null && bytesAt(over) >= edgeBytes ? over : null,
      lo: edgeBytes,
      hi: edgeBytes * CACHE_EDGE_COVERED,
    },
  ];
  const found: BendPoint[] = [];
  for (const [key, bySize] of series) {
    if (bySize.size < MIN_GRID_SERIES_SIZES) continue;
    const [backend, residency, variant] = key.split("|") as [Backend, Residency, string];
    const bytes = [...bySize.values()].map((p) => p.bytes);
    if (!bytes.some((b) => b < edgeBytes) || !bytes.some((b) => b >= edgeBytes)) continue;
    for (const { size, lo, hi } of sides) {
      if (size !== null && !bytes.some((b) => b >= lo && b < hi)) {
        found.push({ size, backend, residency, variant, miss: 0 });
      }
    }
  }
  return found;
}

/** The sizes just under and just over the switch to streamed operands; null outside the axis. */
function switchSides(
  op: OpSpec,
  bytesAt: (size: number) => number,
): [number | null, number | null] {
  return [
    sizeWithBytes(op, bytesAt, STREAMED_FROM_BYTES / CACHE_EDGE),
    sizeWithBytes(op, bytesAt, STREAMED_FROM_BYTES * CACHE_EDGE),
  ];
}

/** The grid-rounded axis size whose run moves about `target` bytes; null outside the axis. */
function sizeWithBytes(
  op: OpSpec,
  bytesAt: (size: number) => number,
  target: number,
): number | null {
  let lo = op.axis.min;
  let hi = op.axis.max;
  if (bytesAt(lo) > target || bytesAt(hi) < target) return null;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (bytesAt(mid) < target) lo = mid;
    else hi = mid;
  }
  return roundSize(hi, op);
}

/** Each size with the next, in order. */
function neighbours(sizes: readonly number[]): [number, number][] {
  return sizes.slice(1).map((hi, i) => [sizes[i]!, hi]);
}

/** Neighbours closer than this ratio get no midpoint: a grid step (×2.24 by default) is halved once. */
const MIN_MIDPOINT_RATIO = 2;

interface Point {
  readonly ms: number;
  readonly relCi: number;
  readonly bytes: number;
}

/**
 * The ok on-axis measurements of `op` in `dtype` that `keep` keeps, per series
 * (`backend|residency|variant`) and size: the fastest where a size was measured more than once.
 */
function fastestBySize(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  keep: (m: Measurement & { state: "ok" }) => boolean,
): Map<string, Map<number, Point>> {
  const series = new Map<string, Map<number, Point>>();
  for (const m of measurements) {
    if (m.op !== op.name || m.dtype !== dtype || m.state !== "ok" || m.offAxis || !keep(m)) {
      continue;
    }
    const key = `${m.backend}|${m.residency}|${m.variant}`;
    const bySize = series.get(key) ?? new Map<number, Point>();
    series.set(key, bySize);
    const prior = bySize.get(m.size);
    if (!prior || m.wall.median < prior.ms) {
      bySize.set(m.size, { ms: m.wall.median, relCi: m.wall.relCi, bytes: m.bytes });
    }
  }
  return series;
}

function roundSize(size: number, op: OpSpec): number {
  const rounded = size > 64 ? Math.round(size / ROUND_TO) * ROUND_TO : Math.round(size);
  return Math.min(Math.max(rounded, op.axis.min), op.axis.max);
}
