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
import type { Backend, Dtype, OpSpec, Residency } from "../kernels/types.ts";
import type { Measurement } from "../core/schema.ts";

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
  const series = new Map<string, Map<number, Point>>();
  for (const m of measurements) {
    if (m.op !== op.name || m.dtype !== dtype || m.state !== "ok" || m.offAxis) continue;
    const key = `${m.backend}|${m.residency}|${m.variant}`;
    const bySize = series.get(key) ?? new Map<number, Point>();
    series.set(key, bySize);
    const prior = bySize.get(m.size);
    if (!prior || m.wall.median < prior.ms) {
      bySize.set(m.size, { ms: m.wall.median, relCi: m.wall.relCi });
    }
  }
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
 * Bytes from which a WebGPU device-resident series of an op that streams its operands gets the
 * grid's midpoints (a mebibyte of weights: a decode's projections, where the rate and not the
 * launch sets the time).
 */
export const STREAMING_MIDPOINT_BYTES = 2 ** 20;

/**
 * The geometric midpoints between neighbouring grid sizes of every WebGPU device-resident series
 * of an op that streams its operands (a gemv's weights), from {@linkcode STREAMING_MIDPOINT_BYTES}
 * up, the smallest first, at most `perSeries` per series. There a device's rate depends on how the
 * rows fill its workgroups, not smoothly on size: on lavapipe a gemv f32 of 768² ran at 3.4–3.5
 * GB/s, below both 512² (3.9–4.2) and 1149² (4.6–5.3), the grid points around it, and a decode's
 * 768-wide projections were predicted 30 % fast; no bend shows at a grid point there, so
 * {@linkcode bendPoints} never asks for it.
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
  const series = new Map<string, Set<number>>();
  for (const m of measurements) {
    if (
      m.op !== op.name || m.dtype !== dtype || m.state !== "ok" || m.offAxis ||
      m.backend !== "webgpu" || m.residency !== "device-resident"
    ) continue;
    const sizes = series.get(m.variant) ?? new Set<number>();
    series.set(m.variant, sizes.add(m.size));
  }
  const found: BendPoint[] = [];
  for (const [variant, set] of series) {
    const sizes = [...set].sort((a, b) => a - b);
    let taken = 0;
    for (let i = 0; i + 1 < sizes.length && taken < perSeries; i++) {
      const [lo, hi] = [sizes[i]!, sizes[i + 1]!];
      if (op.bytes(op.axis.shape(lo), dtype) < STREAMING_MIDPOINT_BYTES) continue;
      if (hi / lo < MIN_MIDPOINT_RATIO) continue;
      const size = roundSize(Math.sqrt(lo * hi), op);
      if (size <= lo || size >= hi) continue;
      found.push({ size, backend: "webgpu", residency: "device-resident", variant, miss: 0 });
      taken++;
    }
  }
  return found;
}

/** Neighbours closer than this ratio get no midpoint: a grid step (×2.24 by default) is halved once. */
const MIN_MIDPOINT_RATIO = 2;

interface Point {
  readonly ms: number;
  readonly relCi: number;
}

function roundSize(size: number, op: OpSpec): number {
  const rounded = size > 64 ? Math.round(size / ROUND_TO) * ROUND_TO : Math.round(size);
  return Math.min(Math.max(rounded, op.axis.min), op.axis.max);
}
