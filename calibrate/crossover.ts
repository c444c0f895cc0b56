/**
 * Crossovers: the size at which one backend starts beating another, from the raw medians
 * (log-log interpolation between measured sizes), from the fitted cost models (a root of their
 * difference, possibly beyond the measured sizes), with a seeded bootstrap interval; and the
 * bisection that tells the sweep where to measure next. Pure functions, no I/O.
 *
 * @example
 * ```ts
 * import { findCrossovers } from "./crossover.ts";
 * const sizes = [256, 1024, 4096, 16384, 65536];
 * const curve = (backend: "js" | "wasm", t0: number, gbps: number) => ({
 *   backend, fit: null,
 *   points: sizes.map((n) => ({ size: n, flops: n, bytes: 12 * n, ms: t0 + 12 * n / (gbps * 1e6) })),
 * });
 * const [c] = findCrossovers({
 *   op: "add", dtype: "f32", residency: "end-to-end", unit: "elements",
 *   curves: [curve("js", 0.002, 1), curve("wasm", 0.03, 8)],
 *   work: (n) => ({ flops: n, bytes: 12 * n }),
 * });
 * console.log(c?.pair, c?.from, c?.to, c?.tag); // "js→wasm" "js" "wasm" "measured"
 * ```
 *
 * @module
 */
import { seededRng } from "../kernels/_random.ts";
import {
  type Backend,
  CPU_BACKENDS,
  type Dtype,
  type Residency,
  type Rng,
} from "../kernels/types.ts";
import type { CostPoint } from "./fit.ts";
import { median, quantile } from "../core/stats.ts";
import {
  fitKind,
  logResiduals,
  modelMs,
  type ModelParams,
  paramsFromRates,
  robustScale,
} from "../core/costmodel.ts";
import { logLogZero, normal, roundSignificant } from "../core/numeric.ts";
import type {
  CostFit,
  Crossover,
  CrossoverPair,
  ProvenanceTag as Provenance,
} from "../core/schema.ts";

/**
 * One measured size of a backend: its work, median, and what the bootstrap may resample.
 *
 * @example
 * ```ts
 * import type { CurvePoint } from "./crossover.ts";
 * const p: CurvePoint = { size: 4096, flops: 4096, bytes: 49152, ms: 0.05, ci: [0.048, 0.052] };
 * ```
 */
export interface CurvePoint extends CostPoint {
  /** 95 % interval of the median, ms; the bootstrap perturbs the median within it. */
  readonly ci?: readonly [number, number];
  /** Raw samples, ms; when present the bootstrap resamples them (preferred over `ci`). */
  readonly samples?: readonly number[];
}

/**
 * One backend's measured curve and its fit (null when it has none).
 *
 * @example
 * ```ts
 * import type { BackendCurve } from "./crossover.ts";
 * const c: BackendCurve = { backend: "wasm", points: [], fit: null };
 * ```
 */
export interface BackendCurve {
  /** The backend measured. */
  readonly backend: Backend;
  /** Its measured sizes, ascending. */
  readonly points: readonly CurvePoint[];
  /** Its fitted cost model, or null when it has none. */
  readonly fit: CostFit | null;
}

/**
 * Everything {@linkcode findCrossovers} needs for one (op, dtype, residency).
 *
 * @example
 * ```ts
 * import type { CrossoverInput } from "./crossover.ts";
 * const input: CrossoverInput = {
 *   op: "add", dtype: "f32", residency: "end-to-end", unit: "elements", curves: [],
 *   work: (n) => ({ flops: n, bytes: 12 * n }),
 * };
 * ```
 */
