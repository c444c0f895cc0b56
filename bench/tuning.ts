/**
 * `deno task bench:tuning --report R.json`: how much time `recommendTuning()` loses at shapes off
 * the sweep's axis that no calibration measures — decode and small-batch matmuls with k and n
 * unlike calibrate's, gemvs with rows ≠ cols — against the fastest of the variants the report
 * knows, all measured here in one process, in rounds (the same variant set, interleaved). The same
 * measurements score `predictTime()` for the variant it picks. Bench only: nothing reachable from
 * mod.ts imports this module.
 *
 * @module
 */
import { loadHeldOutReport, parseHeldOutArgs } from "./_held_out_flags.ts";
import { measureMany, openRunnerSource, type RunnerSource } from "../calibrate/measure.ts";
import type { MeasureRequest } from "../core/result.ts";
import { textTable } from "../core/format.ts";
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  type Dtype,
  formatShape,
  implOf,
  type Residency,
  type Shape,
  variantId,
} from "../kernels/types.ts";
import type { Report } from "../core/schema.ts";
import { predictTime, recommendTuning, variantParams } from "../models/predict.ts";

const HELP = `Usage: deno task bench:tuning --report PATH [options]

Asks the report which variant to run (recommendTuning) at held-out shapes off the sweep's axis
(matmul with 1 to 100 rows and k, n unlike calibrate's; gemv with rows != cols in f32, f16, q8
and q4), then measures that variant and every other variant the report measured for the op,
dtype and backend, interleaved, in rounds. Prints per case the fastest, the chosen and how much
slower it ran, and overall: regret = sum(chosen) / sum(fastest) - 1, the worst case, and how
well predictTime() priced the variant it picks (within +-10 % / +-25 %, 90 % interval coverage).

Options:
  --report PATH     Calibration report of this machine (required)
  --cases N         Only the first N cases; all by default
  --rounds N        Rounds over all cases (default 2); each time is the geometric mean
  --json            Print the results as JSON on stdout
  -h, --help        Show this help`;

/** One held-out question: which variant of a backend to run at a shape. */
export interface TuningCase {
  readonly op: string;
  readonly dtype: Dtype;
  readonly backend: Backend;
  readonly residency: Residency;
  readonly shape: Shape;
}

/** A case's answer from the report and its candidates' measured times (ms; NaN: failed). */
export interface TuningOutcome {
  readonly case: TuningCase;
  /** `recommendTuning()`'s variant. */
  readonly chosen: string;
  /** `predictTime()` without a variant: the variant it priced, its time and 90 % interval. */
  readonly predicted: {
    readonly variant: string;
    readonly ms: number;
    readonly interval: readonly [number, number];
  };
  readonly times: Readonly<Record<string, number>>;
}

/** The score of a set of outcomes. */
export interface TuningScore {
  /** Σ chosen / Σ fastest − 1 over the scored cases. */
  readonly regret: number;
  /** The largest chosen / fastest − 1. */
  readonly worst: number;
  /** Cases where the chosen variant was the fastest measured. */
  readonly fastestPicked: number;
  /** Cases with the chosen variant and a candidate measured. */
  readonly scored: number;
  /** Share of priced cases whose prediction was within ±10 % and ±25 % of the measured time. */
  readonly within10: number;
  readonly within25: number;
  /** Share of priced cases whose measured time fell inside the 90 % interval. */
  readonly coverage: number;
  /** Cases where the predicted variant was measured. */
  readonly priced: number;
}

/**
 * Scores outcomes: regret of the chosen variants against the fastest measured, and the error of
 * the predictions against the measured time of the variant they priced.
 *
 * @param outcomes Outcomes with measured times.
 * @returns The score.
 * @example
 * ```ts
 * import { scoreTuning } from "./tuning.ts";
 * const s = scoreTuning([{
 *   case: { op: "matmul", dtype: "f32", backend: "wasm", residency: "end-to-end", shape: { m: 1, k: 64, n: 64 } },
 *   chosen: "a",
 *   predicted: { variant: "a", ms: 1.1, interval: [0.9, 1.4] },
 *   times: { a: 1.2, b: 1 },
 * }]);
 * console.log(s.regret.toFixed(2)); // "0.20"
 * ```
 */
