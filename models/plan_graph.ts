/**
 * `planGraph()`: where to run each op of a chain, when moving data between the CPU and the GPU
 * costs a synchronisation. On Mesa llvmpipe every readback waits ~11 ms for the queue, so a lone
 * op rarely belongs on the GPU while a long chain kept on the device often does: the choice is a
 * property of the chain, not of each op.
 *
 * @example
 * ```ts ignore
 * import { loadReport } from "../reports/load.ts";
 * import { planGraph } from "./plan_graph.ts";
 * const report = await loadReport("reports/latest.json");
 * const plan = planGraph(report, [
 *   { op: "matmul", shape: { m: 256, k: 256, n: 256 } },
 *   { op: "add", shape: { n: 65536 } },
 * ]);
 * console.log(plan.steps.map((s) => s.backend), plan.totalMs, plan.syncs);
 * ```
 *
 * @module
 */
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  BYTES_PER_ELEMENT,
  CPU_BACKENDS,
  type Dtype,
  type OpSpec,
  type Residency,
  type Shape,
} from "../kernels/types.ts";
import type { ProvenanceTag, Report } from "../core/schema.ts";
import { indexReport, outputElements, predictSeries } from "./_index.ts";

/**
 * One op of a chain; each op consumes the previous op's output.
 *
 * @example
 * ```ts
 * import type { GraphOp } from "./plan_graph.ts";
 * const op: GraphOp = { op: "matmul", shape: { m: 64, k: 64, n: 64 }, dtype: "f32" };
 * ```
 */
export interface GraphOp {
  /** Catalog op. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** `f32` when absent. */
  readonly dtype?: Dtype;
  /**
   * Bytes of the output passed to the next op. By default its elements (the shape's dims except
   * the contraction dim `k`) times the dtype's size; f32 for the quantized dtypes, whose
   * activations are f32.
   */
  readonly outputBytes?: number;
}

/**
 * Overrides of the report's system figures (for what-if questions and tests).
 *
 * @example
 * ```ts
 * import type { PlanOptions } from "./plan_graph.ts";
 * const o: PlanOptions = { roundTripMs: 11 };
 * ```
 */
export interface PlanOptions {
  /** Cost of one synchronisation (a readback's `mapAsync`), ms; `system.dispatchRoundTripMs`. */
  readonly roundTripMs?: number;
  /** Host → device rate, GB/s; `system.uploadGBps`. */
  readonly uploadGBps?: number;
  /** Device → host rate, GB/s; `system.readbackGBps`. */
  readonly readbackGBps?: number;
}

/**
 * Where one op runs and what it costs.
 *
 * @example
 * ```ts
 * import type { PlanStep } from "./plan_graph.ts";
 * function line(s: PlanStep) { return `${s.op} on ${s.backend}: ${s.kernelMs + s.transferMs} ms`; }
 * ```
 */
export interface PlanStep {
  /** Catalog op. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** Element type. */
  readonly dtype: Dtype;
  /** Backend chosen. */
  readonly backend: Backend;
  /** Variant predicted. */
  readonly variant: string;
  /**
   * `device-resident` when the op runs on the GPU with its data kept there; `end-to-end` for CPU
   * ops and for a GPU op that uploads, runs and reads back on its own.
   */
  readonly residency: Residency;
  /** Predicted kernel time (for an end-to-end GPU op: the whole measured round). */
  readonly kernelMs: number;
  /** Transfers and synchronisations charged to this step (before it, and after the last op). */
  readonly transferMs: number;
  /** Host → device copies charged to the step. */
  readonly uploads: number;
  /** Device → host copies charged to the step. */
  readonly readbacks: number;
  /** Waits for the GPU queue charged to the step. */
  readonly syncs: number;
  /** Weakest provenance of the step's figures. */
  readonly provenance: ProvenanceTag;
}

/**
 * The plan of a chain.
 *
 * @example
 * ```ts
 * import type { GraphPlan } from "./plan_graph.ts";
 * function onGpu(p: GraphPlan) { return p.steps.filter((s) => s.backend === "webgpu").length; }
 * ```
 */
