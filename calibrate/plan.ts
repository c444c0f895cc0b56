/**
 * The calibration plan: which (op, dtype) jobs run, over which sizes, with which backends, and the
 * budgets per measurement. Pure: the same options give the same plan.
 *
 * @module
 */
import { type Backend, type Dtype, implOf, type OpSpec } from "../kernels/types.ts";
import type { CalibrationMode, Measurement } from "../core/schema.ts";
import type { StoppingRule } from "../core/stats.ts";
import { geometricGrid, rateConverged } from "./sweep.ts";

/** Host bytes one case may touch in a full run; beyond, sizes stop growing. */
const FULL_MAX_BYTES = 256 * 2 ** 20;
/** Largest work (FLOPs or bytes) of a variant-search anchor. */
const ANCHOR_MAX_WORK = 64e6;
/**
 * Host bytes one case may touch in a default (5-minute) run. Beyond, building the operands of
 * each backend's case takes seconds (a q4 gemv at 13004 took minutes on a loaded run), and the
 * giant end-to-end GPU points are transfer-bound: predicted from the transfer figures.
 */
const DEFAULT_MAX_BYTES = 64 * 2 ** 20;
/** The ops of an LLM decode step (its projections), weighted double in a budgeted run. */
const DECODE_OPS = new Set(["gemv"]);
/**
 * The ops the LLM decode estimate rests on, measured first in this order: matmul for its rates,
 * gemv and softmax for the variants its kernels run. The rest follow in catalog order, so the
 * decode can be sampled through the rest of the run (`LlmValidationPlan.sampleEveryS`).
 */
const DECODE_ESTIMATE_OPS = ["matmul", "gemv", "softmax"];
/** The ops whose chosen variants an LLM decode's kernels run (its projections and softmax). */
const DECODE_KERNEL_OPS = new Set(["gemv", "softmax"]);
/** Host bytes one case may touch in a quick run. */
const QUICK_MAX_BYTES = 48 * 2 ** 20;
/**
 * Seconds between a quick run's drift probes. A probe (every backend, interleaved) took 0.45 s
 * here; after each of its 19 jobs they were 9 s of an 80 s run. Four or five probes still span the
 * run and give each backend its drift (three make a figure).
 */
const QUICK_PROBE_EVERY_S = 10;
/**
 * A quick run's time plan, s. Its jobs' first sizes are measured however late they run, so the
 * plan has to hold them: the ten jobs of a full quick run (f16 left out), the system figures
 * and the probes took 40 s in-process on this VM under a load of 3 (the old quick run took 75 s
 * so loaded and 66 s idle), about 34 s idle, leaving a little for refinement.
 */
const QUICK_TOTAL_S = 36;

/**
 * One (op, dtype) sweep.
 *
 * @example
 * ```ts
 * import type { CalibrationJob } from "./plan.ts";
 * function label(j: CalibrationJob) { return `${j.op.name} ${j.dtype}: ${j.sizes.length} sizes`; }
 * ```
 */
export interface CalibrationJob {
  readonly op: OpSpec;
  readonly dtype: Dtype;
  readonly backends: readonly Backend[];
  /** Grid sizes in the op's axis units, ascending. */
  readonly sizes: readonly number[];
  /** Sizes where every variant of a CPU backend is tried. */
  readonly anchors: readonly number[];
  /**
   * Sizes where every WebGPU variant is tried: where the work, not the launch, sets a run's time.
   * At a default run's CPU anchor every lavapipe matmul variant ran 31–45 µs, mostly launch, and
   * 4 × 4 tiles came out fastest in both of two rounds; at 128³ they ran 0.44 ms against 0.23–0.27
   * for 16 × 16 and 16 × 8 tiles; one calibration ran its grid with them (256³: 4.05 ms, where
   * another's 16 × 8 tiles took 1.52).
   */
  readonly deviceAnchors: readonly number[];
  /**
   * Its share of a budgeted run's time, relative to the other jobs': its planned measurements,
   * doubled for the ops an LLM decode runs (its validation and its estimates rest on them).
   */
  readonly weight: number;
  /** True once the fastest backend's rate stopped growing by `size`. */
  converged(measurements: readonly Measurement[], size: number): boolean;
}

/**
 * A whole calibration plan.
 *
 * @example
 * ```ts
 * import { planFor } from "./plan.ts";
 * import { OPS } from "../kernels/catalog.ts";
 * const plan = planFor({ quick: true, ops: OPS, dtypes: ["f32"], backends: ["js", "wasm"] });
 * console.log(plan.jobs.every((j) => j.dtype === "f32")); // true
 * ```
 */
