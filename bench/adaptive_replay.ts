/**
 * `bench:adaptive`'s closed loop without the machine: `AdaptiveSelector` chooses, and the time it
 * records is drawn (seeded) from the single-call times a real run recorded for that workload and
 * backend around the same point of the recorded loop — the machine's other load as it came and
 * went, and scenario (c)'s busy core from half way. The oracle is those times' medians, as the
 * bench computes it. Same seed, same recording, same selector → same figures, so the selector can be
 * iterated on, and tested, with the machine's real distributions (stalls and all) but without
 * running a kernel.
 *
 * ```sh
 * deno task bench:adaptive --json > tmp/run.json     # records as it measures
 * deno run --allow-read bench/adaptive_replay.ts --from tmp/run.json --seeds 1,2,3
 * ```
 *
 * @module
 */
import { oneLineFailure, UsageError } from "../core/cli_args.ts";
import { textTable } from "../core/format.ts";
import { seededRng } from "../kernels/_random.ts";
import { type Backend, BACKENDS } from "../kernels/types.ts";
import { ADAPTIVE_DEFAULTS, AdaptiveSelector } from "../models/adaptive.ts";
import { median } from "../core/stats.ts";
import {
  choosePriors,
  loadReports,
  nearestSamples,
  phaseMedians,
  type Prior,
  type Probe,
  probesOf,
  recordedBackends,
  type RecordedScenario,
  type Recording,
  type ScenarioName,
  staticChoice,
  trimmedMean,
  workloadLabel,
} from "./_adaptive_loop.ts";
import {
  type Call,
  type LoopRun,
  printScenario,
  printSummary,
  type ScenarioResult,
  summarize,
} from "./_adaptive_score.ts";
import { DEFAULT_CALLS, type LoopOptions, parseLoopOptions } from "./_adaptive_options.ts";

const HELP = `Usage: deno run --allow-read bench/adaptive_replay.ts --from FILE [options]

Replays bench:adaptive's three scenarios with times drawn from a recording (the "recording" of
\`deno task bench:adaptive --json\`, or tests/fixtures/adaptive_recording.json): no kernel runs,
and the same seed gives the same figures.

Options:
  --from FILE       The recording (required)
  --calls N         Calls per scenario (default ${DEFAULT_CALLS})
  --scenarios LIST  Comma-separated subset of a,b,c (default a,b,c)
  --seeds LIST      Seeds, one loop per seed and scenario (default 1)
  --budget SHARE    The selector's explorationBudget (default ${ADAPTIVE_DEFAULTS.explorationBudget})
  --reports DIR     Folder of the reports the recording names (default reports)
  --detail          Print every loop as bench:adaptive does, not only one line per loop
  --json            Print the results as JSON on stdout
  -h, --help        Show this help`;

/**
 * How one scenario is replayed.
 *
 * @example
 * ```ts
 * import type { ReplayOptions } from "./adaptive_replay.ts";
 * const o: ReplayOptions = { calls: 2000, seed: 1, budget: 0.03 };
 * ```
 */
export interface ReplayOptions {
  readonly calls: number;
  readonly seed: number;
  /** The selector's explorationBudget. */
  readonly budget: number;
}

/**
 * One scenario's loop on recorded times: at each call, the time recorded for the chosen backend
 * is drawn from the samples of its workload's probes nearest to the matching point of the
 * recorded loop (in the same phase: before or after (c)'s drift), and the oracle is their median,
 * as `bench:adaptive` computes it. A loop of another length than the recorded one is mapped onto
 * it proportionally.
 *
 * @param name The scenario ({@linkcode recordedScenario} says which recorded loop it replays).
 * @param recording The probes to draw from.
 * @param prior The selector's (and the static selector's) report.
 * @param options Calls, seed, budget.
 * @returns The loop, ready for `summarize()`.
 * @throws {RangeError} when the recording lacks the scenario.
 * @example
 * ```ts ignore
 * const run = replayScenario("b", recording, wrong, { calls: 2000, seed: 1, budget: 0.03 });
 * console.log(summarize(run, labels).whole.regret);
 * ```
 */
