/**
 * Noise-aware comparison of two calibration reports of the same machine: which crossovers,
 * effective rates and system figures moved, by how much, and whether the move is beyond noise;
 * which backends moved as a whole (`backend_shift.ts`); and which series the current report lost
 * (`coverage.ts`). A crossover moving in either direction is a regression (other programs decide
 * with it), unless it moved within a near-tie of its two backends (`near_tie.ts`); a rate falling
 * or a time rising is a regression, the opposite an improvement; a figure that disappeared is a
 * regression unless the current run's command skipped it. Rates and the host-bound system figures
 * are judged against the other backends' common change over the same runs, so a host that was
 * slower for the whole run does not read as a regression; their absolute values are shown. When
 * a report carries `stability` (the machine's measured run-to-run drift per backend), intervals
 * are widened by that drift, so a move another run of the same machine would also show is not
 * flagged.
 *
 * @example
 * ```ts ignore
 * import { compareReports } from "./compare.ts";
 * import { loadReport } from "./load.ts";
 * const result = compareReports(await loadReport("a.json"), await loadReport("b.json"));
 * console.log(result.regressed);
 * ```
 *
 * @module
 */
import { normalCdf, normalQuantile, roundSignificant } from "../core/numeric.ts";
import { median } from "../core/stats.ts";
import { bestPerSize } from "../calibrate/analyze.ts";
import { hostProbeMs } from "../calibrate/stability.ts";
import { describeSettingsDifference } from "../calibrate/machine.ts";
import { predictMs } from "../core/costmodel.ts";
import { OPS } from "../kernels/catalog.ts";
import type { Backend } from "../kernels/types.ts";
import {
  BACKEND_Z,
  type BackendShift,
  backendShifts,
  type HostFrame,
  type HostReference,
  hostReferences,
  slowedPoints,
} from "./backend_shift.ts";
import { type RunScope, runScope, seriesCoverage, skipReason } from "./coverage.ts";
import { nearTie, type Tie } from "./near_tie.ts";
import type { CostFit, Crossover, Figure, Interval, Report } from "../core/schema.ts";
import { pairLevelShift } from "./pair_level.ts";
import {
  type BracketCost,
  type ChoiceCost,
  interpolatedChoiceCost,
  type PointNoise,
  sides,
  thresholdChoiceCost,
} from "./threshold_cost.ts";

/** Default relative tolerance: a figure must move more than 10 % to count. */
export const DEFAULT_TOLERANCE = 0.10;

/** z for a two-sided 95 % interval, to turn a fit's log-space residual into an interval. */
const Z95 = 1.96;

/**
 * One compared figure.
 *
 * @example
 * ```ts
 * import type { ComparisonRow } from "./compare.ts";
 * function moved(r: ComparisonRow) { return r.beyondNoise; }
 * ```
 */
export interface ComparisonRow {
  /**
   * A crossover threshold, an effective rate, a machine-wide figure, or a series (op × dtype ×
   * backend × residency) the current report lost or now fails.
   */
  readonly kind: "crossover" | "rate" | "system" | "series";
  /** What the figure is, e.g. `"matmul f32 cpu→webgpu end-to-end"`. */
  readonly key: string;
  /** Unit of `baseline` and `current`. */
  readonly unit: string;
  /** The baseline value, or null when the baseline has none. */
  readonly baseline: number | null;
  /** The current value, or null when the current report has none. */
  readonly current: number | null;
  /** The baseline's 95 % interval, when known. */
  readonly baselineCi: Interval | null;
  /** The current report's 95 % interval, when known. */
  readonly currentCi: Interval | null;
  /** The baseline's 95 % interval with its run-to-run drift, when it has stability data. */
  readonly baselineDriftCi: Interval | null;
  /** The current report's 95 % interval with its run-to-run drift, when it has stability data. */
  readonly currentDriftCi: Interval | null;
  /** The largest run-to-run drift that entered the row's intervals, or null when none did. */
  readonly drift: Drift | null;
  /** `current / baseline - 1`, or null when either value is missing or the baseline is 0. */
  readonly change: number | null;
  /**
   * The move exceeds the tolerance and the intervals (when known; with drift when either report
   * has stability data) do not overlap.
   */
  readonly beyondNoise: boolean;
  /** Beyond noise and in the bad direction (for crossovers: either direction). */
  readonly regressed: boolean;
  /** How the verdict was reached, in words. */
  readonly note: string;
  /**
   * For a crossover that moved beyond noise: how much slower choosing by either report's
   * threshold is on the other's measurements. Within the tolerance, the move is not a regression.
   */
  readonly choiceCost?: ChoiceCost;
  /**
   * For a rate or system figure judged against its host reference: the change left once the
   * reference's is taken off (`change` stays the absolute one), and the reference.
   */
  readonly own?: { readonly change: number; readonly reference: HostReference };
  /** For a crossover: the near-tie each report's crossing falls in, when it does. */
  readonly ties?: { readonly baseline: Tie | null; readonly current: Tie | null };
}

/**
 * The outcome of {@linkcode compareReports}.
 *
 * @example
 * ```ts
 * import type { Comparison } from "./compare.ts";
 * function exitCode(c: Comparison) { return !c.comparable ? 2 : c.regressed ? 1 : 0; }
 * ```
 */
export interface Comparison {
  /** Every compared figure: lost series first, then crossovers, rates and system figures. */
  readonly rows: readonly ComparisonRow[];
  /** Each backend judged as a whole, against the others ({@linkcode backendShifts}). */
  readonly backends: readonly BackendShift[];
  /** Whether any row or backend regressed. */
  readonly regressed: boolean;
  /** False when the reports must not be compared (different schema or machine); rows is empty. */
  readonly comparable: boolean;
  /** Why the reports are not comparable, or caveats about a comparison that was made. */
  readonly reasons: readonly string[];
  /** The relative tolerance used. */
  readonly tolerance: number;
}

/**
 * Options of {@linkcode compareReports}.
 *
 * @example
 * ```ts
 * import type { CompareOptions } from "./compare.ts";
 * const o: CompareOptions = { tolerance: 0.2, allowDifferentMachine: true };
 * ```
 */
export interface CompareOptions {
  /** Relative change a figure must exceed to count as moved; {@linkcode DEFAULT_TOLERANCE}. */
  readonly tolerance?: number;
  /** Compare reports of different machines (fingerprints) instead of refusing. */
  readonly allowDifferentMachine?: boolean;
}

/**
 * A backend's run-to-run drift: the standard deviation of ln time of its probe
 * (`report.stability.driftSigma`), 0.1 ≈ 10 %.
 *
 * @example
 * ```ts
 * import type { Drift } from "./compare.ts";
 * const d: Drift = { backend: "wasm-mt", sigma: 0.12 };
 * ```
 */
