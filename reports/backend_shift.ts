/**
 * Whether a backend as a whole got slower or faster between two runs of one machine, judged
 * against the rest of the machine rather than figure by figure.
 *
 * On a shared or virtual machine the host speeds up and slows down by tens of percent from one
 * minute to the next, and that hits every backend that runs on the CPU (and a software adapter
 * such as lavapipe) alike. Judged one at a time against that drift, thirty figures of one backend
 * that all moved −50 % are each "within noise". Here each backend's figures are pooled into one
 * estimate (the median change of the times it measured at the sizes both runs share), and the
 * common-mode change of the *other* backends over the same runs (measured round-robin with it,
 * size by size) is taken off it: what is left is the backend's own change, tested as one hypothesis with its own
 * false-alarm rate. Pure.
 *
 * @example
 * ```ts ignore
 * import { backendShifts } from "./backend_shift.ts";
 * for (const s of backendShifts(baseline, current)) console.log(s.backend, s.note);
 * ```
 *
 * @module
 */
import { median, robustSigma } from "../core/stats.ts";
import type { Backend, Dtype, Residency } from "../kernels/types.ts";
import type { Measurement, Report } from "../core/schema.ts";

/** z of the backend-wide test: two-sided 99 %, as several backends are tested at once. */
export const BACKEND_Z = 2.576;

/**
 * A point carries its backend's speed when the work is at least this share of its time in both
 * runs: below it, the series' fixed cost (Deno's ~11 ms WebGPU synchronisation, a call's
 * overhead) carries the time, and that moves with other things than the backend's speed.
 */
const WORK_SHARE = 0.5;

/** Fewest points from which a backend's change is estimated. */
const MIN_POINTS = 2;

/** Fewest probes from which a backend's drift against the others is estimated. */
const MIN_PROBES = 3;

/**
 * Fewest probes whose σ enters a backend's test: from fewer, σ is too uncertain to use (from 3
 * probes its 90 % interval spans ×0.5 to ×4.4 of the true σ; a quick run of two ops takes 2–3,
 * and one odd probe made a σ of 0.35 that hid a +57 % slowdown). The spread between the points
 * and the references still carry the noise then.
 */
const MIN_DRIFT_PROBES = 5;

/** Standard error of a sample median relative to that of a mean, for normal data: √(π/2). */
const MEDIAN_EFFICIENCY = 1.2533;

/** z of the within-run 95 % intervals the measurements carry. */
const Z95 = 1.96;

const BACKENDS: readonly Backend[] = ["webgpu", "wasm", "wasm-mt", "js"];

/**
 * The common-mode change of a run against the baseline, as the other backends saw it.
 *
 * @example
 * ```ts
 * import type { HostReference } from "./backend_shift.ts";
 * const r: HostReference = { backends: ["wasm", "js"], logShift: 0.2, se: 0.05 };
 * console.log(Math.exp(r.logShift) - 1); // the host was about 22 % slower
 * ```
 */
export interface HostReference {
  /** The backends whose figures set the reference. */
  readonly backends: readonly Backend[];
  /** ln of their common time change. */
  readonly logShift: number;
  /** Standard error of `logShift`, ln units. */
  readonly se: number;
}

/**
 * One measured point both runs share: its times and how much it moved.
 *
 * @example
 * ```ts
 * import type { PointChange } from "./backend_shift.ts";
 * const slower = (p: PointChange) => p.ownLogChange > 0;
 * ```
 */
export interface PointChange {
  /** What was measured, e.g. `"matmul f32 device-resident at 111"` (the backend is implied). */
  readonly key: string;
  /** Catalog op. */
  readonly op: string;
  /** The backend. */
  readonly backend: Backend;
  /** Size on the op's axis. */
  readonly size: number;
  /** Median ms per run in the baseline (best variant at this size). */
  readonly baselineMs: number;
  /** Median ms per run in the current report. */
  readonly currentMs: number;
  /** ln(current / baseline) of the time: positive is slower. */
  readonly logChange: number;
  /** What it was judged against; null when on absolute times. */
  readonly reference: HostReference | null;
  /** `logChange` less the reference's: the backend's own change at this point. */
  readonly ownLogChange: number;
}

/**
 * The verdict on one backend as a whole.
 *
 * @example
 * ```ts
 * import type { BackendShift } from "./backend_shift.ts";
 * const names = (s: BackendShift) => s.carriers.map((p) => p.key);
 * ```
 */
