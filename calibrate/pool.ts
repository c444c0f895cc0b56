/**
 * A calibration that replaces its machine's report pools with it: each case both runs measured
 * takes the geometric mean of the runs' medians, the earlier one first brought to this run's level
 * (per backend and residency, the median ratio of the two over their shared cases:
 * {@linkcode levelShifts}), so each point stands on several runs' measurements of it rather than
 * the one minute it was measured in, and the report describes the machine in the host state its
 * latest run found, where a program run soon after it will be.
 *
 * On a 2-vCPU AMD EPYC VM, one process timing the same wasm kernels for a minute saw σ of ln time
 * 0.08–0.18 from window to window, ×1.2–1.6 between the 10th and 90th percentile, states that
 * came and went within seconds and, some days, for minutes; one calibration's points are each
 * one draw of that. Six calibrations of that VM, scored with `bench:regret`'s re-scoring against
 * ten held-out truths taken over four hours, averaged 70.4–80.6 % of predictions within ±25 % each;
 * every pair of them pooled this way averaged 77.7–81.0 %, above the better of the two in four
 * pairs of six, and the noisiest run (70.4 %) pooled with the best (80.6 %) gave 80.5 %. Averaged
 * whole, though, the pool sat between the runs' host states: a fifth run on a calm host (its own
 * probes within 1 %) found every backend 2–11 % faster than the four-run pool, and its
 * `bench:regret` truth, taken right after, was predicted 85.2 % within ±25 % (the truth's own
 * reproducibility 94.8 %); at the fifth run's level, 90.8 %.
 *
 * Pooling is safe only when both runs measured the same kernels on the same configuration of the
 * machine: the replaced report must be of this machine (fingerprint) and mode, complete, run on the
 * same Deno (its V8 and wgpu run the kernels), made by a gpucal commit whose measuring code
 * (kernels, runners, the measuring loop: `calibrate/checkout.ts`) is this checkout's, uncommitted
 * changes included (a report without a commit, or gpucal imported by URL, is not pooled with), and
 * with the same driver settings (`LP_NUM_THREADS`, `MESA_*`, … `calibrate/machine.ts`). And a
 * backend whose two runs disagree more than runs of one machine do keeps this run's own times
 * ({@linkcode disagreeingBackends}): the machine changed between them, and the newest run is what
 * it is now. `--fresh` turns pooling off.
 *
 * ```ts
 * import { poolMeasurements } from "./pool.ts";
 * console.log(poolMeasurements([], []).pooled); // 0
 * ```
 *
 * @module
 */
import type { Measurement, Report } from "../core/schema.ts";
import type { SampleStats } from "../core/result.ts";
import type { Backend, Residency } from "../kernels/types.ts";
import { median } from "../core/stats.ts";
import { measurementKey } from "./plan_state.ts";
import { describeSettingsDifference } from "./machine.ts";

/** Most earlier runs one new run is averaged against: the latest run weighs at least a quarter. */
const MAX_EARLIER_WEIGHT = 3;

/**
 * Fewest on-axis sizes of a variant a run measured for its own curve of that variant to stand
 * alone (a screen measures a variant at one or two sizes; a sweep at five or more): with fewer,
 * the earlier runs' sizes of it are carried over ({@linkcode poolMeasurements}).
 */
export const MIN_OWN_AXIS_POINTS = 3;

/** What a run is, for deciding whether to pool with a report. */
export interface RunIdentity {
  readonly fingerprint: string;
  readonly mode: string;
  /**
   * Whether this run measures with the code the earlier report's commit measured with
   * (`calibrate/checkout.ts` `measuresAs`); null when unknown (no commit, no git, imported by URL).
   */
  readonly measuresAsEarlier: boolean | null;
  /** The run's driver settings (`calibrate/machine.ts` `driverSettings`); null when unknown. */
  readonly driverEnv: Readonly<Record<string, string>> | null;
  /** `Deno.version.deno`: its V8 compiles the js and wasm kernels, its wgpu runs WebGPU's. */
  readonly denoVersion: string;
}

/**
 * Why this run may not pool with `earlier`, or null when it may.
 *
 * @param earlier The report the run replaces.
 * @param run This run.
 * @returns The reason, or null.
 * @example
 * ```ts ignore
 * import { poolRefusal } from "./pool.ts";
 * import { loadReport } from "../reports/load.ts";
 * const earlier = await loadReport("reports/llvmpipe-vulkan-x86_64-1ec2aa7f.json");
 * const run = {
 *   fingerprint: earlier.fingerprint, mode: "default", denoVersion: earlier.provenance.denoVersion,
 *   measuresAsEarlier: null, driverEnv: {},
 * };
 * console.log(poolRefusal(earlier, run)); // "whether it was measured by this checkout's kernels …"
 * ```
 */
