/**
 * The grid of one (op, dtype) job: sizes measured in ascending order, every backend in play
 * interleaved per size, growing until the rates have converged, runs get too long, or the job's
 * time is up.
 *
 * @module
 */
import {
  type Backend,
  type Dtype,
  implOf,
  isOnAxis,
  type OpSpec,
  type Residency,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { CalibrationJob } from "./plan.ts";
import type { PlanState, Steps } from "./plan_state.ts";
import type { MeasureRequest } from "../core/result.ts";
import {
  dominatedBy,
  TRANSFER_BOUND_SHARE,
  TRANSFER_CONFIRM,
  transferPrediction,
} from "./decide.ts";

/**
 * The residencies a backend is measured in: WebGPU with data on the device and end to end.
 *
 * @param backend The backend.
 * @returns Its residencies, the device-resident one last for WebGPU.
 * @example
 * ```ts
 * import { residenciesFor } from "./grid.ts";
 * console.log(residenciesFor("wasm")); // ["end-to-end"]
 * ```
 */
export function residenciesFor(backend: Backend): Residency[] {
  return backend === "webgpu" ? ["end-to-end", "device-resident"] : ["end-to-end"];
}

/**
 * The residency whose times rank a backend's variants: its last (device-resident for WebGPU,
 * where the kernels differ and the round trip does not).
 *
 * @param backend The backend.
 * @returns The residency.
 * @example
 * ```ts
 * import { screeningResidency } from "./grid.ts";
 * console.log(screeningResidency("webgpu")); // "device-resident"
 * ```
 */
export function screeningResidency(backend: Backend): Residency {
  return residenciesFor(backend).at(-1)!;
}

/**
 * The first `keep` of the ranked variants that declare they can run this shape.
 *
 * @param op The op.
 * @param backend The backend.
 * @param shape The shape.
 * @param dtype The dtype.
 * @param ranked Variants, best first.
 * @param keep How many to return at most.
 * @returns The runnable variants.
 * @example
 * ```ts
 * import { runnable } from "./grid.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const add = getOp("add");
 * console.log(runnable(add, "js", { n: 8 }, "f32", add.impls.js!.variants, 1).length); // 1
 * ```
 */
export function runnable(
  op: OpSpec,
  backend: Backend,
  shape: Shape,
  dtype: Dtype,
  ranked: readonly Variant[] | undefined,
  keep: number,
): Variant[] {
  const impl = implOf(op, backend);
  return (ranked ?? [])
    .filter((v) => (impl?.unsupported?.(shape, dtype, v) ?? null) === null)
    .slice(0, keep);
}

/** Grid sizes every job measures, whatever its deadline: enough for a fit of each series. */
const MIN_GRID_SIZES = 3;

/**
 * A gap between two measured sizes is worth a point between them when some series' rate (work
 * per ms) differs by more than this between its ends: the curve bends there (launch overhead
 * fading, a cache step), and neither the fit nor an interpolation can place the bend unmeasured.
 */
const BEND_RATE_RATIO = 1.1;
/**
 * A gap this many grid steps wide (×91 in elements at a default run's ×4.5 steps) is filled
 * whatever the rates at its ends say: a cache level can lift the rate inside it and drop it back.
 * A default run measured wasm-mt `sum` at 29 193 and 11 863 283 elements only (55 and 48 GB/s),
 * and held-out sums of 9·10⁵ and 5·10⁶, which ran from the caches at 74–99 GB/s, were predicted
 * 59–86 % slow.
 */
const WIDE_GAP_STEPS = 3;
/**
 * Gap fills past the job's deadline: cheap CPU points in gaps of {@linkcode WIDE_GAP_STEPS}. With
 * two, a default run's `sum` filled 323 and 131 072 elements and left 131 072 to 11 863 283 open.
 */
const OVER_JOB_FILLS = 3;

/**
 * A budgeted run's case-time cap shares the job's remaining grid time among its series: a run of
 * `t` ms costs about this many runs' time to measure (warm-up, samples, a second window), so the
 * ceiling of a job that started late is a smaller size, not an overrun of the whole plan. (With
 * the plan's cap alone, the sixteen ceilings of a default run took 70 s more than its plan.)
 */
const RUNS_PER_MEASUREMENT = 10;

/**
 * A run mostly fixed cost (a WebGPU sync, a worker wake-up) says little about how its time grows:
 * from such a point a series climbs at most this factor of work per step. (From matmul 64³ on
 * WebGPU end to end, 11 ms of sync, a linear scaling put 2048³ under the cap; it ran 2.2 s.)
 */
const BLIND_STEP_WORK = 16;

/** Gaps filled on cheap series after the grid's deadline, at most, per job. */
const LATE_FILLS = 4;
/** Climbs past the grid's deadline beyond the first two, for series whose next run is short. */
const LATE_CLIMBS = 2;
/**
 * A run short enough, ms, for a late climb: a window of such runs takes about as long as one of
 * a shorter run (its samples, not their length, set it). At 10 ms a late job's device-resident
 * `sum` and `dot` stopped at 588 493 elements (2.3 and 3.8 ms; the next size ran ~10 and 17) in
 * two calibrations of the AMD EPYC VM, and lavapipe ran 5·10⁶ at twice the rate extrapolated.
 */
const LATE_CLIMB_RUN_MS = 25;

/** A CPU run at most this long is cheap: its measurement takes tens of milliseconds. */
const CHEAP_RUN_MS = 1;

/** The cap never falls below this: a WebGPU end-to-end run costs ~11 ms of synchronisation alone. */
const MIN_CASE_MS = 25;

/** An unsupported reason that a larger size of the same series would hit too. */
const OVER_LIMITS = /over the adapter|exceeds max|over max|Out of device memory/i;

/**
 * Measures a job's grid and returns the backends still in play at its end (not stopped as
 * unsupported).
 *
 * A thorough run measures every size in ascending order until the rates have converged. A
 * budgeted run covers the range first: the smallest size, the middle one, then each series' ceiling
 * (the largest size whose run fits the plan's case time), and only then fills the gaps where a
 * series bends, widest first, while its time lasts. Cut short, it loses detail in the middle, never
 * the ends: the default runs of the ascending grid stopped `dot` at 6502 elements, and a held-out
 * `dot` of 3·10⁶ was predicted 55 % fast from there.
 *
 * @param state The planner's state.
 * @param job The job.
 * @param backends Its backends.
 * @param chosen Per backend, its variants ranked by the variant search.
 * @returns The backends still in play.
 * @example
 * ```ts ignore
 * const inPlay = yield* gridSteps(state, job, backends, chosen);
 * ```
 */
export function* gridSteps(
  state: PlanState,
  job: CalibrationJob,
  backends: readonly Backend[],
  chosen: ReadonlyMap<Backend, Variant[]>,
): Steps<Set<Backend>> {
  const grid = new GridState(state, job, backends, chosen);
  if (state.plan.mode === "thorough") yield* ascendingGrid(grid);
  else yield* rangeFirstGrid(grid);
  return new Set(backends.filter((b) => !grid.stopped.has(b)));
}

/** Every size in ascending order, until the rates converge or no series can run larger. */
function* ascendingGrid(grid: GridState): Steps {
  const { state, job } = grid;
  for (const [i, size] of job.sizes.entries()) {
    if (i >= MIN_GRID_SIZES && state.time.past(state.time.gridDeadline())) break;
    yield* confirmSlowness(grid, size);
    if (!(yield* gridSize(grid, size))) break;
    if (job.converged(state.measurements, size)) break;
  }
}

/** The ends and the middle first, then each series' ceiling, then the bending gaps. */
function* rangeFirstGrid(grid: GridState): Steps {
  const { state, job: { sizes } } = grid;
  const first = [...new Set([sizes[0]!, sizes[Math.floor((sizes.length - 1) / 2)]!])];
  for (const size of first) yield* gridSize(grid, size);
  yield* confirmSlowness(grid, sizes.at(-1)!);
  // The first climb is measured however late the job is: every series gets its range; so are a
  // few more of any series whose run at its next ceiling is short (a device-resident add stopped
  // at 29 193 elements by its first, blind, climb was extrapolated 7 doublings to 5·10⁶), and of
  // WebGPU end to end, which follows where the device-resident series went, under the late cap
  // of the job's case time rather than the short run's, which its sync alone exceeds.
  const e2e = seriesKey("webgpu", "end-to-end");
  for (let climb = 0;; climb++) {
    const late = state.time.past(state.time.gridDeadline());
    const overJob = climb > 1 && state.time.past(state.time.jobDeadline());
    if (late && (climb > 1 + LATE_CLIMBS || overJob)) break;
    // A late climb goes as far as a short run reaches. (It used to drop a series whose ceiling
    // under the plan's cap ran longer: a device-resident sum stopped at 29 193 elements, and a
    // held-out one of 5·10⁶ was predicted 35 % fast.)
    const lateCap = (key: string) =>
      late && climb > 0 && key !== e2e ? LATE_CLIMB_RUN_MS : undefined;
    const ceilings = grid.ceilings(lateCap);
    if (ceilings.size === 0) break;
    for (const [size, series] of ceilings) {
      const others = new Set([...series].filter((key) => key !== e2e));
      if (others.size > 0) yield* gridSize(grid, size, others, true);
    }
    // End to end climbs after the device-resident series, to where that climb's time says its
    // run fits: its own sync-bound times say little of a larger size. (Climbing beside it, an
    // end-to-end add saw the device series only at 29 193 elements when that one went on to
    // 5.6·10⁶, and stopped at 131 072.)
    for (const [size, series] of grid.ceilings(lateCap)) {
      if (series.has(e2e)) yield* gridSize(grid, size, new Set([e2e]), true);
    }
  }
  // Past the grid's deadline, a few more gaps are filled on the CPU series whose runs there are
  // short: tens of milliseconds each, where a WebGPU point costs a second. Past the job's, the
  // widest of them still get up to three: a cache level hides there.
  for (let late = 0, overJob = 0;;) {
    const pastGrid = state.time.past(state.time.gridDeadline());
    const pastJob = state.time.past(state.time.jobDeadline());
    if (pastGrid && late >= LATE_FILLS) return;
    if (pastJob && overJob >= OVER_JOB_FILLS) return;
    const accept = pastGrid ? (key: string, size: number) => grid.cheap(key, size) : undefined;
    const size = grid.widestBendingGap(accept, pastJob ? WIDE_GAP_STEPS : 2);
    if (size === null) return;
    grid.tried.add(size);
    const only = accept && new Set(grid.active().filter((key) => accept(key, size)));
    yield* gridSize(grid, size, only);
    if (pastGrid) late++;
    if (pastJob) overJob++;
  }
}

/**
 * Measures at `size` every series still in play (or only those in `only`) whose run there fits
 * the plan; false when none was measured. `ceiling`: `size` is the ceiling of every series in
 * `only`, which {@linkcode GridState.ceilings} judged to fit, by the device-resident time and
 * the transfer rates for WebGPU end to end; scaling its sync-bound runs with the work would
 * not (a late job's end-to-end matmul stopped at 128³, and 900³ was predicted ×3 slow).
 */
function* gridSize(
  grid: GridState,
  size: number,
  only?: ReadonlySet<string>,
  ceiling = false,
): Steps<boolean> {
  const { state, job: { op, dtype } } = grid;
  const shape = op.axis.shape(size);
  const reqs: MeasureRequest[] = [];
  for (const backend of grid.backends) {
    if (grid.stopped.has(backend)) continue;
    for (const residency of residenciesFor(backend)) {
      const key = seriesKey(backend, residency);
      if (only !== undefined && !only.has(key)) continue;
      if (!(ceiling && only?.has(key)) && grid.tooLong(backend, residency, size)) continue;
      if (grid.settled.has(key)) continue;
      // A transfer-bound series still climbs to its ceiling (its top anchors what is predicted
      // beyond), but fills no gap: its time there is the transfers' the report measured.
      if (only === undefined && grid.predicted.has(key)) continue;
      if (grid.has(key, size)) continue;
      const ranked = grid.chosen.get(backend);
      for (const v of runnable(op, backend, shape, dtype, ranked, state.plan.keepVariants)) {
        reqs.push({ op: op.name, shape, dtype, backend, variant: v, residency });
      }
    }
  }
  if (reqs.length === 0) return false;
  const results = yield* state.measure(reqs, op);
  results.forEach((r, i) => {
    const req = reqs[i]!;
    if (r?.state === "unsupported" && req.backend !== "webgpu") grid.stopped.add(req.backend);
    // Limits are static: a larger case is over them too, so it is never built.
    if (r?.state === "unsupported" && OVER_LIMITS.test(r.reason)) {
      grid.settled.add(seriesKey(req.backend, r.residency));
    }
    if (r?.state === "ok") grid.saw(req.backend, r.residency, size, r.wall.median);
  });
  if (state.plan.mode !== "thorough") settle(grid, size);
  return true;
}

function seriesKey(backend: Backend, residency: Residency): string {
  return `${backend}|${residency}`;
}

/** What the grid remembers of each series to decide whether its next size is worth measuring. */
class GridState {
  readonly state: PlanState;
  readonly job: CalibrationJob;
  readonly backends: readonly Backend[];
  /** Per backend, its variants ranked by the variant search. */
  readonly chosen: ReadonlyMap<Backend, Variant[]>;
  /** Backends out of the grid: unsupported, or dominated. */
  readonly stopped = new Set<Backend>();
  /** Per series (`backend|residency`), its fastest time at each size measured. */
  readonly seen = new Map<string, Map<number, number>>();
  /** Series whose slowness a repeat has confirmed. */
  readonly confirmed = new Set<string>();
  /** Series (`backend|residency`) that need no more sizes: over the limits, or predicted. */
  readonly settled = new Set<string>();
  /** Series predicted from the transfer figures: measured at their ceiling, not in the gaps. */
  readonly predicted = new Set<string>();
  /** Sizes a gap fill has tried, measured or not. */
  readonly tried = new Set<number>();

  constructor(
    state: PlanState,
    job: CalibrationJob,
    backends: readonly Backend[],
    chosen: ReadonlyMap<Backend, Variant[]>,
  ) {
    this.state = state;
    this.job = job;
    this.backends = backends;
    this.chosen = chosen;
    this.#seeAxisMeasured();
  }

  /**
   * Takes in what the session measured on this job's axis before its grid: the variant screen's
   * size, and a resumed run's sizes, of the variants the grid runs. Without them a series climbed
   * from its grid sizes alone: a late job's device-resident q4 gemv, mostly fixed cost at 102
   * (41 µs against 37 at 4), took blind steps of {@linkcode BLIND_STEP_WORK}× work to 228 and 512,
   * never saw the 0.1 ms its screen had measured at 512, and stopped there with its two late
   * climbs spent; 1800² was predicted 53 % fast from a fit to 512 and 8192.
   */
  #seeAxisMeasured(): void {
    const { op, dtype } = this.job;
    for (const m of this.state.measurements) {
      if (m.state !== "ok" || m.op !== op.name || m.dtype !== dtype) continue;
      if (!this.backends.includes(m.backend) || !isOnAxis(op, m.shape)) continue;
      const kept = runnable(
        op,
        m.backend,
        m.shape,
        dtype,
        this.chosen.get(m.backend),
        this.state.plan.keepVariants,
      );
      if (!kept.some((v) => variantId(v) === m.variant)) continue;
      this.saw(m.backend, m.residency, op.axis.size(m.shape), m.wall.median);
    }
  }

  work(size: number): number {
    const shape = this.job.op.axis.shape(size);
    return Math.max(this.job.op.flops(shape), this.job.op.bytes(shape, this.job.dtype));
  }

  /** Whether series `key` has a time at `size`. */
  has(key: string, size: number): boolean {
    return this.seen.get(key)?.has(size) ?? false;
  }

  /** The measured size a prediction at `size` starts from: the largest below it, else the smallest. */
  reference(key: string, size: number): number | null {
    const sizes = [...(this.seen.get(key)?.keys() ?? [])].sort((a, b) => a - b);
    if (sizes.length === 0) return null;
    return sizes.filter((s) => s <= size).at(-1) ?? sizes[0]!;
  }

  /**
   * Whether the next run at `size` is predicted to take longer than the plan allows: fixed
   * overhead + the rest scaled with work from the nearest measured size below, so a WebGPU case
   * dominated by its ~11 ms sync is not cut off as if all of it grew with size.
   */
  tooLong(backend: Backend, residency: Residency, size: number, capMs?: number): boolean {
    const cap = Math.min(this.caseCapMs(), capMs ?? Infinity);
    return this.predictedMs(seriesKey(backend, residency), size) > cap;
  }

  /** A series' run at `size` from its measured times; 0 before it has any. */
  predictedMs(key: string, size: number): number {
    const from = this.reference(key, size);
    if (from === null) return 0;
    const times = this.seen.get(key)!;
    const fixedMs = Math.min(...times.values());
    const variable = Math.max(times.get(from)! - fixedMs, 0);
    return fixedMs + variable * (this.work(size) / this.work(from));
  }

  /** Whether measuring series `key` at `size` is cheap: a CPU series with a short run there. */
  cheap(key: string, size: number): boolean {
    return !key.startsWith("webgpu|") && this.seen.has(key) &&
      this.predictedMs(key, size) <= CHEAP_RUN_MS;
  }

  /** The longest run worth measuring now: the plan's cap, or less when the job's time is short. */
  caseCapMs(): number {
    const { plan, time } = this.state;
    if (plan.mode === "thorough") return plan.maxCaseMs;
    const leftMs = 1000 * Math.max(0, time.gridDeadline() - time.now());
    const share = leftMs / (Math.max(1, this.active().length) * RUNS_PER_MEASUREMENT);
    return Math.min(plan.maxCaseMs, Math.max(MIN_CASE_MS, share));
  }

  /** Notes a measured time of a series at `size` (the fastest of several is kept). */
  saw(backend: Backend, residency: Residency, size: number, ms: number): void {
    const key = seriesKey(backend, residency);
    const times = this.seen.get(key) ?? new Map<number, number>();
    this.seen.set(key, times);
    times.set(size, Math.min(times.get(size) ?? Infinity, ms));
  }

  /** Series still measured: in play, not settled (nor predicted, unless asked). */
  active(withPredicted = false): string[] {
    return this.backends.filter((b) => !this.stopped.has(b)).flatMap((b) =>
      residenciesFor(b).map((r) => seriesKey(b, r)).filter((k) =>
        !this.settled.has(k) && (withPredicted || !this.predicted.has(k))
      )
    );
  }

  /**
   * Per size, the series whose next ceiling it is: the largest grid size above the series'
   * largest measured one that is predicted to fit the case-time cap, and, while the series' time
   * is mostly fixed cost, within {@linkcode BLIND_STEP_WORK} of its work (or the next grid size);
   * where none fits, half a grid step up when that does (`#halfStep`).
   *
   * @param capMsOf A tighter cap on a series' run, ms, where it returns one.
   */
  ceilings(capMsOf?: (key: string) => number | undefined): Map<number, Set<string>> {
    const out = new Map<number, Set<string>>();
    for (const key of this.active(this.state.plan.mode !== "thorough")) {
      const times = this.seen.get(key);
      if (times === undefined) continue;
      const largest = Math.max(...times.keys());
      const fixedMs = Math.min(...times.values());
      const scalable = times.get(largest)! >= 2 * fixedMs;
      const [backend, residency] = key.split("|") as [Backend, Residency];
      const capMs = capMsOf?.(key);
      const above = this.job.sizes.filter((s) =>
        s > largest && !this.tooLong(backend, residency, s, capMs)
      );
      // Blind, it still takes the next grid size, however far that is.
      const blind = scalable
        ? above.at(-1)
        : above.filter((s, i) => i === 0 || this.work(s) <= BLIND_STEP_WORK * this.work(largest))
          .at(-1);
      const informed = capMs === undefined ? this.#deviceInformedCeiling(key, largest) : 0;
      const halfway = blind === undefined && informed === 0
        ? this.#halfStep(backend, residency, largest, capMs)
        : 0;
      const ceiling = Math.max(blind ?? 0, informed, halfway) || undefined;
      if (ceiling === undefined) continue;
      out.set(ceiling, (out.get(ceiling) ?? new Set()).add(key));
    }
    return new Map([...out].sort((a, b) => b[0] - a[0]));
  }

  /**
   * Where a series stopped at a grid size whose next one would run over the cap: the geometric
   * midpoint of the two, when its run fits; 0 otherwise, and above a size not on the grid (one
   * half step per series). A grid step is ×2 in a matmul's n, ×8 in its work: on lavapipe the
   * device-resident matmul ran 512³ in 10 ms and stopped there under a 50 ms cap, and a held-out
   * 900³ was predicted 2.4 doublings beyond it, 61–76 % fast in two truths of one calibration,
   * where 724³ would have run in about 30 ms.
   */
  #halfStep(
    backend: Backend,
    residency: Residency,
    largest: number,
    capMs: number | undefined,
  ): number {
    const sizes = this.job.sizes;
    const next = sizes.find((s) => s > largest);
    if (!sizes.includes(largest) || next === undefined) return 0;
    const mid = Math.round(Math.sqrt(largest * next));
    if (mid <= largest || mid >= next) return 0;
    return this.tooLong(backend, residency, mid, capMs) ? 0 : mid;
  }

  /**
   * For WebGPU end to end: the largest grid size above `largest`, up to the device-resident
   * series' largest, where that kernel time (measured, or log-log between the sizes measured
   * around it), one round trip and the bytes at the measured transfer rates fit the case-time cap.
   * An end-to-end run is mostly sync until its transfers grow, so its own times say little about
   * a larger size; the device's say much. (Held to the device-resident series' own sizes, an
   * end-to-end add whose device series climbed from 131 072 elements to 5.6·10⁶ in one step
   * stopped at 131 072.) 0 when none.
   */
  #deviceInformedCeiling(key: string, largest: number): number {
    if (key !== seriesKey("webgpu", "end-to-end")) return 0;
    const resident = this.seen.get(seriesKey("webgpu", "device-resident"));
    if (resident === undefined) return 0;
    const { op, dtype } = this.job;
    let best = 0;
    for (const size of this.job.sizes) {
      if (size <= largest) continue;
      const residentMs = this.#logLogAt(resident, size);
      if (residentMs === null) continue;
      const p = transferPrediction(this.state.system, op, op.axis.shape(size), dtype, residentMs);
      if (p !== null && p.ms <= this.caseCapMs()) best = Math.max(best, size);
    }
    return best;
  }

  /** A series' time at `size`: measured, else log-log in work between its sizes around it. */
  #logLogAt(times: ReadonlyMap<number, number>, size: number): number | null {
    const at = times.get(size);
    if (at !== undefined) return at;
    const sizes = [...times.keys()];
    const below = Math.max(...sizes.filter((s) => s < size));
    const above = Math.min(...sizes.filter((s) => s > size));
    if (!Number.isFinite(below) || !Number.isFinite(above)) return null;
    const w = Math.log(this.work(size) / this.work(below)) /
      Math.log(this.work(above) / this.work(below));
    return Math.exp((1 - w) * Math.log(times.get(below)!) + w * Math.log(times.get(above)!));
  }

  /**
   * The grid size in the middle of the widest gap (in grid steps) between two sizes some active
   * series measured and whose rate differs by more than {@linkcode BEND_RATE_RATIO} between them,
   * or that spans {@linkcode WIDE_GAP_STEPS} or more; the larger gap on a tie; only gaps of
   * `minSteps` or more, and only where `accept` accepts the series and size, when given. Null
   * when no such gap holds an untried size.
   */
  widestBendingGap(
    accept?: (key: string, size: number) => boolean,
    minSteps = 2,
  ): number | null {
    const index = new Map(this.job.sizes.map((s, i) => [s, i]));
    let best: { width: number; at: number } | null = null;
    for (const key of this.active()) {
      const times = this.seen.get(key);
      if (times === undefined) continue;
      const sizes = [...times.keys()].filter((s) => index.has(s)).sort((a, b) => a - b);
      for (let j = 1; j < sizes.length; j++) {
        const [a, b] = [sizes[j - 1]!, sizes[j]!];
        const [ia, ib] = [index.get(a)!, index.get(b)!];
        const width = ib - ia;
        if (width < minSteps || (best !== null && width < best.width)) continue;
        const rateA = this.work(a) / times.get(a)!;
        const rateB = this.work(b) / times.get(b)!;
        const bends = Math.max(rateA / rateB, rateB / rateA) > BEND_RATE_RATIO;
        if (!bends && width < WIDE_GAP_STEPS) continue;
        const at = this.job.sizes[ia + Math.floor(width / 2)]!;
        if (this.tried.has(at) || (accept !== undefined && !accept(key, at))) continue;
        if (best === null || width > best.width || at > best.at) best = { width, at };
      }
    }
    return best?.at ?? null;
  }
}