export interface BackendShift {
  /** The backend. */
  readonly backend: Backend;
  /** Every point pooled, in the baseline's order, with the reference each was judged against. */
  readonly points: readonly PointChange[];
  /** The backend's own time change `exp(median own ln change) - 1`: positive is slower. */
  readonly change: number;
  /** 99 % interval of `change`. */
  readonly ci: readonly [number, number];
  /** The median own ln change over its standard error. */
  readonly z: number;
  /** The standard error of the median own ln change, ln units. */
  readonly se: number;
  /** The backend's drift during a run (σ of ln time) that entered the standard error. */
  readonly drift: { readonly sigma: number } | null;
  /** The change exceeds the tolerance and its 99 % interval excludes no change. */
  readonly beyondNoise: boolean;
  /** Beyond noise and slower. */
  readonly regressed: boolean;
  /** The points that moved the verdict's way by more than the tolerance, largest first. */
  readonly carriers: readonly PointChange[];
  /** How the verdict was reached, in words. */
  readonly note: string;
}

/**
 * Options of {@linkcode backendShifts}.
 *
 * @example
 * ```ts
 * import type { BackendShiftOptions } from "./backend_shift.ts";
 * const o: BackendShiftOptions = { tolerance: 0.1 };
 * ```
 */
export interface BackendShiftOptions {
  /** Relative change a backend must exceed to count; 0.1 by default. */
  readonly tolerance?: number;
}

function percent(x: number): string {
  return `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} %`;
}

function sizeWords(size: number): string {
  return Number.isInteger(size) ? String(size) : size.toPrecision(3);
}

/**
 * The backends whose speed follows the host's in both reports: the CPU backends, and WebGPU when
 * the adapter is a software one running on the same CPU (lavapipe, SwiftShader, WARP).
 */
function hostBound(baseline: Report, current: Report): Set<Backend> {
  const software = baseline.adapter?.software === true && current.adapter?.software === true;
  return new Set(BACKENDS.filter((b) => b !== "webgpu" || software));
}

/**
 * A point before its reference is known: the within-run σ of its ln change, and whether the
 * backend's work carries its time in both reports.
 */
type Paired = Omit<PointChange, "reference" | "ownLogChange"> & {
  readonly dtype: string;
  readonly residency: string;
  readonly withinSigma: number;
  readonly worked: boolean;
};

/**
 * One series: what a backend measured, in which dtype and residency.
 *
 * @example
 * ```ts
 * import type { SeriesKey } from "./backend_shift.ts";
 * const s: SeriesKey = { op: "add", dtype: "f32", backend: "wasm", residency: "end-to-end" };
 * ```
 */
export interface SeriesKey {
  readonly op: string;
  readonly dtype: Dtype;
  readonly backend: Backend;
  readonly residency: Residency;
}

/** A measured shape's best (lowest median) measurement, and how it is named. */
interface ShapePoint {
  readonly label: string;
  readonly size: number;
  readonly wall: Timing;
  /** GPU timestamps of the same runs, when the device has them. */
  readonly gpu?: Timing;
}

/** A median time and its relative 95 % half-width. */
interface Timing {
  readonly median: number;
  readonly relCi: number;
}

/** How a shape is named in a point's key: its axis size, or its dimensions when off the axis. */
function shapeLabel(m: Measurement): string {
  if (m.offAxis !== true) return sizeWords(m.size);
  return Object.entries(m.shape).map(([d, v]) => `${d}=${v}`).join(" ");
}

/**
 * The best variant's measurement at each shape one series measured, on the op's axis and off it
 * (a non-square matmul, a gemv with rows ≠ cols): a kernel that got slower is slower at every
 * shape, and the off-axis shapes are often the largest work a quick run times.
 */
function bestPerShape(measurements: readonly Measurement[], s: SeriesKey): Map<string, ShapePoint> {
  const wanted: Residency = s.backend === "webgpu" ? s.residency : "end-to-end";
  const best = new Map<string, ShapePoint>();
  for (const m of measurements) {
    if (
      m.state !== "ok" || m.op !== s.op || m.dtype !== s.dtype || m.backend !== s.backend ||
      m.residency !== wanted
    ) continue;
    const label = shapeLabel(m);
    const prev = best.get(label);
    if (!prev || m.wall.median < prev.wall.median) {
      best.set(label, { label, size: m.size, wall: m.wall, ...(m.gpu ? { gpu: m.gpu } : {}) });
    }
  }
  return best;
}

