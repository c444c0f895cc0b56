/**
 * When a series has told what it can: a backend that loses by a margin its trend cannot close
 * (dominated), and a WebGPU end-to-end point whose time is its transfers (predicted from the
 * system figures plus the device-resident kernel). Pure functions over measurements.
 *
 * @module
 */
import type { Backend, Dtype, OpSpec, Shape } from "../kernels/types.ts";
import type { Measurement, SystemFigures } from "../core/schema.ts";
import { rateConverged } from "./sweep.ts";

/** A backend slower than the best by at least this factor at its last two sizes is losing. */
export const DOMINATED_MARGIN = 2;
/** The loser's rate over its last three sizes must agree within this to count as a trend. */
const SETTLED_RATE = 0.15;
/** Points a series needs before it may be stopped: enough for its fit. */
export const DOMINATED_MIN_POINTS = 4;

/**
 * Whether `backend` (end to end) is dominated in `op`/`dtype`: it has
 * {@linkcode DOMINATED_MIN_POINTS} points for its fit and a settled rate over its last three (within
 * 15 %: a rate still growing is no trend to judge by), at each of its last two sizes another
 * backend is at least {@linkcode DOMINATED_MARGIN} times faster, and its trend cannot close the
 * gap within the range: a line through each series' last two points (fixed cost + time per unit
 * of work) still leaves it {@linkcode DOMINATED_MARGIN} times slower at `maxSize`. A backend that
 * loses on fixed overhead but has the better rate (wasm-mt at small sizes) keeps its sweep.
 *
 * @param measurements Measurements so far.
 * @param op The op.
 * @param dtype The dtype.
 * @param backend The backend to judge.
 * @param maxSize The largest size of the range the decision is for.
 * @returns The backend it loses to, or null.
 * @example
 * ```ts ignore
 * const winner = dominatedBy(measurements, getOp("add"), "f32", "js", 1 << 24); // "wasm"
 * ```
 */
export function dominatedBy(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  backend: Backend,
  maxSize: number,
): Backend | null {
  const best = axisSeries(measurements, op, dtype);
  const mine = best.get(backend);
  if (!mine || mine.size < DOMINATED_MIN_POINTS) return null;
  const sizes = [...mine.keys()].sort((a, b) => a - b);
  const [before, last] = sizes.slice(-2) as [number, number];
  const work = (size: number) => {
    const shape = op.axis.shape(size);
    return Math.max(op.flops(shape), op.bytes(shape, dtype));
  };
  // A rate still growing (wasm-mt waking its workers at small sizes) is no trend to judge by.
  const tail = sizes.slice(-3);
  if (!rateConverged(tail, tail.map((s) => work(s) / mine.get(s)!), SETTLED_RATE)) return null;
  const at = (series: Map<number, number>, size: number) => {
    const [t1, t2] = [series.get(before)!, series.get(last)!];
    const perWork = Math.max(0, (t2 - t1) / (work(last) - work(before)));
    return Math.max(0, t2 - perWork * work(last)) + perWork * work(size);
  };
  for (const [other, series] of best) {
    if (other === backend || !series.has(before) || !series.has(last)) continue;
    const losing = mine.get(before)! / series.get(before)! >= DOMINATED_MARGIN &&
      mine.get(last)! / series.get(last)! >= DOMINATED_MARGIN;
    if (losing && at(mine, maxSize) / at(series, maxSize) >= DOMINATED_MARGIN) {
      return other as Backend;
    }
  }
  return null;
}

/** Per backend, its fastest end-to-end time at each size of the op's axis (off-axis shapes aside). */
function axisSeries(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
): Map<string, Map<number, number>> {
  const best = new Map<string, Map<number, number>>();
  for (const m of measurements) {
    if (m.op !== op.name || m.dtype !== dtype || m.state !== "ok") continue;
    if (m.residency !== "end-to-end" || !sameShape(m.shape, op.axis.shape(m.size))) continue;
    const series = best.get(m.backend) ?? new Map<number, number>();
    best.set(m.backend, series);
    series.set(m.size, Math.min(series.get(m.size) ?? Infinity, m.wall.median));
  }
  return best;
}

function sameShape(a: Shape, b: Shape): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** A WebGPU end-to-end time whose transfers are at least this share is transfer-bound. */
export const TRANSFER_BOUND_SHARE = 0.7;
/** A measured end-to-end point confirms the prediction within this relative error. */
export const TRANSFER_CONFIRM = 0.3;

/**
 * The predicted end-to-end WebGPU time of a case: the device-resident kernel, one round trip,
 * and its bytes at the measured upload and readback rates (inputs up, output down; the op's
 * minimum bytes, split as if every byte crossed once). Null without the transfer figures.
 *
 * @param system The system figures.
 * @param op The op.
 * @param shape The shape.
 * @param dtype The dtype.
 * @param residentMs The device-resident time of the same case, ms.
 * @returns The prediction and the share of it that is transfer, or null.
 * @example
 * ```ts ignore
 * const p = transferPrediction(system, getOp("gemv"), { rows: 16384, cols: 16384 }, "q4", 12);
 * if (p && p.transferShare > 0.7) console.log(`${p.ms} ms, transfer-bound`);
 * ```
 */
export function transferPrediction(
  system: SystemFigures | null,
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  residentMs: number,
): { ms: number; transferShare: number } | null {
  const up = system?.uploadGBps.value;
  const down = system?.readbackGBps.value;
  if (!up || !down) return null;
  const bytes = op.bytes(shape, dtype);
  // Without the output's size the bytes go at the slower of the two rates: an upper bound.
  const transferMs = bytes / Math.min(up, down) / 1e6;
  const ms = residentMs + (system?.dispatchRoundTripMs.value ?? 0) + transferMs;
  return { ms, transferShare: transferMs / ms };
}