/**
 * A series is held below a size on one measurement only after a repeat: a single stall (a
 * wasm-mt worker woken late, lavapipe down to one core) once cut wasm-mt off below its crossover.
 * The repeat is not recorded: it decides what to measure next; the report keeps what was measured.
 */
function* confirmSlowness(grid: GridState, size: number): Steps {
  const { op, dtype } = grid.job;
  const repeats: MeasureRequest[] = [];
  const repeatedSizes: number[] = [];
  for (const backend of grid.backends) {
    if (grid.stopped.has(backend)) continue;
    for (const residency of residenciesFor(backend)) {
      const key = seriesKey(backend, residency);
      const from = grid.reference(key, size);
      if (from === null || grid.confirmed.has(key) || !grid.tooLong(backend, residency, size)) {
        continue;
      }
      grid.confirmed.add(key);
      const shape = op.axis.shape(from);
      for (const v of runnable(op, backend, shape, dtype, grid.chosen.get(backend), 1)) {
        repeats.push({ op: op.name, shape, dtype, backend, variant: v, residency });
        repeatedSizes.push(from);
      }
    }
  }
  const again = yield* grid.state.sample(repeats);
  (again.results ?? []).forEach((r, i) => {
    if (r.state === "ok") {
      grid.saw(repeats[i]!.backend, r.residency, repeatedSizes[i]!, r.wall.median);
    }
  });
}