/**
 * Every point of one series both reports measured: the best variant's median at each shared
 * shape; `worked` when its time is at least twice the series' smallest (its fixed cost) in both
 * reports.
 */
function seriesPoints(baseline: Report, current: Report, s: SeriesKey): Paired[] {
  const { op, dtype, backend, residency } = s;
  const base = bestPerShape(baseline.measurements, s);
  const cur = bestPerShape(current.measurements, s);
  const timing = timingOf(s, [...base.values(), ...cur.values()]);
  const time = (p: ShapePoint) => timing(p).median;
  const floor = (ms: Map<string, ShapePoint>) => Math.min(...[...ms.values()].map(time));
  const [baseFloor, curFloor] = [floor(base), floor(cur)];
  const out: Paired[] = [];
  for (const b of base.values()) {
    const c = cur.get(b.label);
    if (c === undefined || !(time(b) > 0 && time(c) > 0)) continue;
    const worked = time(b) * (1 - WORK_SHARE) >= baseFloor &&
      time(c) * (1 - WORK_SHARE) >= curFloor;
    out.push({
      key: `${op} ${dtype} ${residency} at ${b.label}`,
      op,
      dtype,
      residency,
      worked,
      backend,
      size: b.size,
      baselineMs: time(b),
      currentMs: time(c),
      logChange: Math.log(time(c) / time(b)),
      withinSigma: Math.hypot(timing(b).relCi, timing(c).relCi) / Z95,
    });
  }
  return out;
}

/**
 * How a series' points are timed: a device-resident WebGPU series by its GPU timestamps when
 * every point of both reports has them, else by the wall clock. Device-resident is the device's
 * work, and the wall clock adds the host's fixed cost of each dispatch, which a slower device
 * does not change: lavapipe on one thread moved the GPU time of matmul 1×1024×1024 ×1.4–2.1 in
 * ten quick runs, its wall time from ×1.1.
 */
function timingOf(s: SeriesKey, points: readonly ShapePoint[]): (p: ShapePoint) => Timing {
  const byGpu = s.backend === "webgpu" && s.residency === "device-resident" &&
    points.every((p) => p.gpu !== undefined && p.gpu.median > 0);
  return byGpu ? (p) => p.gpu! : (p) => p.wall;
}

/** Every point of one backend both reports measured, series by series ({@linkcode seriesPoints}). */
function pointsOf(baseline: Report, current: Report, backend: Backend): Paired[] {
  const series = new Map(
    baseline.measurements.filter((m) => m.backend === backend && m.state === "ok")
      .map((m) => [`${m.op} ${m.dtype} ${m.residency}`, m] as const),
  );
  return [...series.values()].flatMap(({ op, dtype, residency }) =>
    seriesPoints(baseline, current, { op, dtype, backend, residency })
  );
}

/**
 * The points of one series that moved slower than the tolerance against the host: where its
 * work carries the time in both reports (the fixed cost below that moves with other things),
 * the time's change less the host reference's, above ln(1 + tolerance). A kernel that got slower
 * shows at each size its work carries; a single measurement that strayed (a burst of other work
 * on a shared machine, a run stopped mid-measurement) shows at one.
 *
 * @param baseline The baseline report.
 * @param current The current report of the same machine.
 * @param series The series: op, dtype, backend and residency.
 * @param options The tolerance (default 10 %).
 * @returns The slowed points, in the baseline's order of sizes, with their own change.
 * @example
 * ```ts ignore
 * import { slowedPoints } from "./backend_shift.ts";
 * const series = { op: "matmul", dtype: "f32", backend: "wasm", residency: "end-to-end" } as const;
 * const slowed = slowedPoints(baseline, current, series);
 * if (slowed.length === 1) console.log(`only ${slowed[0]!.key} moved: a stray measurement?`);
 * ```
 */
export function slowedPoints(
  baseline: Report,
  current: Report,
  series: SeriesKey,
  options: BackendShiftOptions = {},
): PointChange[] {
  const limit = Math.log(1 + (options.tolerance ?? 0.1));
  const reference = hostReferences(baseline, current).reference(series.backend);
  return seriesPoints(baseline, current, series).filter((p) => p.worked)
    .map((p) => judgedAgainst(p, reference)).filter((p) => p.ownLogChange > limit);
}

