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
import type { Backend, Residency } from "../kernels/types.ts";
import type { EarlierRun, RepeatabilityInfo, Report, StabilityInfo } from "../core/schema.ts";
import { measureMany, type RunnerSource } from "./measure.ts";
import { median, robustSigma, type StoppingRule } from "../core/stats.ts";
import { timeHostReference } from "./host_reference.ts";
import { sameConfiguration } from "./machine.ts";

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
  return robustSigma(ms.map(Math.log));
}

/**
 * One time of a repeated case: which case (any key, e.g. `"add f32 n=65536 wasm"`), which window
 * it was measured in, and its median ms per run in that window.
 *
 * @example
 * ```ts
 * import type { RepeatedTime } from "./stability.ts";
 * const t: RepeatedTime = { case: "add n=65536", window: 2, ms: 0.031 };
 * ```
 */
export interface RepeatedTime {
  readonly case: string;
  readonly window: number;
  readonly ms: number;
}

/**
 * How well a set of cases repeats over windows: the fields of a report's repeatability group
 * besides its backend and residency.
 *
 * @example
 * ```ts
 * import type { RepeatabilityStats } from "./stability.ts";
 * const r: RepeatabilityStats = {
 *   cases: 1, times: 2, within5: 1, within10: 1, within15: 1, sigmaLn: 0.01,
 * };
 * ```
 */
export type RepeatabilityStats = Omit<
  RepeatabilityInfo["groups"][number],
  "backend" | "residency"
>;

/** Slack on the ±5/10/15 % bounds, so that 1.05 × the median counts as within 5 %. */
const BOUND_SLACK = 1e-9;

/**
 * How well cases repeat their own times over windows: every (case, window) time is compared with
 * its case's median over the windows. Returns the share of those times within ±5 %, ±10 % and
 * ±15 % of that median, and 1.4826 × the median absolute deviation of ln(time) from the median of
 * its case's ln(time) (a robust standard deviation of ln time, pooled over the cases). Cases seen
 * in one window only have nothing to repeat and are left out.
 *
 * With few windows per case the deviations are taken from a median that includes the time
 * itself, so both figures flatter a little: with two windows each time is half the gap away.
 *
 * @param times The times, any order.
 * @returns The figures, or null when no case was measured in two windows.
 * @throws {RangeError} when a time is not a positive finite number, or a case has two times in
 * one window.
 * @example
 * ```ts
 * import { repeatability } from "./stability.ts";
 * const r = repeatability([
 *   { case: "a", window: 0, ms: 1.0 },
 *   { case: "a", window: 1, ms: 1.3 },
 *   { case: "a", window: 2, ms: 1.02 },
 * ]);
 * console.log(r?.within5.toFixed(2), r?.within15.toFixed(2)); // "0.67 0.67"
 * ```
 */
export function repeatability(times: readonly RepeatedTime[]): RepeatabilityStats | null {
  const byCase = new Map<string, Map<number, number>>();
  for (const t of times) {
    if (!(Number.isFinite(t.ms) && t.ms > 0)) {
      throw new RangeError(`Invalid time ${t.ms} of case "${t.case}": give positive finite ms`);
    }
    const windows = byCase.get(t.case) ?? new Map<number, number>();
    if (windows.has(t.window)) {
      throw new RangeError(
        `Case "${t.case}" has two times in window ${t.window}: give one median per window`,
      );
    }
    byCase.set(t.case, windows.set(t.window, t.ms));
  }
  const ratios: number[] = [];
  const logDeviations: number[] = [];
  let cases = 0;
  for (const windows of byCase.values()) {
    const ms = [...windows.values()];
    if (ms.length < 2) continue;
    cases++;
    const center = median(ms);
    const logCenter = median(ms.map(Math.log));
    for (const t of ms) {
      ratios.push(Math.abs(t / center - 1));
      logDeviations.push(Math.abs(Math.log(t) - logCenter));
    }
  }
  if (cases === 0) return null;
  const within = (bound: number) =>
    ratios.filter((r) => r <= bound + BOUND_SLACK).length / ratios.length;
  return {
    cases,
    times: ratios.length,
    within5: within(0.05),
    within10: within(0.1),
    within15: within(0.15),
    sigmaLn: robustSigma(logDeviations, 0),
  };
}