export function scoreTuning(outcomes: readonly TuningOutcome[]): TuningScore {
  let chosen = 0;
  let best = 0;
  let worst = 0;
  let fastestPicked = 0;
  let scored = 0;
  let priced = 0;
  let within10 = 0;
  let within25 = 0;
  let covered = 0;
  for (const o of outcomes) {
    const fastest = fastestOf(o.times);
    const mine = o.times[o.chosen];
    if (fastest !== null && mine !== undefined && Number.isFinite(mine)) {
      scored++;
      chosen += mine;
      best += fastest.ms;
      worst = Math.max(worst, mine / fastest.ms - 1);
      if (mine <= fastest.ms) fastestPicked++;
    }
    const measured = o.times[o.predicted.variant];
    if (measured === undefined || !Number.isFinite(measured)) continue;
    priced++;
    const error = Math.abs(o.predicted.ms / measured - 1);
    if (error <= 0.1) within10++;
    if (error <= 0.25) within25++;
    const [lo, hi] = o.predicted.interval;
    if (measured >= lo && measured <= hi) covered++;
  }
  return {
    regret: best > 0 ? chosen / best - 1 : NaN,
    worst,
    fastestPicked,
    scored,
    within10: priced > 0 ? within10 / priced : NaN,
    within25: priced > 0 ? within25 / priced : NaN,
    coverage: priced > 0 ? covered / priced : NaN,
    priced,
  };
}

/** The fastest finite time of `times` and its variant, or null. */
function fastestOf(
  times: Readonly<Record<string, number>>,
): { variant: string; ms: number } | null {
  let best: { variant: string; ms: number } | null = null;
  for (const [variant, ms] of Object.entries(times)) {
    if (Number.isFinite(ms) && (best === null || ms < best.ms)) best = { variant, ms };
  }
  return best;
}

const MATMUL_ROWS: readonly (readonly [number, number, number])[] = [
  [1, 1000, 3000],
  [1, 2048, 8192],
  [2, 2560, 2560],
  [3, 2048, 2048],
  [5, 1024, 1024],
  [12, 1024, 2048],
  [24, 1536, 1536],
  [40, 512, 2048],
  [100, 640, 2560],
  [1, 5120, 1280],
];
const GEMV_SHAPES: readonly (readonly [number, number])[] = [
  [1000, 3000],
  [3000, 1000],
  [5120, 1280],
  [1536, 6144],
];

/**
 * The held-out cases: shapes none of calibrate's sweeps or off-axis lists measure (between and
 * beside them: odd k and n, 2–5 rows, 12–100 rows), on each backend where variants differ.
 */
export function heldOutCases(): TuningCase[] {
  const matmul = (
    backend: Backend,
    residency: Residency,
    dtype: Dtype,
    rows: readonly (readonly [number, number, number])[],
  ) =>
    rows.map(([m, k, n]): TuningCase => ({
      op: "matmul",
      dtype,
      backend,
      residency,
      shape: { m, k, n },
    }));
  const cpu = MATMUL_ROWS.filter(([m]) => m <= 24).slice(0, 5);
  return [
    ...matmul("webgpu", "device-resident", "f32", MATMUL_ROWS),
    ...matmul("webgpu", "device-resident", "f16", MATMUL_ROWS.filter(([m]) => m <= 12)),
    ...matmul("webgpu", "end-to-end", "f32", [MATMUL_ROWS[1]!, MATMUL_ROWS[4]!]),
    ...matmul("wasm", "end-to-end", "f32", cpu),
    ...matmul("wasm-mt", "end-to-end", "f32", cpu),
    ...matmul("js", "end-to-end", "f32", cpu.filter(([m, k, n]) => m * k * n <= 2 ** 24)),
    ...(["f32", "f16", "q8", "q4"] as const).flatMap((dtype) =>
      GEMV_SHAPES.map(([rows, cols]): TuningCase => ({
        op: "gemv",
        dtype,
        backend: "webgpu",
        residency: "device-resident",
        shape: { rows, cols },
      }))
    ),
  ];
}

/**
 * The variants measured at a case: the report's recommendation and the variant its prediction
 * prices, the tuning sweep's best and runner-up, and every variant of the op, dtype and backend
 * the report measured at a shape off the axis (any residency: end to end, WebGPU runs the kernels
 * the device-resident screens ranked), where it can run the shape.
 */
function candidates(report: Report, c: TuningCase, answers: readonly string[]): string[] {
  const impl = implOf(getOp(c.op), c.backend);
  const runs = (id: string) =>
    (impl?.unsupported?.(c.shape, c.dtype, variantParams(id)) ?? null) === null;
  const known = new Set(answers);
  for (const t of report.tuning) {
    if (t.op !== c.op || t.dtype !== c.dtype || t.backend !== c.backend) continue;
    known.add(t.best.variant);
    if (t.runnerUp !== null) known.add(t.runnerUp.variant);
  }
  for (const m of report.measurements) {
    if (m.op === c.op && m.dtype === c.dtype && m.backend === c.backend && m.offAxis) {
      known.add(m.variant);
    }
  }
  const declared = new Set(impl?.variants.map(variantId) ?? []);
  return [...known].filter((id) => declared.has(id) && runs(id));
}