export interface CalibrationPlan {
  readonly jobs: readonly CalibrationJob[];
  /** Stopping rule of sweep measurements. */
  readonly stopping: Partial<StoppingRule>;
  /** Stopping rule of the variant search (coarser: only the ranking matters). */
  readonly searchStopping: Partial<StoppingRule>;
  /** Whether to search variants at the anchors (else each backend's first variant). */
  readonly searchVariants: boolean;
  /** Variants kept per backend after the search. */
  readonly keepVariants: number;
  /** A backend stops growing once its next run is predicted to take longer than this, ms. */
  readonly maxCaseMs: number;
  /** Bisection rounds refining crossovers. */
  readonly refineRounds: number;
  /**
   * Extra sizes per (op, dtype) measured where a series bends between grid points (see
   * `bends.ts`); 0 turns that off.
   */
  readonly bendPoints: number;
  /**
   * Windows per sweep point: after the first pass, each fitted series' points are measured again
   * once per further pass, minutes later, and pooled. This machine's speed moves by tens of
   * percent between minutes, and a point taken in one window carries the minute it was taken in.
   */
  readonly passes: number;
  /**
   * Seconds between drift probes: a job is followed by one once this long has passed since the
   * last probe (the last job always is); 0 probes after every job.
   */
  readonly probeEveryS: number;
  /**
   * Dtypes the mode left out because the options named none ({@linkcode QUICK_SKIPPED_DTYPES}),
   * where an op and a backend in play could have measured them; the report says so.
   */
  readonly skippedDtypes: readonly Dtype[];
  /** Rough count of measurements, for the progress bar. */
  readonly estimatedCases: number;
  /** The run's mode: how much time it may take and how it spends it. */
  readonly mode: Mode;
  /** How the run's time is shared out; see {@linkcode TimePlan}. */
  readonly time: TimePlan;
  /** Options of the LLM decode validation at the end (its windows and tokens). */
  readonly llm: LlmValidationPlan;
}

/**
 * A calibration mode ({@linkcode CalibrationMode}, whose report records it).
 *
 * @example
 * ```ts
 * import type { Mode } from "./plan.ts";
 * const m: Mode = "default";
 * ```
 */
export type Mode = CalibrationMode;

/**
 * How a budgeted run shares out its time. The planner gives each (op, dtype) job a slice of what
 * is left in proportion to its weight, so time one job does not need goes to the next, and the
 * revisit pass and the LLM validation keep their reserve at the end.
 *
 * @example
 * ```ts
 * import type { TimePlan } from "./plan.ts";
 * const t: TimePlan = { totalS: 300, systemS: 15, llmS: 60, revisitShare: 0.1, offAxisShare: 0.12 };
 * ```
 */
export interface TimePlan {
  /** The whole run, seconds; null: no budget (a thorough run measures until it is done). */
  readonly totalS: number | null;
  /** Expected time of the system figures, s. */
  readonly systemS: number;
  /** Reserve for the LLM decode validation at the end, s. */
  readonly llmS: number;
  /** Share of the measuring time kept for the second windows of noisy points. */
  readonly revisitShare: number;
  /** Share of each job's time kept for its off-axis shapes (`shapes.ts`). */
  readonly offAxisShare: number;
}

/**
 * Options of the LLM decode validation a mode runs (see `decode/validate.ts`); absent fields
 * take that module's defaults.
 *
 * @example
 * ```ts
 * import type { LlmValidationPlan } from "./plan.ts";
 * const l: LlmValidationPlan = { repeats: 2, tokens: 8 };
 * ```
 */
export interface LlmValidationPlan {
  /** Decodes per model × quant; the module's default when absent. */
  readonly repeats?: number;
  /** Timed tokens per decode; the module's default when absent. */
  readonly tokens?: number;
  /** Sampling budget of each kernel in each alongside window, ms; the module's default when absent. */
  readonly kernelBudgetMs?: number;
  /**
   * Time the validation may take, ms: after its first round of decodes, another starts only while
   * the longest round so far still fits. No limit when absent.
   */
  readonly budgetMs?: number;
  /** Rounds of decodes without alongside windows after the bracketed ones, while the budget lasts. */
  readonly bareRounds?: number;
  /**
   * Seconds between decodes sampled through the run (between jobs, once the report can price the
   * decode), pooled with the validation's own; none when absent.
   */
  readonly sampleEveryS?: number;
}

/**
 * What to plan for.
 *
 * @example
 * ```ts
 * import type { PlanOptions } from "./plan.ts";
 * import { OPS } from "../kernels/catalog.ts";
 * const o: PlanOptions = { quick: false, ops: OPS, dtypes: null, backends: ["webgpu"] };
 * ```
 */