export function poolRefusal(earlier: Report, run: RunIdentity): string | null {
  const p = earlier.provenance;
  if (earlier.fingerprint !== run.fingerprint) return "it is of another machine or adapter";
  if ((p.mode ?? (p.quick ? "quick" : "default")) !== run.mode) {
    return `it was calibrated in another mode (${p.mode ?? "unknown"})`;
  }
  if (!p.complete || p.stopReason !== "finished") return "it is not a complete, finished run";
  if (p.denoVersion !== run.denoVersion) {
    return `it ran on Deno ${p.denoVersion}, this run on ${run.denoVersion}, whose V8 and wgpu ` +
      `may run the kernels differently`;
  }
  if (run.measuresAsEarlier === null) {
    return "whether it was measured by this checkout's kernels and runners is unknown (no gpucal " +
      "commit, or no git to compare it with)";
  }
  if (!run.measuresAsEarlier) {
    return `its gpucal commit (${earlier.gpucal.commit?.slice(0, 7)}) measured with other ` +
      `kernels or runners than this checkout's`;
  }
  return settingsDifference(run.driverEnv, p.driverEnv);
}

/**
 * How two runs' driver settings differ, in words, or null when they are the same (but for those
 * the fingerprint tells apart: `calibrate/machine.ts` `configurationSettings`). A report made
 * before gpucal recorded them (`theirs` undefined) is taken as made in the default configuration,
 * so it pools only with a run that sets nothing the fingerprint does not already tell apart; the
 * disagreement check ({@linkcode disagreeingBackends}) stands behind that guess.
 */
function settingsDifference(
  mine: Readonly<Record<string, string>> | null,
  theirs: Readonly<Record<string, string>> | undefined,
): string | null {
  if (mine === null) {
    return "this run's driver settings are unknown (no permission to read the environment), so " +
      "it may measure another configuration";
  }
  const differing = describeSettingsDifference(mine, theirs, ["this run", "it"]);
  if (differing === null) return null;
  if (theirs === undefined) return `it does not record its driver settings (${differing})`;
  return `it ran with other driver settings (${differing})`;
}

/**
 * How far apart two runs of one backend typically are, as a factor (the median over their shared
 * cases of |ln(this / earlier)|), beyond which they measured different states of the machine.
 * Default calibrations of a 2-vCPU AMD EPYC VM (seven pairs of six runs over two sessions, at
 * nearby commits) were typically ×1.09–1.23 apart on the CPU backends and ×1.12–1.21 on
 * device-resident WebGPU, although a tenth to a quarter of their cases were more than ×1.5 apart; a quick run with `LP_NUM_THREADS=1` against one without was ×1.51 apart on
 * device-resident WebGPU (small dispatches ×2 faster on one thread, 255³ matmul ×3.1 slower) while
 * their wasm, unchanged, was ×1.31 (a quick run's windows are short).
 */
export const MAX_TYPICAL_DISAGREEMENT = 1.35;
/**
 * Fewest shared cases a residency's disagreement is judged on (a quick run's `add` has four sizes);
 * with fewer, it pools.
 */
const MIN_CASES_JUDGED = 4;

/**
 * A backend whose two runs disagree more than runs of one machine state do, and in which residency.
 *
 * @example
 * ```ts
 * import type { BackendDisagreement } from "./pool.ts";
 * const d: BackendDisagreement = {
 *   backend: "webgpu", residency: "device-resident", cases: 12, typicalFactor: 1.67,
 * };
 * ```
 */
export interface BackendDisagreement {
  readonly backend: Backend;
  readonly residency: Residency;
  /** The cases of this residency both runs measured ok. */
  readonly cases: number;
  /** exp(median |ln(this run's median / the earlier one's)|) over those cases. */
  readonly typicalFactor: number;
}

/**
 * The backends with a residency whose shared cases (both runs ok) sit typically more than
 * {@linkcode MAX_TYPICAL_DISAGREEMENT} apart: a driver setting, the machine's load or its clocks
 * changed between the runs, and averaging them would describe neither. Judged per residency (an
 * end-to-end WebGPU time is mostly the ~12 ms readback, which hides a changed device) on at least
 * four shared cases; a backend appears once, with its most disagreeing residency.
 *
 * @param measurements This run's measurements.
 * @param earlier The replaced report's measurements.
 * @returns The disagreeing backends, in the order they first appear.
 * @example
 * ```ts
 * import { disagreeingBackends } from "./pool.ts";
 * console.log(disagreeingBackends([], [])); // []
 * ```
 */
