/**
 * `deno task bench:regret --report R.json`: how much time gpucal's calibrated selector loses
 * against the truly fastest backend, next to the seeds' fixed rules, on held-out workloads — odd
 * sizes the report never measured. Every backend is measured end-to-end at every workload (samples
 * interleaved, in rounds over all workloads whose windows are pooled, as calibrate pools its
 * passes), the fastest is the oracle, and each selector's regret is
 * Σ(chosen − best) / Σ best. The same measurements score the report's predictions (MAPE, share
 * within ±25 %). Bench only: nothing reachable from mod.ts imports this module.
 *
 * @module
 */
import { loadHeldOutReport, parseHeldOutArgs } from "./_held_out_flags.ts";
import {
  measureMany,
  openRunnerSource,
  pooledResult,
  type RunnerSource,
  UNSURE_REL_CI,
  windowMedians,
  type WindowSamples,
  windowsDisagree,
} from "../calibrate/measure.ts";
import type { MeasureOk, MeasureRequest, MeasureResult } from "../core/result.ts";
import { textTable } from "../core/format.ts";
import { getOp } from "../kernels/catalog.ts";
import { SOFTMAX_SWEEP_ROWS } from "../kernels/softmax/mod.ts";
import {
  type Backend,
  BACKENDS,
  type Dtype,
  formatShape,
  implOf,
  isOnAxis,
  type Residency,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { Report } from "../core/schema.ts";
import { predictTime } from "../models/predict.ts";
import { BackendSelector } from "../models/selector.ts";
import { pcieRule, tfjsHandoffRule, thresholdRule } from "./_seed_rules.ts";
import { median } from "../core/stats.ts";
import { measureProbe } from "../calibrate/stability.ts";
import type { StabilityProbe } from "../core/schema.ts";
import { compareHostState, hostStateLine } from "./_host_state.ts";
import { type ListedWorkload, parseWorkloadList } from "./_workload_list.ts";

const HELP = `Usage: deno task bench:regret --report PATH [options]

Measures every backend end-to-end (and WebGPU device-resident) on held-out workloads: sizes
between the report's grid points and non-square shapes it did not measure (matmul with few rows,
gemv with rows != cols in f32, q8 and q4, softmax with other row counts). Scores gpucal's selector
and three fixed rules (5x PCIe, Low/Medium/High thresholds, TF.js CPU handoff) by
regret = sum(chosen - best) / sum(best), and the report's predictions by MAPE, share within
+-10 % and +-25 %, and how often the stated 90 % intervals hold the measured median. Before each
round and at the end it times the report's drift probe and says whether the host ran as during
the calibration (JSON: "hostState").

Options:
  --report PATH     Calibration report of this machine (required)
  --workloads N     Only the first N workloads (spread over the ops); all by default
  --rounds N        Rounds over all workloads, each backend's windows pooled (default 2, as
                    calibrate's passes): every measured time then spans the whole run
  --shapes PATH     Measure the workloads listed in this file instead of the built-in set: one
                    per line, OP DTYPE SHAPE (e.g. "matmul f32 3x5000x300", "gemv q4 768x3072");
                    '#' starts a comment. As with the built-in set, a shape the report measured
                    (within 5 % in every dimension) is left out and listed as not held out
  --json            Print the results as JSON on stdout
  -h, --help        Show this help`;

/** A scalar `js` run predicted longer than this is not measured unless a selector picks `js`. */
const MAX_JS_RUN_MS = 1000;
/** Per case and round together; interleaved, so one workload costs about (backends × budget). */
const BUDGET_MS = 600;
/** Fewest ms a round's window of one case gets, however many rounds share the budget. */
const MIN_WINDOW_MS = 200;
const DEFAULT_ROUNDS = 2;
const MAX_ROUNDS = 5;
/** A prediction this close to the measured median counts as accurate. */
const ACCURATE_WITHIN = 0.25;
/** A report shape within this relative distance in every dimension is not held out. */
const SAME_SHAPE = 0.05;

/** The selectors compared, in table order. */
const SELECTORS = ["gpucal", "pcie-5x", "thresholds", "tfjs-handoff"] as const;
type SelectorName = typeof SELECTORS[number];

interface Workload {
  readonly op: string;
  readonly shape: Shape;
  readonly dtype: Dtype;
  /** Elements of each input tensor (TF.js's handoff looks at these). */
  readonly inputElements: readonly number[];
}

interface Family {
  readonly op: string;
  readonly dtype: Dtype;
  readonly sizes: readonly number[];
  readonly shape: (size: number) => Shape;
  readonly inputs: (size: number) => readonly number[];
}

/** A family of non-square shapes, listed. */
interface ShapeFamily {
  readonly op: string;
  readonly dtype: Dtype;
  readonly shapes: readonly Shape[];
  readonly inputs: (shape: Shape) => readonly number[];
}

const vector = (arity: number) => (n: number) => Array.from({ length: arity }, () => n);

/** Odd sizes, deliberately off the calibrator's power-of-two sweeps. */
const FAMILIES: readonly Family[] = [
  {
    op: "matmul",
    dtype: "f32",
    sizes: [23, 77, 181, 300, 611, 900],
    shape: (n) => ({ m: n, k: n, n }),
    inputs: (n) => [n * n, n * n],
  },
  {
    op: "add",
    dtype: "f32",
    sizes: [3000, 70001, 900000, 5e6],
    shape: (n) => ({ n }),
    inputs: vector(2),
  },
  {
    op: "fma",
    dtype: "f32",
    sizes: [3000, 70001, 900000, 5e6],
    shape: (n) => ({ n }),
    inputs: vector(3),
  },
  {
    op: "sum",
    dtype: "f32",
    sizes: [3000, 70001, 900000, 5e6],
    shape: (n) => ({ n }),
    inputs: vector(1),
  },
  {
    op: "dot",
    dtype: "f32",
    sizes: [2500, 50001, 700000, 3e6],
    shape: (n) => ({ n }),
    inputs: vector(2),
  },
  {
    op: "gemv",
    dtype: "f32",
    sizes: [300, 1500, 3000],
    shape: (n) => ({ rows: n, cols: n }),
    inputs: (n) => [n * n, n],
  },
  {
    op: "gemv",
    dtype: "q4",
    sizes: [300, 1500, 3000],
    shape: (n) => ({ rows: n, cols: n }),
    inputs: (n) => [n * n, n],
  },
  {
    op: "softmax",
    dtype: "f32",
    sizes: [100, 1000, 9000, 30000],
    shape: (cols) => ({ rows: SOFTMAX_SWEEP_ROWS, cols }),
    inputs: (cols) => [SOFTMAX_SWEEP_ROWS * cols],
  },
];

const gemvInputs = (s: Shape) => [s.rows! * s.cols!, s.cols!];

/**
 * Shapes programs run that no sweep axis holds, at proportions and sizes calibrate's off-axis set
 * (`calibrate/shapes.ts`) does not measure: LLM projections at batch 1, 8, 32 and 64 rows, gemvs
 * whose rows and columns differ, softmax over few rows or many.
 */
const SHAPE_FAMILIES: readonly ShapeFamily[] = [
  {
    op: "matmul",
    dtype: "f32",
    shapes: [
      { m: 1, k: 3072, n: 768 },
      { m: 8, k: 768, n: 3072 },
      { m: 64, k: 1536, n: 1536 },
      { m: 1, k: 1536, n: 6144 },
      { m: 32, k: 2048, n: 2048 },
      { m: 8, k: 2560, n: 640 },
      { m: 64, k: 640, n: 2560 },
      { m: 128, k: 768, n: 768 },
    ],
    inputs: (s) => [s.m! * s.k!, s.k! * s.n!],
  },
  {
    op: "gemv",
    dtype: "f32",
    shapes: [{ rows: 3072, cols: 768 }, { rows: 768, cols: 3072 }, { rows: 6000, cols: 1500 }],
    inputs: gemvInputs,
  },
  {
    op: "gemv",
    dtype: "q8",
    shapes: [{ rows: 3072, cols: 768 }, { rows: 1500, cols: 6000 }, { rows: 2500, cols: 2500 }],
    inputs: gemvInputs,
  },
  {
    op: "gemv",
    dtype: "q4",
    shapes: [{ rows: 768, cols: 3072 }, { rows: 6000, cols: 1500 }],
    inputs: gemvInputs,
  },
  {
    op: "softmax",
    dtype: "f32",
    shapes: [{ rows: 4, cols: 2000 }, { rows: 64, cols: 700 }, { rows: 300, cols: 3000 }],
    inputs: (s) => [s.rows! * s.cols!],
  },
];

/** The workloads round-robin over the families, so `--workloads N` still covers every op. */
function heldOut(): Workload[] {
  const lists: Workload[][] = [
    ...FAMILIES.map((f) =>
      f.sizes.map((size) => ({
        op: f.op,
        dtype: f.dtype,
        shape: f.shape(size),
        inputElements: f.inputs(size),
      }))
    ),
    ...SHAPE_FAMILIES.map((f) =>
      f.shapes.map((shape) => ({ op: f.op, dtype: f.dtype, shape, inputElements: f.inputs(shape) }))
    ),
  ];
  const out: Workload[] = [];
  const longest = Math.max(...lists.map((l) => l.length));
  for (let i = 0; i < longest; i++) {
    for (const list of lists) if (list[i] !== undefined) out.push(list[i]!);
  }
  return out;
}

/** The report's measured shape close to `w` in every dimension, or null when `w` is held out. */
function measuredNear(report: Report, w: Workload): Shape | null {
  for (const m of report.measurements) {
    if (m.op !== w.op || m.dtype !== w.dtype) continue;
    const near = Object.entries(w.shape).every(([d, v]) => {
      const u = m.shape[d];
      return u !== undefined && Math.abs(u - v) <= SAME_SHAPE * v;
    });
    if (near) return m.shape;
  }
  return null;
}

type Choice = Backend | { readonly error: string };

function choices(selector: BackendSelector, w: Workload): Record<SelectorName, Choice> {
  const op = getOp(w.op);
  let gpucal: Choice;
  try {
    gpucal = selector.select({ op: w.op, shape: w.shape, dtype: w.dtype }).backend;
  } catch (e) {
    gpucal = { error: e instanceof Error ? e.message : String(e) };
  }
  return {
    gpucal,
    "pcie-5x": pcieRule(op.flops(w.shape), op.bytes(w.shape, w.dtype)),
    thresholds: thresholdRule(op.complexity, Math.max(...w.inputElements)),
    "tfjs-handoff": tfjsHandoffRule(w.inputElements),
  };
}

interface Prediction {
  readonly ms: number;
  readonly variant: string;
  readonly provenance: string;
  readonly interval: readonly [number, number];
}

function predict(
  report: Report,
  w: Workload,
  backend: Backend,
  variant?: string,
  residency: Residency = "end-to-end",
): Prediction | null {
  try {
    const p = predictTime(report, {
      op: w.op,
      shape: w.shape,
      dtype: w.dtype,
      backend,
      residency,
      ...(variant === undefined ? {} : { variant }),
    });
    return { ms: p.ms, variant: p.variant, provenance: p.provenance, interval: p.interval };
  } catch (e) {
    if (e instanceof RangeError) return null;
    throw e;
  }
}

/** What happened to one backend at one workload. */
type BackendOutcome =
  | { readonly state: "ok"; readonly ms: number; readonly relCi: number; readonly variant: string }
  | { readonly state: "failed" | "unsupported" | "skipped"; readonly reason: string };

interface WorkloadResult {
  readonly op: string;
  readonly dtype: Dtype;
  readonly shape: string;
  readonly backends: Partial<Record<Backend, BackendOutcome>>;
  readonly predicted: Partial<Record<Backend, Prediction>>;
  /** WebGPU with its operands on the device, scored for prediction only (not selection). */
  readonly deviceResident: BackendOutcome | null;
  /** The report's prediction of WebGPU device-resident, when it has one. */
  readonly predictedResident: Prediction | null;
  /** Whether the shape lies off its op's sweep axis (a non-square matmul, rows ≠ cols). */
  readonly offAxis: boolean;
  /** The fastest measured backend over all, and over the rules' js / wasm / webgpu. */
  readonly best: Backend | null;
  readonly bestOfThree: Backend | null;
  readonly chosen: Record<SelectorName, Choice>;
}

function outcome(r: MeasureResult): BackendOutcome {
  if (r.state === "ok") {
    return { state: "ok", ms: r.wall.median, relCi: r.wall.relCi, variant: r.variant };
  }
  return { state: r.state, reason: r.state === "failed" ? r.error : r.reason };
}

function fastest(
  backends: Partial<Record<Backend, BackendOutcome>>,
  among: readonly Backend[],
): Backend | null {
  let best: Backend | null = null;
  let bestMs = Infinity;
  for (const b of among) {
    const o = backends[b];
    if (o?.state === "ok" && o.ms < bestMs) {
      best = b;
      bestMs = o.ms;
    }
  }
  return best;
}

/** Every window of one workload's backends so far, pooled into its outcome. */
type Pools = Map<string, { first: MeasureOk; windows: WindowSamples[] }>;

/** The pool key of a backend at a residency (CPU backends are end-to-end). */
function poolKey(backend: Backend, residency: Residency): string {
  return residency === "device-resident" ? `${backend} device-resident` : backend;
}

function addWindow(pools: Pools, r: MeasureOk, samples: WindowSamples): void {
  const key = poolKey(r.backend, r.residency);
  const pool = pools.get(key);
  if (pool) pool.windows.push(samples);
  else pools.set(key, { first: r, windows: [samples] });
}

/** A window that failed or could not run decides; an ok one is pooled with the earlier ones. */
function pooledOutcome(pools: Pools, r: MeasureResult): BackendOutcome {
  const pool = pools.get(poolKey(r.backend, r.residency));
  return r.state === "ok" && pool ? outcome(pooledResult(pool.first, pool.windows)) : outcome(r);
}

/** The variant gpucal would run here, as a request of `backend` at workload `w`. */
function requestOf(
  w: Workload,
  backend: Backend,
  variant: string | undefined,
  residency: Residency = "end-to-end",
): MeasureRequest {
  return {
    op: w.op,
    shape: w.shape,
    dtype: w.dtype,
    backend,
    residency,
    // The one the report tunes or fits for this size, or, when that one cannot run this shape
    // (a vec4 kernel at n = 23), the first that can.
    ...runnableVariant(w, backend, variant),
  };
}

async function runWorkload(
  report: Report,
  selector: BackendSelector,
  w: Workload,
  source: RunnerSource,
  pools: Pools,
  budgetMs: number,
): Promise<WorkloadResult> {
  const chosen = choices(selector, w);
  const picked = new Set(Object.values(chosen).filter((c): c is Backend => typeof c === "string"));
  const predicted: Partial<Record<Backend, Prediction>> = {};
  for (const b of BACKENDS) {
    const p = predict(report, w, b);
    if (p !== null) predicted[b] = p;
  }
  const backends: Partial<Record<Backend, BackendOutcome>> = {};
  const measured: Backend[] = [];
  for (const b of BACKENDS) {
    const ms = predicted[b]?.ms ?? 0;
    if (b === "js" && ms > MAX_JS_RUN_MS && !picked.has(b)) {
      backends[b] = { state: "skipped", reason: `predicted ${(ms / 1000).toFixed(1)} s per run` };
    } else {
      measured.push(b);
    }
  }
  const resident = predict(report, w, "webgpu", undefined, "device-resident");
  const requests = measured.map((backend) => requestOf(w, backend, predicted[backend]?.variant));
  if (resident !== null) requests.push(requestOf(w, "webgpu", resident.variant, "device-resident"));
  const results = await measureMany(requests, {
    runners: source,
    stopping: { budgetMs, minSamples: 5 },
    onSamples: (r, samples) => addWindow(pools, r, samples),
  });
  measured.forEach((b, i) => (backends[b] = pooledOutcome(pools, results[i]!)));
  return {
    deviceResident: resident === null ? null : pooledOutcome(pools, results[measured.length]!),
    predictedResident: resident,
    offAxis: !isOnAxis(getOp(w.op), w.shape),
    op: w.op,
    dtype: w.dtype,
    shape: formatShape(getOp(w.op), w.shape),
    backends,
    predicted,
    best: fastest(backends, BACKENDS),
    bestOfThree: fastest(backends, ["js", "wasm", "webgpu"]),
    chosen,
  };
}

interface SelectorScore {
  readonly name: string;
  /** Workloads scored: those where every selector's choice and the fastest were all timed. */
  readonly scored: number;
  /** Workloads this selector's choice could not be timed at (failed, unsupported, no choice). */
  readonly unscored: number;
  /** Scored workloads where the choice was the fastest. */
  readonly hits: number;
  /** Σ(chosen − best) / Σ best over the scored workloads. */
  readonly regret: number;
  /** Largest (chosen − best) / best over the scored workloads, and where. */
  readonly maxRegret: number;
  readonly maxRegretAt: string | null;
  readonly chosenMs: number;
  readonly bestMs: number;
}

type Pick = (r: WorkloadResult) => Choice | null;

function msOf(r: WorkloadResult, c: Choice | null): number | null {
  const o = typeof c === "string" ? r.backends[c] : undefined;
  return o?.state === "ok" ? o.ms : null;
}

/**
 * Scores every selector on the same workloads — those where all of them chose a backend that was
 * timed — so their sums compare; a choice that could not run is counted as unscored instead.
 */
function scoreAll(
  results: readonly WorkloadResult[],
  picks: ReadonlyArray<readonly [string, Pick]>,
): SelectorScore[] {
  const common = results.filter((r) =>
    msOf(r, r.best) !== null && picks.every(([, pick]) => msOf(r, pick(r)) !== null)
  );
  return picks.map(([name, pick]) => {
    let hits = 0, chosenMs = 0, bestMs = 0, maxRegret = 0;
    let maxRegretAt: string | null = null;
    for (const r of common) {
      const c = pick(r);
      const ms = msOf(r, c)!;
      const best = msOf(r, r.best)!;
      if (c === r.best) hits++;
      chosenMs += ms;
      bestMs += best;
      const excess = (ms - best) / best;
      if (excess > maxRegret) {
        maxRegret = excess;
        maxRegretAt = `${r.op} ${r.dtype} ${r.shape} (${c} vs ${r.best})`;
      }
    }
    const unscored = results.filter((r) => msOf(r, r.best) !== null && msOf(r, pick(r)) === null);
    return {
      name,
      scored: common.length,
      unscored: unscored.length,
      hits,
      regret: bestMs > 0 ? (chosenMs - bestMs) / bestMs : NaN,
      maxRegret,
      maxRegretAt,
      chosenMs,
      bestMs,
    };
  });
}

interface Accuracy {
  /** What the row covers: all, a backend (and residency), or the off-axis shapes. */
  readonly backend: string;
  readonly pairs: number;
  /** Mean of |predicted − measured| / measured. */
  readonly mape: number;
  /** Median of the same errors: MAPE is dominated by a few far extrapolations. */
  readonly medianApe: number;
  /** Share of pairs with |predicted − measured| ≤ 10 % of measured. */
  readonly within10: number;
  /** Share of pairs with |predicted − measured| ≤ 25 % of measured. */
  readonly within25: number;
  /** Share of measured medians inside the prediction's stated interval. */
  readonly coverage: number;
  /** Median of the intervals' hi / lo. */
  readonly medianWidth: number;
}

interface AccuracyPair {
  /** The backend, with " device-resident" for WebGPU with its operands on the device. */
  readonly backend: string;
  readonly offAxis: boolean;
  readonly predicted: number;
  readonly interval: readonly [number, number];
  readonly measured: number;
}

function runnableVariant(
  w: Workload,
  backend: Backend,
  preferred: string | undefined,
): { variant?: string } {
  const impl = implOf(getOp(w.op), backend);
  if (!impl) return preferred === undefined ? {} : { variant: preferred };
  const runs = (v: Variant) => (impl.unsupported?.(w.shape, w.dtype, v) ?? null) === null;
  const wanted = impl.variants.find((v) => variantId(v) === preferred);
  if (wanted && runs(wanted)) return { variant: preferred! };
  const fallback = impl.variants.find(runs);
  return fallback
    ? { variant: variantId(fallback) }
    : preferred === undefined
    ? {}
    : { variant: preferred };
}

/**
 * How well the truth reproduces itself: per backend, the share of (workload, backend) times whose
 * first round, taken as a prediction of the second a minute later, is within ±25 % of it. No
 * prediction from a report can be expected to beat this on the same machine.
 */
interface Reproducibility {
  readonly backend: string;
  /** Times with two rounds to compare. */
  readonly cases: number;
  /** Share of them whose rounds agree within ±10 %. */
  readonly within10: number;
  /** Share of them whose rounds agree within ±25 %. */
  readonly within25: number;
}

function reproducibility(pools: readonly Pools[]): Reproducibility[] {
  const agree: { backend: string; error: number }[] = [];
  for (const workload of pools) {
    for (const [key, pool] of workload) {
      const [first, second] = windowMedians(pool.windows);
      if (first === undefined || second === undefined) continue;
      const backend = key === "webgpu" ? "webgpu end-to-end" : key;
      agree.push({ backend, error: Math.abs(first - second) / second });
    }
  }
  const share = (backend: string) => {
    const of = agree.filter((a) => backend === "all" || a.backend === backend);
    const within = (x: number) =>
      of.length > 0 ? of.filter((a) => a.error <= x).length / of.length : NaN;
    return { backend, cases: of.length, within10: within(0.1), within25: within(ACCURATE_WITHIN) };
  };
  return [share("all"), ...ACCURACY_ROWS.map(share)];
}

/** Predictions of the measured variant at each held-out (workload, backend) against its median. */
function accuracyPairs(
  report: Report,
  workloads: readonly Workload[],
  results: readonly WorkloadResult[],
) {
  const pairs: AccuracyPair[] = [];
  const add = (
    w: Workload,
    r: WorkloadResult,
    b: Backend,
    o: BackendOutcome | null | undefined,
    residency: Residency,
  ) => {
    if (o?.state !== "ok") return;
    const p = predict(report, w, b, o.variant, residency);
    if (p === null) return;
    pairs.push({
      backend: b === "webgpu" ? `webgpu ${residency}` : b,
      offAxis: r.offAxis,
      predicted: p.ms,
      interval: p.interval,
      measured: o.ms,
    });
  };
  results.forEach((r, i) => {
    for (const b of BACKENDS) add(workloads[i]!, r, b, r.backends[b], "end-to-end");
    add(workloads[i]!, r, "webgpu", r.deviceResident, "device-resident");
  });
  return pairs;
}

function accuracy(backend: string, pairs: readonly AccuracyPair[]): Accuracy {
  const errors = pairs.map((p) => Math.abs(p.predicted - p.measured) / p.measured)
    .sort((a, b) => a - b);
  const n = errors.length;
  const share = (ok: (i: number) => boolean) =>
    n > 0 ? pairs.filter((_, i) => ok(i)).length / n : NaN;
  return {
    backend,
    pairs: n,
    mape: n > 0 ? errors.reduce((a, b) => a + b, 0) / n : NaN,
    medianApe: median(errors),
    within10: n > 0 ? errors.filter((e) => e <= 0.1).length / n : NaN,
    within25: n > 0 ? errors.filter((e) => e <= ACCURATE_WITHIN).length / n : NaN,
    coverage: share((i) =>
      pairs[i]!.interval[0] <= pairs[i]!.measured && pairs[i]!.measured <= pairs[i]!.interval[1]
    ),
    medianWidth: median(pairs.map((p) => p.interval[1] / p.interval[0]).sort((a, b) => a - b)),
  };
}

/** The rows of the accuracy table: all, each backend and residency, the off-axis shapes. */
const ACCURACY_ROWS = [
  "js",
  "wasm",
  "wasm-mt",
  "webgpu end-to-end",
  "webgpu device-resident",
] as const;

function pct(x: number): string {
  return Number.isNaN(x) ? "—" : `${(100 * x).toFixed(1)} %`;
}

function cell(o: BackendOutcome | undefined, chosenBy: readonly string[]): string {
  const mark = chosenBy.length > 0 ? ` ←${chosenBy.join(",")}` : "";
  if (o === undefined) return `—${mark}`;
  return o.state === "ok" ? `${o.ms.toPrecision(3)}${mark}` : `${o.state}${mark}`;
}

const SHORT: Record<SelectorName, string> = {
  gpucal: "G",
  "pcie-5x": "P",
  thresholds: "T",
  "tfjs-handoff": "F",
};

function printText(
  reportPath: string,
  results: readonly WorkloadResult[],
  scores: readonly SelectorScore[],
  accuracies: readonly Accuracy[],
  reproduced: readonly Reproducibility[],
  excluded: readonly string[],
  seconds: number,
): void {
  console.log(
    `Held-out workloads, end-to-end median ms per run (← chosen by G gpucal, P pcie-5x, ` +
      `T thresholds, F tfjs-handoff; * fastest):`,
  );
  console.log(textTable(
    ["op", "dtype", "shape", ...BACKENDS],
    results.map((r) => [
      r.op,
      r.dtype,
      r.shape,
      ...BACKENDS.map((b) => {
        const by = SELECTORS.filter((s) => r.chosen[s] === b).map((s) => SHORT[s]);
        return (r.best === b ? "*" : "") + cell(r.backends[b], by);
      }),
    ]),
  ));
  console.log(
    "\nRegret = Σ(chosen − best) / Σ best over the workloads where every selector's choice was " +
      "timed (unscored: this selector's choice failed or could not run):",
  );
  console.log(textTable(
    ["selector", "regret", "max regret", "at", "fastest picked", "unscored"],
    scores.map((s) => [
      s.name,
      pct(s.regret),
      pct(s.maxRegret),
      s.maxRegretAt ?? "",
      `${s.hits}/${s.scored}`,
      `${s.unscored}`,
    ]),
  ));
  console.log(
    "\nHeld-out prediction accuracy of the report (predictTime vs measured median), beside the " +
      "truth's own reproducibility (round 1 as a prediction of round 2, a minute later):",
  );
  console.log(textTable(
    [
      "backend",
      "pairs",
      "MAPE",
      "median APE",
      "±10 %",
      "±25 %",
      "90 % interval covers",
      "median width",
      "rounds agree ±10 % / ±25 %",
    ],
    accuracies.map((a) => {
      const r = reproduced.find((x) => x.backend === a.backend);
      return [
        a.backend,
        `${a.pairs}`,
        pct(a.mape),
        pct(a.medianApe),
        pct(a.within10),
        pct(a.within25),
        pct(a.coverage),
        Number.isNaN(a.medianWidth) ? "—" : `×${a.medianWidth.toFixed(2)}`,
        r && r.cases > 0 ? `${pct(r.within10)} / ${pct(r.within25)} of ${r.cases}` : "—",
      ];
    }),
  ));
  const problems = new Map<string, number>();
  for (const r of results) {
    for (const b of BACKENDS) {
      const o = r.backends[b];
      if (o !== undefined && o.state !== "ok") {
        const key = `${b} ${o.state}: ${o.reason}`;
        problems.set(key, (problems.get(key) ?? 0) + 1);
      }
    }
  }
  if (problems.size > 0) console.log("\nNot timed:");
  for (const [what, n] of problems) console.log(`  ${n}× ${what}`);
  for (const e of excluded) console.log(`not held out: ${e}`);
  console.log(`\nreport ${reportPath}; ${results.length} workloads in ${seconds.toFixed(0)} s`);
}

/**
 * The elements of each input a workload reads (what TF.js's handoff looks at): a matmul's A and
 * B, a gemv's W and x, a softmax's matrix, an elementwise op's or reduction's vectors.
 */
function inputElementsOf(w: ListedWorkload): number[] {
  const { m, k, n, rows, cols } = w.shape;
  if (m !== undefined && k !== undefined && n !== undefined) return [m * k, k * n];
  if (rows !== undefined && cols !== undefined) {
    return w.op === "gemv" ? gemvInputs(w.shape) : [rows * cols];
  }
  const arity = getOp(w.op).inputs({ n: 4 }, "f32", () => 0.5).arrays.length;
  return Array.from({ length: arity }, () => n!);
}

/** The workloads of a `--shapes` list, as the bench's own. */
async function listedWorkloads(path: string): Promise<Workload[]> {
  const list = parseWorkloadList(await Deno.readTextFile(path), path);
  return list.map((w) => ({ ...w, inputElements: inputElementsOf(w) }));
}

/** The held-out workloads the report did not measure, and a line for each one it did. */
function heldOutWorkloads(
  report: Report,
  candidates: readonly Workload[],
  limit: number,
): { workloads: Workload[]; excluded: string[] } {
  const excluded: string[] = [];
  const workloads = candidates.filter((w) => {
    const near = measuredNear(report, w);
    if (near === null) return true;
    const op = getOp(w.op);
    excluded.push(
      `${w.op} ${w.dtype} ${formatShape(op, w.shape)} (report has ${formatShape(op, near)})`,
    );
    return false;
  }).slice(0, limit);
  return { workloads, excluded };
}

/** What a measuring pass needs: the runners, each workload's pooled windows, a window's budget. */
interface Measuring {
  readonly source: RunnerSource;
  readonly pools: readonly Pools[];
  readonly budgetMs: number;
  /** The report's drift probe, timed beside the truth. */
  readonly probes: StabilityProbe[];
}

/**
 * Every workload measured once per round, its windows pooled, the last round's result kept; the
 * report's drift probe is timed before each round and appended to `probes`.
 */
async function measureRounds(
  report: Report,
  selector: BackendSelector,
  workloads: readonly Workload[],
  rounds: number,
  { source, pools, budgetMs, probes }: Measuring,
  log: (s: string) => void,
): Promise<WorkloadResult[]> {
  const results: WorkloadResult[] = [];
  for (let round = 1; round <= rounds; round++) {
    await probeHost(report, source, probes);
    for (const [i, w] of workloads.entries()) {
      const r = await runWorkload(report, selector, w, source, pools[i]!, budgetMs);
      results[i] = r;
      log(
        `[round ${round}/${rounds}] ${r.op} ${r.dtype} ${r.shape}: fastest ${r.best ?? "none"}; ${
          BACKENDS.map((b) => `${b} ${cell(r.backends[b], [])}`).join(", ")
        }`,
      );
    }
  }
  return results;
}

/** Times the report's drift probe on the backends its probes have (none without probes). */
async function probeHost(
  report: Report,
  source: RunnerSource,
  probes: StabilityProbe[],
): Promise<void> {
  const backends = BACKENDS.filter((b) =>
    report.stability?.probes.some((p) => p.ms[b] !== undefined) ?? false
  );
  if (backends.length > 0) probes.push(await measureProbe(backends, source, 0));
}

/**
 * The measured truth gets the calibrator's care: a time whose windows disagree gets one more
 * window, after every workload, so that a stalled window does not set it. Updates `results` in
 * place and returns how many times were measured again.
 */
async function remeasureUnsure(
  workloads: readonly Workload[],
  results: WorkloadResult[],
  { source, pools, budgetMs }: Measuring,
): Promise<number> {
  let remeasured = 0;
  for (const [i, w] of workloads.entries()) {
    const r = results[i]!;
    const unsure = BACKENDS.filter((b) => {
      const o = r.backends[b];
      const pool = pools[i]!.get(poolKey(b, "end-to-end"));
      if (o?.state !== "ok" || pool === undefined) return false;
      // One round: the calibrator's stall rule for CPU times. Several: their disagreement.
      return pool.windows.length === 1
        ? b !== "webgpu" && o.relCi > UNSURE_REL_CI
        : windowsDisagree(pool.windows);
    });
    if (unsure.length === 0) continue;
    const again = await measureMany(
      unsure.map((b) => requestOf(w, b, r.predicted[b]?.variant)),
      {
        runners: source,
        stopping: { budgetMs, minSamples: 5 },
        onSamples: (m, samples) => addWindow(pools[i]!, m, samples),
      },
    );
    const backends = { ...r.backends };
    again.forEach((m) => (backends[m.backend] = pooledOutcome(pools[i]!, m)));
    results[i] = {
      ...r,
      backends,
      best: fastest(backends, BACKENDS),
      bestOfThree: fastest(backends, ["js", "wasm", "webgpu"]),
    };
    remeasured += unsure.length;
  }
  return remeasured;
}

/** The selectors' regret, the report's prediction accuracy, and the truth's reproducibility. */
function judge(
  report: Report,
  workloads: readonly Workload[],
  results: readonly WorkloadResult[],
  pools: readonly Pools[],
): { scores: SelectorScore[]; accuracies: Accuracy[]; reproduced: Reproducibility[] } {
  const scores = scoreAll(results, [
    ...SELECTORS.map((s) => [s, (r: WorkloadResult) => r.chosen[s]] as const),
    ["oracle of js/wasm/webgpu", (r: WorkloadResult) => r.bestOfThree] as const,
  ]);
  const pairs = accuracyPairs(report, workloads, results);
  const accuracies = [
    accuracy("all", pairs),
    ...ACCURACY_ROWS.map((b) => accuracy(b, pairs.filter((p) => p.backend === b))),
    accuracy("off-axis shapes", pairs.filter((p) => p.offAxis)),
  ];
  return { scores, accuracies, reproduced: reproducibility(pools) };
}

async function main(args: string[]): Promise<number> {
  const parsed = parseHeldOutArgs(args, {
    help: HELP,
    limitFlag: "workloads",
    defaultRounds: DEFAULT_ROUNDS,
    maxRounds: MAX_ROUNDS,
    listFlag: "shapes",
  });
  if (typeof parsed === "number") return parsed;
  const { reportPath, limit, json, rounds, listPath } = parsed;
  let candidates: Workload[];
  try {
    candidates = listPath === undefined ? heldOut() : await listedWorkloads(listPath);
  } catch (e) {
    if (!(e instanceof RangeError || e instanceof Deno.errors.NotFound)) throw e;
    console.error(`error: --shapes: ${e.message}`);
    return 2;
  }
  const report = await loadHeldOutReport(reportPath);
  if (typeof report === "number") return report;
  const selector = BackendSelector.fromReport(report);
  const { workloads, excluded } = heldOutWorkloads(report, candidates, limit);
  const runners = await openRunnerSource();
  const log = (s: string) => json || console.error(s);
  const started = performance.now();
  const measuring: Measuring = {
    source: runners.source,
    pools: workloads.map((): Pools => new Map()),
    budgetMs: Math.max(MIN_WINDOW_MS, Math.round(BUDGET_MS / rounds)),
    probes: [],
  };
  let results: WorkloadResult[];
  let remeasured: number;
  try {
    results = await measureRounds(report, selector, workloads, rounds, measuring, log);
    remeasured = await remeasureUnsure(workloads, results, measuring);
    log(`${remeasured} unsure times given one more window`);
    await probeHost(report, runners.source, measuring.probes);
  } finally {
    await runners.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const { scores, accuracies, reproduced } = judge(report, workloads, results, measuring.pools);
  const hostState = compareHostState(
    report.stability?.probes ?? [],
    measuring.probes,
    report.stability?.driftSigma,
  );
  if (json) {
    console.log(JSON.stringify({
      report: reportPath,
      seconds,
      rounds,
      remeasured,
      excluded,
      workloads: results,
      scores,
      accuracy: accuracies,
      reproducibility: reproduced,
      hostState,
    }));
  } else {
    printText(reportPath, results, scores, accuracies, reproduced, excluded, seconds);
    console.log(`\n${hostStateLine(hostState)}`);
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