export interface GraphPlan {
  /** One step per op, in chain order. */
  readonly steps: readonly PlanStep[];
  /** Predicted time of the whole chain, ms. */
  readonly totalMs: number;
  /** Kernel time of every step, ms. */
  readonly kernelMs: number;
  /** Transfer and synchronisation time of every step, ms. */
  readonly transferMs: number;
  /** Host → device copies. */
  readonly uploads: number;
  /** Device → host copies. */
  readonly readbacks: number;
  /** Waits for the GPU queue. */
  readonly syncs: number;
  /** Bytes copied host → device. */
  readonly uploadBytes: number;
  /** Bytes copied device → host. */
  readonly readbackBytes: number;
  /** Why some options were not considered (no adapter, no transfer figures...). */
  readonly notes: readonly string[];
}

type Where = 0 | 1;
const HOST: Where = 0;
const DEVICE: Where = 1;

interface Option {
  readonly backend: Backend;
  readonly variant: string;
  readonly ms: number;
  readonly provenance: ProvenanceTag;
}

interface Cell {
  cost: number;
  from: Where;
  step: PlanStep | null;
  uploadBytes: number;
  readbackBytes: number;
}

/**
 * Plans a chain of ops: dynamic programming over the chain with the state "where the data is"
 * (host or device), choosing for each op the best CPU backend, the GPU on device-resident data, or
 * a self-contained end-to-end GPU run.
 *
 * Costs: CPU and resident-GPU kernel times come from the report's predictions. Moving the carried
 * value host → device costs its bytes at the upload rate (no wait: `writeBuffer` is queued);
 * device → host costs one synchronisation (`dispatchRoundTripMs`) plus its bytes at the readback
 * rate. The chain starts on the host, so a GPU first op uploads all of its inputs; a chain that
 * ends on the device pays one last synchronisation and readback. Operands other than the carried
 * value (weights) are taken to live where their op runs already: they are uploaded once, not per
 * chain.
 *
 * @param report A parsed report.
 * @param ops The chain, in order.
 * @param options Overrides of the report's synchronisation and transfer figures.
 * @returns Each op's backend and cost, the total, and the transfers and synchronisations counted.
 * @throws {RangeError} on an empty chain, or an op no backend of the report can predict.
 * @example
 * ```ts ignore
 * const plan = planGraph(report, Array(8).fill({ op: "matmul", shape: { m: 256, k: 256, n: 256 } }));
 * console.log(plan.steps.every((s) => s.backend === "webgpu"), plan.syncs); // true 1
 * ```
 */
export function planGraph(
  report: Report,
  ops: readonly GraphOp[],
  options: PlanOptions = {},
): GraphPlan {
  if (ops.length === 0) throw new RangeError("Cannot plan an empty chain: pass at least one op");
  const notes: string[] = [];
  const transfers = transferCosts(report, options, notes);
  let cells: Cells = [
    { cost: 0, from: HOST, step: null, uploadBytes: 0, readbackBytes: 0 },
    { cost: Infinity, from: HOST, step: null, uploadBytes: 0, readbackBytes: 0 },
  ];
  const history: Cells[] = [];
  let carried = 0;
  for (let i = 0; i < ops.length; i++) {
    const stage = planStage(report, ops[i]!, i, carried, cells, transfers, notes);
    history.push(stage.cells);
    cells = stage.cells;
    carried = stage.outBytes;
  }
  const path = cheapestPath(history, carried, transfers.readbackMs(carried));
  const { steps } = path;
  const sum = (f: (s: PlanStep) => number) => steps.reduce((t, s) => t + f(s), 0);
  return {
    steps,
    totalMs: path.totalMs,
    kernelMs: sum((s) => s.kernelMs),
    transferMs: sum((s) => s.transferMs),
    uploads: sum((s) => s.uploads),
    readbacks: sum((s) => s.readbacks),
    syncs: sum((s) => s.syncs),
    uploadBytes: path.uploadBytes,
    readbackBytes: path.readbackBytes,
    notes,
  };
}

