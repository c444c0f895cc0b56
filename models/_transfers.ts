/**
 * Private: the slowest host-to-device transfer a report's own WebGPU measurements show. An
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

/** The slowest transfer rate measured, and where. */
export interface SlowestTransfer {
  /** Bytes moved per second, in GB/s. */
  readonly gbps: number;
  /** The measurement it came from, for people: op, dtype and shape. */
  readonly at: string;
}

const cache = new WeakMap<Report, SlowestTransfer | null>();

/**
 * The slowest rate at which the report's WebGPU end-to-end runs moved their bytes beyond the
 * device-resident time of the same op, shape, dtype and variant and one sync; null when no such
 * pair moved {@linkcode MIN_TRANSFER_BYTES} or more.
 *
 * @param report A parsed report.
 * @returns The rate and where it was measured, or null.
 */
export function slowestTransfer(report: Report): SlowestTransfer | null {
  if (cache.has(report)) return cache.get(report)!;
  const found = findSlowest(report);
  cache.set(report, found);
  return found;
}

type Ok = Extract<Measurement, { state: "ok" }>;

function findSlowest(report: Report): SlowestTransfer | null {
  const syncMs = report.system.dispatchRoundTripMs.value;
  if (syncMs === null || !(syncMs >= 0)) return null;
  const resident = new Map<string, Ok>();
  for (const m of report.measurements) {
    if (isWebGpu(m) && m.residency === "device-resident") resident.set(keyOf(m), m);
  }
  let slowest: SlowestTransfer | null = null;
  for (const m of report.measurements) {
    if (!isWebGpu(m) || m.residency !== "end-to-end" || m.bytes < MIN_TRANSFER_BYTES) continue;
    const kernel = resident.get(keyOf(m));
    if (kernel === undefined) continue;
    const transferMs = m.wall.median - kernel.wall.median - syncMs;
    if (!(transferMs > 0)) continue;
    const gbps = m.bytes / transferMs / 1e6;
    if (slowest === null || gbps < slowest.gbps) {
      slowest = { gbps, at: `${m.op} ${m.dtype} ${shapeText(m)}` };
    }
  }
  return slowest;
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