export interface PlanOptions {
  /** A quick run: the same as `mode: "quick"` (kept for callers that predate modes). */
  readonly quick: boolean;
  /** The mode; `quick` decides between `quick` and `thorough` when absent. */
  readonly mode?: Mode;
  readonly ops: readonly OpSpec[];
  /** Null means every dtype each op supports. */
  readonly dtypes: readonly Dtype[] | null;
  readonly backends: readonly Backend[];
  /** Passes over the sweep (see {@linkcode CalibrationPlan.passes}); the plan's default when absent. */
  readonly passes?: number;
}

/** Most passes a plan takes. */
export const MAX_PASSES = 5;

/**
 * Dtypes a quick run leaves out unless `dtypes` names them. f16 is a WebGPU-only (shader-f16)
 * measurement whose jobs pay the fixed costs of a whole job each (first sizes, compiles,
 * verification, a save) for two series: its eight jobs took 22 s of an 80 s quick run here.
 *
 * @example
 * ```ts
 * import { QUICK_SKIPPED_DTYPES } from "./plan.ts";
 * console.log(QUICK_SKIPPED_DTYPES); // ["f16"]
 * ```
 */
export const QUICK_SKIPPED_DTYPES: readonly Dtype[] = ["f16"];

function sizesFor(op: OpSpec, dtype: Dtype, mode: Mode): number[] {
  const quick = mode === "quick";
  const maxBytes = quick
    ? QUICK_MAX_BYTES
    : mode === "default"
    ? DEFAULT_MAX_BYTES
    : FULL_MAX_BYTES;
  const span = Math.log2(op.axis.max / Math.max(op.axis.min, 1));
  // About 12 grid points in a full run and 5 in a quick one, whatever the axis spans;
  // refinement adds points where the fastest backend changes. A full run's steps (×4.5 in
  // elements, ×2 in matmul n) are fine enough to see the CPU caches: with 8 points (×9.5) the
  // L1-to-L2 step fell between two of them, and odd sizes there were predicted 40–80 % slow.
  const factor = 2 ** Math.max(1, span / (quick ? 5 : 12));
  const start = Math.max(op.axis.min, op.complexity === "matrix" ? 4 : 16);
  const fits = (s: number) => op.bytes(op.axis.shape(s), dtype) <= maxBytes;
  const grid = geometricGrid(start, op.axis.max, { factor }).filter(fits);
  if (quick || op.complexity === "matrix" || grid.length === 0) return grid;
  // A one-dimensional op's grid ends at its byte cap rather than at the last grid point under it:
  // a default run's add stopped at 2 642 246 elements (32 MB), and at 5·10⁶ (60 MB, past this
  // VM's share of the last-level cache) add and fma ran 45–95 % slower than extrapolated.
  const last = grid[grid.length - 1]!;
  const cap = largestFitting(last, op.axis.max, fits);
  return cap / last >= MIN_CAP_STEP ? [...grid, cap] : grid;
}

/** A byte cap at least this far beyond the grid's last point becomes a grid point of its own. */
const MIN_CAP_STEP = 1.5;

/** The largest integer in [lo, hi] that `fits`, given that `lo` fits and fitting is monotone. */
function largestFitting(lo: number, hi: number, fits: (s: number) => boolean): number {
  let [a, b] = [lo, hi];
  if (fits(b)) return b;
  while (b - a > 1) {
    const mid = Math.floor((a + b) / 2);
    if (fits(mid)) a = mid;
    else b = mid;
  }
  return a;
}

/**
 * Plans a calibration.
 *
 * @param options Ops, dtypes, backends and whether it is a quick run.
 * @returns The plan.
 * @example
 * ```ts
 * import { planFor } from "./plan.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const plan = planFor({ quick: false, ops: [getOp("matmul")], dtypes: ["f32"], backends: ["wasm"] });
 * console.log(plan.jobs[0]!.sizes.length > 4); // true
 * ```
 */