/** The cheapest way to each place the data can be after an op: host, device. */
type Cells = [Cell, Cell];

/** What moving the carried value costs, ms; Infinity both ways when the report cannot say. */
interface TransferCosts {
  readonly canMove: boolean;
  /** Host → device: the bytes at the upload rate (no wait: `writeBuffer` is queued). */
  readonly uploadMs: (bytes: number) => number;
  /** Device → host: one synchronisation plus the bytes at the readback rate. */
  readonly readbackMs: (bytes: number) => number;
}

function transferCosts(report: Report, options: PlanOptions, notes: string[]): TransferCosts {
  const roundTripMs = figure(options.roundTripMs, report.system.dispatchRoundTripMs.value);
  const uploadRate = figure(options.uploadGBps, report.system.uploadGBps.value);
  const readbackRate = figure(options.readbackGBps, report.system.readbackGBps.value);
  const canMove = roundTripMs !== null && uploadRate !== null && readbackRate !== null;
  if (!canMove) {
    notes.push(
      "Device-resident GPU steps not considered: the report lacks the round-trip, upload or " +
        "readback figure",
    );
  }
  return {
    canMove,
    uploadMs: (b) => canMove ? b / (uploadRate * 1e6) : Infinity,
    readbackMs: (b) => canMove ? roundTripMs + b / (readbackRate * 1e6) : Infinity,
  };
}

/**
 * One stage of the dynamic programme: from the cheapest ways to have the data on the host or the
 * device before op `i`, the cheapest after it, over every backend that can run it and every move
 * of the carried value that running it there needs.
 *
 * @throws {RangeError} when no backend of the report can run the op.
 */
function planStage(
  report: Report,
  g: GraphOp,
  i: number,
  carried: number,
  cells: Cells,
  transfers: TransferCosts,
  notes: string[],
): { cells: Cells; outBytes: number } {
  const dtype = g.dtype ?? "f32";
  const spec = getOp(g.op);
  const choices = optionsFor(report, spec, g.shape, dtype, notes);
  const totalBytes = spec.bytes(g.shape, dtype);
  const outBytes = g.outputBytes ?? outputBytesOf(spec, g.shape, dtype);
  const inBytes = i === 0 ? Math.max(totalBytes - outBytes, 0) : carried;
  const next: Cells = [
    { cost: Infinity, from: HOST, step: null, uploadBytes: 0, readbackBytes: 0 },
    { cost: Infinity, from: HOST, step: null, uploadBytes: 0, readbackBytes: 0 },
  ];
  const offer = (
    to: Where,
    from: Where,
    cost: number,
    step: PlanStep,
    up: number,
    down: number,
  ) => {
    const total = cells[from].cost + cost;
    if (total < next[to].cost) {
      next[to] = { cost: total, from, step, uploadBytes: up, readbackBytes: down };
    }
  };
  const step = (o: Option, residency: Residency, transferMs: number, counts: Counts) =>
    planStep(g, dtype, o, residency, transferMs, counts);
  if (choices.cpu !== null) {
    const o = choices.cpu;
    offer(HOST, HOST, o.ms, step(o, "end-to-end", 0, [0, 0, 0]), 0, 0);
    const back = transfers.readbackMs(inBytes);
    offer(HOST, DEVICE, back + o.ms, step(o, "end-to-end", back, [0, 1, 1]), 0, inBytes);
  }
  if (choices.resident !== null && transfers.canMove) {
    const o = choices.resident;
    const up = transfers.uploadMs(inBytes);
    offer(DEVICE, HOST, up + o.ms, step(o, "device-resident", up, [1, 0, 0]), inBytes, 0);
    offer(DEVICE, DEVICE, o.ms, step(o, "device-resident", 0, [0, 0, 0]), 0, 0);
  }
  if (choices.endToEnd !== null) {
    const o = choices.endToEnd;
    const allInputs = Math.max(totalBytes - outBytes, 0);
    offer(HOST, HOST, o.ms, step(o, "end-to-end", 0, [1, 1, 1]), allInputs, outBytes);
  }
  if (next[HOST].cost === Infinity && next[DEVICE].cost === Infinity) {
    throw new RangeError(
      `Cannot plan op ${i} (${g.op} ${dtype}): the report has no backend that can run it; ` +
        `calibrate it first`,
    );
  }
  return { cells: next, outBytes };
}