export function replayScenario(
  name: ScenarioName,
  recording: Recording,
  prior: Prior,
  options: ReplayOptions,
): LoopRun {
  const recorded = recordedScenario(recording, name);
  const scale = recorded.calls / options.calls;
  const driftAt = recorded.driftAt === null ? null : Math.ceil(recorded.driftAt / scale);
  const backends = recordedBackends(recorded);
  const adaptive = new AdaptiveSelector(prior.report, {
    backends,
    explorationBudget: options.budget,
    seed: options.seed,
  });
  const times = new RecordedTimes(recorded);
  const statics = recorded.workloads.map((w) => staticChoice(prior.report, w, backends));
  const pick = seededRng(options.seed);
  const draw = seededRng(options.seed + 2);
  const calls: Call[] = [];
  const oracle: Array<ReadonlyMap<Backend, number>> = [];
  const meanOracle: Array<ReadonlyMap<Backend, number>> = [];
  for (let i = 0; i < options.calls; i++) {
    const phase = driftAt !== null && i >= driftAt ? 1 : 0;
    const at = Math.min(recorded.calls - 1, Math.floor(i * scale));
    const w = Math.floor(pick() * recorded.workloads.length);
    const workload = recorded.workloads[w]!;
    const key = { op: workload.op, shape: workload.shape, dtype: "f32" } as const;
    const choice = adaptive.choose(key);
    const then = times.at(w, at, phase);
    const pool = then.samples.get(choice.backend)!;
    const ms = pool[Math.floor(draw() * pool.length)]!;
    adaptive.record(key, choice.backend, ms);
    calls.push({
      workload: w,
      backend: choice.backend,
      static: statics[w]!,
      explored: choice.explored,
      ms,
      phase,
    });
    oracle.push(then.oracle);
    meanOracle.push(then.meanOracle);
  }
  let changes = 0;
  const believed = recorded.workloads.map((w) => {
    const e = adaptive.estimates({ op: w.op, shape: w.shape, dtype: "f32" });
    changes += e.changes;
    return Object.fromEntries(e.arms.map((a) => [a.backend, a.ms ?? NaN]));
  });
  const account = adaptive.exploration();
  return {
    name,
    prior: prior.label,
    seconds: 0,
    calls,
    oracle,
    meanOracle,
    phaseMs: recorded.workloads.map((_, w) =>
      (driftAt === null ? [0] : [0, 1]).map((phase) => phaseMedians(times.probes(w), phase))
    ),
    driftAt,
    driftNote: null,
    selectorSpentMs: account.spentMs,
    selectorExploredMs: account.exploredMs,
    changes,
    believed,
  };
}

/**
 * The recorded loop a scenario replays: its own, or for (b) (a)'s when it has none (the machine's
 * times do not depend on the prior).
 *
 * @param recording The recording.
 * @param name The scenario.
 * @returns The recorded scenario.
 * @throws {RangeError} when the recording has nothing to replay it from.
 * @example
 * ```ts ignore
 * const labels = recordedScenario(recording, "c").workloads.map(workloadLabel);
 * ```
 */
export function recordedScenario(recording: Recording, name: ScenarioName): RecordedScenario {
  const recorded = recording.scenarios[name] ??
    (name === "b" ? recording.scenarios.a : undefined);
  if (recorded === undefined) {
    throw new RangeError(
      `Cannot replay scenario (${name}): the recording has none; record it with ` +
        `"deno task bench:adaptive --scenarios ${name} --json"`,
    );
  }
  return recorded;
}

/** A recorded scenario's times around each of its calls, per workload, computed once. */
class RecordedTimes {
  readonly #recorded: RecordedScenario;
  readonly #cache = new Map<string, Then>();
  readonly #probes = new Map<number, Partial<Record<Backend, Probe[]>>>();

  constructor(recorded: RecordedScenario) {
    this.#recorded = recorded;
  }