/** Asks the report about every case; a case it cannot answer is left out, with why. */
function answer(report: Report, cases: readonly TuningCase[]) {
  const answered: Omit<TuningOutcome, "times">[] = [];
  const skipped: string[] = [];
  for (const c of cases) {
    try {
      const chosen = recommendTuning(report, c).variant;
      const p = predictTime(report, c);
      answered.push({
        case: c,
        chosen,
        predicted: { variant: p.variant, ms: p.ms, interval: p.interval },
      });
    } catch (e) {
      skipped.push(`${label(c)}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { answered, skipped };
}

function label(c: TuningCase): string {
  const where = c.backend === "webgpu" ? ` ${c.residency}` : "";
  return `${c.op} ${c.dtype} ${formatShape(getOp(c.op), c.shape)} ${c.backend}${where}`;
}

/**
 * Measures each answered case's candidates, interleaved within the case, in `rounds` rounds over
 * all cases (a case's operands live only while it is measured: all cases' at once took 16 GB).
 */
async function measureOutcomes(
  report: Report,
  answered: readonly Omit<TuningOutcome, "times">[],
  rounds: number,
  progress: (line: string) => void,
  runners: RunnerSource,
): Promise<TuningOutcome[]> {
  const jobs = answered.map((a) => ({
    a,
    variants: candidates(report, a.case, [a.chosen, a.predicted.variant]),
    lnSums: [] as number[],
  }));
  for (let round = 1; round <= rounds; round++) {
    for (const [i, job] of jobs.entries()) {
      progress(
        `round ${round} of ${rounds}, case ${i + 1} of ${jobs.length}: ${label(job.a.case)}`,
      );
      const requests = job.variants.map((variant): MeasureRequest => ({
        op: job.a.case.op,
        shape: job.a.case.shape,
        dtype: job.a.case.dtype,
        backend: job.a.case.backend,
        residency: job.a.case.residency,
        variant,
      }));
      const results = await measureMany(requests, { stopping: ROUND_STOPPING, runners });
      results.forEach((r, j) => {
        job.lnSums[j] = (job.lnSums[j] ?? 0) + (r.state === "ok" ? Math.log(r.wall.median) : NaN);
      });
    }
  }
  return jobs.map(({ a, variants, lnSums }) => ({
    ...a,
    times: Object.fromEntries(variants.map((v, j) => [v, Math.exp(lnSums[j]! / rounds)])),
  }));
}

/** Each round's window of one case: enough runs for a median on a noisy VM. */
const ROUND_STOPPING = { budgetMs: 250, minSamples: 5 };
const DEFAULT_ROUNDS = 2;
const MAX_ROUNDS = 10;

/**
 * Runs the bench: asks, measures, prints.
 *
 * @param args Command-line arguments.
 * @returns The exit code.
 * @example
 * ```ts ignore
 * Deno.exit(await main(["--report", "reports/my-machine.json", "--cases", "4"]));
 * ```
 */
export async function main(args: string[]): Promise<number> {
  const parsed = parseHeldOutArgs(args, {
    help: HELP,
    limitFlag: "cases",
    defaultRounds: DEFAULT_ROUNDS,
    maxRounds: MAX_ROUNDS,
  });
  if (typeof parsed === "number") return parsed;
  const report = await loadHeldOutReport(parsed.reportPath);
  if (typeof report === "number") return report;
  const cases = heldOutCases().slice(0, parsed.limit);
  const { answered, skipped } = answer(report, cases);
  const progress = (line: string) => console.error(line);
  const runners = await openRunnerSource();
  let outcomes: TuningOutcome[];
  try {
    outcomes = await measureOutcomes(report, answered, parsed.rounds, progress, runners.source);
  } finally {
    await runners.close();
  }
  const score = scoreTuning(outcomes);
  if (parsed.json) {
    console.log(JSON.stringify({ report: parsed.reportPath, score, outcomes, skipped }));
  } else printOutcomes(outcomes, score, skipped);
  return 0;
}

function printOutcomes(
  outcomes: readonly TuningOutcome[],
  score: TuningScore,
  skipped: readonly string[],
): void {
  const rows = outcomes.map((o) => {
    const fastest = fastestOf(o.times);
    const mine = o.times[o.chosen];
    const measured = o.times[o.predicted.variant];
    const ratio = fastest === null || mine === undefined
      ? "—"
      : `×${(mine / fastest.ms).toFixed(2)}`;
    const error = measured === undefined || !Number.isFinite(measured)
      ? "—"
      : `${((o.predicted.ms / measured - 1) * 100).toFixed(0)} %`;
    return [label(o.case), fastest?.variant ?? "—", o.chosen, ratio, error];
  });
  console.log(textTable(["case", "fastest", "chosen", "chosen / fastest", "prediction"], rows));
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  console.log(
    `\nregret ${pct(score.regret)} (worst ${pct(score.worst)}; fastest picked in ` +
      `${score.fastestPicked} of ${score.scored}); predictions within ±10 % ${
        pct(score.within10)
      }, ` +
      `±25 % ${pct(score.within25)}, 90 % intervals hold ${
        pct(score.coverage)
      } (${score.priced} cases)`,
  );
  for (const s of skipped) console.log(`not asked: ${s}`);
}

if (import.meta.main) Deno.exit(await main(Deno.args));