/**
 * Decide, then stop (budgeted modes). A CPU backend that loses by a margin its trend cannot close
 * is dominated: its decision is made, its fit has its points, it stops. A WebGPU end-to-end point
 * whose time is mostly transfers, and that the transfer figures plus the device-resident kernel
 * predicted within ±30 %, confirms the prediction: the sizes between it and its ceiling are predicted,
 * not swept (they were the giants of a full run, 160–180 ms of transfer per run); the ceiling
 * itself is measured, so nothing is extrapolated past what was seen.
 */
function settle(grid: GridState, size: number): void {
  const { state, job: { op, dtype } } = grid;
  for (const backend of grid.backends) {
    if (backend === "webgpu" || grid.stopped.has(backend)) continue;
    const winner = dominatedBy(state.measurements, op, dtype, backend, grid.job.sizes.at(-1)!);
    if (winner === null) continue;
    grid.stopped.add(backend);
    state.phase(`${op.name} ${dtype}: ${backend} stops at ${size}, dominated by ${winner}`);
  }
  const e2eMs = grid.seen.get("webgpu|end-to-end")?.get(size);
  const residentMs = grid.seen.get("webgpu|device-resident")?.get(size);
  if (e2eMs === undefined || residentMs === undefined) return;
  if (grid.settled.has("webgpu|end-to-end") || grid.predicted.has("webgpu|end-to-end")) return;
  const p = transferPrediction(state.system, op, op.axis.shape(size), dtype, residentMs);
  if (!p || p.transferShare < TRANSFER_BOUND_SHARE) return;
  if (Math.abs(e2eMs / p.ms - 1) > TRANSFER_CONFIRM) return;
  grid.predicted.add("webgpu|end-to-end");
  state.phase(
    `${op.name} ${dtype}: webgpu end-to-end is transfer-bound from ${size} (predicted ${
      p.ms.toPrecision(3)
    } ms, measured ${e2eMs.toPrecision(3)} ms): sizes below its ceiling predicted, not swept`,
  );
}