/** A matched point as judged against a host reference (null: on absolute times). */
function judgedAgainst(p: Paired, reference: HostReference | null): PointChange {
  return {
    key: p.key,
    op: p.op,
    backend: p.backend,
    size: p.size,
    baselineMs: p.baselineMs,
    currentMs: p.currentMs,
    logChange: p.logChange,
    reference,
    ownLogChange: p.logChange - (reference?.logShift ?? 0),
  };
}

/**
 * The common-mode frame of two reports: every work-dominated point both measured, and the
 * references a backend's change is judged against.
 */
class CommonMode implements HostFrame {
  readonly #bound: ReadonlySet<Backend>;
  /** Every matched point. */
  readonly #all: readonly Paired[];
  /** The work-dominated ones, which carry a backend's speed. */
  readonly #points: readonly Paired[];
  readonly #levels = new Map<Backend, { level: number; se: number }>();

  constructor(baseline: Report, current: Report) {
    this.#bound = hostBound(baseline, current);
    this.#all = BACKENDS.flatMap((b) => pointsOf(baseline, current, b));
    this.#points = this.#all.filter((p) => p.worked);
    for (const backend of BACKENDS) {
      const mine = this.#points.filter((p) => p.backend === backend);
      if (mine.length < MIN_POINTS) continue;
      this.#levels.set(backend, {
        level: median(mine.map((p) => p.logChange)),
        se: MEDIAN_EFFICIENCY * spread(
          mine.map((p) => p.logChange),
          mine.map((p) => p.withinSigma),
        ) /
          Math.sqrt(mine.length),
      });
    }
  }

  /** Whether the host's speed sets this backend's speed in both reports. */
  hostBound(backend: Backend): boolean {
    return this.#bound.has(backend);
  }

  /** The pooled points of one backend, with the reference each is judged against. */
  pointsOf(backend: Backend): PointChange[] {
    const reference = this.reference(backend);
    return this.#points.filter((p) => p.backend === backend)
      .map((p) => judgedAgainst(p, reference));
  }

  pointNoise(
    backend: Backend,
    at: { op: string; dtype: string; residency: string; size: number },
  ): number {
    const mine = this.#all.filter((p) => p.backend === backend);
    const here = mine.find((p) =>
      p.op === at.op && p.dtype === at.dtype && p.size === at.size &&
      (backend !== "webgpu" || p.residency === at.residency)
    );
    const regime = here === undefined ? mine : mine.filter((p) => p.worked === here.worked);
    const sample = regime.length >= MIN_PROBES ? regime : mine;
    if (sample.length === 0) return 0;
    // The spread of the changes is that of a difference of two runs: one run's is 1/√2 of it.
    const changes = sample.map((p) => p.logChange);
    return Math.max(
      spread(changes, sample.map((p) => p.withinSigma)),
      tailSigma(withinSeries(sample)),
    ) / Math.SQRT2;
  }

  /**
   * What a figure of `backend` is judged against, by how many cores it uses (wasm and js run on
   * one; wasm-mt and a software adapter on all):
   * - a one-core backend: the other one-core backends' common change over the run (the median of
   *   their median changes), or every other host-bound backend's when it is the only one;
   * - an all-core backend: the one-core backends' change, plus how far the host's other cores
   *   moved another all-core backend against it ({@linkcode coreMove}).
   * Null when the backend is not host-bound or no other backend was measured.
   *
   * By cores, because a shared VM's second core comes and goes on its own: in 5 of 17 clean
   * back-to-back quick runs of a 2-vCPU VM, wasm-mt's threaded sizes and lavapipe ran 1.3–2×
   * slower for the whole run while wasm and js did not move. Judged against all the others, the
   * one-core backends then looked 26 % slower "against the host" when they had not moved. The
   * price: a change that slows both one-core backends alike (V8 as a whole) cancels out.
   *
   * Over the run, not at the figure's own moment: on a 2-core VM shared with other work, how far
   * a point strayed from its backend's run-wide change and how far the other backends measured
   * with it (same op and size, round-robin in the same seconds) strayed were uncorrelated
   * (r = 0.04 over 205 points of 9 back-to-back pairs), so correcting by the latter only added
   * their noise; the backends' run-wide changes moved together (r = 0.61 over 36).
   */
  reference(backend: Backend): HostReference | null {
    if (!this.#bound.has(backend)) return null;
    const bound = [...this.#levels].filter(([b]) => b !== backend && this.#bound.has(b));
    const oneCore = bound.filter(([b]) => threadsOf(b) === "one");
    const own = this.#levels.get(backend);
    if (threadsOf(backend) === "one" || own === undefined || oneCore.length === 0) {
      return commonChange(oneCore.length > 0 && threadsOf(backend) === "one" ? oneCore : bound);
    }
    const host = commonChange(oneCore)!;
    const shared = bound.filter(([b]) => threadsOf(b) === "all")
      .map(([b, l]) => ({
        backend: b,
        level: l,
        common: coreMove(own.level, l.level, host.logShift),
      }))
      .filter((p) => p.common !== 0)
      .sort((a, b) => Math.abs(a.common) - Math.abs(b.common))[0];
    if (shared === undefined) return host;
    return {
      backends: [...host.backends, shared.backend],
      logShift: host.logShift + shared.common,
      se: Math.hypot(host.se, shared.level.se),
    };
  }
}

/** The median change of some backends' levels, with its standard error; null for none. */
function commonChange(
  levels: readonly (readonly [Backend, { level: number; se: number }])[],
): HostReference | null {
  if (levels.length === 0) return null;
  const k = levels.length;
  const se = Math.sqrt(levels.reduce((s, [, l]) => s + l.se ** 2, 0)) / k;
  return {
    backends: levels.map(([b]) => b),
    logShift: median(levels.map(([, l]) => l.level)),
    se: k >= 3 ? se * MEDIAN_EFFICIENCY : se,
  };
}

/**
 * How far the host's other cores moved an all-core backend, as a second all-core backend saw it,
 * ln units against the one-core host: the partner's whole move when it moved no more than this
 * backend did; when it moved more, only what the two share (the smaller move when both went the
 * same way, else nothing). Losing the second core moves both; a regression of the partner moves
 * the partner alone, and must not make this backend look faster.
 */
function coreMove(level: number, partner: number, host: number): number {
  const [a, b] = [level - host, partner - host];
  if (Math.abs(b) <= Math.abs(a)) return b;
  return Math.sign(a) === Math.sign(b) ? Math.sign(a) * Math.min(Math.abs(a), Math.abs(b)) : 0;
}

/**
 * Whether a backend runs on one core or on all of them (wasm-mt's workers; a software adapter's
 * threads, which only WebGPU among host-bound backends can be).
 */
function threadsOf(backend: Backend): "one" | "all" {
  return backend === "wasm-mt" || backend === "webgpu" ? "all" : "one";
}

/**
 * The σ a normal distribution would need for its 90th percentile of |deviation| to be the
 * sample's (deviations from each point's series, {@linkcode withinSeries}): on a shared 2-vCPU VM one backend's points move little between two runs but one in
 * ten moves far (wasm-mt at 21 619 elements ×0.71 then ×1.51 in consecutive clean quick runs,
 * where the robust σ of its points was 0.03), so a single point is judged by the tail. 0 for
 * fewer than five changes, where no tail can be read.
 */
function tailSigma(changes: readonly number[]): number {
  if (changes.length < 5) return 0;
  const deviations = changes.map((c) => Math.abs(c)).sort((a, b) => a - b);
  const at = 0.9 * (deviations.length - 1);
  const lo = Math.floor(at);
  const p90 = deviations[lo]! +
    (deviations[Math.min(lo + 1, deviations.length - 1)]! - deviations[lo]!) * (at - lo);
  return p90 / Z90;
}

/**
 * Each point's ln change less its series' median change (a series' only point: less the median
 * of them all): how far single points strayed from what their series did. A kernel that got slower moves its whole
 * series, which is a change to detect, not a point's noise.
 */
function withinSeries(points: readonly Paired[]): number[] {
  const key = (p: Paired) => `${p.op} ${p.dtype} ${p.residency}`;
  const centres = new Map<string, number>();
  for (const k of new Set(points.map(key))) {
    const mine = points.filter((p) => key(p) === k);
    if (mine.length >= 2) centres.set(k, median(mine.map((p) => p.logChange)));
  }
  const overall = points.length > 0 ? median(points.map((p) => p.logChange)) : 0;
  return points.map((p) => p.logChange - (centres.get(key(p)) ?? overall));
}

/** z of a normal's 90th percentile of |x|: P(|x| ≤ 1.645 σ) = 0.9. */
const Z90 = 1.645;

/**
 * The σ of a set of ln changes: their robust spread, at least the typical within-run σ (a handful
 * of points can agree by chance).
 */
function spread(changes: readonly number[], withinSigmas: readonly number[]): number {
  return Math.max(robustSigma(changes), median(withinSigmas));
}

/**
 * A backend's drift during one run (its probes' `driftSigma`, σ of ln time) and how many probes
 * it comes from; null without it or from fewer than {@linkcode MIN_DRIFT_PROBES} probes.
 *
 * Its own drift, not its drift against the other backends: per probe, a backend's time less the
 * median of the others' carries the others' noise too, and on a 2-core VM shared with other work
 * that made a steady backend's σ 0.4–0.85 where its own was 0.02–0.18 and its level moved by
 * σ ≈ 0.12 between back-to-back quick runs. The other backends' noise reaches the estimate
 * through its references, point by point, and is in the spread between the points.
 */
function ownDrift(report: Report, backend: Backend): { sigma: number; probes: number } | null {
  const sigma = report.stability?.driftSigma[backend];
  if (sigma === undefined) return null;
  const probes = report.stability!.probes.filter((p) => p.ms[backend] !== undefined).length;
  if (probes < MIN_DRIFT_PROBES) return null;
  return { sigma, probes };
}

/**
 * The drift term of a backend's standard error: the larger of the two runs' σ (both are of one
 * machine, and a σ from a handful of probes is itself uncertain), scaled to the difference of
 * two run averages, √(1/k₁ + 1/k₂) for k probes per run.
 */
function driftTerm(
  baseline: Report,
  current: Report,
  backend: Backend,
): { se: number; sigma: number } | null {
  const a = ownDrift(baseline, backend);
  const b = ownDrift(current, backend);
  if (a === null && b === null) return null;
  const sigma = Math.max(a?.sigma ?? 0, b?.sigma ?? 0);
  const ka = a?.probes ?? b!.probes;
  const kb = b?.probes ?? a!.probes;
  return { se: sigma * Math.sqrt(1 / ka + 1 / kb), sigma };
}

/**
 * What {@linkcode hostReferences} gives: the host reference of a figure, and how far a second run
 * of the machine moves one measured point.
 *
 * @example
 * ```ts ignore
 * import { hostReferences } from "./backend_shift.ts";
 * const frame = hostReferences(baseline, current);
 * console.log(frame.pointNoise("wasm", { op: "add", dtype: "f32", residency: "end-to-end", size: 16 }));
 * ```
 */
export interface HostFrame {
  /**
   * What a figure of `backend` is judged against: the other host-bound backends' common change
   * over the run; null for a backend the host's speed does not set (a hardware GPU) or when no
   * other backend was measured.
   */
  reference(backend: Backend): HostReference | null;
  /**
   * One run's σ of ln time of a backend's measured point, from how far the two reports' medians
   * of its points moved apart: the robust spread of their ln changes (at least their within-run
   * intervals) over √2, among the points of the same kind (work-dominated, or carried by a fixed
   * cost) as the one asked about. 0 when the backend has no matched point.
   */
  pointNoise(
    backend: Backend,
    at: { op: string; dtype: string; residency: string; size: number },
  ): number;
}

/**
 * The references figures of two reports are judged against (see {@linkcode backendShifts}).
 *
 * @param baseline The baseline report.
 * @param current The current report of the same machine.
 * @returns The frame: `reference(backend)` and `pointNoise(backend, at)`.
 * @example
 * ```ts ignore
 * import { hostReferences } from "./backend_shift.ts";
 * const ref = hostReferences(baseline, current).reference("wasm");
 * if (ref) console.log(`host ${((Math.exp(ref.logShift) - 1) * 100).toFixed(0)} % slower`);
 * ```
 */
export function hostReferences(baseline: Report, current: Report): HostFrame {
  return new CommonMode(baseline, current);
}

function carriersOf(points: readonly PointChange[], up: boolean, tolerance: number) {
  const limit = Math.log(1 + tolerance);
  return points.filter((p) => up ? p.ownLogChange > limit : p.ownLogChange < -limit)
    .sort((a, b) => Math.abs(b.ownLogChange) - Math.abs(a.ownLogChange));
}

function referenceWords(r: HostReference | null): string {
  return r === null
    ? "on absolute times"
    : `against ${r.backends.join(", ")} (host ${percent(Math.exp(r.logShift) - 1)} over the run)`;
}

function carrierWords(carriers: readonly PointChange[], of: number): string {
  const most = carriers.slice(0, 3).map((p) => `${p.key} ${percent(Math.exp(p.ownLogChange) - 1)}`);
  return `carried by ${carriers.length} of ${of} figures${
    most.length > 0 ? `, most by ${most.join(", ")}` : ""
  }`;
}

function judgeBackend(
  backend: Backend,
  points: readonly PointChange[],
  withinSigmas: readonly number[],
  drift: { se: number; sigma: number } | null,
  tolerance: number,
): BackendShift {
  const own = points.map((p) => p.ownLogChange);
  const shift = median(own);
  const reference = points[0]?.reference ?? null;
  const pointsSe = MEDIAN_EFFICIENCY * spread(own, withinSigmas) / Math.sqrt(points.length);
  const se = Math.hypot(pointsSe, reference?.se ?? 0, drift?.se ?? 0);
  const change = Math.exp(shift) - 1;
  const ci = [Math.exp(shift - BACKEND_Z * se) - 1, Math.exp(shift + BACKEND_Z * se) - 1] as const;
  const z = se > 0 ? shift / se : shift === 0 ? 0 : Math.sign(shift) * Infinity;
  const beyondNoise = Math.abs(z) > BACKEND_Z && Math.abs(change) > tolerance;
  const carriers = beyondNoise ? carriersOf(points, shift > 0, tolerance) : [];
  const driftNote = drift === null
    ? `no drift estimate (fewer than ${MIN_DRIFT_PROBES} probes): a run-wide drift of the backend is not allowed for`
    : `its run-to-run drift σ ${(drift.sigma * 100).toFixed(0)} %`;
  const head = `${percent(change)} time ${referenceWords(reference)} over ${points.length} ` +
    `figures, 99 % interval [${percent(ci[0])}, ${percent(ci[1])}]`;
  const note = beyondNoise
    ? `${head}: ${shift > 0 ? "slower" : "faster"} beyond noise; ${
      carrierWords(carriers, points.length)
    }`
    : `${head}: ${
      Math.abs(change) <= tolerance
        ? `within the ${percent(tolerance).slice(1)} tolerance`
        : `within noise (${driftNote})`
    }`;
  return {
    backend,
    points,
    change,
    ci,
    z,
    se,
    drift: drift === null ? null : { sigma: drift.sigma },
    beyondNoise,
    regressed: beyondNoise && shift > 0,
    carriers,
    note,
  };
}

/**
 * Tests each backend as a whole: did its times, at the sizes both reports measured and where
 * its work (not a fixed cost) carries the time, move together beyond noise?
 *
 * Each point's ln change is taken relative to the backend's host reference: the other
 * host-bound backends' common change over the run ({@linkcode hostReferences}). The estimate is
 * the median of those own changes. Its standard error adds in quadrature the spread between the
 * points (robust, over √n; at least their within-run intervals), the reference's own error, and
 * the backend's drift during a run (its `stability.driftSigma`, the larger of the two runs', times √(1/k₁ + 1/k₂) for k probes
 * per run: how well each run's probes pin down its level). A backend
 * moved beyond noise when the change exceeds the tolerance and its 99 % interval excludes zero;
 * slower is a regression, and the points that moved that way beyond the tolerance are named as
 * carrying it.
 *
 * @param baseline The baseline report.
 * @param current The current report of the same machine.
 * @param options The tolerance (default 10 %).
 * @returns One verdict per backend with at least two pooled points, in the order webgpu, wasm,
 * wasm-mt, js.
 * @example
 * ```ts ignore
 * import { backendShifts } from "./backend_shift.ts";
 * const slower = backendShifts(baseline, current).filter((s) => s.regressed);
 * for (const s of slower) console.log(s.backend, s.carriers.map((p) => p.key));
 * ```
 */
export function backendShifts(
  baseline: Report,
  current: Report,
  options: BackendShiftOptions = {},
): BackendShift[] {
  const tolerance = options.tolerance ?? 0.1;
  const frame = new CommonMode(baseline, current);
  const out: BackendShift[] = [];
  for (const backend of BACKENDS) {
    const paired = pointsOf(baseline, current, backend).filter((p) => p.worked);
    if (paired.length < MIN_POINTS) continue;
    out.push(judgeBackend(
      backend,
      frame.pointsOf(backend),
      paired.map((p) => p.withinSigma),
      driftTerm(baseline, current, backend),
      tolerance,
    ));
  }
  return out;
}