export function planFor(options: PlanOptions): CalibrationPlan {
  const mode = options.mode ?? (options.quick ? "quick" : "thorough");
  const jobs: CalibrationJob[] = [];
  const skipped = new Set<Dtype>();
  let estimatedCases = 0;
  for (const op of decodeEstimateOpsFirst(options.ops)) {
    for (const dtype of op.dtypes) {
      if (options.dtypes && !options.dtypes.includes(dtype)) continue;
      // The CPU backends have no f16 arithmetic: f16 is a WebGPU (shader-f16) measurement.
      const backends = options.backends.filter((b) =>
        implOf(op, b) !== undefined && (dtype !== "f16" || b === "webgpu")
      );
      if (backends.length === 0) continue;
      if (!options.dtypes && mode === "quick" && QUICK_SKIPPED_DTYPES.includes(dtype)) {
        skipped.add(dtype);
        continue;
      }
      const sizes = sizesFor(op, dtype, mode);
      // Variants are searched where a run is big enough to tell them apart but small enough
      // that trying a slow one (a naive matmul on a software GPU) stays cheap.
      const searchable = sizes.filter((size) => {
        const shape = op.axis.shape(size);
        return Math.max(op.flops(shape), op.bytes(shape, dtype)) <= ANCHOR_MAX_WORK;
      });
      const anchors = searchable.length > 2
        ? [searchable[Math.floor(searchable.length / 2)]!, searchable[searchable.length - 1]!]
        : searchable.slice(-1);
      // Three quarters of the way up: a device's launch is tens of µs, a CPU's tens of ns.
      const deviceAnchor = searchable[Math.ceil((3 * (searchable.length - 1)) / 4)];
      // webgpu counts twice (two residencies), each backend about twice (kept variants).
      const cases = sizes.length * (backends.length + (backends.includes("webgpu") ? 1 : 0));
      jobs.push({
        op,
        dtype,
        backends,
        sizes,
        // A default run searches at the smaller anchor only: every variant of a WebGPU matmul at
        // the larger one took 16 s of a 5-minute plan.
        anchors: mode === "thorough"
          ? anchors
          : mode === "default"
          ? anchors.slice(0, 1)
          : anchors.slice(-1),
        deviceAnchors: mode === "thorough"
          ? anchors
          : mode === "default" && deviceAnchor !== undefined
          ? [deviceAnchor]
          : anchors.slice(-1),
        weight: cases * (DECODE_OPS.has(op.name) ? 2 : 1),
        converged: (measurements, size) => fastestRateConverged(measurements, op, dtype, size),
      });
      estimatedCases += cases;
    }
  }
  const settings = MODES[mode];
  return {
    ...settings,
    jobs,
    passes: checkedPasses(options.passes ?? settings.passes),
    skippedDtypes: [...skipped],
    estimatedCases,
    mode,
  };
}

/**
 * Whether the decode's kernels are chosen once `job` is done: no later job of `plan` measures an
 * op whose variants they run. A decode sampled before then may run other variants than the
 * validation's estimate prices, and is left out of it.
 *
 * @param plan The run's plan.
 * @param job One of its jobs.
 * @returns True when no later job measures gemv or softmax.
 * @example
 * ```ts
 * import { decodeKernelsChosenAfter, planFor } from "./plan.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const ops = ["add", "gemv", "softmax"].map(getOp);
 * const plan = planFor({ quick: true, ops, dtypes: ["f32"], backends: ["js"] });
 * // Jobs run gemv, softmax, then add: the decode's kernels are chosen after softmax.
 * console.log(plan.jobs.map((j) => decodeKernelsChosenAfter(plan, j))); // [ false, true, true ]
 * ```
 */
export function decodeKernelsChosenAfter(plan: CalibrationPlan, job: CalibrationJob): boolean {
  const later = plan.jobs.slice(plan.jobs.indexOf(job) + 1);
  return !later.some((j) => DECODE_KERNEL_OPS.has(j.op.name));
}

/** `ops` with {@linkcode DECODE_ESTIMATE_OPS} first, in that order; the rest keep theirs. */
function decodeEstimateOpsFirst(ops: readonly OpSpec[]): OpSpec[] {
  const rank = (op: OpSpec) => {
    const i = DECODE_ESTIMATE_OPS.indexOf(op.name);
    return i < 0 ? DECODE_ESTIMATE_OPS.length : i;
  };
  return [...ops].sort((a, b) => rank(a) - rank(b));
}

type ModeSettings = Omit<CalibrationPlan, "jobs" | "skippedDtypes" | "estimatedCases" | "mode">;

/**
 * What each mode measures and how long it may take. The default mode's budgets per measurement
 * are about half the thorough one's, and its second windows go to the noisy points only: the
 * thorough run's extra passes did not make the machine quiet (874 of 1123 measurements still
 * missed ±2 %), they made it long.
 */
