/**
 * Private: the slowest and the usual host-to-device transfer a report's own WebGPU measurements
 * show. An
 * end-to-end run of a shape less the device-resident run of the same shape and one sync is what
 * moving its bytes cost; on lavapipe that ran at one of two speeds, by the process's memory
 * history rather than by size (gemv q4 8192² moved 34 MB in 148 ms beside a 12 ms sync, where
 * gemv q8 5793² moved its 34 MB in 17 ms), and the slow speed came back in later processes at
 * 0.23–0.3 GB/s. The system figure (`uploadGBps`) times one buffer, at whichever speed it got.
 *
 * ```ts
 * import { slowestTransfer } from "./_transfers.ts";
 * import type { Report } from "../core/schema.ts";
 * const report = { measurements: [], system: { dispatchRoundTripMs: { value: 11 } } };
 * console.log(slowestTransfer(report as unknown as Report)); // null
 * ```
 *
 * @module
 */
import type { Measurement, Report } from "../core/schema.ts";

/** Fewest bytes a shape moves for its transfer time to say more than the sync's jitter. */
export const MIN_TRANSFER_BYTES = 8 * 2 ** 20;

/** A transfer rate measured, and where. */
export interface MeasuredTransfer {
  /** Bytes moved per second, in GB/s. */
  readonly gbps: number;
  /** The measurement it came from, for people: op, dtype and shape. */
  readonly at: string;
}

/** Fewest measured transfers whose median {@linkcode typicalTransfer} trusts. */
export const MIN_TYPICAL_TRANSFERS = 3;

const cache = new WeakMap<Report, readonly MeasuredTransfer[]>();

/**
 * The slowest rate at which the report's WebGPU end-to-end runs moved their bytes beyond the
 * device-resident time of the same op, shape, dtype and variant and one sync; null when no such
 * pair moved {@linkcode MIN_TRANSFER_BYTES} or more.
 *
 * @param report A parsed report.
 * @returns The rate and where it was measured, or null.
 */
export function slowestTransfer(report: Report): MeasuredTransfer | null {
  let slowest: MeasuredTransfer | null = null;
  for (const t of transfersOf(report)) if (slowest === null || t.gbps < slowest.gbps) slowest = t;
  return slowest;
}

/**
 * The median rate of the same transfers as {@linkcode slowestTransfer}: what moving bytes to the
 * device usually cost in this report's own end-to-end runs. Null with fewer than
 * {@linkcode MIN_TYPICAL_TRANSFERS} of them, where one slow run would be the median.
 *
 * @param report A parsed report.
 * @returns The median rate and the transfer nearest it, or null.
 * @example
 * ```ts
 * import { typicalTransfer } from "./_transfers.ts";
 * import type { Report } from "../core/schema.ts";
 * const report = { measurements: [], system: { dispatchRoundTripMs: { value: 11 } } };
 * console.log(typicalTransfer(report as unknown as Report)); // null
 * ```
 */
export function typicalTransfer(report: Report): MeasuredTransfer | null {
  const sorted = [...transfersOf(report)].sort((a, b) => a.gbps - b.gbps);
  if (sorted.length < MIN_TYPICAL_TRANSFERS) return null;
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function transfersOf(report: Report): readonly MeasuredTransfer[] {
  let found = cache.get(report);
  if (found === undefined) {
    found = Object.freeze(findTransfers(report));
    cache.set(report, found);
  }
  return found;
}

type Ok = Extract<Measurement, { state: "ok" }>;

function findTransfers(report: Report): MeasuredTransfer[] {
  const syncMs = report.system.dispatchRoundTripMs.value;
  if (syncMs === null || !(syncMs >= 0)) return [];
  const resident = new Map<string, Ok>();
  for (const m of report.measurements) {
    if (isWebGpu(m) && m.residency === "device-resident") resident.set(keyOf(m), m);
  }
  const found: MeasuredTransfer[] = [];
  for (const m of report.measurements) {
    if (!isWebGpu(m) || m.residency !== "end-to-end" || m.bytes < MIN_TRANSFER_BYTES) continue;
    const kernel = resident.get(keyOf(m));
    if (kernel === undefined) continue;
    const transferMs = m.wall.median - kernel.wall.median - syncMs;
    if (!(transferMs > 0)) continue;
    found.push({ gbps: m.bytes / transferMs / 1e6, at: `${m.op} ${m.dtype} ${shapeText(m)}` });
  }
  return found;
}

function isWebGpu(m: Measurement): m is Ok {
  return m.state === "ok" && m.backend === "webgpu";
}

function keyOf(m: Ok): string {
  return `${m.op}|${m.dtype}|${m.variant}|${shapeText(m)}`;
}

function shapeText(m: Ok): string {
  return Object.values(m.shape).join("x");
}