export interface CrossoverInput {
  /** Op name from the catalog. */
  readonly op: string;
  /** Element type. */
  readonly dtype: Dtype;
  /** Where the data lived. */
  readonly residency: Residency;
  /** Op axis unit, e.g. `"elements"`. */
  readonly unit: string;
  /** One curve per measured backend. */
  readonly curves: readonly BackendCurve[];
  /** Work of one run at a size (for evaluating fits between and beyond measured sizes). */
  work(size: number): { flops: number; bytes: number };
  /** Sizes over which the fitted curves are searched; the measured range when absent (always included). */
  readonly range?: readonly [number, number];
  /** Bootstrap replicates; 200 when absent. */
  readonly bootstrap?: number;
  /** Bootstrap seed; 1 when absent. */
  readonly seed?: number;
  /**
   * Per backend, the relative run-to-run drift of its whole curve (standard deviation of ln time,
   * from `calibrate/stability.ts`); when given, {@linkcode Crossover.driftCi} is computed too.
   */
  readonly drift?: Readonly<Partial<Record<Backend, number>>>;
}

/**
 * A fit is trusted for a headline when its cross-validated error (or in-sample error) is at most this.
 *
 * @example
 * ```ts
 * import { GOOD_FIT_ERROR } from "./crossover.ts";
 * console.log(GOOD_FIT_ERROR); // 0.15
 * ```
 */
export const GOOD_FIT_ERROR = 0.15;

/** Fewest bootstrap replicates that must find the crossover for an interval to be reported (fraction). */
const MIN_BOOTSTRAP_FOUND = 0.5;

/** A curve reduced to what the solver uses: medians by size and log parameters of its fit. */
interface Curve {
  readonly backend: Backend;
  readonly ms: ReadonlyMap<number, number>;
  readonly params: ModelParams | null;
}

/** A point where the faster side changes. */
interface Crossing {
  readonly size: number;
  /** True when the `to` side is faster above `size`. */
  readonly toWinsAbove: boolean;
  /** Bracketing measured sizes (raw crossings) or the root itself (fit crossings). */
  readonly lo: number;
  readonly hi: number;
}

/**
 * Finds the js→wasm, wasm→wasm-mt and cpu→webgpu crossovers of one (op, dtype, residency).
 *
 * - `fromRaw`: where the faster backend changes between two consecutive sizes measured by both,
 *   log-log interpolated. For `cpu→webgpu` the cpu curve is the fastest of js, wasm and wasm-mt
 *   measured at each size.
 * - `fromFit`: a root of ln t_to − ln t_from for the fitted curves over `range` (both sides need
 *   fits; the cpu side is the minimum of its fits).
 * - `size`: `fromFit` when every fit involved has a cross-validated error ≤ 15 % and the root lies
 *   in the raw bracket (or there is no raw crossover), else `fromRaw`. Tagged `measured` when a
 *   raw crossover brackets it, `fitted` when only the fits cross inside the measured range,
 *   `extrapolated` when they cross outside it; null with a reason when nothing crosses.
 * - `ci`: 2.5 and 97.5 percentiles of the same quantity over seeded bootstrap replicates (each
 *   point's samples resampled, or its median perturbed within its CI; fits refitted), null when
 *   fewer than half the replicates find it.
 * - `driftCi` (only with `drift`): the same bootstrap with each replicate also scaling every
 *   backend's whole curve by exp(N(0, σ_backend)); a replicate whose curves no longer cross in
 *   range counts at the range's edge on the side the crossover left by, and `driftOutOfRange`
 *   says how many did.
 * - `others`: further crossings, when the curves cross more than once.
 *
 * Pairs whose backends were not measured are left out. Sizes are rounded to 3 significant digits.
 *
 * @param input Curves, fits, work function and bootstrap settings.
 * @returns One crossover per pair whose two sides were measured.
 * @throws {RangeError} when `range` is not an increasing pair of positive sizes.
 * @example
 * ```ts
 * import { findCrossovers } from "./crossover.ts";
 * const sizes = [1024, 4096, 16384, 65536];
 * const points = (t0: number) => sizes.map((n) => ({ size: n, flops: n, bytes: 4 * n, ms: t0 + n * 1e-5 }));
 * const [c] = findCrossovers({
 *   op: "add", dtype: "f32", residency: "end-to-end", unit: "elements",
 *   curves: [{ backend: "wasm", points: points(0.01), fit: null }, { backend: "webgpu", points: points(10), fit: null }],
 *   work: (n) => ({ flops: n, bytes: 4 * n }),
 * });
 * console.log(c?.size, c?.reason); // null "webgpu never wins up to 65536 elements end-to-end (measured from 1024)"
 * ```
 */