/**
 * The report's `stability` section from the probes taken so far.
 *
 * @param probes The probes, in time order.
 * @returns The report's `stability` section: the probe case, the probes, each backend's drift,
 * the standard deviation of ln(probe time) (backends with fewer than {@linkcode MIN_PROBES}
 * probes have none), the same of the host reference timed beside them (`hostDriftSigma`) and of
 * the host's memory reference (`memoryDriftSigma`), and the run's repeatability over the probes
 * as windows.
 * @example
 * ```ts
 * import { summarizeStability } from "./stability.ts";
 * const s = summarizeStability([{ atS: 0, ms: { js: 1 } }, { atS: 5, ms: { js: 1 } }]);
 * console.log(s.driftSigma); // {}
 * ```
 */
export function summarizeStability(
  probes: readonly StabilityProbe[],
  earlierRuns: readonly EarlierRun[] = [],
): StabilityInfo {
  const byBackend = probeSeries(probes);
  const sigmas: Partial<Record<Backend, number>> = {};
  for (const [backend, series] of byBackend) {
    const sigma = driftSigma(series);
    if (sigma !== null) sigmas[backend] = Math.round(sigma * 1e4) / 1e4;
  }
  const repeats = probeRepeatability(probes, byBackend);
  const hostSigma = driftSigma(hostProbeMs(probes));
  const memorySigma = driftSigma(
    probes.flatMap((p) => p.hostStreamMs === undefined ? [] : [p.hostStreamMs]),
  );
  return {
    ...PROBE,
    shape: { ...PROBE.shape },
    probes: probes.map((p) => ({
      atS: p.atS,
      ms: { ...p.ms },
      ...(p.hostMs === undefined ? {} : { hostMs: p.hostMs }),
      ...(p.hostStreamMs === undefined ? {} : { hostStreamMs: p.hostStreamMs }),
    })),
    driftSigma: sigmas,
    ...(hostSigma === null ? {} : { hostDriftSigma: Math.round(hostSigma * 1e4) / 1e4 }),
    ...(memorySigma === null ? {} : { memoryDriftSigma: Math.round(memorySigma * 1e4) / 1e4 }),
    ...(repeats ? { repeatability: repeats } : {}),
    ...betweenRuns(probes, earlierRuns),
  };
}

/**
 * The host reference's times of the probes that have one (`hostMs`), in probe order.
 *
 * @param probes A run's probes.
 * @returns The times, ms (empty for reports written before the host was timed).
 * @example
 * ```ts
 * import { hostProbeMs } from "./stability.ts";
 * console.log(hostProbeMs([{ atS: 0, ms: {}, hostMs: 4 }, { atS: 9, ms: {} }])); // [ 4 ]
 * ```
 */
export function hostProbeMs(probes: readonly StabilityProbe[]): number[] {
  return probes.flatMap((p) => p.hostMs === undefined ? [] : [p.hostMs]);
}

/** Fewest runs (this one included) from which a backend's between-run spread is estimated. */
export const MIN_RUNS = 3;

/** Earlier runs a report carries at most: the latest are kept. */
export const MAX_EARLIER_RUNS = 15;

/**
 * Per backend, the median of its probe times (backends whose median is 0 left out).
 *
 * @param probes A run's probes.
 * @returns The median ms per backend probed.
 * @example
 * ```ts
 * import { medianProbeMs } from "./stability.ts";
 * console.log(medianProbeMs([{ atS: 0, ms: { js: 2 } }, { atS: 9, ms: { js: 4, wasm: 1 } }])); // { js: 3, wasm: 1 }
 * ```
 */
