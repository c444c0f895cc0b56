/**
 * A job's off-axis shapes (`shapes.ts`) as planner steps: each shape measured on every backend the
 * job measured (its best variant, each residency), interleaved per shape like the grid, and the
 * variants screened again where the shape, not the square, decides which one is fastest.
 *
 * @module
 */
import {
  type Backend,
  type Dtype,
  type OpSpec,
  type Residency,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { Measurement } from "../core/schema.ts";
import type { MeasureRequest } from "../core/result.ts";
import type { CalibrationJob } from "./plan.ts";
import type { PlanState, Steps } from "./plan_state.ts";
import { residenciesFor, runnable, screeningResidency } from "./grid.ts";
import { offAxisShapes, sureOffAxisShapes } from "./shapes.ts";
import { screen } from "./screen.ts";

/**
 * The job's off-axis shapes: each measured on every backend the job measured (its best variant,
 * each residency), interleaved per shape like the grid, within the job's time; the sure ones
 * (`sureOffAxisShapes`) whatever the clock says, and past the job's time the rest where a run is
 * cheap ({@linkcode cheapLate}). A backend that stopped growing because another
 * dominates it at large sizes still runs them: a matmul with m = 1 is another problem, and its
 * predictions need it. A backend whose sweep says one run at this shape's work would take over
 * {@linkcode MAX_OFF_AXIS_RUN_MS} is left out.
 *
 * Which variant is fastest changes with the proportions, so when the plan searches variants, a
 * backend's first {@linkcode SCREENED_SHAPES} cheap shapes (one run under
 * {@linkcode EXTRA_VARIANT_MAX_RUN_MS}; the list puts the most unlike the axis first) screen its
 * variants again (see {@linkcode screeningOrder}), and each variant that beat the winner at one
 * of them runs the cheap shapes after it too. The models rank the variants measured at such shapes
 * there (`models/`). On the 2-vCPU Intel Xeon VM, lavapipe, one process, device-resident f32
 * (every variant, two rounds): 4 × 4 register tiles ran 1 × 1024 × 1024 and 1 × 4096 × 4096
 * fastest (1.66 and 26.7 ms), the 16 × 8 tiles one calibration chose at 128³ ×1.64 and ×1.56
 * slower; at 8 × 1024 × 4096 the 16 × 16 tiles were fastest (8.1 ms), 16 × 8 ×1.31 and 4 × 4
 * ×1.47 slower. The square search of a default run had timed 6 of the 20 variants, 4 × 4 not
 * among them, and the matmul job was past its time at its first off-axis shape in every default
 * calibration, so no second variant ran there: the extra variants are sure work at the sure shapes.
 *
 * @param state The planner's state.
 * @param job The job.
 * @param backends The backends the job measured.
 * @param chosen Per backend its variants, the square search's winner first (`variantSearch`).
 * @example
 * ```ts ignore
 * yield* offAxisSteps(state, job, backends, chosen);
 * ```
 */
export function* offAxisSteps(
  state: PlanState,
  job: CalibrationJob,
  backends: readonly Backend[],
  chosen: ReadonlyMap<Backend, readonly Variant[]>,
): Steps {
  const { op, dtype } = job;
  const shapes = offAxisShapes(op, dtype, state.plan.mode);
  if (shapes.length === 0) return;
  state.phase(`${op.name} ${dtype}: ${shapes.length} off-axis shapes`);
  // The first few shapes are measured whatever the clock says (`shapes.ts` lists the most
  // telling first).
  const minimum = sureOffAxisShapes(op, state.plan.mode);
  // Per backend, the variants besides the winner that beat it at a screened shape, and how many
  // shapes screened its variants so far.
  const extras = new Map<Backend, Variant[]>();
  const screens = new Map<Backend, number>();
  for (const [i, shape] of shapes.entries()) {
    // Past the job's time, the shapes after the sure ones run only where a run costs little.
    const late = i >= minimum && state.time.past(state.time.jobDeadline());
    const variantsToo = state.plan.searchVariants && !late;
    const reqs: MeasureRequest[] = [];
    const screening: Backend[] = [];
    for (const backend of backends) {
      const ranked = chosen.get(backend) ?? [];
      for (const residency of residenciesFor(backend)) {
        const ms = sweptRunMs(state.measurements, op, dtype, backend, residency, shape);
        if (ms !== null && ms > MAX_OFF_AXIS_RUN_MS) continue;
        if (late && !cheapLate(backend, ms)) continue;
        // Extra variants run in the residency that ranks variants only: end to end, a WebGPU
        // kernel pays the same transfers and sync whichever variant it is (the models price it
        // by the device-resident ranking).
        const cheap = variantsToo && residency === screeningResidency(backend) && ms !== null &&
          ms <= EXTRA_VARIANT_MAX_RUN_MS;
        if (cheap && (screens.get(backend) ?? 0) < SCREENED_SHAPES) {
          screening.push(backend);
          continue;
        }
        // The winner, or the best-ranked variant that can run this shape; at a cheap shape, the
        // extras that can too.
        const first = runnable(op, backend, shape, dtype, ranked, 1);
        const more = cheap ? extras.get(backend) ?? [] : [];
        const variants = [
          ...first,
          ...runnable(op, backend, shape, dtype, more, more.length)
            .filter((v) => first.every((f) => variantId(f) !== variantId(v))),
        ];
        for (const v of variants) {
          reqs.push({ op: op.name, shape, dtype, backend, variant: v, residency });
        }
      }
    }
    state.progressTotal += reqs.length;
    yield* state.measure(reqs, op);
    for (const backend of screening) {
      const first = !screens.has(backend);
      screens.set(backend, (screens.get(backend) ?? 0) + 1);
      const found = yield* screenAt(state, op, dtype, backend, shape, {
        ranked: chosen.get(backend) ?? [],
        extras: extras.get(backend) ?? [],
        first,
      });
      extras.set(backend, [...(extras.get(backend) ?? []), ...found]);
    }
  }
}

/**
 * Whether a shape after the sure ones still runs on `backend` once the job is past its time: on
 * the host's backends, where the sweep prices a run under {@linkcode LATE_RUN_MS}. The off-axis
 * list's tail costs the CPU backends seconds in all and gives their shape models more
 * proportions to learn from: the last default run on the 2-vCPU AMD EPYC VM measured the 13 sure
 * shapes of matmul's 19 and 8 of gemv's 11, and wasm-mt's matmul model, from 13 shapes, priced
 * 8 × 2560 × 640 ×1.6 slow. A WebGPU run pays a sync per sample (~11 ms on lavapipe) whatever its
 * size, and lavapipe's time moves ×2: there the tail waits for a run with time.
 */
function cheapLate(backend: Backend, ms: number | null): boolean {
  return backend !== "webgpu" && ms !== null && ms <= LATE_RUN_MS;
}

/** The longest run the sweep prices that a shape past the job's time still takes (ms). */
const LATE_RUN_MS = 20;

/** How many cheap off-axis shapes of a backend screen its variants. */
export const SCREENED_SHAPES = 2;

/** A run the sweep prices longer than this is not measured at an off-axis shape. */
const MAX_OFF_AXIS_RUN_MS = 300;
/**
 * A run the sweep prices longer than this is measured at an off-axis shape by its winner only: the
 * extra variants are for the decode-sized shapes (m = 1 to 16), where the choice moves most.
 * lavapipe's 1 × 4096 × 4096 device-resident ran 27–42 ms by variant.
 */
const EXTRA_VARIANT_MAX_RUN_MS = 50;

/**
 * Screens a backend's variants at `shape` in its screening residency, for as long as the square
 * search may take (`searchSpanS`), and returns the new extras there ({@linkcode newExtras}).
 */
function* screenAt(
  state: PlanState,
  op: OpSpec,
  dtype: Dtype,
  backend: Backend,
  shape: Shape,
  variants: {
    readonly ranked: readonly Variant[];
    readonly extras: readonly Variant[];
    readonly first: boolean;
  },
): Steps<Variant[]> {
  const residency = screeningResidency(backend);
  const timed = timedOnAxis(state.measurements, op, dtype, backend);
  const order = screeningOrder(
    variants.ranked,
    variants.extras,
    timed,
    variants.first,
    outputShareAt(op, backend, shape),
  );
  const candidates = runnable(op, backend, shape, dtype, order, order.length);
  const reqs = candidates.map((variant): MeasureRequest => ({
    op: op.name,
    shape,
    dtype,
    backend,
    variant,
    residency,
  }));
  state.progressTotal += reqs.length;
  const deadline = state.time.now() + state.time.searchSpanS();
  const results = yield* screen(state, op, reqs, deadline);
  const winner = variants.ranked[0];
  if (winner === undefined) return [];
  const timings = candidates.map((variant, i) => {
    const r = results[i];
    return { variant, ms: r?.state === "ok" ? r.wall.median : null };
  });
  return newExtras(timings, winner, variants.extras);
}

/**
 * The order in which a backend's variants are screened at an off-axis shape, most wanted first
 * (the screen stops between batches when its time is up): the square search's winner, the
 * variants already found faster off the axis, the squares' runner-up, then, at the first screen,
 * the variants the square search never timed (a default run times what its time allows, in
 * declared order) before the rest of its ranking; at a later screen the ranking first. The first
 * screen's shape (m = 1) is the least like a square, where a variant the squares never needed
 * may win (lavapipe's 4 × 4 tiles); a later one's few rows (m = 8) run tiles as squares do, and
 * the untimed variants there were lavapipe's gemv with 32–64 threads a row, ×4–6 slower, each
 * costing a compile. At the first screen, those after the runner-up go in order of how much of
 * their arithmetic lands in the shape's output (`share`; the order above among equals): at m = 1
 * lavapipe's workgroup-memory tiles, whose every invocation computes a 32-row tile, ran 26 ms a
 * run where the rest ran 1–4, and screened early, they spent the screen's time before the 4-row
 * tiles with vector loads of A were reached.
 *
 * @param ranked The square search's ranking: timed variants fastest first, then the rest.
 * @param extras Variants already found faster than the winner off the axis.
 * @param timed Ids of the variants the square search timed.
 * @param first Whether this is the backend's first screen off the axis.
 * @param share The share of a variant's arithmetic at the shape that lands in its output
 *   ({@linkcode outputShareAt}); every variant's 1 when unknown.
 * @returns The variants, each once.
 * @example
 * ```ts
 * import { screeningOrder } from "./off_axis_steps.ts";
 * const v = (tile: number) => ({ tile });
 * const order = screeningOrder([v(8), v(16), v(4), v(2)], [], new Set(["tile=8", "tile=16", "tile=4"]));
 * console.log(order); // [{tile: 8}, {tile: 16}, {tile: 2}, {tile: 4}]
 * ```
 */
export function screeningOrder(
  ranked: readonly Variant[],
  extras: readonly Variant[],
  timed: ReadonlySet<string>,
  first = true,
  share: (variant: Variant) => number = () => 1,
): Variant[] {
  const rest = ranked.slice(2);
  const untimed = rest.filter((v) => !timed.has(variantId(v)));
  const ranks = rest.filter((v) => timed.has(variantId(v)));
  const order = [
    ...ranked.slice(0, 1),
    ...extras,
    ...ranked.slice(1, 2),
    ...(first ? byShare([...untimed, ...ranks], share) : [...ranks, ...untimed]),
  ];
  const seen = new Set<string>();
  return order.filter((v) => {
    const id = variantId(v);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** `variants` by `share`, most first; their order among equals kept. */
function byShare(variants: readonly Variant[], share: (variant: Variant) => number): Variant[] {
  return variants.map((v) => ({ v, share: share(v) }))
    .sort((a, b) => b.share - a.share)
    .map(({ v }) => v);
}

/**
 * The share of a variant's arithmetic at `shape` that lands in the output: what its running
 * invocation blocks compute of it (`blockUtilisation` of a WebGPU kernel; invocations wholly past
 * the output return at once), 1 for a kernel that declares none.
 *
 * @param op The op.
 * @param backend The backend.
 * @param shape The shape.
 * @returns The share, by variant.
 * @example
 * ```ts
 * import { outputShareAt } from "./off_axis_steps.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const share = outputShareAt(getOp("matmul"), "webgpu", { m: 1, k: 1024, n: 1024 });
 * console.log(share({ algo: "naive", wg: 64 })); // 1
 * ```
 */
export function outputShareAt(
  op: OpSpec,
  backend: Backend,
  shape: Shape,
): (variant: Variant) => number {
  const impl = backend === "webgpu" ? op.impls.webgpu : undefined;
  return (variant) => impl?.blockUtilisation?.(shape, variant) ?? 1;
}

/** Ids of the variants of a backend this job measured on the sweep's axis. */
function timedOnAxis(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  backend: Backend,
): Set<string> {
  const ids = new Set<string>();
  for (const m of measurements) {
    if (m.op === op.name && m.dtype === dtype && m.backend === backend && !m.offAxis) {
      ids.add(m.variant);
    }
  }
  return ids;
}

/** A screened variant and its median, null where it failed or was not tried. */
export interface ScreenTiming {
  readonly variant: Variant;
  readonly ms: number | null;
}

/**
 * The variants a screen adds to the extras, fastest first: those neither the winner nor an
 * extra already that ran {@linkcode EXTRA_MARGIN} faster than the winner and within that margin
 * of the screen's fastest, at most {@linkcode MAX_NEW_EXTRAS}. Where two variants tie at the
 * screen, the next shapes tell them apart: on lavapipe the gemv variants summing 8 and 4 rows per
 * invocation ran 4096 × 1024 f32 in 1.91 and 2.01 ms, the winner of the squares in 3.07, and at
 * 3000 columns the first ran ×1.5 slower than the second. Taking only the fastest kept the one
 * that lost there.
 *
 * @param timings The screen's variants and medians.
 * @param winner The square search's winner.
 * @param extras Variants already extras.
 * @returns The new extras.
 * @example
 * ```ts
 * import { newExtras } from "./off_axis_steps.ts";
 * const t = (rpi: number, ms: number) => ({ variant: { rpi }, ms });
 * const found = newExtras([t(16, 3.07), t(8, 1.91), t(4, 2.01), t(2, 2.5)], { rpi: 16 }, []);
 * console.log(found); // [{ rpi: 8 }, { rpi: 4 }]
 * ```
 */
export function newExtras(
  timings: readonly ScreenTiming[],
  winner: Variant,
  extras: readonly Variant[],
): Variant[] {
  const winnerId = variantId(winner);
  const winnerMs = timings.find((t) => variantId(t.variant) === winnerId)?.ms ?? null;
  if (winnerMs === null) return [];
  const timed = timings.filter((t): t is ScreenTiming & { ms: number } => t.ms !== null);
  const fastest = Math.min(...timed.map((t) => t.ms));
  const known = new Set([winnerId, ...extras.map(variantId)]);
  return timed
    .filter((t) =>
      !known.has(variantId(t.variant)) && t.ms < winnerMs * (1 - EXTRA_MARGIN) &&
      t.ms <= fastest * (1 + EXTRA_MARGIN)
    )
    .sort((a, b) => a.ms - b.ms)
    .slice(0, MAX_NEW_EXTRAS)
    .map((t) => t.variant);
}

/** Most variants one screen adds to the extras: each costs a run at every cheap shape after it. */
const MAX_NEW_EXTRAS = 2;

/**
 * How much faster than the winner a screened variant must run to become an extra: a screen's
 * light stopping rule leaves a few per cent of noise, and a variant that ties the winner would
 * cost a measurement at every cheap shape after it for a coin flip.
 */
const EXTRA_MARGIN = 0.1;

/**
 * What the sweep says one run of `shape` costs on a backend: the on-axis measurement whose work is
 * nearest, scaled by work (flops, or bytes where they are the larger). Null before any.
 */
function sweptRunMs(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  backend: Backend,
  residency: Residency,
  shape: Shape,
): number | null {
  const work = Math.max(op.flops(shape), op.bytes(shape, dtype));
  let best: { distance: number; ms: number } | null = null;
  for (const m of measurements) {
    if (
      m.state !== "ok" || m.offAxis || m.op !== op.name || m.dtype !== dtype ||
      m.backend !== backend || m.residency !== residency
    ) continue;
    const w = Math.max(m.flops, m.bytes);
    const distance = Math.abs(Math.log(work / w));
    if (best === null || distance < best.distance) {
      best = { distance, ms: m.wall.median * (work / w) };
    }
  }
  return best?.ms ?? null;
}