export function findCrossovers(input: CrossoverInput): Crossover[] {
  if (
    input.range &&
    !(input.range[0] > 0 && input.range[1] > input.range[0] && Number.isFinite(input.range[1]))
  ) {
    throw new RangeError(
      `Cannot search crossovers over range ${
        JSON.stringify(input.range)
      }: give [min, max] with 0 < min < max`,
    );
  }
  const byBackend = new Map(
    input.curves.filter((c) => c.points.length > 0).map((c) => [c.backend, c]),
  );
  const side = (backends: readonly Backend[]) => backends.flatMap((b) => byBackend.get(b) ?? []);
  const pairs: [CrossoverPair, BackendCurve[], BackendCurve[]][] = [
    ["js→wasm", side(["js"]), side(["wasm"])],
    ["wasm→wasm-mt", side(["wasm"]), side(["wasm-mt"])],
    ["cpu→webgpu", side(CPU_BACKENDS), side(["webgpu"])],
  ];
  return pairs
    .filter(([, from, to]) => from.length > 0 && to.length > 0)
    .map(([pair, from, to], i) => solvePair(input, pair, from, to, (input.seed ?? 1) + 1000 * i));
}

function toCurve(c: BackendCurve): Curve {
  return {
    backend: c.backend,
    ms: new Map(c.points.map((p) => [p.size, p.ms])),
    params: c.fit ? paramsFromRates(c.fit.t0Us, c.fit.gflops, c.fit.gbps) : null,
  };
}

function goodFit(fit: CostFit | null): boolean {
  return fit !== null && (fit.cvMape ?? fit.rmsLogError) <= GOOD_FIT_ERROR;
}

/** The fastest curve of a side measured at a size, and its time. */
function rawAt(side: readonly Curve[], size: number): { ms: number; backend: Backend } | null {
  let best: { ms: number; backend: Backend } | null = null;
  for (const c of side) {
    const ms = c.ms.get(size);
    if (ms !== undefined && (best === null || ms < best.ms)) best = { ms, backend: c.backend };
  }
  return best;
}

/** The fastest fitted curve of a side at a size, or null when a curve of the side has no fit. */
function fitAt(
  side: readonly Curve[],
  size: number,
  work: CrossoverInput["work"],
): { ms: number; backend: Backend } | null {
  const { flops, bytes } = work(size);
  let best: { ms: number; backend: Backend } | null = null;
  for (const c of side) {
    if (c.params === null) return null;
    const ms = modelMs(c.params, flops, bytes);
    if (best === null || ms < best.ms) best = { ms, backend: c.backend };
  }
  return best;
}

function commonSizes(from: readonly Curve[], to: readonly Curve[]): number[] {
  const sizes = new Set(from.flatMap((c) => [...c.ms.keys()]));
  return [...new Set(to.flatMap((c) => [...c.ms.keys()]))]
    .filter((s) => sizes.has(s))
    .sort((a, b) => a - b);
}

function rawCrossings(
  from: readonly Curve[],
  to: readonly Curve[],
  sizes: readonly number[],
): Crossing[] {
  const d = sizes.map((s) => Math.log(rawAt(to, s)!.ms / rawAt(from, s)!.ms));
  const out: Crossing[] = [];
  for (let i = 0; i + 1 < sizes.length; i++) {
    const d0 = d[i]!, d1 = d[i + 1]!;
    if ((d0 < 0) === (d1 < 0)) continue;
    const lo = sizes[i]!, hi = sizes[i + 1]!;
    out.push({ size: logLogZero(lo, d0, hi, d1), toWinsAbove: d1 < 0, lo, hi });
  }
  return out;
}