export function medianProbeMs(
  probes: readonly StabilityProbe[],
): Partial<Record<Backend, number>> {
  // A median of 0 (a timer too coarse for the probe) would say nothing of a run's speed.
  const medians = [...probeSeries(probes)].map(([b, series]) => [b, median(series)] as const);
  return Object.fromEntries(medians.filter(([, ms]) => ms > 0));
}

/** Each backend's probe times, in probe order. */
function probeSeries(probes: readonly StabilityProbe[]): Map<Backend, number[]> {
  const byBackend = new Map<Backend, number[]>();
  for (const p of probes) {
    for (const [backend, ms] of Object.entries(p.ms) as [Backend, number][]) {
      byBackend.set(backend, [...(byBackend.get(backend) ?? []), ms]);
    }
  }
  return byBackend;
}

/**
 * Per backend, how far one calibration of a machine moves from the one before it: σ of ln(median
 * probe time) from the differences between consecutive runs (√(Σ Δ² / 2(n − 1)), oldest first),
 * so a level that changed once — a host that moved, or gpucal measuring the probe otherwise —
 * counts as one step and not as a spread across every run. The standard deviation over all runs
 * took such a step whole: one-thread wasm's probe ran 13.7–16.6 µs in thirteen runs of the 2-vCPU
 * Intel Xeon VM and 10.6–11.9 in the two after its cached operands went from four copies to two,
 * and σ rose from 0.07 to 0.10–0.13, widening every wasm interval (`bench:regret`'s median width
 * ×1.52–1.55 against ×1.44–1.51 before), although consecutive runs moved as little as ever. A
 * backend probed in fewer than {@linkcode MIN_RUNS} runs has none.
 *
 * @param runs Each run's median probe time per backend, ms, oldest first.
 * @returns The spread per backend, rounded to 4 decimals.
 * @example
 * ```ts
 * import { betweenRunSigma } from "./stability.ts";
 * console.log(betweenRunSigma([{ wasm: 1 }, { wasm: Math.E }, { wasm: 1 }]).wasm?.toFixed(3)); // "0.707"
 * ```
 */
export function betweenRunSigma(
  runs: readonly Partial<Record<Backend, number>>[],
): Partial<Record<Backend, number>> {
  const logs = new Map<Backend, number[]>();
  for (const run of runs) {
    for (const [backend, ms] of Object.entries(run) as [Backend, number][]) {
      if (ms > 0) logs.set(backend, [...(logs.get(backend) ?? []), Math.log(ms)]);
    }
  }
  const sigmas: Partial<Record<Backend, number>> = {};
  for (const [backend, xs] of logs) {
    if (xs.length < MIN_RUNS) continue;
    let squares = 0;
    for (let i = 1; i < xs.length; i++) squares += (xs[i]! - xs[i - 1]!) ** 2;
    sigmas[backend] = Math.round(Math.sqrt(squares / (2 * (xs.length - 1))) * 1e4) / 1e4;
  }
  return sigmas;
}

/**
 * The earlier runs a new calibration of this machine carries over from earlier reports of it (the
 * report it replaces, and any named with `--earlier-runs-from`): each report's own earlier runs
 * and its run (its date and median probe times), one per date, oldest first, the latest
 * {@linkcode MAX_EARLIER_RUNS} kept. Reports of another machine (fingerprint) give none, nor do
 * reports of another configuration of it (driver settings: `LP_NUM_THREADS=1` runs lavapipe's
 * kernels at another speed, and its runs would read as the machine moving).
 *
 * @param reports Earlier reports.
 * @param fingerprint This run's machine fingerprint.
 * @param driverEnv This run's driver settings (`machine.ts` `driverSettings`); none when absent.
 * @returns The earlier runs, oldest first.
 * @example
 * ```ts ignore
 * const earlier = earlierRunsOf([await loadReport("reports/<slug>.json")], fingerprint);
 * ```
 */