  /** Workload `w`'s probes per backend. */
  probes(w: number): Partial<Record<Backend, Probe[]>> {
    let probes = this.#probes.get(w);
    if (probes === undefined) {
      probes = probesOf(this.#recorded, w);
      this.#probes.set(w, probes);
    }
    return probes;
  }

  /** Workload `w`'s samples and oracle around recorded call `call`, in `phase`. */
  at(w: number, call: number, phase: number): Then {
    const id = `${w}|${call}|${phase}`;
    let then = this.#cache.get(id);
    if (then === undefined) {
      const samples = new Map<Backend, number[]>();
      const oracle = new Map<Backend, number>();
      const meanOracle = new Map<Backend, number>();
      for (const [b, list] of Object.entries(this.probes(w)) as Array<[Backend, Probe[]]>) {
        const pool = nearestSamples(list, call, phase);
        if (pool.length === 0) continue;
        samples.set(b, pool);
        oracle.set(b, median(pool));
        meanOracle.set(b, trimmedMean(pool));
      }
      then = { samples, oracle, meanOracle };
      this.#cache.set(id, then);
    }
    return then;
  }
}

interface Then {
  readonly samples: ReadonlyMap<Backend, readonly number[]>;
  readonly oracle: ReadonlyMap<Backend, number>;
  readonly meanOracle: ReadonlyMap<Backend, number>;
}

/**
 * The priors a recording was made with: the report of its fingerprint, and its wrong one.
 *
 * @param recording The recording.
 * @param reportsDir The folder holding them.
 * @returns The correct prior and the wrong one.
 * @throws {UsageError} when the folder lacks the recording's report.
 * @example
 * ```ts ignore
 * const [correct, wrong] = await recordedPriors(recording, "reports");
 * ```
 */
export async function recordedPriors(
  recording: Recording,
  reportsDir: string,
): Promise<[Prior, Prior]> {
  const reports = await loadReports(reportsDir);
  if (!reports.some((r) => r.fingerprint === recording.fingerprint)) {
    throw new UsageError(
      `--reports "${reportsDir}" has no report of fingerprint ${recording.fingerprint}, the ` +
        "recording's prior: pass the folder it was recorded with",
    );
  }
  const [correct, chosen] = choosePriors(reports, recording.fingerprint);
  const other = reports.find((r) => r.fingerprint === recording.otherFingerprint);
  const wrong = other === undefined ? chosen : {
    report: other,
    label: `${other.slug} (${other.machine.cpuModel}): another machine's report`,
  };
  return [correct, wrong];
}

/**
 * Reads a recording: a JSON object with a `recording` (what `bench:adaptive --json` prints).
 *
 * @param path The file.
 * @returns The recording.
 * @throws {UsageError} when the file is missing or holds no recording.
 * @example
 * ```ts ignore
 * const recording = await readRecording("tests/fixtures/adaptive_recording.json");
 * ```
 */
export async function readRecording(path: string): Promise<Recording> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new UsageError(`--from "${path}" does not exist: pass a bench:adaptive --json output`);
    }
    if (e instanceof SyntaxError) {
      throw new UsageError(`--from "${path}" is not JSON: ${e.message}`);
    }
    throw e;
  }
  const recording = (parsed as { recording?: Recording } | null)?.recording;
  if (recording === undefined || typeof recording.scenarios !== "object") {
    throw new UsageError(
      `--from "${path}" holds no "recording": pass the output of bench:adaptive --json`,
    );
  }
  return recording;
}

function pct(x: number | null | undefined): string {
  return x === null || x === undefined ? "—" : `${(100 * x).toFixed(1)} %`;
}

/** One line per loop: the figures the bars are about. */
function printLines(rows: ReadonlyArray<{ seed: number; result: ScenarioResult }>): void {
  console.log(textTable(
    [
      "scenario",
      "seed",
      "regret whole",
      "regret last half",
      "at trimmed means",
      "fastest last half",
      "exploring",
      "most exploring, any span",
      "static whole",
      "switched after",
      "changed ≤ 5 % from",
    ],
    rows.map(({ seed, result: r }) => [
      r.name,
      `${seed}`,
      pct(r.whole.regret),
      pct(r.lastHalf.regret),
      pct(r.lastHalf.regretAtMeans),
      pct(r.lastHalf.fastest),
      pct(r.whole.explored),
      pct(r.mostExplored),
      pct(r.whole.staticRegret),
      r.switches?.map((s) => `${s.afterCalls ?? "never"}`).join(" ") ?? "",
      r.recovery === null ? "" : `${r.recovery.changedCalls ?? "never"}`,
    ]),
  ));
}

async function main(args: string[]): Promise<number> {
  let options: LoopOptions;
  let recording: Recording;
  let priors: [Prior, Prior];
  try {
    const parsed = parseLoopOptions(args, "replay");
    if (parsed === "help") {
      console.log(HELP);
      return 0;
    }
    options = parsed;
    recording = await readRecording(options.from!);
    priors = await recordedPriors(recording, options.reportsDir);
  } catch (e) {
    return oneLineFailure(e);
  }
  const rows: Array<{ seed: number; result: ScenarioResult }> = [];
  for (const name of options.scenarios) {
    for (const seed of options.seeds) {
      const prior = name === "b" ? priors[1] : priors[0];
      const run = replayScenario(name, recording, prior, { ...options, seed });
      const result = summarize(run, recordedScenario(recording, name).workloads.map(workloadLabel));
      rows.push({ seed, result });
      if (options.detail && !options.json) printScenario(result, BACKENDS);
    }
  }
  if (options.json) console.log(JSON.stringify({ options, results: rows }));
  else {
    if (options.detail) printSummary(rows.map((r) => r.result), options.budget);
    printLines(rows);
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