const MODES: Readonly<Record<Mode, ModeSettings>> = {
  quick: {
    // 60 ms: a WebGPU end-to-end point is its five samples of the ~12 ms sync, and a CPU point
    // that has not reached ±3 % by then is one the machine's noise holds there anyway.
    stopping: { budgetMs: 60, minSamples: 5, targetRelCi: 0.03 },
    searchStopping: { budgetMs: 80, minSamples: 3, targetRelCi: 0.05 },
    // A quick run skips the variant search: each backend's declared default variant.
    searchVariants: false,
    keepVariants: 1,
    maxCaseMs: 50,
    refineRounds: 1,
    bendPoints: 0,
    passes: 1,
    probeEveryS: QUICK_PROBE_EVERY_S,
    // The plan is the run less its start (loading, opening the adapter) and its last save.
    time: { totalS: QUICK_TOTAL_S, systemS: 4, llmS: 0, revisitShare: 0, offAxisShare: 0.1 },
    llm: { repeats: 1, tokens: 8, kernelBudgetMs: 80 },
  },
  default: {
    // 120 ms per measurement: a quiet window's median is within a few % by then, and the
    // windows minutes apart disagree by more than that; the time buys grid points instead.
    stopping: { budgetMs: 120, minSamples: 5 },
    searchStopping: { budgetMs: 60, minSamples: 3, targetRelCi: 0.05 },
    searchVariants: true,
    keepVariants: 1,
    maxCaseMs: 150,
    refineRounds: 2,
    bendPoints: 2,
    passes: 2,
    probeEveryS: 0,
    // The LLM validation with its defaults (3 decodes of 16 tokens per pair, 150 ms per kernel
    // per alongside window) took ~2.5 min here; one round of decodes of 8 tokens with 80 ms
    // windows took 36–48 s, and its reserve is what the ETA counts on: at 90 s, the ETA at three
    // quarters of a run said 22 % too late. Rounds without windows (~2.5 s for the four pairs)
    // fill the rest. A decode of the same pair moved ×1.3–1.9 across eight runs while its estimate
    // did not follow, so it is also sampled through the run, every 30 s once the report can
    // price it (after the matmul, gemv and softmax jobs, which the plan puts first).
    // 290 s of plan for a 5-minute wall: two quiet runs of a 300 s plan took 303 and 304 s
    // (start-up, the last save and the summary are outside the plan).
    time: { totalS: 290, systemS: 15, llmS: 60, revisitShare: 0.08, offAxisShare: 0.12 },
    llm: { repeats: 1, bareRounds: 8, tokens: 8, kernelBudgetMs: 80, sampleEveryS: 30 },
  },
  thorough: {
    stopping: { budgetMs: 400, minSamples: 7 },
    searchStopping: { budgetMs: 250, minSamples: 5, targetRelCi: 0.04 },
    // The runner-up is measured at the search anchors (the tuning table); the grid runs the best.
    searchVariants: true,
    keepVariants: 1,
    maxCaseMs: 400,
    refineRounds: 3,
    bendPoints: 4,
    passes: 2,
    probeEveryS: 0,
    time: { totalS: null, systemS: 20, llmS: 150, revisitShare: 0, offAxisShare: 0 },
    llm: { sampleEveryS: 120 },
  },
};

/**
 * Has every backend's rate (work per ms, best variant per size) stopped growing by `upTo`? Then
 * time grows linearly with work on every backend and no further crossover can appear, so the
 * grid stops there. Requiring all backends, not only the fastest, keeps a GPU that is still
 * climbing from being cut off before it overtakes.
 */
function fastestRateConverged(
  measurements: readonly Measurement[],
  op: OpSpec,
  dtype: Dtype,
  upTo: number,
): boolean {
  const series = new Map<string, Map<number, number>>();
  for (const m of measurements) {
    if (m.op !== op.name || m.dtype !== dtype || m.state !== "ok" || m.size > upTo) continue;
    const key = `${m.backend}|${m.residency}`;
    const best = series.get(key) ?? new Map<number, number>();
    series.set(key, best);
    best.set(m.size, Math.max(best.get(m.size) ?? 0, Math.max(m.flops, m.bytes) / m.wall.median));
  }
  let growing = 0;
  for (const best of series.values()) {
    const sizes = [...best.keys()].sort((a, b) => a - b);
    if (sizes[sizes.length - 1] !== upTo) continue; // stopped earlier (too slow), or skipped here
    growing++;
    if (!rateConverged(sizes, sizes.map((s) => best.get(s)!))) return false;
  }
  return growing > 0;
}

function checkedPasses(passes: number): number {
  if (!Number.isInteger(passes) || passes < 1 || passes > MAX_PASSES) {
    throw new RangeError(
      `passes must be an integer from 1 to ${MAX_PASSES}, got ${passes}; pass e.g. 2`,
    );
  }
  return passes;
}