/** Roots of ln t_to − ln t_from of the fits over [min, max]: a log grid scan, then bisection. */
function fitCrossings(
  from: readonly Curve[],
  to: readonly Curve[],
  work: CrossoverInput["work"],
  [min, max]: readonly [number, number],
): Crossing[] | null {
  const g = (lnS: number): number | null => {
    const s = Math.exp(lnS);
    const a = fitAt(to, s, work), b = fitAt(from, s, work);
    return a && b ? Math.log(a.ms / b.ms) : null;
  };
  const lnMin = Math.log(min), lnMax = Math.log(max);
  const steps = Math.max(64, Math.ceil(16 * (lnMax - lnMin) / Math.LN2));
  const out: Crossing[] = [];
  let lnPrev = lnMin;
  let gPrev = g(lnMin);
  if (gPrev === null) return null;
  for (let i = 1; i <= steps; i++) {
    const lnS = lnMin + (lnMax - lnMin) * i / steps;
    const gS = g(lnS)!;
    if ((gPrev < 0) !== (gS < 0)) {
      let a = lnPrev, b = lnS;
      const aNegative = gPrev < 0;
      for (let k = 0; k < 60; k++) {
        const mid = (a + b) / 2;
        if ((g(mid)! < 0) === aNegative) a = mid;
        else b = mid;
      }
      const root = Math.exp((a + b) / 2);
      out.push({ size: root, toWinsAbove: gS < 0, lo: root, hi: root });
    }
    lnPrev = lnS;
    gPrev = gS;
  }
  return out;
}

function nearest(crossings: readonly Crossing[], target: number): Crossing | null {
  let best: Crossing | null = null;
  for (const c of crossings) {
    if (
      best === null || Math.abs(Math.log(c.size / target)) < Math.abs(Math.log(best.size / target))
    ) best = c;
  }
  return best;
}

const round = (x: number) => roundSignificant(x, 3);

/** The two sides of a pair as the solver sees them, and the sizes it works over. */
interface PairSides {
  readonly from: readonly Curve[];
  readonly to: readonly Curve[];
  /** The `from` side's name in reasons: `cpu` for the fastest CPU backend. */
  readonly fromName: string;
  readonly toName: Backend;
  /** Sizes measured by both sides, ascending. */
  readonly sizes: readonly number[];
  /** First and last size measured by both sides (by either side when they share none). */
  readonly measured: readonly [number, number];
  /** The measured sizes widened to the input's `range`: where the fits are searched. */
  readonly range: readonly [number, number];
}

function pairSides(
  input: CrossoverInput,
  pair: CrossoverPair,
  fromCurves: readonly BackendCurve[],
  toCurves: readonly BackendCurve[],
): PairSides {
  const from = fromCurves.map(toCurve), to = toCurves.map(toCurve);
  const sizes = commonSizes(from, to);
  const allSizes = [...new Set([...from, ...to].flatMap((c) => [...c.ms.keys()]))].sort((a, b) =>
    a - b
  );
  const measured: [number, number] = sizes.length > 0
    ? [sizes[0]!, sizes[sizes.length - 1]!]
    : [allSizes[0]!, allSizes[allSizes.length - 1]!];
  const range: [number, number] = [
    Math.min(measured[0], input.range?.[0] ?? Infinity),
    Math.max(measured[1], input.range?.[1] ?? 0),
  ];
  return {
    from,
    to,
    fromName: pair === "cpu→webgpu" ? "cpu" : from[0]!.backend,
    toName: to[0]!.backend,
    sizes,
    measured,
    range,
  };
}

/** Which crossing is the headline, on which basis, and with what provenance. */
interface Choice {
  /** The headline crossing, or null when nothing crosses (or only fits too poor to trust). */
  readonly primary: Crossing | null;
  readonly basis: "raw" | "fit";
  /** The fits' crossing nearest the primary (or the fits' first one), when they cross. */
  readonly fromFit: Crossing | null;
  readonly others: readonly Crossing[];
  readonly tag: Provenance;
}

/**
 * The headline from the raw and fitted crossings: the raw one when the medians cross (on the
 * fit's root when good fits put it inside the raw bracket), else the fits' when they are good.
 * Notes on what was set aside go to `notes`.
 */