export interface Drift {
  /** The backend. */
  readonly backend: Backend;
  /** Sd of ln time of its probe; 0.1 is about 10 %. */
  readonly sigma: number;
}

type Better = "higher" | "lower" | "unchanged";

interface Sample {
  readonly value: number | null;
  readonly ci: Interval | null;
  /** The interval with run-to-run drift; absent when the report has no stability data. */
  readonly driftCi?: Interval | null;
  /** The largest drift that entered `driftCi`. */
  readonly drift?: Drift | null;
  /** Share of drift replicates that move a crossover out of the measured range. */
  readonly outOfRange?: number;
  /** Why the value is missing, when it is. */
  readonly reason?: string;
  /** The current value's host reference, when it is judged against one. */
  readonly reference?: HostReference | null;
  /** Why the current run skipped this figure on purpose, or null when it did not. */
  readonly skip?: string | null;
}

/** Drift replicates leaving the range above this share make a vanishing threshold plausible. */
const OUT_OF_RANGE_PLAUSIBLE = 0.025;

const NO_CI_NOTE = "no 95 % interval on both sides: judged on the tolerance alone";

function overlaps(a: Interval, b: Interval): boolean {
  return a[0] <= b[1] && b[0] <= a[1];
}

function percent(x: number): string {
  return `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} %`;
}

/** Whether two values are told apart by their intervals, and how that was decided. */
function separation(
  base: number,
  baseCi: Interval | null,
  cur: number,
  curCi: Interval | null,
  withDrift: boolean,
): { separated: boolean; how: string } {
  const intervals = withDrift ? "95 % intervals with run-to-run drift" : "95 % intervals";
  if (baseCi !== null && curCi !== null) {
    const separated = !overlaps(baseCi, curCi);
    return { separated, how: `${intervals} ${separated ? "do not overlap" : "overlap"}` };
  }
  if (baseCi !== null || curCi !== null) {
    const ci = (baseCi ?? curCi)!;
    const other = baseCi === null ? base : cur;
    const separated = other < ci[0] || other > ci[1];
    const one = withDrift ? "one 95 % interval with run-to-run drift" : "one 95 % interval";
    return {
      separated,
      how: `the other value lies ${separated ? "outside" : "inside"} the ${one}`,
    };
  }
  return { separated: true, how: NO_CI_NOTE };
}

function larger(a: Drift | null | undefined, b: Drift | null | undefined): Drift | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return b.sigma > a.sigma ? b : a;
}

function driftWords(d: Drift): string {
  return `run-to-run drift of ${d.backend} (σ ${(d.sigma * 100).toFixed(0)} %)`;
}

/**
 * A value and its intervals judged against a host reference: a rate scaled up by the host's
 * slowdown, a time scaled down, and both intervals widened by the reference's own error.
 */
function againstReference(sample: Sample, better: Better, ref: HostReference): Sample {
  const factor = Math.exp(better === "higher" ? ref.logShift : -ref.logShift);
  const extra = Z95 * ref.se;
  const move = (ci: Interval | null | undefined): Interval | null => {
    if (ci == null) return null;
    const scaled: Interval = [ci[0] * factor, ci[1] * factor];
    if (!(scaled[0] > 0 && scaled[1] >= scaled[0])) return scaled;
    const centre = Math.sqrt(scaled[0] * scaled[1]);
    const half = Math.hypot(Math.log(scaled[1] / scaled[0]) / 2, extra);
    return [centre * Math.exp(-half), centre * Math.exp(half)];
  };
  return {
    ...sample,
    value: sample.value === null ? null : sample.value * factor,
    ci: move(sample.ci),
    ...(sample.driftCi !== undefined ? { driftCi: move(sample.driftCi) } : {}),
  };
}

/**
 * "(−12.0 % against the host: js, wasm-mt time +40.0 % over the run)", or "" when the host did
 * not move.
 */
function ownWords(own: number, ref: HostReference): string {
  const host = Math.exp(ref.logShift) - 1;
  if (Math.abs(host) < 0.005) return "";
  return ` (${percent(own)} against the host: ${ref.backends.join(", ")} time ${
    percent(host)
  } over the run)`;
}

/** A value that disappeared, or appeared; `better: "unchanged"` means a threshold. */
function judgeMissing(
  common: Pick<ComparisonRow, "kind" | "key" | "unit" | "baseline" | "current">,
  cis: Pick<
    ComparisonRow,
    "baselineCi" | "currentCi" | "baselineDriftCi" | "currentDriftCi" | "drift"
  >,
  base: Sample,
  cur: Sample,
  better: Better,
): ComparisonRow {
  const row = { ...common, ...cis, change: null };
  if (base.value === null && cur.value === null) {
    return {
      ...row,
      beyondNoise: false,
      regressed: false,
      note: `not obtained in either report (${cur.reason ?? base.reason ?? "no value"})`,
    };
  }
  const note = base.value === null
    ? `appeared (baseline: ${base.reason ?? "no value"})`
    : `disappeared (current: ${cur.reason ?? "no value"})`;
  if (better !== "unchanged") {
    // A figure that disappeared is a regression unless the current run skipped it on purpose.
    const lost = base.value !== null && cur.skip === null;
    const why = base.value === null ? "" : lost ? ": regression" : `: ${cur.skip ?? ""}`;
    return { ...row, beyondNoise: lost, regressed: lost, note: `${note}${why}` };
  }
  // A threshold appearing or vanishing changes decisions as much as one moving, unless the
  // report that has it says drift alone often moves it out of the measured range.
  const present = base.value === null ? cur : base;
  const plausible = (present.outOfRange ?? 0) > OUT_OF_RANGE_PLAUSIBLE && cis.drift !== null;
  return {
    ...row,
    beyondNoise: !plausible,
    regressed: !plausible,
    note: !plausible
      ? `threshold ${note}`
      : `${note}: within ${driftWords(cis.drift!)}, which moves it out of the measured sizes in ${
        Math.round(present.outOfRange! * 100)
      } % of replicates`,
  };
}

/**
 * The verdict on one pair of values; `better: "unchanged"` means any move is a regression. When
 * the current sample carries a host reference, the verdict is on the value judged against it
 * (shown in the note); the row keeps the absolute values.
 */
