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
  type OpSpec,
  type Residency,
  type Shape,
  type Variant,
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

/** An unsupported reason that a larger size of the same series would hit too. */
const OVER_LIMITS = /over the adapter|exceeds max|over max|Out of device memory/i;

/** Per backend and residency: the last size measured, its time, and the fastest time seen. */
interface Seen {
  readonly size: number;
  readonly ms: number;
  /** The fastest time seen: about the case's fixed overhead. */
  readonly fixedMs: number;
}

/**
 * Measures a job's grid and returns the backends still in play at its end (not stopped as
 * unsupported).
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
  // A budgeted run covers the range first (every other size), then fills in while its time
  // lasts: cut short, it loses detail, not the large sizes where the GPU wins.
  const coarse = state.plan.mode === "thorough"
    ? job.sizes
    : job.sizes.filter((_, i) => i % 2 === 0 || i === job.sizes.length - 1);
  let reached = 0;
  for (const [i, size] of coarse.entries()) {
    // However late the job starts, its first sizes are measured: every op gets a fit.
    if (i >= MIN_GRID_SIZES && state.time.past(state.time.gridDeadline())) break;
    yield* confirmSlowness(grid, size);
    if (!(yield* gridSize(grid, size))) break;
    reached = size;
    if (job.converged(state.measurements, size)) break;
  }
  for (const size of job.sizes.filter((s) => s < reached && !coarse.includes(s))) {
    if (state.time.past(state.time.gridDeadline())) break;
    yield* gridSize(grid, size);
  }
  return new Set(backends.filter((b) => !grid.stopped.has(b)));
}

/** Measures every series still in play at `size`; false when none was. */
function* gridSize(grid: GridState, size: number): Steps<boolean> {
  const { state, job: { op, dtype } } = grid;
  const shape = op.axis.shape(size);
  const reqs: MeasureRequest[] = [];
  for (const backend of grid.backends) {
    if (grid.stopped.has(backend)) continue;
    for (const residency of residenciesFor(backend)) {
      if (grid.tooLong(backend, residency, size) || grid.settled.has(`${backend}|${residency}`)) {
        continue;
      }
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
      grid.settled.add(`${req.backend}|${r.residency}`);
    }
    if (r?.state === "ok") grid.saw(req.backend, r.residency, size, r.wall.median);
  });
  if (state.plan.mode !== "thorough") settle(grid, size);
  return true;
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
  readonly seen = new Map<string, Seen>();
  /** Series whose slowness a repeat has confirmed. */
  readonly confirmed = new Set<string>();
  /** Series (`backend|residency`) that need no more sizes: over the limits, or predicted. */
  readonly settled = new Set<string>();

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
  }

  #work(size: number): number {
    const shape = this.job.op.axis.shape(size);
    return Math.max(this.job.op.flops(shape), this.job.op.bytes(shape, this.job.dtype));
  }

  /**
   * Whether the next run at `size` is predicted to take longer than the plan allows: fixed
   * overhead + the rest scaled with work, so a WebGPU case dominated by its ~11 ms sync is not cut
   * off as if all of it grew with size.
   */
  tooLong(backend: Backend, residency: Residency, size: number): boolean {
    const last = this.seen.get(`${backend}|${residency}`);
    if (!last) return false;
    const variable = Math.max(last.ms - last.fixedMs, 0);
    return last.fixedMs + variable * (this.#work(size) / this.#work(last.size)) >
      this.state.plan.maxCaseMs;
  }

  /** Notes a measured time of a series at `size`. */
  saw(backend: Backend, residency: Residency, size: number, ms: number): void {
    const key = `${backend}|${residency}`;
    const prev = this.seen.get(key);
    if (!prev || prev.size !== size) {
      this.seen.set(key, { size, ms, fixedMs: Math.min(prev?.fixedMs ?? ms, ms) });
    } else if (ms < prev.ms) {
      this.seen.set(key, { ...prev, ms, fixedMs: Math.min(prev.fixedMs, ms) });
    }
  }
}

/**
 * A backend is dropped on one measurement only after a repeat: a single stall (a wasm-mt worker
 * woken late, lavapipe down to one core) once cut wasm-mt off below its crossover. The repeat is
 * not recorded: it decides what to measure next; the report keeps what was measured.
 */
function* confirmSlowness(grid: GridState, size: number): Steps {
  const { op, dtype } = grid.job;
  const repeats: MeasureRequest[] = [];
  for (const backend of grid.backends) {
    if (grid.stopped.has(backend)) continue;
    for (const residency of residenciesFor(backend)) {
      const key = `${backend}|${residency}`;
      const last = grid.seen.get(key);
      if (!last || grid.confirmed.has(key) || !grid.tooLong(backend, residency, size)) continue;
      grid.confirmed.add(key);
      const lastShape = op.axis.shape(last.size);
      for (const v of runnable(op, backend, lastShape, dtype, grid.chosen.get(backend), 1)) {
        repeats.push({ op: op.name, shape: lastShape, dtype, backend, variant: v, residency });
      }
    }
  }
  const again = yield* grid.state.sample(repeats);
  (again.results ?? []).forEach((r, i) => {
    if (r.state !== "ok") return;
    const key = `${repeats[i]!.backend}|${r.residency}`;
    const prev = grid.seen.get(key);
    if (prev && r.wall.median < prev.ms) grid.seen.set(key, { ...prev, ms: r.wall.median });
  });
}

/**
 * Decide, then stop (budgeted modes). A CPU backend that loses by a margin its trend cannot close
 * is dominated: its decision is made, its fit has its points, it stops. A WebGPU end-to-end point
 * whose time is mostly transfers, and that the transfer figures plus the device-resident kernel
 * predicted within ±30 %, confirms the prediction: larger ones are predicted, not swept (they were
 * the giants of a full run, 160–180 ms of transfer per run).
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
  const e2e = grid.seen.get("webgpu|end-to-end");
  const resident = grid.seen.get("webgpu|device-resident");
  if (!e2e || !resident || e2e.size !== size || resident.size !== size) return;
  if (grid.settled.has("webgpu|end-to-end")) return;
  const p = transferPrediction(state.system, op, op.axis.shape(size), dtype, resident.ms);
  if (!p || p.transferShare < TRANSFER_BOUND_SHARE) return;
  if (Math.abs(e2e.ms / p.ms - 1) > TRANSFER_CONFIRM) return;
  grid.settled.add("webgpu|end-to-end");
  state.phase(
    `${op.name} ${dtype}: webgpu end-to-end is transfer-bound from ${size} (predicted ${
      p.ms.toPrecision(3)
    } ms, measured ${e2e.ms.toPrecision(3)} ms): larger sizes predicted, not swept`,
  );
}