function chooseCrossing(
  raw: readonly Crossing[],
  fits: readonly Crossing[] | null,
  fitsGood: boolean,
  measured: readonly [number, number],
  unit: string,
  notes: string[],
): Choice {
  if (raw.length > 0) {
    const primary = raw[0]!;
    const fromFit = fits ? nearest(fits, primary.size) : null;
    let basis: Choice["basis"] = "raw";
    if (fromFit && fitsGood && fromFit.size >= primary.lo && fromFit.size <= primary.hi) {
      basis = "fit";
    } else if (fromFit && fitsGood) {
      notes.push(
        `the fitted curves cross at ${round(fromFit.size)} ${unit}, outside the measured bracket ` +
          `[${primary.lo}, ${primary.hi}]; the raw crossover is reported`,
      );
    }
    return { primary, basis, fromFit, others: raw.slice(1), tag: "measured" };
  }
  if (fits && fits.length > 0 && fitsGood) {
    const primary = fits[0]!;
    const inside = primary.size >= measured[0] && primary.size <= measured[1];
    notes.push(
      inside
        ? `no two measured sizes bracket it; from the fitted curves`
        : `outside the measured sizes [${measured[0]}, ${
          measured[1]
        }] ${unit}; from the fitted curves`,
    );
    return {
      primary,
      basis: "fit",
      fromFit: primary,
      others: fits.slice(1),
      tag: inside ? "fitted" : "extrapolated",
    };
  }
  const fromFit = fits && fits.length > 0 ? fits[0]! : null;
  if (fromFit) {
    notes.push(
      `the fitted curves cross at ${round(fromFit.size)} ${unit}, but a fit's error exceeds ` +
        `${GOOD_FIT_ERROR * 100} %, so it is not reported`,
    );
  }
  return { primary: null, basis: "raw", fromFit, others: [], tag: "measured" };
}

/** The crossover with no size: why the curves do not cross, and who wins where. */
function noCrossover(
  input: CrossoverInput,
  pair: CrossoverPair,
  sides: PairSides,
  fromFit: Crossing | null,
  notes: readonly string[],
): Crossover {
  const { from, to, sizes, fromName, toName } = sides;
  const unit = input.unit;
  const last = sizes[sizes.length - 1];
  const toEverywhere = sizes.length > 0 &&
    sizes.every((s) => rawAt(to, s)!.ms < rawAt(from, s)!.ms);
  const why = sizes.length === 0
    ? `${fromName} and ${toName} were never measured at the same size`
    : toEverywhere
    ? `${toName} wins at every measured size (from ${sizes[0]} ${unit})`
    : `${toName} never wins up to ${last} ${unit} ${input.residency} (measured from ${sizes[0]})`;
  return {
    op: input.op,
    dtype: input.dtype,
    residency: input.residency,
    pair,
    from: last === undefined
      ? from[0]!.backend
      : rawAt(from, toEverywhere ? sizes[0]! : last)!.backend,
    to: toName,
    size: null,
    unit,
    ci: null,
    fromFit: fromFit ? round(fromFit.size) : null,
    fromRaw: null,
    tag: fromFit ? "fitted" : "measured",
    reason: [why, ...notes].join("; "),
    others: [],
  };
}

/** The fastest backend of a side at a size: measured there on the raw basis, else from the fits. */
function winnerAt(
  side: readonly Curve[],
  size: number,
  exact: boolean,
  basis: Choice["basis"],
  work: CrossoverInput["work"],
): Backend {
  return (basis === "raw" && exact
    ? rawAt(side, size)
    : fitAt(side, size, work) ?? rawAt(side, size))?.backend ?? side[0]!.backend;
}

/** The measured curves of a pair and the seed their bootstrap starts from. */
interface PairCurves {
  readonly fromCurves: readonly BackendCurve[];
  readonly toCurves: readonly BackendCurve[];
  readonly seed: number;
}

/**
 * The crossover at a headline: the winners either side, the bootstrap interval (and the drift
 * one when drift is given), and the other crossings. The intervals' notes join `notes`.
 */