function judge(
  kind: ComparisonRow["kind"],
  key: string,
  unit: string,
  base: Sample,
  absolute: Sample,
  better: Better,
  tolerance: number,
): ComparisonRow {
  const common = { kind, key, unit, baseline: base.value, current: absolute.value };
  const drift = larger(base.drift, absolute.drift);
  const cis = {
    baselineCi: base.ci,
    currentCi: absolute.ci,
    baselineDriftCi: base.driftCi ?? null,
    currentDriftCi: absolute.driftCi ?? null,
    drift,
  };
  if (base.value === null || absolute.value === null) {
    return judgeMissing(common, cis, base, absolute, better);
  }
  const ref = better !== "unchanged" ? absolute.reference ?? null : null;
  const cur = ref === null ? absolute : againstReference(absolute, better, ref);
  const change = base.value === 0 ? null : absolute.value / base.value - 1;
  const own = base.value === 0 ? null : cur.value! / base.value - 1;
  const judged = ref === null ? change : own;
  const overTolerance = judged === null ? cur.value !== 0 : Math.abs(judged) > tolerance;
  const within = separation(base.value, base.ci, cur.value!, cur.ci, false);
  const hasDrift = base.driftCi != null || cur.driftCi != null;
  const withDrift = hasDrift
    ? separation(base.value, base.driftCi ?? base.ci, cur.value!, cur.driftCi ?? cur.ci, true)
    : null;
  const verdict = withDrift ?? within;
  const beyondNoise = overTolerance && verdict.separated;
  const moved = (change === null ? "changed from 0" : percent(change)) +
    (ref !== null && own !== null ? ownWords(own, ref) : "");
  const extra = ref !== null && own !== null ? { own: { change: own, reference: ref } } : {};
  if (!beyondNoise) {
    const why = !overTolerance
      ? `within the ${percent(tolerance).slice(1)} tolerance`
      : within.separated && drift !== null
      ? `within ${driftWords(drift)}`
      : within.how;
    return {
      ...common,
      ...cis,
      ...extra,
      change,
      beyondNoise,
      regressed: false,
      note: `${moved}: ${why}`,
    };
  }
  const up = cur.value! > base.value;
  const regressed = better === "unchanged" || (better === "higher" ? !up : up);
  const word = better === "unchanged"
    ? `threshold moved ${up ? "up" : "down"}`
    : regressed
    ? "regression"
    : "improvement";
  return {
    ...common,
    ...cis,
    ...extra,
    change,
    beyondNoise,
    regressed,
    note: `${moved}: ${word} (${verdict.how})`,
  };
}

/**
 * A row for a figure only one report has. One the current report gained is coverage; one it
 * lost is a regression unless the current run skipped it on purpose (`lost` says whether, and
 * why), or it is a fitted figure whose series is still measured.
 */
function onlyIn(
  kind: ComparisonRow["kind"],
  key: string,
  unit: string,
  side: "baseline" | "current",
  sample: Sample,
  lost?: { regressed: boolean; note: string },
): ComparisonRow {
  const regressed = side === "baseline" && (lost?.regressed ?? false);
  return {
    kind,
    key,
    unit,
    baseline: side === "baseline" ? sample.value : null,
    current: side === "current" ? sample.value : null,
    baselineCi: side === "baseline" ? sample.ci : null,
    currentCi: side === "current" ? sample.ci : null,
    baselineDriftCi: side === "baseline" ? sample.driftCi ?? null : null,
    currentDriftCi: side === "current" ? sample.driftCi ?? null : null,
    drift: sample.drift ?? null,
    change: null,
    beyondNoise: regressed,
    regressed,
    note: side === "current"
      ? "not measured in the baseline"
      : `not measured in the current report${lost ? `: ${lost.note}` : ""}`,
  };
}

/**
 * Pairs entries of the two reports by key and judges each pair; keys keep the baseline's order.
 * `describe` is told which report an entry came from (for its stability data); `lost` says
 * whether an entry only the baseline has is a regression.
 */
function pairUp<T>(
  kind: ComparisonRow["kind"],
  [baseReport, baseline]: readonly [Report, ReadonlyMap<string, T>],
  [curReport, current]: readonly [Report, ReadonlyMap<string, T>],
  describe: (item: T, report: Report) => { unit: string; sample: Sample; better: Better },
  tolerance: number,
  lost?: (item: T) => { regressed: boolean; note: string },
): ComparisonRow[] {
  const keys = [...baseline.keys(), ...[...current.keys()].filter((k) => !baseline.has(k))];
  return keys.map((key) => {
    const b = baseline.get(key);
    const c = current.get(key);
    if (b === undefined) {
      const d = describe(c!, curReport);
      return onlyIn(kind, key, d.unit, "current", d.sample);
    }
    const db = describe(b, baseReport);
    if (c === undefined) return onlyIn(kind, key, db.unit, "baseline", db.sample, lost?.(b));
    const dc = describe(c, curReport);
    return judge(kind, key, db.unit, db.sample, dc.sample, db.better, tolerance);
  });
}

/** What choosing by the other threshold costs, in words. */
function choiceCostWords(c: ChoiceCost, unit: string): string {
  const where = c.size === null
    ? ""
    : ` (at ${roundSignificant(c.size, 3)} ${unit}, measured in the ${c.measuredIn} report)`;
  const noisy = c.withinNoise ?? 0;
  const within = noisy === 0
    ? ""
    : `; at ${noisy === c.sizes ? "all" : noisy} of them the cost is within the two runs' ` +
      `disagreement there`;
  return `choosing by either threshold is at most ${
    (c.cost * 100).toFixed(1)
  } % slower at the ${c.sizes} measured size${
    c.sizes === 1 ? "" : "s"
  } where they disagree${where}${within}`;
}

/** A report's drift of a backend, or null when it has no stability data for it. */
function driftOf(report: Report, backend: Backend): Drift | null {
  const sigma = report.stability?.driftSigma[backend];
  return sigma === undefined ? null : { backend, sigma };
}

/** The largest drift among some backends of a report. */
function maxDrift(report: Report, backends: readonly Backend[]): Drift | null {
  return backends.map((b) => driftOf(report, b)).reduce(larger, null);
}

/**
 * An interval widened by a drift in log space: the interval's own log half-width and the
 * drift's 95 % half-width add in quadrature about the interval's geometric centre (about the
 * value when there is no interval).
 */
function widen(
  value: number,
  ci: Interval | null,
  drift: Drift | null,
  amplification = 1,
): Interval | null {
  if (drift === null) return null;
  const d = Z95 * drift.sigma * amplification;
  if (ci === null) return value > 0 ? [value * Math.exp(-d), value * Math.exp(d)] : null;
  if (!(ci[0] > 0 && ci[1] >= ci[0])) return [ci[0], ci[1] * Math.exp(d)];
  const centre = Math.sqrt(ci[0] * ci[1]);
  const half = Math.hypot(Math.log(ci[1] / ci[0]) / 2, d);
  return [centre * Math.exp(-half), centre * Math.exp(half)];
}

