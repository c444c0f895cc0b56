/**
 * Run-to-run drift of this machine, measured during a calibration: one small fixed case per
 * backend (the probe), measured interleaved at the start, after every op and at the end. How far
 * each backend's probe time wanders over the run is the spread a second run of the same machine
 * should expect, which a within-run bootstrap cannot see: on a shared machine a whole backend
 * speeds up or slows down for a while (cores taken by another process, a worker pool down to one
 * core), and that moves crossovers between nearly parallel curves a lot. Pure apart from
 * {@linkcode measureProbe}, which measures.
 *
 * @example
 * ```ts
 * import { summarizeStability } from "./stability.ts";
 * const probes = [0.100, 0.104, 0.097, 0.120, 0.101].map((ms, i) => ({ atS: 10 * i, ms: { wasm: ms } }));
 * console.log(summarizeStability(probes).driftSigma.wasm?.toFixed(3)); // "0.043"
 * ```
 *
 * @module
 */
import type { Backend } from "../kernels/types.ts";
import type { StabilityInfo } from "../reports/schema.ts";
import { measureMany, type RunnerSource } from "./measure.ts";
import { median, type StoppingRule } from "./stats.ts";

/**
 * One probe: when it was taken (seconds since the calibration started, summed over resumed
 * sessions) and each backend's median ms per run of the probe case.
 *
 * @example
 * ```ts
 * import type { StabilityProbe } from "./stability.ts";
 * const p: StabilityProbe = { atS: 12.5, ms: { wasm: 0.031, "wasm-mt": 0.024 } };
 * ```
 */
export type StabilityProbe = StabilityInfo["probes"][number];

/** Fewest probes of a backend from which its drift is estimated. */
export const MIN_PROBES = 3;

/** The probe case: cheap on every backend, and parallel enough that wasm-mt uses its workers. */
const PROBE = {
  op: "add",
  dtype: "f32",
  shape: { n: 1 << 16 },
  // Device-resident on WebGPU: end-to-end, the ~11 ms synchronisation is nearly all of the time,
  // and it stays put while the kernels' speed (lavapipe on one core or two) moves by 2×; the
  // device-resident figures and peaks are what that drift moves, so that is what is probed.
  residency: "device-resident",
} as const satisfies Pick<StabilityInfo, "op" | "dtype" | "shape" | "residency">;

/** A short measurement: the probe's median, not a ±2 % figure, is what is needed. */
const PROBE_STOPPING: Partial<StoppingRule> = { budgetMs: 60, minSamples: 5, targetRelCi: 0.03 };

/** Scales a median absolute deviation to a normal distribution's standard deviation. */
const MAD_TO_SIGMA = 1.4826;

/**
 * The relative drift of one backend from its probe times: 1.4826 × the median absolute deviation
 * of ln(ms) from its median (a robust standard deviation of ln time), or null with fewer than
 * {@linkcode MIN_PROBES} probes.
 *
 * Robust because one probe is short (tens of ms): a stall of that length (a worker woken late)
 * makes one probe an outlier and would hit one measured size of an op, which the robust fits
 * already absorb, not a whole curve. A state lasting many probes (a core taken for seconds)
 * moves many probes, and the MAD sees it once it covers a sizeable share of them.
 *
 * @param ms Probe times of one backend, ms, any order.
 * @returns The robust standard deviation of ln(ms), or null when there are too few probes.
 * @throws {RangeError} when a time is not a positive finite number.
 * @example
 * ```ts
 * import { driftSigma } from "./stability.ts";
 * console.log(driftSigma([1, 1, 1])); // 0
 * console.log(driftSigma([1, 2])); // null
 * ```
 */
export function driftSigma(ms: readonly number[]): number | null {
  for (const t of ms) {
    if (!(Number.isFinite(t) && t > 0)) {
      throw new RangeError(`Invalid probe time ${t}: give positive finite milliseconds`);
    }
  }
  if (ms.length < MIN_PROBES) return null;
  const logs = ms.map(Math.log);
  const center = median(logs);
  return MAD_TO_SIGMA * median(logs.map((x) => Math.abs(x - center)));
}

/**
 * The report's `stability` section from the probes taken so far.
 *
 * @param probes The probes, in time order.
 * @returns The report's `stability` section: the probe case, the probes and each backend's
 * drift, the standard deviation of ln(probe time) (backends with fewer than
 * {@linkcode MIN_PROBES} probes have none).
 * @example
 * ```ts
 * import { summarizeStability } from "./stability.ts";
 * const s = summarizeStability([{ atS: 0, ms: { js: 1 } }, { atS: 5, ms: { js: 1 } }]);
 * console.log(s.driftSigma); // {}
 * ```
 */
export function summarizeStability(probes: readonly StabilityProbe[]): StabilityInfo {
  const byBackend = new Map<Backend, number[]>();
  for (const p of probes) {
    for (const [backend, ms] of Object.entries(p.ms) as [Backend, number][]) {
      byBackend.set(backend, [...(byBackend.get(backend) ?? []), ms]);
    }
  }
  const sigmas: Partial<Record<Backend, number>> = {};
  for (const [backend, series] of byBackend) {
    const sigma = driftSigma(series);
    if (sigma !== null) sigmas[backend] = Math.round(sigma * 1e4) / 1e4;
  }
  return {
    ...PROBE,
    shape: { ...PROBE.shape },
    probes: probes.map((p) => ({ atS: p.atS, ms: { ...p.ms } })),
    driftSigma: sigmas,
  };
}

/**
 * Measures the probe case once on each backend, interleaved; a backend that is unavailable or
 * fails the check is left out of the probe.
 *
 * @param backends The backends to probe.
 * @param runners Where the runners come from (the calibration's own, so nothing is reopened).
 * @param atS Seconds since the calibration started.
 * @param signal Aborts the probe.
 * @returns The probe.
 * @example
 * ```ts ignore
 * import { measureProbe } from "./stability.ts";
 * const probe = await measureProbe(["js", "wasm"], source, 0);
 * console.log(probe.ms);
 * ```
 */
export async function measureProbe(
  backends: readonly Backend[],
  runners: RunnerSource,
  atS: number,
  signal?: AbortSignal,
): Promise<StabilityProbe> {
  const requests = backends.map((backend) => ({
    op: PROBE.op,
    shape: { ...PROBE.shape },
    dtype: PROBE.dtype,
    backend,
    residency: backend === "webgpu" ? PROBE.residency : "end-to-end" as const,
  }));
  const results = await measureMany(requests, {
    runners,
    stopping: PROBE_STOPPING,
    ...(signal ? { signal } : {}),
  });
  const ms: Partial<Record<Backend, number>> = {};
  results.forEach((r, i) => {
    if (r.state === "ok" && r.wall.median > 0) ms[requests[i]!.backend] = r.wall.median;
  });
  return { atS: Math.round(atS * 100) / 100, ms };
}