function headlineCrossover(
  input: CrossoverInput,
  pair: CrossoverPair,
  { fromCurves, toCurves, seed }: PairCurves,
  sides: PairSides,
  choice: Choice & { readonly primary: Crossing },
  hasRaw: boolean,
  notes: string[],
): Crossover {
  const { primary, basis, fromFit } = choice;
  const headline = basis === "fit" ? fromFit!.size : primary.size;
  const [below, above] = primary.toWinsAbove ? [sides.from, sides.to] : [sides.to, sides.from];
  const exact = primary.lo !== primary.hi;
  const replicate: Replicate = {
    basis,
    headline,
    range: sides.range,
    toWinsAbove: primary.toWinsAbove,
  };
  const ci = bootstrapInterval(input, fromCurves, toCurves, replicate, seed, notes);
  const drift = driftOf(input, [...fromCurves, ...toCurves]);
  const driftCi = drift &&
    driftInterval(input, fromCurves, toCurves, replicate, drift, seed + 500, notes);
  return {
    op: input.op,
    dtype: input.dtype,
    residency: input.residency,
    pair,
    from: winnerAt(below, exact ? primary.lo : headline / 1.01, exact, basis, input.work),
    to: winnerAt(above, exact ? primary.hi : headline * 1.01, exact, basis, input.work),
    size: round(headline),
    unit: input.unit,
    ci: ci && [round(ci[0]), round(ci[1])],
    ...(driftCi
      ? {
        driftCi: [round(driftCi.ci[0]), round(driftCi.ci[1])] as [number, number],
        driftOutOfRange: driftCi.outOfRange,
      }
      : {}),
    fromFit: fromFit ? round(fromFit.size) : null,
    fromRaw: hasRaw ? round(primary.size) : null,
    tag: choice.tag,
    reason: notes.length > 0 ? notes.join("; ") : null,
    others: choice.others.slice(0, 64).map((c) => round(c.size)),
  };
}

/** One pair's crossover: the raw and fitted crossings, the headline chosen, and its interval. */
function solvePair(
  input: CrossoverInput,
  pair: CrossoverPair,
  fromCurves: readonly BackendCurve[],
  toCurves: readonly BackendCurve[],
  seed: number,
): Crossover {
  const sides = pairSides(input, pair, fromCurves, toCurves);
  const { from, to, range } = sides;
  const raw = rawCrossings(from, to, sides.sizes);
  const fits = range[1] > range[0] ? fitCrossings(from, to, input.work, range) : null;
  const fitsGood = [...fromCurves, ...toCurves].every((c) => goodFit(c.fit));
  const notes: string[] = [];
  const choice = chooseCrossing(raw, fits, fitsGood, sides.measured, input.unit, notes);
  if (choice.primary === null) return noCrossover(input, pair, sides, choice.fromFit, notes);
  const curves = { fromCurves, toCurves, seed };
  return headlineCrossover(
    input,
    pair,
    curves,
    sides,
    { ...choice, primary: choice.primary },
    raw.length > 0,
    notes,
  );
}

/** A seeded copy of a curve with every median redrawn: samples resampled, or perturbed within the CI. */
function perturb(curve: BackendCurve, rng: Rng): CurvePoint[] {
  return curve.points.map((p) => {
    if (p.samples && p.samples.length > 0) {
      const s = p.samples;
      return { ...p, ms: median(Array.from(s, () => s[Math.floor(rng() * s.length)]!)) };
    }
    if (p.ci && p.ci[0] > 0 && p.ci[1] > p.ci[0]) {
      const sigma = Math.log(p.ci[1] / p.ci[0]) / (2 * 1.96);
      return { ...p, ms: p.ms * Math.exp(sigma * normal(rng)) };
    }
    return p;
  });
}

/** What a bootstrap replicate re-solves: the basis, the headline it tracks, and the search range. */
interface Replicate {
  readonly basis: "raw" | "fit";
  readonly headline: number;
  readonly range: readonly [number, number];
  /** Orientation of the headline crossing: the `to` side is faster above it. */
  readonly toWinsAbove: boolean;
}

/** The given drift of the curves' backends, or null when none of them has one. */
function driftOf(
  input: CrossoverInput,
  curves: readonly BackendCurve[],
): ReadonlyMap<Backend, number> | null {
  const drift = new Map<Backend, number>();
  for (const c of curves) {
    const sigma = input.drift?.[c.backend];
    if (sigma !== undefined && sigma > 0) drift.set(c.backend, sigma);
  }
  return drift.size > 0 ? drift : null;
}