/**
 * What the comparison needs of a crossover: its interval with drift and the drift behind it.
 * `report` carries the drift pooled over both reports (see {@linkcode withPooledDrift}); `own`
 * is the drift its bootstrap used. When the pooled drift is larger, the drift interval is widened
 * by their ratio in log space, and the share of replicates leaving the measured sizes is what a
 * normal shift of that larger σ gives: p' = Φ(Φ⁻¹(p) · σ_own / σ_pooled).
 */
function crossoverSample(
  report: Report,
  c: Crossover,
  own: Partial<Record<Backend, number>> | undefined,
): Sample {
  const drift = maxDrift(report, [c.from, c.to]);
  const ownSigma = Math.max(own?.[c.from] ?? 0, own?.[c.to] ?? 0);
  const k = drift !== null && ownSigma > 0 && drift.sigma > ownSigma ? drift.sigma / ownSigma : 1;
  const p = c.driftOutOfRange;
  return {
    value: c.size,
    ci: c.ci,
    ...(report.stability ? { driftCi: c.driftCi ? scaleInterval(c.driftCi, k) : null, drift } : {}),
    ...(p !== undefined
      ? { outOfRange: p > 0 && p < 1 && k > 1 ? normalCdf(normalQuantile(p) / k) : p }
      : {}),
    ...(c.reason !== null ? { reason: c.reason } : {}),
  };
}

/** An interval's log half-width times `k`, about its geometric centre. */
function scaleInterval(ci: Interval, k: number): Interval {
  if (k === 1 || !(ci[0] > 0 && ci[1] >= ci[0])) return ci;
  const centre = Math.sqrt(ci[0] * ci[1]);
  const half = (Math.log(ci[1] / ci[0]) / 2) * k;
  return [centre * Math.exp(-half), centre * Math.exp(half)];
}

/**
 * Both reports with each backend's drift replaced by the larger of the two runs' (a report
 * without stability data stays as it is). A drift σ from a handful of probes is itself uncertain
 * — two back-to-back runs here measured wasm-mt's as 28 % and 68 % — and both runs are of one
 * machine, so the larger says what the machine can do to either. A run's drift is its probes'
 * within the run and, when the report carries earlier runs, how far whole runs moved between
 * them (`stability.betweenRunSigma`, as `predictTime()` counts it): two reports are two runs, and
 * on this VM a whole backend moved ×1.2–1.5 between runs whose own probes stayed within 3 %.
 */
function withPooledDrift(a: Report, b: Report): [Report, Report] {
  const pooled: Partial<Record<Backend, number>> = {};
  for (const r of [a, b]) {
    const stability = r.stability;
    if (stability === undefined) continue;
    const backends = new Set([
      ...Object.keys(stability.driftSigma),
      ...Object.keys(stability.betweenRunSigma ?? {}),
    ]) as Set<Backend>;
    for (const k of backends) {
      const sigma = Math.hypot(
        stability.driftSigma[k] ?? 0,
        stability.betweenRunSigma?.[k] ?? 0,
      );
      pooled[k] = Math.max(pooled[k] ?? 0, sigma);
    }
  }
  const pool = (r: Report): Report =>
    r.stability ? { ...r, stability: { ...r.stability, driftSigma: { ...pooled } } } : r;
  return [pool(a), pool(b)];
}

function crossoverMap(report: Report): Map<string, Crossover> {
  const map = new Map<string, Crossover>();
  for (const c of report.crossovers) {
    const key = `${c.op} ${c.dtype} ${c.pair} ${c.residency}`;
    if (!map.has(key)) map.set(key, c);
  }
  return map;
}

interface Rate {
  readonly value: number;
  readonly unit: string;
  readonly variant: string;
  readonly ci: Interval;
  readonly drift: Drift | null;
  /** Share of the fitted time the rate's term explains at the largest size fitted, 0–1. */
  readonly share: number;
  /** How much a drift of the time moves this rate: 1 for a measured rate, 1 / share for a fit's. */
  readonly amplification: number;
  /** The size the rate was measured at, when it is a measured one. */
  readonly at?: number;
  /** The fit the rate's series and share come from. */
  readonly fit: CostFit;
  readonly resource: "compute" | "memory";
}

/** Below this share of the time, a rate's term is too small to pin its value down at all. */
const MIN_SHARE = 0.01;

/**
 * A rate is judged only where its term is most of the time at the largest size fitted in both
 * reports: below that, the fixed cost (on Deno's WebGPU the ~11 ms sync) carries the time, and the
 * rate is whatever slope noise and drift across the sweep leave — quick runs of one machine were
 * seen to differ 500× in such rates.
 */
const DETERMINED_SHARE = 0.5;

/**
 * Share of the fitted time at the fit's largest size that a rate's term explains: a rate behind
 * 5 % of the time moves 20× as much as the time does for the same noise (d ln t = share · d ln
 * rate), so its interval is widened by 1 / share. 1 when the op is unknown to this gpucal.
 */
function rateShare(f: CostFit, resource: "compute" | "memory", value: number): number {
  const op = OPS.find((o) => o.name === f.op);
  if (op === undefined) return 1;
  const shape = op.axis.shape(f.sizeRange[1]);
  const work = resource === "compute" ? op.flops(shape) : op.bytes(shape, f.dtype);
  // GFLOP/s and GB/s are both 1e6 units per ms.
  const termMs = work / (value * 1e6);
  const totalMs = predictMs(f, op.flops(shape), op.bytes(shape, f.dtype));
  return totalMs > 0 ? Math.min(1, Math.max(MIN_SHARE, termMs / totalMs)) : 1;
}

/**
 * The best variant's rate per op, dtype, backend, residency and resource.
 *
 * Where both reports measured the series at a common size, the rate is the **measured** effective
 * rate (work / median time, best variant) at the largest such size, with that median's own 95 %
 * interval: what a regression moves, pinned down as well as one measurement can, at the size
 * that best shows the rate. Otherwise the fit's rate, with an interval from its residuals: the
 * larger of the RMS log error and the cross-validated MAPE, taken as one standard error of ln
 * time, divided by the share of the time the rate's term explains (see {@linkcode rateShare}).
 * Fit residuals are the model's misfit across every size (cache steps, the fixed cost), not how
 * sure the rate is: on quick runs here they made intervals of ±2× in which no halved rate (0 of
 * 43) was ever told apart.
 */