export function disagreeingBackends(
  measurements: readonly Measurement[],
  earlier: readonly Measurement[],
): BackendDisagreement[] {
  const worst = new Map<Backend, BackendDisagreement>();
  for (const { backend, residency, r } of sharedLnRatios(measurements, earlier).values()) {
    if (r.length < MIN_CASES_JUDGED) continue;
    const typicalFactor = Math.exp(median(r.map(Math.abs)));
    if (typicalFactor <= MAX_TYPICAL_DISAGREEMENT) continue;
    if ((worst.get(backend)?.typicalFactor ?? 0) < typicalFactor) {
      worst.set(backend, { backend, residency, cases: r.length, typicalFactor });
    }
  }
  return [...worst.values()];
}

/**
 * Per backend and residency (`backend|residency`), ln of how much slower this run ran its cases
 * than the earlier report ran the same ones: the median over their shared cases (both ok), 0 with
 * fewer than four. The host's state moves whole backends between runs (on the 2-vCPU AMD EPYC VM,
 * by σ ≈ 10 % of ln time), and a pool averaged over states is no run's: priced from a four-run
 * pool, the tiny-64m int4 decode of a calm fifth run was estimated −19 % and the same run's
 * `bench:regret` truths 8–11 % faster than predicted on the CPU backends.
 *
 * @param measurements This run's measurements.
 * @param earlier The replaced report's measurements.
 * @returns The shifts by `backend|residency`.
 * @example
 * ```ts
 * import { levelShifts } from "./pool.ts";
 * console.log(levelShifts([], []).size); // 0
 * ```
 */
export function levelShifts(
  measurements: readonly Measurement[],
  earlier: readonly Measurement[],
): Map<string, number> {
  const shifts = new Map<string, number>();
  for (const [key, { r }] of sharedLnRatios(measurements, earlier)) {
    if (r.length >= MIN_CASES_JUDGED) shifts.set(key, median(r));
  }
  return shifts;
}

/** A measurement's backend and residency, the key of {@linkcode sharedLnRatios}. */
function levelKey(m: Measurement): string {
  return `${m.backend}|${m.residency}`;
}

/**
 * ln(this run's median / the earlier one) of every case both measured (both ok), grouped by
 * backend and residency ({@linkcode levelKey}).
 */
function sharedLnRatios(
  measurements: readonly Measurement[],
  earlier: readonly Measurement[],
): Map<string, { backend: Backend; residency: Residency; r: number[] }> {
  const before = new Map(earlier.map((m) => [measurementKey(m), m]));
  const groups = new Map<string, { backend: Backend; residency: Residency; r: number[] }>();
  for (const m of measurements) {
    const old = before.get(measurementKey(m));
    if (m.state !== "ok" || old?.state !== "ok") continue;
    const key = levelKey(m);
    const group = groups.get(key) ?? { backend: m.backend, residency: m.residency, r: [] };
    group.r.push(Math.log(m.wall.median / old.wall.median));
    groups.set(key, group);
  }
  return groups;
}

/** A measurement with every time multiplied by `f` and its rates divided by it. */
function scaledBy(m: Measurement, f: number): Measurement {
  if (m.state !== "ok" || f === 1) return m;
  return {
    ...m,
    wall: scaledStats(m.wall, f),
    ...(m.gpu ? { gpu: scaledStats(m.gpu, f) } : {}),
    gflops: m.gflops / f,
    gbps: m.gbps / f,
  };
}

/**
 * This run's measurements, each case that `earlier` also measured (same op, dtype, backend,
 * variant, residency and shape, both ok) at the geometric mean of the two medians, the earlier one
 * first brought to this run's level ({@linkcode levelShifts}): the pool averages what the runs
 * measured of each case against the others, at the host state this run found. This run weighs
 * 1/(n + 1) against an earlier median that pooled n runs (n at most
 * {@linkcode MAX_EARLIER_WEIGHT}). The window statistics are this run's, scaled to the pooled
 * median; its confidence half-width is at least half the two medians' disagreement. Cases only
 * this run measured, and every case of a backend whose runs disagree
 * ({@linkcode disagreeingBackends}), stay as this run measured them.
 *
 * A variant whose axis the earlier runs swept and this run did not (fewer than
 * {@linkcode MIN_OWN_AXIS_POINTS} of its on-axis sizes measured, in a job — op, dtype, backend,
 * residency — this run measured) keeps the earlier runs' cases this run lacks, carried over as
 * they were and marked `carriedOver` (once: a case the earlier report itself carried is dropped).
 * Without it, a run whose screen picked another variant on a noisy moment dropped the axis the
 * earlier runs had measured of the one they found fastest: on the AMD VM, a fourth default run
 * screened device-resident softmax f32 at wg=256 (32 × 16384 at 4.55 ms pooled, against 4.43 for
 * wg=64), swept only wg=256 (×1.7–3.4 slower at small sizes), and its report priced wg=64 through
 * the ratio of the two: 32 × 100 predicted 0.79 ms against 0.23 measured. A variant this run swept
 * keeps its own sizes only (the report describes the machine as its latest run found it, pooled
 * where the runs overlap, at its level), and jobs this run left out stay out (its scope is what it
 * replaces).
 *
 * @param measurements This run's measurements.
 * @param earlier The replaced report's measurements.
 * @returns The measurements, how many were pooled and how many carried over.
 * @example
 * ```ts
 * import { poolMeasurements } from "./pool.ts";
 * const { measurements, pooled, carried } = poolMeasurements([], []);
 * console.log(measurements.length, pooled, carried); // 0 0 0
 * ```
 */
