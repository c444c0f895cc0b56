/**
 * What moving activations between devices costs, in the α-β model: a message of `n` bytes takes
 * `latency + n / bandwidth`.
 *
 * @module
 */

/**
 * A link between devices. Bandwidths are in GB/s (10^9 bytes per second, like every bandwidth in
 * gpucal), not gigabits.
 *
 * @example
 * ```ts
 * import type { Interconnect } from "./comm.ts";
 * const nvlink: Interconnect = { kind: "nvlink", gbps: 300, latencyUs: 5 };
 * ```
 */
export interface Interconnect {
  /** What the link is; free text beyond the common kinds. */
  readonly kind: "pcie" | "nvlink" | "ethernet" | "host" | (string & Record<never, never>);
  /** Bandwidth per direction, GB/s. */
  readonly gbps: number;
  /** Latency of one message, microseconds; 0 when absent (the link then looks faster than it is). */
  readonly latencyUs?: number;
  /** Where the figures came from, carried into estimate sources; "given" when absent. */
  readonly source?: string;
}

function checkLink(link: Interconnect): void {
  if (!(link.gbps > 0) || !Number.isFinite(link.gbps)) {
    throw new RangeError(
      `Interconnect "${link.kind}" bandwidth must be a positive number of GB/s, got ${link.gbps}`,
    );
  }
  const lat = link.latencyUs ?? 0;
  if (!(lat >= 0) || !Number.isFinite(lat)) {
    throw new RangeError(
      `Interconnect "${link.kind}" latency must be a non-negative number of µs, got ${link.latencyUs}`,
    );
  }
}

/**
 * Time to send one message from one device to the next (a pipeline stage boundary).
 *
 * @param link The interconnect.
 * @param bytes Message size.
 * @returns Milliseconds.
 * @throws {RangeError} when the link's bandwidth or latency is not usable.
 * @example
 * ```ts
 * import { sendMs } from "./comm.ts";
 * console.log(sendMs({ kind: "pcie", gbps: 25, latencyUs: 10 }, 16384).toFixed(5)); // "0.01066"
 * ```
 */
export function sendMs(link: Interconnect, bytes: number): number {
  checkLink(link);
  return (link.latencyUs ?? 0) / 1000 + bytes / (link.gbps * 1e6);
}

/**
 * Time of a ring all-reduce of `bytes` over `p` devices: 2(p − 1) steps, each sending
 * bytes / p, so 2(p − 1) latencies + 2(p − 1)/p × bytes / bandwidth (Thakur, Rabenseifner and
 * Gropp 2005). Zero for one device.
 *
 * @param link The interconnect.
 * @param bytes Size of the reduced buffer on each device.
 * @param p Devices taking part.
 * @returns Milliseconds.
 * @throws {RangeError} when p is not a positive integer or the link is not usable.
 * @example
 * ```ts
 * import { allReduceMs } from "./comm.ts";
 * console.log(allReduceMs({ kind: "nvlink", gbps: 300 }, 3e5, 2)); // 0.001
 * ```
 */
export function allReduceMs(link: Interconnect, bytes: number, p: number): number {
  if (!Number.isInteger(p) || p <= 0) {
    throw new RangeError(`All-reduce needs a positive integer device count, got ${p}`);
  }
  checkLink(link);
  if (p === 1) return 0;
  const steps = 2 * (p - 1);
  return steps * (link.latencyUs ?? 0) / 1000 + (steps / p) * bytes / (link.gbps * 1e6);
}

/**
 * Describes an interconnect for estimate sources.
 *
 * @param link The interconnect.
 * @returns e.g. `"nvlink 300 GB/s, 5 µs (given)"`.
 * @example
 * ```ts
 * import { describeLink } from "./comm.ts";
 * console.log(describeLink({ kind: "pcie", gbps: 25 })); // "pcie 25 GB/s, latency not given (0 µs) (given)"
 * ```
 */
export function describeLink(link: Interconnect): string {
  const lat = link.latencyUs === undefined ? "latency not given (0 µs)" : `${link.latencyUs} µs`;
  return `${link.kind} ${link.gbps} GB/s, ${lat} (${link.source ?? "given"})`;
}
