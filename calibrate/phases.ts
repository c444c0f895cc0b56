/**
 * The phases of one (op, dtype) job and of the revisit passes, as step generators for the
 * {@linkcode PlanState} of `planner.ts`: variant search, grid, repeats of unsure points,
 * crossover refinement, bend points, off-axis shapes; then second windows.
 *
 * @module
 */
import {
  type Backend,
  type Dtype,
  implOf,
  type OpSpec,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { Measurement } from "../core/schema.ts";
import { nextRefinementSizes } from "./analyze.ts";
import {
  type BendPoint,
  bendPoints,
  cacheEdgePoints,
  rateStepMidpoints,
  streamingMidpoints,
  threadWakePoints,
} from "./bends.ts";
import { pooledResult, requestOf, UNSURE_REL_CI, windowsDisagree } from "./measure.ts";
import { type CalibrationJob, decodeKernelsChosenAfter } from "./plan.ts";
import { measurementKey, type PlanState, type Steps } from "./plan_state.ts";
import type { MeasureRequest } from "../core/result.ts";
import { gridSteps, runnable, screeningResidency } from "./grid.ts";
import { offAxisSteps } from "./off_axis_steps.ts";
import { screen } from "./screen.ts";
import { DEFAULT_STOPPING } from "../core/stats.ts";

/** Series with at least this many sizes are measured again in later passes. */
const REVISIT_MIN_SIZES = 3;

/** Variants that pass the screening at the smaller search anchor. */
const SCREENED_VARIANTS = 4;

/**
 * One (op, dtype) job: variant search, grid, repeats, refinement, bends, off-axis shapes, then a
 * drift probe when one is due (the plan's `probeEveryS`), a save, and a decode sample when one
 * is due.
 *
 * @param state The planner's state.
 * @param job The job.
 * @example
 * ```ts ignore
 * yield* jobSteps(state, plan.jobs[0]!);
 * ```
 */
export function* jobSteps(state: PlanState, job: CalibrationJob): Steps {
  const { op, dtype } = job;
  state.phase(`${op.name} ${dtype}`);
  const backends = job.backends.filter((b) => implOf(op, b) !== undefined);
  const chosen = yield* variantSearch(state, job, backends);
  yield* gridSteps(state, job, backends, chosen);
  const retried = new Set<string>();
  yield* retryUnsure(state, op, dtype, retried);
  yield* stepFills(state, job, backends);
  yield* offTileSteps(state, job, backends, chosen);
  if (!state.time.past(state.time.gridDeadline())) {
    yield* refineSteps(state, job, backends, chosen);
    yield* bendSteps(state, job, backends);
  }
  yield* offAxisSteps(state, job, backends, chosen);
  yield* retryUnsure(state, op, dtype, retried);
  if (state.probeDue(job === state.plan.jobs.at(-1))) yield* state.probe();
  yield { kind: "save" };
  if (decodeKernelsChosenAfter(state.plan, job)) yield* state.llmSample();
}

/**
 * Variant search at the anchor sizes: every variant is screened at the smaller anchor, the best
 * few go on to the larger. Returns per backend its variants, ranked winners first, then the rest
 * in declared order: a size the winner cannot run (a vec4 kernel at n = 11) falls to the best
 * variant that can.
 */
function* variantSearch(
  state: PlanState,
  job: CalibrationJob,
  backends: readonly Backend[],
): Steps<Map<Backend, Variant[]>> {
  const { op, dtype } = job;
  const plan = state.plan;
  const chosen = new Map<Backend, Variant[]>();
  for (const backend of backends) {
    const variants = implOf(op, backend)!.variants;
    if (variants.length <= plan.keepVariants || !plan.searchVariants) {
      chosen.set(backend, [...variants]);
      continue;
    }
    let candidates: Variant[] = [...variants];
    const anchors = backend === "webgpu" ? job.deviceAnchors : job.anchors;
    for (const [i, size] of anchors.entries()) {
      const shape = op.axis.shape(size);
      const residency = screeningResidency(backend);
      const results = yield* screen(
        state,
        op,
        candidates.map((v) => ({ op: op.name, shape, dtype, backend, variant: v, residency })),
        state.time.searchDeadline(),
      );
      const ms = (j: number) => {
        const r = results[j];
        return r?.state === "ok" ? r.wall.median : Infinity;
      };
      const order = candidates.map((_, j) => j).filter((j) => ms(j) < Infinity)
        .sort((a, b) => ms(a) - ms(b));
      if (order.length === 0) break;
      // The last anchor ranks every variant still in the race: the winner runs the grid, and
      // every variant is screened again at the first cheap off-axis shapes (`offAxisSteps`).
      const keep = i < anchors.length - 1 ? SCREENED_VARIANTS : order.length;
      candidates = order.slice(0, keep).map((j) => candidates[j]!);
    }
    chosen.set(backend, [...candidates, ...variants.filter((v) => !candidates.includes(v))]);
  }
  return chosen;
}

/**
 * A CPU case measured through a stall (one sum ran 3× slow for a whole 0.3 s window, a wasm-mt
 * gemv ±30 %) is repeated once, after the grid and after the refinement, so a threshold is not
 * decided by one stall; the surer of the two is kept. When the two medians disagree (see
 * {@linkcode windowsDisagree}), neither is the surer by its own spread: a wasm-mt matmul
 * 64 × 4096 × 1024 took 18–26 ms in a window of three runs where another calibration of the
 * machine measured 7.9 ms, its repeat did not come out surer, and the stalled time stayed, three
 * times too slow, for the shape model to carry to every m = 64 matmul. So a third window decides,
 * and the window whose median is the middle of the three is kept. WebGPU results are left alone:
 * on a software adapter their spread is the adapter's own. A resumed run's measurements stay.
 */
function* retryUnsure(
  state: PlanState,
  op: OpSpec,
  dtype: Dtype,
  retried: Set<string>,
): Steps {
  const unsure = state.measurements.filter((m) =>
    m.seq >= state.sessionSeq && m.op === op.name && m.dtype === dtype &&
    !retried.has(measurementKey(m)) && m.state === "ok" && m.backend !== "webgpu" &&
    m.wall.relCi > UNSURE_REL_CI
  );
  for (const m of state.measurements) {
    if (m.seq >= state.sessionSeq && m.op === op.name && m.dtype === dtype) {
      retried.add(measurementKey(m));
    }
  }
  const outcome = yield* state.sample(unsure.map(requestOf));
  const repeats = unsure.flatMap((old, i) => {
    const r = outcome.results?.[i];
    return r?.state === "ok" && old.state === "ok"
      ? [{ old, r, window: outcome.windows?.[i] }]
      : [];
  });
  const split = repeats.filter((x) => disagree(x.old.wall.median, x.r.wall.median));
  const third = yield* state.sample(split.map((x) => requestOf(x.old)));
  const kept = repeats.flatMap((x) => {
    const j = split.indexOf(x);
    if (j < 0) return x.r.wall.relCi < x.old.wall.relCi ? [x] : [];
    const r = third.results?.[j];
    if (r?.state !== "ok") return [];
    const middle = middleOf([
      { ms: x.old.wall.median, pick: null },
      { ms: x.r.wall.median, pick: x },
      { ms: r.wall.median, pick: { old: x.old, r, window: third.windows?.[j] } },
    ]);
    return middle === null ? [] : [middle];
  });
  if (kept.length === 0) return;
  state.phase(
    `${op.name} ${dtype}: ${kept.length} unsure CPU measurement${
      kept.length === 1 ? "" : "s"
    } repeated surer`,
  );
  for (const { old, r, window } of kept) {
    const m: Measurement = {
      ...r,
      size: old.size,
      seq: state.nextSeq(),
      ...(old.offAxis ? { offAxis: true as const } : {}),
    };
    state.replace(old, m);
    if (window) state.windowsOf.set(measurementKey(m), [window]);
  }
}

/** Whether two window medians of one case disagree, as {@linkcode windowsDisagree} judges. */
function disagree(a: number, b: number): boolean {
  return windowsDisagree([{ wall: [a], gpu: [] }, { wall: [b], gpu: [] }]);
}

/** The `pick` of the entry whose `ms` is the median of three. */
function middleOf<T>(three: readonly { ms: number; pick: T }[]): T {
  return [...three].sort((a, b) => a.ms - b.ms)[1]!.pick;
}

/** Refinement: bisect where the fastest backend changes, until bracketed within ±10 %. */
function* refineSteps(
  state: PlanState,
  job: CalibrationJob,
  backends: readonly Backend[],
  chosen: ReadonlyMap<Backend, Variant[]>,
): Steps {
  const { op, dtype } = job;
  for (let round = 0; round < state.plan.refineRounds; round++) {
    if (state.time.past(state.time.gridDeadline())) return;
    const sizes = nextRefinementSizes(state.measurements, op, dtype);
    if (sizes.length === 0) return;
    state.progressTotal += sizes.length * backends.length;
    const reqs: MeasureRequest[] = [];
    for (const { size, backends: pair, residency } of sizes) {
      const shape = op.axis.shape(size);
      for (const backend of pair) {
        if (!backends.includes(backend)) continue;
        for (const v of runnable(op, backend, shape, dtype, chosen.get(backend), 1)) {
          reqs.push({
            op: op.name,
            shape,
            dtype,
            backend,
            variant: v,
            residency: backend === "webgpu" ? residency : "end-to-end",
          });
        }
      }
    }
    yield* state.measure(reqs, op);
  }
}

/**
 * Where a series bends between grid points, the midpoints on either side of the bend, as many per
 * series as the plan has bend points.
 */
function* bendSteps(state: PlanState, job: CalibrationJob, backends: readonly Backend[]): Steps {
  const { op, dtype } = job;
  const max = state.plan.bendPoints;
  if (state.time.past(state.time.gridDeadline())) return;
  yield* measurePoints(state, job, backends, bendPoints(state.measurements, op, dtype, { max }));
}

/** Rounds of {@linkcode rateStepMidpoints} per job: each halves the gaps the one before left. */
const STEP_FILL_ROUNDS = 2;

/**
 * Where a wasm-mt series of a one-dimensional op first wakes a worker (`threadWakePoints`),
 * either side of where a CPU series of a byte-bound op starts streaming its operands
 * (`cacheEdgePoints`), and, where a device streams an op's operands, the grid's midpoints
 * (`streamingMidpoints`: in a default run the grid's own time had left them out of every gemv
 * job, and a decode's 768-wide projections were priced from 512² and 976²); then where a CPU or
 * WebGPU device-resident series' rate steps between two neighbouring sizes (a cache level, a
 * device filling up), the midpoint of the gap, twice over (`rateStepMidpoints`), as many per
 * series and round as the plan has bend points. Only cheap runs (five milliseconds or less) are
 * asked for, so the job's deadline does not hold them back: a job whose WebGPU
 * climbs took its grid time still gets them, for a few seconds.
 */
function* stepFills(state: PlanState, job: CalibrationJob, backends: readonly Backend[]): Steps {
  const { op, dtype } = job;
  if (state.plan.bendPoints <= 0) return;
  yield* measurePoints(state, job, backends, [
    ...threadWakePoints(state.measurements, op, dtype),
    ...cacheEdgePoints(state.measurements, op, dtype),
    ...streamingMidpoints(state.measurements, op, dtype, state.plan.bendPoints),
  ]);
  for (let round = 0; round < STEP_FILL_ROUNDS; round++) {
    const points = rateStepMidpoints(state.measurements, op, dtype, state.plan.bendPoints);
    if (!(yield* measurePoints(state, job, backends, points))) return;
  }
}

/** The largest on-axis sizes of a WebGPU series beside which partial tiles are measured. */
const OFF_TILE_SIZES = 2;

/**
 * Beside each of the device-resident series' largest {@linkcode OFF_TILE_SIZES} grid sizes, the
 * sizes the grid's powers of two never are. Four past it, the winning variant, where its output
 * tiles come out partly empty (a 260³ matmul on 64 × 128 tiles runs 320 × 384 outputs' worth of
 * threads): their cost is measured, not assumed (`models/_tiles.ts`); on lavapipe 260³ took
 * 1.5× and 388³ 1.4× the time of 256³ and 384³. And one below it, where the winner cannot run
 * (vector loads need n % 4 == 0; a program with n = 77 runs another variant), the best-ranked
 * variant that can, so it is predicted from its own times where the work, not the launch, sets
 * them: the variant search timed it at one anchor only, and on lavapipe matmul's 16 × 8 tiles
 * with scalar loads ran 32³ at 1.28× the vector ones' time and 127³–511³ at 1.6–2.2× theirs at
 * 128³–512³. Measured however late the job is, except in a quick run.
 */
function* offTileSteps(
  state: PlanState,
  job: CalibrationJob,
  backends: readonly Backend[],
  chosen: ReadonlyMap<Backend, Variant[]>,
): Steps {
  const { op, dtype } = job;
  const ranked = chosen.get("webgpu");
  const winner = ranked?.[0];
  if (!backends.includes("webgpu") || winner === undefined) return;
  // Sure work outside a quick run, like the first off-axis shapes: a late matmul job skipped
  // them in the AMD EPYC VM's default run, and lavapipe ran 611³ on 16 × 8 scalar-load tiles
  // in 57 ms against 25.6 predicted, 300³ on partly empty 16 × 16 tiles in 4.1 against 2.5.
  if (state.plan.mode === "quick" && state.time.past(state.time.jobDeadline())) return;
  const winnerId = variantId(winner);
  const sizes = [
    ...new Set(
      state.measurements.filter((m) =>
        m.op === op.name && m.dtype === dtype && m.backend === "webgpu" && m.state === "ok" &&
        m.residency === "device-resident" && m.variant === winnerId && !m.offAxis
      ).map((m) => m.size),
    ),
  ].sort((a, b) => a - b).slice(-OFF_TILE_SIZES);
  const utilisation = op.impls.webgpu?.utilisation;
  const reqs: MeasureRequest[] = [];
  const ask = (shape: Shape, variant: Variant) =>
    reqs.push({
      op: op.name,
      shape,
      dtype,
      backend: "webgpu",
      variant,
      residency: "device-resident",
    });
  for (const size of sizes) {
    const past = op.axis.shape(size + PAST_TILES);
    if (
      utilisation !== undefined && utilisation(past, winner) < PARTIAL_TILES &&
      runnable(op, "webgpu", past, dtype, [winner], 1).length === 1
    ) ask(past, winner);
    const below = op.axis.shape(size - 1);
    if (runnable(op, "webgpu", below, dtype, [winner], 1).length === 1) continue;
    const [fallback] = runnable(op, "webgpu", below, dtype, ranked, 1);
    if (fallback !== undefined) ask(below, fallback);
  }
  if (reqs.length === 0) return;
  state.progressTotal += reqs.length;
  yield* state.measure(reqs, op);
}

/** How far past a grid size the partial tiles are measured: the vector loads' multiple. */
const PAST_TILES = 4;
/** Tiles under this share full are partial enough to measure what they cost. */
const PARTIAL_TILES = 0.9;

/**
 * Measures extra sizes of series the job measured: each once (a size two rules ask for is
 * measured once), where its backend is in the job and its variant can run it. False when none
 * was left to measure.
 */
function* measurePoints(
  state: PlanState,
  job: CalibrationJob,
  backends: readonly Backend[],
  asked: readonly BendPoint[],
): Steps<boolean> {
  const { op, dtype } = job;
  const points = asked
    .filter((p, i) =>
      asked.findIndex((q) =>
        q.size === p.size && q.backend === p.backend && q.residency === p.residency &&
        q.variant === p.variant
      ) === i
    )
    .filter((p) => {
      const variant = implOf(op, p.backend)?.variants.find((v) => variantId(v) === p.variant);
      return backends.includes(p.backend) && variant !== undefined &&
        runnable(op, p.backend, op.axis.shape(p.size), dtype, [variant], 1).length === 1;
    });
  if (points.length === 0) return false;
  state.progressTotal += points.length;
  yield* state.measure(
    points.map((p) => ({
      op: op.name,
      shape: op.axis.shape(p.size),
      dtype,
      backend: p.backend,
      variant: p.variant,
      residency: p.residency,
    })),
    op,
  );
  return true;
}

/**
 * Another pass over the sweep: points of a fitted series this session measured (three sizes or
 * more: what fits, crossovers and predictions rest on) are measured again, shape by shape with
 * their backends interleaved as in the grid, and pooled with their earlier windows. A budgeted
 * run revisits only the points that missed their confidence target, within its revisit reserve,
 * the least sure shapes first ({@linkcode revisitOrder}).
 * After the last pass, a point whose windows disagree gets one more.
 *
 * @param state The planner's state.
 * @param pass This pass's number (2 or more).
 * @param final Whether it is the last pass.
 * @example
 * ```ts ignore
 * yield* revisitSteps(state, 2, true);
 * ```
 */
export function* revisitSteps(state: PlanState, pass: number, final: boolean): Steps {
  const deadline = state.time.startRevisit();
  const seriesOf = (m: Measurement) =>
    `${m.op}|${m.dtype}|${m.backend}|${m.variant}|${m.residency}`;
  const target = state.plan.stopping.targetRelCi ?? DEFAULT_STOPPING.targetRelCi;
  const mine = state.measurements.filter((m) =>
    m.state === "ok" && m.seq >= state.sessionSeq && state.windowsOf.has(measurementKey(m))
  );
  const sizesOf = new Map<string, Set<number>>();
  for (const m of mine) {
    sizesOf.set(seriesOf(m), (sizesOf.get(seriesOf(m)) ?? new Set()).add(m.size));
  }
  const todo = mine.filter((m) =>
    sizesOf.get(seriesOf(m))!.size >= REVISIT_MIN_SIZES &&
    (state.plan.mode !== "default" || (m.state === "ok" && m.wall.relCi > target))
  );
  state.progressTotal += todo.length;
  const groups = revisitOrder(state.plan.jobs, todo, state.plan.mode === "default");
  let phase = "";
  const enter = (job: CalibrationJob) => {
    const name = `${job.op.name} ${job.dtype}: pass ${pass} of ${state.plan.passes}`;
    if (name !== phase) state.phase(phase = name);
  };
  for (const [i, { job, points }] of groups.entries()) {
    if (state.time.past(deadline)) break;
    enter(job);
    yield* addWindow(state, points);
    if ((i + 1) % SAVE_EVERY_GROUPS === 0) yield { kind: "save" };
  }
  // With two windows that disagree (a stall in one, the adapter on one core) the pooled median
  // would sit halfway between them: a third decides.
  if (final) {
    for (const { job, points } of groups) {
      if (state.time.past(deadline)) break;
      const split = points.map((m) => state.done.get(measurementKey(m))!).filter((m) =>
        windowsDisagree(state.windowsOf.get(measurementKey(m)) ?? [])
      );
      if (split.length === 0) continue;
      state.progressTotal += split.length;
      enter(job);
      yield* addWindow(state, split);
    }
  }
  yield { kind: "save" };
}

/** Shapes revisited between saves: an interrupted revisit keeps what it measured. */
const SAVE_EVERY_GROUPS = 8;

/** One shape of one job's points to revisit, measured together. */
export interface RevisitGroup {
  readonly job: CalibrationJob;
  readonly points: readonly Measurement[];
}

/**
 * The points to revisit, a shape of a job at a time (its backends and variants interleaved): in
 * plan order, sizes ascending; or, where the revisit has only its reserve (`noisiestFirst`), the
 * shapes whose noisiest point is the least sure first, whatever their job. In plan order a
 * default run's reserve went to matmul's small sizes: on the AMD EPYC VM wasm-mt's 1024³ (±33 %,
 * 36.5 ms where ~24 was its speed) and every later job went without a second window, and
 * 611³–900³ were predicted 60 % slow. (By size, not shape, the off-axis shapes of one size made
 * one group: 23 points and 24 s of a 35 s reserve.)
 *
 * @param jobs The plan's jobs.
 * @param todo The points to revisit.
 * @param noisiestFirst Whether the least sure shapes go first.
 * @returns The groups, in the order to measure them.
 * @example
 * ```ts ignore
 * const groups = revisitOrder(plan.jobs, todo, true);
 * ```
 */
export function revisitOrder(
  jobs: readonly CalibrationJob[],
  todo: readonly Measurement[],
  noisiestFirst: boolean,
): RevisitGroup[] {
  const groups: RevisitGroup[] = [];
  const shapeOf = (m: Measurement) => JSON.stringify(m.shape);
  for (const job of jobs) {
    const mine = todo.filter((m) => m.op === job.op.name && m.dtype === job.dtype)
      .sort((a, b) => a.size - b.size);
    for (const shape of new Set(mine.map(shapeOf))) {
      groups.push({ job, points: mine.filter((m) => shapeOf(m) === shape) });
    }
  }
  if (!noisiestFirst) return groups;
  const worst = (g: RevisitGroup) =>
    Math.max(...g.points.map((m) => m.state === "ok" ? m.wall.relCi : 0));
  return groups.map((g, i) => ({ g, i, w: worst(g) }))
    .sort((a, b) => b.w - a.w || a.i - b.i)
    .map(({ g }) => g);
}

/** Measures `points` (one shape, its backends interleaved) once more and pools each point. */
function* addWindow(state: PlanState, points: readonly Measurement[]): Steps {
  const outcome = yield* state.sample(points.map(requestOf));
  points.forEach((m, i) => {
    const key = measurementKey(m);
    const window = outcome.windows?.[i];
    if (!window || m.state !== "ok") return;
    const windows = [...state.windowsOf.get(key)!, window];
    state.windowsOf.set(key, windows);
    const pooled: Measurement = {
      ...pooledResult(m, windows),
      size: m.size,
      seq: m.seq,
      ...(m.offAxis ? { offAxis: true as const } : {}),
    };
    state.replace(m, pooled);
    state.measured(pooled, ` (${windows.length} windows)`);
  });
}