export function earlierRunsOf(
  reports: readonly Report[],
  fingerprint: string,
  driverEnv: Readonly<Record<string, string>> | null = {},
): EarlierRun[] {
  const byDate = new Map<string, EarlierRun>();
  for (const report of reports) {
    if (report.fingerprint !== fingerprint) continue;
    if (!sameConfiguration(report.provenance.driverEnv, driverEnv)) continue;
    for (const run of report.stability?.earlierRuns ?? []) byDate.set(run.date, run);
    const medianMs = medianProbeMs(report.stability?.probes ?? []);
    if (Object.keys(medianMs).length > 0) {
      const driftSigma = report.stability?.driftSigma ?? {};
      byDate.set(report.provenance.date, { date: report.provenance.date, medianMs, driftSigma });
    }
  }
  return [...byDate.values()]
    .sort((a, b) => Date.parse(a.date) - Date.parse(b.date))
    .slice(-MAX_EARLIER_RUNS)
    .map(copyRun);
}

/** A copy of an earlier run, its drift within itself kept where it was recorded. */
function copyRun(r: EarlierRun): EarlierRun {
  const drift = r.driftSigma === undefined || Object.keys(r.driftSigma).length === 0
    ? {}
    : { driftSigma: { ...r.driftSigma } };
  return { date: r.date, medianMs: { ...r.medianMs }, ...drift };
}

/** The `earlierRuns` and `betweenRunSigma` fields, when there are earlier runs. */
function betweenRuns(
  probes: readonly StabilityProbe[],
  earlierRuns: readonly EarlierRun[],
): Pick<StabilityInfo, "earlierRuns" | "betweenRunSigma"> {
  if (earlierRuns.length === 0) return {};
  const runs = [...earlierRuns.map((r) => r.medianMs), medianProbeMs(probes)];
  const sigma = betweenRunSigma(runs);
  return {
    earlierRuns: earlierRuns.map(copyRun),
    ...(Object.keys(sigma).length > 0 ? { betweenRunSigma: sigma } : {}),
  };
}

/**
 * The calibration's own repeatability: each probe is a window of the probe case, so every
 * backend probed at least {@linkcode MIN_PROBES} times gets the share of its probe times within
 * ±5/10/15 % of their median and σ of ln time, the shape `deno task noise` measures over eight
 * cases. Null with fewer than {@linkcode MIN_PROBES} probes.
 */
function probeRepeatability(
  probes: readonly StabilityProbe[],
  byBackend: ReadonlyMap<Backend, readonly number[]>,
): RepeatabilityInfo | null {
  if (probes.length < MIN_PROBES) return null;
  const groups = [...byBackend].flatMap(([backend, series]) => {
    if (series.length < MIN_PROBES) return [];
    const stats = repeatability(series.map((ms, window) => ({ case: PROBE.op, window, ms })));
    if (stats === null) return [];
    const residency: Residency = backend === "webgpu" ? PROBE.residency : "end-to-end";
    return [{ backend, residency, ...stats }];
  });
  const spanS = probes.at(-1)!.atS - probes[0]!.atS;
  const gapS = Math.round(10 * spanS / (probes.length - 1)) / 10;
  return { windows: probes.length, gapS: Math.max(0, gapS), groups };
}

/**
 * Times the host's `throughput` reference (none of gpucal's code), then measures the probe case
 * once on each backend, interleaved; a backend that is unavailable or fails the check is left
 * out of the probe.
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
  const hostMs = timeHostReference("throughput");
  const hostStreamMs = timeHostReference("stream");
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
  return {
    atS: Math.round(atS * 100) / 100,
    ms,
    ...(hostMs > 0 ? { hostMs } : {}),
    ...(hostStreamMs > 0 ? { hostStreamMs } : {}),
  };
}