/** Uploads, readbacks and synchronisations of a step. */
type Counts = readonly [number, number, number];

/** A step of the plan: an op run by one option at a residency, with its transfers. */
function planStep(
  g: GraphOp,
  dtype: Dtype,
  o: Option,
  residency: Residency,
  transferMs: number,
  counts: Counts,
): PlanStep {
  return {
    op: g.op,
    shape: g.shape,
    dtype,
    backend: o.backend,
    variant: o.variant,
    residency,
    kernelMs: o.ms,
    transferMs,
    uploads: counts[0],
    readbacks: counts[1],
    syncs: counts[2],
    provenance: o.provenance,
  };
}

/**
 * The cheapest plan, traced back from its end: on the host, or on the device plus the last
 * synchronisation and readback (`finishMs`, charged to the last step).
 */
function cheapestPath(
  history: readonly Cells[],
  carried: number,
  finishMs: number,
): { steps: PlanStep[]; totalMs: number; uploadBytes: number; readbackBytes: number } {
  const cells = history[history.length - 1]!;
  const endOnHost = cells[HOST].cost;
  const endOnDevice = cells[DEVICE].cost + finishMs;
  let where: Where = endOnHost <= endOnDevice ? HOST : DEVICE;
  const steps: PlanStep[] = [];
  let uploadBytes = 0;
  let readbackBytes = where === DEVICE ? carried : 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const cell = history[i]![where];
    let s = cell.step!;
    if (i === history.length - 1 && where === DEVICE) {
      s = {
        ...s,
        transferMs: s.transferMs + finishMs,
        readbacks: s.readbacks + 1,
        syncs: s.syncs + 1,
      };
    }
    steps.push(s);
    uploadBytes += cell.uploadBytes;
    readbackBytes += cell.readbackBytes;
    where = cell.from;
  }
  steps.reverse();
  return { steps, totalMs: Math.min(endOnHost, endOnDevice), uploadBytes, readbackBytes };
}

function figure(override: number | undefined, value: number | null): number | null {
  const v = override ?? value;
  return v === null || !Number.isFinite(v) || v < 0 ? null : v;
}

function outputBytesOf(op: OpSpec, shape: Shape, dtype: Dtype): number {
  const activation = dtype === "q8" || dtype === "q4"
    ? BYTES_PER_ELEMENT.f32
    : BYTES_PER_ELEMENT[dtype];
  return outputElements(op, shape) * activation;
}

function optionsFor(
  report: Report,
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  notes: string[],
): { cpu: Option | null; resident: Option | null; endToEnd: Option | null } {
  const index = indexReport(report);
  const size = op.axis.size(shape);
  const flops = op.flops(shape);
  const bytes = op.bytes(shape, dtype);
  const predict = (residency: Residency, wanted: readonly Backend[]): Option | null => {
    const table = index.table(op.name, dtype, residency);
    if (table === null) return null;
    let best: Option | null = null;
    for (const s of table.series) {
      if (!wanted.includes(s.backend)) continue;
      const p = predictSeries(s, op.dims, size, shape, flops, bytes, null);
      if (p !== null && (best === null || p.ms < best.ms)) {
        best = { backend: s.backend, variant: p.variant, ms: p.ms, provenance: p.provenance };
      }
    }
    return best;
  };
  const resident = predict("device-resident", ["webgpu"]);
  if (resident === null) {
    const note =
      `No device-resident webgpu data for ${op.name} ${dtype}: it can only run end-to-end`;
    if (!notes.includes(note)) notes.push(note);
  }
  return {
    cpu: predict("end-to-end", CPU_BACKENDS),
    resident,
    endToEnd: predict("end-to-end", ["webgpu"]),
  };
}