function rateMap(report: Report, other: Report): Map<string, Rate> {
  const map = new Map<string, Rate>();
  const add = (f: CostFit, resource: "compute" | "memory", value: number | null, unit: string) => {
    if (value === null) return;
    const key = `${f.op} ${f.dtype} ${f.backend} ${f.residency} ${resource}`;
    const prior = map.get(key);
    if (prior !== undefined && prior.value >= value) return;
    const share = rateShare(f, resource, value);
    const spread = Math.exp(Z95 * Math.max(f.rmsLogError, f.cvMape ?? 0) / share);
    map.set(key, {
      value,
      unit,
      variant: f.variant,
      ci: [value / spread, value * spread],
      drift: driftOf(report, f.backend),
      share,
      amplification: 1 / share,
      fit: f,
      resource,
    });
  };
  for (const f of report.fits) {
    add(f, "compute", f.gflops, "GFLOP/s");
    add(f, "memory", f.gbps, "GB/s");
  }
  // The best fit's share still decides whether the rate is judged at all; its value and interval
  // give way to the measured rate where there is one.
  for (const [key, rate] of map) {
    const measured = measuredRateAt(report, other, rate.fit, rate.resource);
    if (measured !== null) map.set(key, { ...rate, ...measured, amplification: 1 });
  }
  return map;
}

/**
 * The effective rate (GFLOP/s or GB/s) of a fit's series at the largest size both reports
 * measured, best variant there, with the median's 95 % interval; null without a common size.
 */
function measuredRateAt(
  report: Report,
  other: Report,
  f: CostFit,
  resource: "compute" | "memory",
): { value: number; ci: Interval; at: number; variant: string } | null {
  const series = (r: Report) => bestPerSize(r.measurements, f.op, f.dtype, f.backend, f.residency);
  const theirs = new Set(series(other).map((m) => m.size));
  const mine = series(report).filter((m) => theirs.has(m.size));
  const m = mine[mine.length - 1];
  if (m === undefined || m.state !== "ok") return null;
  const value = resource === "compute" ? m.gflops : m.gbps;
  const rel = Math.min(m.wall.relCi, 0.99);
  if (!(value > 0)) return null;
  return { value, ci: [value / (1 + rel), value / (1 - rel)], at: m.size, variant: m.variant };
}

interface SystemFigure {
  readonly figure: Figure;
  readonly better: Better;
  readonly drift: Drift | null;
  /** The backend whose speed the figure is, or null when unknown. */
  readonly backend: Backend | null;
  /**
   * Whether the figure is work the host does (judged against the host reference) rather than a
   * wait: the synchronisation round trip is mostly the runtime's polling interval.
   */
  readonly hostBound: boolean;
  /** What the figure needs measured, to tell whether the current run skipped it. */
  readonly scope: { op?: string; dtype?: string; backends: readonly Backend[] };
}

const BACKEND_NAMES: readonly Backend[] = ["webgpu", "wasm", "wasm-mt", "js"];

function systemMap(report: Report): Map<string, SystemFigure> {
  const s = report.system;
  // Synchronisation, transfer and compile figures are the WebGPU backend's.
  const gpu = (figure: Figure, better: Better, hostBound = true): SystemFigure => ({
    figure,
    better,
    drift: driftOf(report, "webgpu"),
    backend: "webgpu",
    hostBound,
    scope: { backends: ["webgpu"] },
  });
  const map = new Map<string, SystemFigure>([
    ["dispatch round trip", gpu(s.dispatchRoundTripMs, "lower", false)],
    ...(s.readbackRoundTripMs
      ? [["read round trip", gpu(s.readbackRoundTripMs, "lower", false)] as const]
      : []),
    ["per dispatch", gpu(s.perDispatchUs, "lower")],
    ...(s.encodePerDispatchUs
      ? [["host encode per dispatch", gpu(s.encodePerDispatchUs, "lower")] as const]
      : []),
    ["upload", gpu(s.uploadGBps, "higher")],
    ["readback", gpu(s.readbackGBps, "higher")],
    ["device copy", gpu(s.copyGBps, "higher")],
    ["pipeline compile", gpu(s.compileMs, "lower")],
  ]);
  for (const [dtype, figure] of Object.entries(s.peakGflops)) {
    if (figure === undefined) continue;
    // A peak's source names the measurement ("matmul f32 wasm-mt …"); its third word the backend.
    const [op, , named] = figure.source?.split(" ") ?? [];
    const backend = BACKEND_NAMES.find((b) => named === b) ?? null;
    map.set(`peak compute ${dtype}`, {
      figure,
      better: "higher",
      drift: backend ? driftOf(report, backend) : maxDrift(report, BACKEND_NAMES),
      backend,
      hostBound: true,
      scope: { ...(op ? { op } : {}), dtype, backends: backend ? [backend] : [] },
    });
  }
  for (const [name, figure] of Object.entries(s.peakGbps)) {
    if (figure === undefined) continue;
    const backend = name as Backend;
    map.set(`peak bandwidth ${backend}`, {
      figure,
      better: "higher",
      drift: driftOf(report, backend),
      backend,
      hostBound: true,
      scope: { backends: [backend] },
    });
  }
  return map;
}

function checkTolerance(tolerance: number): void {
  if (!(Number.isFinite(tolerance) && tolerance > 0)) {
    throw new RangeError(
      `Invalid tolerance ${tolerance}: pass a positive fraction, e.g. 0.1 for 10 %`,
    );
  }
}

function caveats(baseline: Report, current: Report, allowDifferentMachine: boolean): string[] {
  const out: string[] = [];
  if (baseline.fingerprint !== current.fingerprint && allowDifferentMachine) {
    out.push(
      `Different machines (baseline ${baseline.fingerprint} "${baseline.slug}", current ${current.fingerprint} "${current.slug}"): differences may be hardware, not code`,
    );
  }
  for (const [name, r] of [["baseline", baseline], ["current", current]] as const) {
    const p = r.provenance;
    if (!p.complete) {
      out.push(`The ${name} report is incomplete (${p.stopReason}): some figures are missing`);
    }
    if (p.noisy) out.push(`The ${name} report was measured on a noisy machine`);
  }
  if (baseline.provenance.quick !== current.provenance.quick) {
    out.push(
      `One report is a --quick run and the other is not: quick runs measure fewer sizes, so crossovers and fits are less certain`,
    );
  }
  const settings = describeSettingsDifference(
    current.provenance.driverEnv,
    baseline.provenance.driverEnv,
    ["the current run", "the baseline"],
  );
  if (settings !== null) {
    out.push(
      `The runs used different driver settings (${settings}): they measured different configurations of the machine, so a moved figure may be the setting, not the code`,
    );
  }
  const host = hostSpeedCaveat(baseline, current);
  if (host !== null) out.push(host);
  return out;
}

/** A move of the host's own speed smaller than this (×1.1 either way) goes unmentioned. */
const HOST_MOVE_NOTED = Math.log(1.1);

/**
 * How the host itself ran in the current run against the baseline, when both reports timed the
 * host reference beside their drift probes (`stability.probes[].hostMs`, none of gpucal's code)
 * and the medians differ by ×1.1 or more: the machine, not the code, moved the figures that
 * moved with it. Informational; no verdict uses it.
 */