/**
 * A replicate's curves: every median redrawn within its own noise and, with `drift`, every
 * backend's whole curve scaled by exp(N(0, σ)) — the correlated shift another run would see.
 */
function redrawer(
  curves: readonly BackendCurve[],
  basis: Replicate["basis"],
  rng: Rng,
  drift: ReadonlyMap<Backend, number> | null,
): (c: BackendCurve) => Curve {
  const sigmas = new Map<BackendCurve, number>();
  for (const c of curves) {
    if (c.fit) {
      const params = paramsFromRates(c.fit.t0Us, c.fit.gflops, c.fit.gbps);
      sigmas.set(c, robustScale(logResiduals(params, c.points)));
    }
  }
  return (c) => {
    const sigma = drift?.get(c.backend);
    const shift = sigma === undefined ? 1 : Math.exp(sigma * normal(rng));
    const points = perturb(c, rng).map((p) => shift === 1 ? p : { ...p, ms: p.ms * shift });
    const scale = sigmas.get(c);
    let params: ModelParams | null = null;
    if (basis === "fit" && c.fit && scale !== undefined) {
      const start = paramsFromRates(c.fit.t0Us, c.fit.gflops, c.fit.gbps);
      params = fitKind(points, start.kind, [start], scale).params;
    }
    return { backend: c.backend, ms: new Map(points.map((p) => [p.size, p.ms])), params };
  };
}

/** The replicate's crossing nearest the headline, or null when its curves do not cross. */
function resolve(
  input: CrossoverInput,
  from: readonly Curve[],
  to: readonly Curve[],
  r: Replicate,
): number | null {
  const crossings = r.basis === "fit"
    ? fitCrossings(from, to, input.work, r.range) ?? []
    : rawCrossings(from, to, commonSizes(from, to));
  return nearest(crossings, r.headline)?.size ?? null;
}

function bootstrapInterval(
  input: CrossoverInput,
  fromCurves: readonly BackendCurve[],
  toCurves: readonly BackendCurve[],
  r: Replicate,
  seed: number,
  notes: string[],
): [number, number] | null {
  const replicates = input.bootstrap ?? 200;
  if (replicates <= 0) return null;
  const noisy = [...fromCurves, ...toCurves].some((c) =>
    c.points.some((p) => (p.samples?.length ?? 0) > 0 || p.ci !== undefined)
  );
  if (!noisy) {
    notes.push("no point carries samples or a CI, so no interval is given");
    return null;
  }
  const redraw = redrawer([...fromCurves, ...toCurves], r.basis, seededRng(seed), null);
  const found: number[] = [];
  for (let b = 0; b < replicates; b++) {
    const size = resolve(input, fromCurves.map(redraw), toCurves.map(redraw), r);
    if (size !== null) found.push(size);
  }
  if (found.length < MIN_BOOTSTRAP_FOUND * replicates) {
    notes.push(
      `only ${found.length} of ${replicates} bootstrap replicates cross, so no interval is given`,
    );
    return null;
  }
  found.sort((a, b) => a - b);
  return [quantile(found, 0.025), quantile(found, 0.975)];
}

/**
 * The bootstrap interval with run-to-run drift. A drifted replicate whose curves no longer cross
 * in range still says where the crossover went: below the range when the side that wins above
 * the headline now wins everywhere, above it otherwise. Such replicates count at the range's
 * edge (the interval is clamped there, and a note says how many), so an ill-conditioned
 * crossover gets a wide interval rather than none.
 */