export function poolMeasurements(
  measurements: readonly Measurement[],
  earlier: readonly Measurement[],
): { measurements: Measurement[]; pooled: number; carried: number } {
  const before = new Map(earlier.map((m) => [measurementKey(m), m]));
  const changed = new Set(disagreeingBackends(measurements, earlier).map((d) => d.backend));
  const mine = new Set(measurements.map(measurementKey));
  const jobs = new Set(measurements.map(jobOf));
  const ownAxis = axisPointsBySeries(measurements);
  const shifts = levelShifts(measurements, earlier);
  const shiftOf = (m: Measurement) => shifts.get(levelKey(m)) ?? 0;
  const carriedOver = earlier
    .filter((m) =>
      m.state === "ok" && !m.carriedOver && !changed.has(m.backend) && jobs.has(jobOf(m)) &&
      (ownAxis.get(seriesOf(m)) ?? 0) < MIN_OWN_AXIS_POINTS && !mine.has(measurementKey(m))
    )
    .map((m): Measurement => ({ ...scaledBy(m, Math.exp(shiftOf(m))), carriedOver: true }));
  let pooled = 0;
  const out = measurements.map((m): Measurement => {
    const old = before.get(measurementKey(m));
    if (m.state !== "ok" || old?.state !== "ok" || changed.has(m.backend)) return m;
    const n = Math.min(old.runs ?? 1, MAX_EARLIER_WEIGHT);
    const lnNew = Math.log(m.wall.median);
    const lnOld = Math.log(old.wall.median) + shiftOf(m);
    const median = Math.exp((lnNew + n * lnOld) / (n + 1));
    const scaled = scaledBy(m, median / m.wall.median);
    if (scaled.state !== "ok") return scaled;
    const disagreement = median * Math.expm1(Math.abs(lnNew - lnOld) / 2);
    const ciHalfWidth = Math.max(scaled.wall.ciHalfWidth, disagreement);
    pooled++;
    return {
      ...scaled,
      wall: { ...scaled.wall, ciHalfWidth, relCi: ciHalfWidth / median },
      runs: (old.runs ?? 1) + 1,
    };
  });
  return { measurements: [...out, ...carriedOver], pooled, carried: carriedOver.length };
}

/** The job a measurement belongs to, with its residency: op, dtype, backend, residency. */
function jobOf(m: Measurement): string {
  return `${m.op}|${m.dtype}|${m.backend}|${m.residency}`;
}

/** The series of a measurement: its job and variant. */
function seriesOf(m: Measurement): string {
  return `${jobOf(m)}|${m.variant}`;
}

/** How many ok on-axis sizes each series has. */
function axisPointsBySeries(measurements: readonly Measurement[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of measurements) {
    if (m.state !== "ok" || m.offAxis) continue;
    counts.set(seriesOf(m), (counts.get(seriesOf(m)) ?? 0) + 1);
  }
  return counts;
}

/**
 * Sample statistics with every time multiplied by `f` (their relative spread kept).
 *
 * @param s The statistics.
 * @param f The factor.
 * @returns The scaled statistics.
 * @example
 * ```ts
 * import { scaledStats } from "./pool.ts";
 * const s = { n: 5, median: 2, p10: 1, p90: 3, mad: 0.5, min: 1, max: 3, ciHalfWidth: 0.4, relCi: 0.2 };
 * console.log(scaledStats(s, 2).median, scaledStats(s, 2).relCi); // 4 0.2
 * ```
 */
export function scaledStats(s: SampleStats, f: number): SampleStats {
  return {
    ...s,
    median: s.median * f,
    p10: s.p10 * f,
    p90: s.p90 * f,
    mad: s.mad * f,
    min: s.min * f,
    max: s.max * f,
    ciHalfWidth: s.ciHalfWidth * f,
  };
}