function hostSpeedCaveat(baseline: Report, current: Report): string | null {
  const medianHost = (r: Report) => {
    const ms = hostProbeMs(r.stability?.probes ?? []);
    return ms.length === 0 ? null : median(ms);
  };
  const [before, now] = [medianHost(baseline), medianHost(current)];
  if (before === null || now === null || !(before > 0 && now > 0)) return null;
  const ln = Math.log(now / before);
  if (Math.abs(ln) < HOST_MOVE_NOTED) return null;
  return `The host itself ran ×${Math.exp(Math.abs(ln)).toFixed(2)} ${
    ln > 0 ? "slower" : "faster"
  } in the current run (a loop with none of gpucal's code, timed beside the drift probes: median ${
    now.toPrecision(3)
  } ms against ${before.toPrecision(3)} ms): figures that moved with it moved with the machine`;
}

/** What the row builders share. */
interface Context {
  /** The reports as given. */
  readonly baseline: Report;
  readonly current: Report;
  /** The reports with each backend's drift pooled over both ({@linkcode withPooledDrift}). */
  readonly base: Report;
  readonly cur: Report;
  /** The host references figures of the current report are judged against, and point noise. */
  readonly refs: HostFrame;
  /** Each backend judged as a whole ({@linkcode backendShifts}). */
  readonly backends: readonly BackendShift[];
  /** What the current run's command restricted it to. */
  readonly scope: RunScope;
  readonly tolerance: number;
}

/**
 * A sample's interval widened by run-to-run drift, when its report has stability data: one
 * without keeps the old verdicts.
 */
function widened(
  report: Report,
  value: number | null,
  ci: Interval | null,
  d: Drift | null,
  amplification = 1,
): Pick<Sample, "driftCi" | "drift"> {
  return report.stability && value !== null
    ? { driftCi: widen(value, ci, d, amplification), drift: d }
    : {};
}

/** Whether a figure only the baseline has is a regression: unless the current run skipped it. */
function lostUnlessSkipped(
  ctx: Context,
  what: { op?: string; dtype?: string; backends: readonly Backend[] },
  gone: string,
): { regressed: boolean; note: string } {
  const skip = skipReason(ctx.scope, what);
  return skip === null ? { regressed: true, note: `${gone}: regression` } : {
    regressed: false,
    note: skip,
  };
}

/** One row per series the current report lost or now fails ({@linkcode seriesCoverage}). */
function seriesRows(ctx: Context): ComparisonRow[] {
  return seriesCoverage(ctx.baseline, ctx.current).map((s) => ({
    kind: "series",
    key: s.key,
    unit: "sizes",
    baseline: s.baselineSizes,
    current: s.currentSizes,
    baselineCi: null,
    currentCi: null,
    baselineDriftCi: null,
    currentDriftCi: null,
    drift: null,
    change: null,
    beyondNoise: s.regressed,
    regressed: s.regressed,
    note: s.note,
  }));
}

/** "either from 4 to 48 n, within 6.0 %". */
function tieWords(t: Tie, unit: string): string {
  return `either from ${roundSignificant(t.from, 3)} to ${roundSignificant(t.to, 3)} ${unit}, ` +
    `within ${(t.within * 100).toFixed(1)} %`;
}

/**
 * The near-tie within the tolerance that holds both reports' crossings, if any: then the move is
 * the noise of two level curves, not a threshold that moved.
 */
function sharedTie(
  b: Crossover,
  c: Crossover,
  ties: { baseline: Tie | null; current: Tie | null },
  tolerance: number,
): Tie | null {
  const span = (x: Crossover, t: Tie | null): [number, number] | null =>
    t !== null ? [t.from, t.to] : x.size !== null ? [x.size, x.size] : null;
  const [sb, sc] = [span(b, ties.baseline), span(c, ties.current)];
  if (sb === null || sc === null) return null;
  for (const t of [ties.baseline, ties.current]) {
    if (t === null || t.within > tolerance) continue;
    const holds = (s: [number, number]) => s[1] >= t.from && s[0] <= t.to;
    if (holds(sb) && holds(sc)) return t;
  }
  return null;
}

function crossoverRows(ctx: Context): ComparisonRow[] {
  const ownDrift = (r: Report) =>
    (r === ctx.base ? ctx.baseline : ctx.current).stability?.driftSigma;
  const baseCrossovers = crossoverMap(ctx.baseline);
  const currentCrossovers = crossoverMap(ctx.current);
  return pairUp(
    "crossover",
    [ctx.base, baseCrossovers],
    [ctx.cur, currentCrossovers],
    (c, report) => ({
      unit: c.unit,
      sample: crossoverSample(report, c, ownDrift(report)),
      better: "unchanged",
    }),
    ctx.tolerance,
    (c) =>
      lostUnlessSkipped(
        ctx,
        { op: c.op, dtype: c.dtype, backends: [c.from, c.to] },
        "gone",
      ),
  ).map((row) => {
    const b = baseCrossovers.get(row.key);
    const c = currentCrossovers.get(row.key);
    if (b === undefined || c === undefined) return row;
    const ties = {
      baseline: nearTie(ctx.baseline, b, ctx.tolerance),
      current: nearTie(ctx.current, c, ctx.tolerance),
    };
    const tied = ties.baseline !== null || ties.current !== null ? { ...row, ties } : row;
    if (!row.regressed) return tied;
    const tie = sharedTie(b, c, ties, ctx.tolerance);
    const tieNote = tie === null ? "" : `; a near-tie, ${tieWords(tie, row.unit)}`;
    const noise: PointNoise = (backend, size) =>
      ctx.refs.pointNoise(backend, { op: c.op, dtype: c.dtype, residency: c.residency, size });
    const cost = thresholdChoiceCost(ctx.baseline, b, ctx.current, c, noise);
    if (cost === null) {
      if (tie !== null) {
        return { ...tied, regressed: false, note: `${row.note}; no effect: ${tieNote.slice(2)}` };
      }
      const between = interpolatedChoiceCost(ctx.baseline, b, ctx.current, c);
      const drifted = ctx.baseline.stability !== undefined && ctx.current.stability !== undefined;
      const why = between === null
        ? null
        : bracketWords(between, drifted ? noise : null, ctx.tolerance, row.unit);
      return why === null ? tied : { ...tied, regressed: false, note: `${row.note}; ${why}` };
    }
    const words = choiceCostWords(cost, row.unit);
    if (cost.cost <= ctx.tolerance || tie !== null) {
      return {
        ...tied,
        regressed: false,
        choiceCost: cost,
        note: `${row.note}; no effect: ${words}${tieNote}`,
      };
    }
    const level = levelWithinNoise(ctx, b, c, noise);
    return level === null
      ? { ...tied, choiceCost: cost, note: `${row.note}; ${words}` }
      : { ...tied, regressed: false, choiceCost: cost, note: `${row.note}; ${words}; ${level}` };
  });
}