function driftInterval(
  input: CrossoverInput,
  fromCurves: readonly BackendCurve[],
  toCurves: readonly BackendCurve[],
  r: Replicate,
  drift: ReadonlyMap<Backend, number>,
  seed: number,
  notes: string[],
): { ci: [number, number]; outOfRange: number } | null {
  const replicates = input.bootstrap ?? 200;
  if (replicates <= 0) return null;
  const redraw = redrawer([...fromCurves, ...toCurves], r.basis, seededRng(seed), drift);
  const [min, max] = r.basis === "fit" ? r.range : [
    Math.min(...commonSizes(fromCurves.map(toCurve), toCurves.map(toCurve))),
    Math.max(...commonSizes(fromCurves.map(toCurve), toCurves.map(toCurve))),
  ];
  const found: number[] = [];
  let beyond = 0;
  for (let b = 0; b < replicates; b++) {
    const from = fromCurves.map(redraw), to = toCurves.map(redraw);
    const size = resolve(input, from, to, r);
    if (size !== null) {
      found.push(size);
      continue;
    }
    beyond++;
    const top = r.basis === "fit"
      ? [fitAt(to, max, input.work), fitAt(from, max, input.work)]
      : [rawAt(to, max), rawAt(from, max)];
    const toFasterAtTop = (top[0]?.ms ?? Infinity) < (top[1]?.ms ?? Infinity);
    found.push(toFasterAtTop === r.toWinsAbove ? min : max);
  }
  if (beyond > 0) {
    notes.push(
      `${beyond} of ${replicates} replicates with run-to-run drift move the crossover out of ` +
        `[${min}, ${max}] ${input.unit}; its drift interval is clamped there`,
    );
  }
  found.sort((a, b) => a - b);
  return {
    ci: [quantile(found, 0.025), quantile(found, 0.975)],
    outOfRange: Math.round(1000 * beyond / replicates) / 1000,
  };
}

/**
 * The next sizes to measure so that every crossover is bracketed within ±`tolerance` of its size:
 * for each crossing (`fromRaw`, or `size` when only the fits give it, and `others`) whose nearest
 * measured sizes below and above are not both within the tolerance, the geometric midpoint of
 * that bracket (bisection in log space), rounded to an integer. A crossing outside the measured
 * sizes proposes the crossing itself, clamped to `[min, max]`. Stops when integer sizes leave no
 * room. Call again after measuring; an empty result means done.
 *
 * @param sizes Sizes measured so far (axis units).
 * @param crossovers The crossovers found from them.
 * @param options `tolerance` (0.1 when absent) and the axis limits `min`, `max`.
 * @returns New sizes, ascending, none already measured.
 * @throws {RangeError} when `tolerance` is not positive.
 * @example
 * ```ts
 * import { refineBrackets } from "./crossover.ts";
 * import type { Crossover } from "../core/schema.ts";
 * const c: Crossover = {
 *   op: "add", dtype: "f32", residency: "end-to-end", pair: "js→wasm", from: "js", to: "wasm",
 *   size: 3000, unit: "elements", ci: null, fromFit: 3000, fromRaw: 3000, tag: "measured",
 *   reason: null, others: [],
 * };
 * console.log(refineBrackets([1024, 2048, 4096, 8192], [c])); // [2896]
 * ```
 */
export function refineBrackets(
  sizes: readonly number[],
  crossovers: readonly Crossover[],
  options: { readonly tolerance?: number; readonly min?: number; readonly max?: number } = {},
): number[] {
  const tolerance = options.tolerance ?? 0.1;
  if (!(tolerance > 0)) {
    throw new RangeError(
      `Cannot refine to a tolerance of ${tolerance}: give a positive fraction such as 0.1`,
    );
  }
  const min = options.min ?? 1, max = options.max ?? Infinity;
  const measured = [...new Set(sizes)].sort((a, b) => a - b);
  const next = new Set<number>();
  for (const c of crossovers) {
    const first = c.fromRaw ?? c.size;
    for (const x of first === null ? c.others : [first, ...c.others]) {
      const lo = measured.findLast((s) => s <= x);
      const hi = measured.find((s) => s >= x);
      if (lo === undefined || hi === undefined) {
        const target = Math.round(Math.min(Math.max(x, min), max));
        if (!measured.includes(target)) next.add(target);
        continue;
      }
      if (lo >= x / (1 + tolerance) && hi <= x * (1 + tolerance)) continue;
      if (hi - lo <= 1) continue;
      const mid = Math.min(Math.max(Math.round(Math.sqrt(lo * hi)), lo + 1), hi - 1);
      next.add(mid);
    }
  }
  return [...next].sort((a, b) => a - b);
}