/**
 * Why a crossover that moved between two measured sizes is no regression, or null when it is
 * one: choosing by either threshold costs at most the tolerance there (the two curves
 * interpolated), or the pair's ratio at both sizes moved within the two runs' noise of one point
 * (1.96 × √2 × their σ in quadrature, {@linkcode HostFrame.pointNoise}): the crossing moved because
 * two noisy points did, not because a kernel changed. Without run-to-run data (`noise` null: a
 * report calibrated without stability probes) only the first reason counts, as elsewhere.
 */
function bracketWords(
  c: BracketCost,
  noise: PointNoise | null,
  tolerance: number,
  unit: string,
): string | null {
  const [s0, s1] = c.between.map((s) => roundSignificant(s, 3));
  const where = `both thresholds lie between the measured ${s0} and ${s1} ${unit}`;
  if (c.cost <= tolerance) {
    return `no effect: ${where}, where choosing by either is at most ` +
      `${(c.cost * 100).toFixed(1)} % slower (the two curves interpolated)`;
  }
  if (noise === null) return null;
  const limits = c.ends.map((e) =>
    Z95 * Math.SQRT2 * Math.hypot(noise(e.backends[0], e.size), noise(e.backends[1], e.size))
  );
  if (!c.ends.every((e, i) => Math.abs(e.change) <= limits[i]!)) return null;
  const moves = c.ends.map((e, i) =>
    `${percent(Math.exp(e.change) - 1)} at ${roundSignificant(e.size, 3)} (noise ±${
      (limits[i]! * 100).toFixed(0)
    } %)`
  );
  return `within noise: ${where}, and the ratio of the two backends' times moved ` +
    `${moves.join(" and ")}, within the two runs' noise of one point there`;
}

/** The backend verdicts standing for each side of a crossover's pair. */
function pairSides(ctx: Context, c: Crossover): readonly [BackendShift[], BackendShift[]] {
  const [first, second] = sides(c);
  const of = (names: readonly Backend[]) => ctx.backends.filter((s) => names.includes(s.backend));
  return [of(first), of(second)];
}

/**
 * Why a crossover's move is no regression when it is one of its backends' levels moving within
 * noise: both curves kept their shapes (every shared size moved by the same ratio, to within the
 * runs' noise there), that ratio alone turns the faster side where the measurements turned,
 * neither side's backend moved beyond noise as a whole, and the ratio is
 * within the 99 % noise of the two backends' levels ({@linkcode BackendShift.se}). On a shared
 * 2-core VM, wasm-mt's level moved ×1.5–1.8 between clean back-to-back quick runs (its second
 * thread shares a core with the host's other work), and a wasm→wasm-mt crossover came and went
 * with it. Null when the move is more than that.
 */
function levelWithinNoise(
  ctx: Context,
  b: Crossover,
  c: Crossover,
  noise: PointNoise,
): string | null {
  const shift = pairLevelShift(ctx.baseline, b, ctx.current, c, noise, ctx.tolerance);
  const [first, second] = pairSides(ctx, c);
  if (shift === null || !shift.shapeKept || !shift.explainsFlips) return null;
  if (first.length === 0 || second.length === 0) return null;
  if ([...first, ...second].some((s) => s.beyondNoise)) return null;
  const se = Math.hypot(Math.max(...first.map((s) => s.se)), Math.max(...second.map((s) => s.se)));
  const allowed = BACKEND_Z * se;
  if (Math.abs(shift.logShift) > allowed) return null;
  const pct = (x: number) => `${x >= 0 ? "+" : ""}${((Math.exp(x) - 1) * 100).toFixed(0)} %`;
  const [from, to] = c.pair.split("→");
  return `not a regression: at the ${shift.sizes} sizes both measured, ${to} moved ` +
    `${pct(shift.logShift)} against ${from} alike (the curves kept their shapes), within the ` +
    `two backends' run-to-run noise (99 %: ${pct(-allowed)} to ${pct(allowed)})`;
}

/**
 * A measured rate that regressed, kept a regression only when a second point of its series
 * moved the same way ({@linkcode slowedPoints}). One measured point is one measurement: on a
 * shared 2-core VM a clean back-to-back run moved single points ×3 to ×60 (a burst of other
 * work, a run stopped mid-measurement) while the series' other sizes stayed put, so one point
 * alone is left to its backend's pooled test, which a slowed kernel or backend does reach.
 */
function corroborated(ctx: Context, row: ComparisonRow, fit: CostFit): ComparisonRow {
  if (!row.regressed) return row;
  const series = { op: fit.op, dtype: fit.dtype, backend: fit.backend, residency: fit.residency };
  const slowed = slowedPoints(ctx.baseline, ctx.current, series, { tolerance: ctx.tolerance });
  if (slowed.length >= 2) {
    return { ...row, note: `${row.note}; slower at ${slowed.length} sizes of its series` };
  }
  const only = slowed.length === 1 ? `only ${slowed[0]!.key} is slower` : "no point is slower";
  return {
    ...row,
    regressed: false,
    beyondNoise: false,
    note: `${row.note}; not a regression on one point: of its series' sizes where the work ` +
      `carries the time, ${only} beyond the tolerance against the host (one measurement can ` +
      `stray on a shared machine; its backend's test pools every point)`,
  };
}

/**
 * A measured rate's drift with the run-to-run noise of one point of its backend added: the spread
 * of how far these two reports' matched points of that backend moved apart ({@linkcode
 * HostFrame.pointNoise}). The probes' drift is of one small case; a rate is one point, and on a
 * shared 2-vCPU VM single points of clean back-to-back quick runs moved far beyond it (add f32
 * on wasm 28 % against the host, its probes' σ 16 %): 6 of 10 clean pairs failed on one CPU rate.
 */
function withPointNoise(ctx: Context, r: Rate): Drift | null {
  if (r.at === undefined) return r.drift;
  const { op, dtype, residency, backend } = r.fit;
  return plusNoise(
    r.drift,
    backend,
    ctx.refs.pointNoise(backend, { op, dtype, residency, size: r.at }),
  );
}

/**
 * A drift with a point's run-to-run noise added in quadrature; the noise alone when the reports
 * have no drift of the backend (a quick run of a few ops has too few probes to estimate one).
 */
function plusNoise(drift: Drift | null, backend: Backend, noise: number): Drift | null {
  if (drift === null) return noise > 0 ? { backend, sigma: noise } : null;
  return { backend: drift.backend, sigma: Math.hypot(drift.sigma, noise) };
}

/**
 * A host-bound system figure's drift with the point noise of its backend added (a peak is one
 * measured point too; see {@linkcode withPointNoise}).
 */
function withBackendNoise(ctx: Context, drift: Drift | null, backend: Backend): Drift | null {
  const noise = ctx.refs.pointNoise(backend, { op: "", dtype: "", residency: "", size: -1 });
  return plusNoise(drift, backend, noise);
}

function rateRows(ctx: Context): ComparisonRow[] {
  const baseRates = rateMap(ctx.base, ctx.cur);
  const currentRates = rateMap(ctx.cur, ctx.base);
  const measured = (r: Rate) =>
    bestPerSize(ctx.current.measurements, r.fit.op, r.fit.dtype, r.fit.backend, r.fit.residency)
      .length > 0;
  return pairUp(
    "rate",
    [ctx.base, baseRates],
    [ctx.cur, currentRates],
    (r, report) => {
      const ref = ctx.refs.reference(r.fit.backend);
      return {
        unit: r.unit,
        sample: {
          value: r.value,
          ci: r.ci,
          ...widened(report, r.value, r.ci, withPointNoise(ctx, r), r.amplification),
          ...(report === ctx.cur ? { reference: ref } : {}),
        },
        better: "higher",
      };
    },
    ctx.tolerance,
    (r) =>
      measured(r)
        ? { regressed: false, note: "the current fit does not identify it; its series is measured" }
        : lostUnlessSkipped(
          ctx,
          { op: r.fit.op, dtype: r.fit.dtype, backends: [r.fit.backend] },
          "its series is gone",
        ),
  ).map((row) => {
    const b = baseRates.get(row.key);
    const c = currentRates.get(row.key);
    if (b === undefined || c === undefined) return row;
    const share = Math.min(b.share, c.share);
    const variants = [
      ...(b.at !== undefined && b.at === c.at ? [`measured at ${roundSignificant(b.at, 3)}`] : []),
      ...(b.variant !== c.variant ? [`best variant ${b.variant} → ${c.variant}`] : []),
    ];
    if (share >= DETERMINED_SHARE) {
      const judged = { ...row, note: [row.note, ...variants].join("; ") };
      return b.at !== undefined && b.at === c.at ? corroborated(ctx, judged, b.fit) : judged;
    }
    const undetermined = `not judged: the rate explains ${percent(share).slice(1)} of the ` +
      `time at the largest size fitted, too little to determine it`;
    return {
      ...row,
      beyondNoise: false,
      regressed: false,
      note: [
        `${row.change === null ? "moved" : percent(row.change)}: ${undetermined}`,
        ...variants,
      ].join("; "),
    };
  });
}

function systemRows(ctx: Context): ComparisonRow[] {
  return pairUp(
    "system",
    [ctx.base, systemMap(ctx.base)],
    [ctx.cur, systemMap(ctx.cur)],
    (s, report) => {
      const ref = s.hostBound && s.backend !== null ? ctx.refs.reference(s.backend) : null;
      return {
        unit: s.figure.unit,
        sample: {
          value: s.figure.value,
          ci: s.figure.ci ?? null,
          ...widened(
            report,
            s.figure.value,
            s.figure.ci ?? null,
            s.hostBound && s.backend !== null ? withBackendNoise(ctx, s.drift, s.backend) : s.drift,
          ),
          ...(s.figure.reason !== undefined ? { reason: s.figure.reason } : {}),
          ...(report === ctx.cur ? { reference: ref, skip: skipReason(ctx.scope, s.scope) } : {}),
        },
        better: s.better,
      };
    },
    ctx.tolerance,
    (s) => lostUnlessSkipped(ctx, s.scope, "gone"),
  );
}

/**
 * Compares a current report with a baseline: crossovers (by op, dtype, residency and pair),
 * rates (by op, dtype, backend, residency and resource: measured at the largest size both
 * reports share, else the best variant's fitted rate), and the system figures and peaks. A figure
 * moved beyond noise when its relative change exceeds the tolerance and its two 95 % intervals do
 * not overlap, widened by the larger run-to-run drift of the two reports when they have stability
 * data; a crossover that moved so is a regression only when choosing by either threshold costs
 * more than the tolerance on the other report's measurements. Without intervals, the tolerance
 * alone decides and the row's note says so.
 *
 * @param baseline The reference report, e.g. the published one.
 * @param current The report to check.
 * @param options Tolerance (default {@linkcode DEFAULT_TOLERANCE}) and whether reports of
 * different machines may be compared.
 * @returns Every row, whether anything regressed, and whether the comparison was possible at
 * all; with a different schema version, or a different fingerprint without
 * `allowDifferentMachine`, `comparable` is false and `reasons` says why.
 * @throws {RangeError} When the tolerance is not a positive finite number.
 * @example
 * ```ts ignore
 * import { compareReports } from "./compare.ts";
 * const { regressed, rows } = compareReports(baseline, current, { tolerance: 0.15 });
 * for (const r of rows.filter((r) => r.beyondNoise)) console.log(r.key, r.note);
 * ```
 */
export function compareReports(
  baseline: Report,
  current: Report,
  options: CompareOptions = {},
): Comparison {
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE;
  checkTolerance(tolerance);
  const allowDifferentMachine = options.allowDifferentMachine ?? false;
  const refuse = (reasons: string[]): Comparison => ({
    rows: [],
    backends: [],
    regressed: false,
    comparable: false,
    reasons,
    tolerance,
  });
  if (baseline.schemaVersion !== current.schemaVersion) {
    return refuse([
      `Different schema versions (baseline ${baseline.schemaVersion}, current ${current.schemaVersion}): load both with the same gpucal so they are migrated to one version`,
    ]);
  }
  if (baseline.fingerprint !== current.fingerprint && !allowDifferentMachine) {
    return refuse([
      `Different machines: baseline fingerprint ${baseline.fingerprint} ("${baseline.slug}"), current ${current.fingerprint} ("${current.slug}"); compare reports of one machine, or allow different machines`,
    ]);
  }

  const [base, cur] = withPooledDrift(baseline, current);
  const backends = backendShifts(baseline, current, { tolerance });
  const context: Context = {
    baseline,
    current,
    base,
    cur,
    refs: hostReferences(baseline, current),
    backends,
    scope: runScope(current),
    tolerance,
  };
  const rows = [
    ...seriesRows(context),
    ...crossoverRows(context),
    ...rateRows(context),
    ...systemRows(context),
  ];
  return {
    rows,
    backends,
    regressed: rows.some((r) => r.regressed) || backends.some((b) => b.regressed),
    comparable: true,
    reasons: caveats(baseline, current, allowDifferentMachine),
    tolerance,
  };
}
