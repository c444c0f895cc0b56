/**
 * Private to `bench:adaptive` and its replay: the workload mix, the priors each scenario takes,
 * the static selector's pick, and the recording of per-backend single-call times that the replay
 * draws from. Pure where it can be; only {@linkcode loadReports} reads files.
 *
 * @module
 */
import { UsageError } from "../core/cli_args.ts";
import { sameConfiguration } from "../calibrate/machine.ts";
import type { Report } from "../core/schema.ts";
import { median } from "../core/stats.ts";
import { getOp } from "../kernels/catalog.ts";
import { type Backend, BACKENDS, formatShape, type Shape } from "../kernels/types.ts";
import { BackendSelector } from "../models/selector.ts";
import { NON_REPORT_FILES } from "../reports/index.ts";
import { loadReport } from "../reports/load.ts";

/**
 * The mix of every scenario: uniform over these, from tiny (a WebGPU round trip costs ~1000× the
 * op) to ~0.3 ms.
 *
 * @example
 * ```ts
 * import { WORKLOADS } from "./_adaptive_loop.ts";
 * console.log(WORKLOADS.length > 0); // true
 * ```
 */
export const WORKLOADS: ReadonlyArray<Workload> = [
  { op: "add", shape: { n: 3000 } },
  { op: "matmul", shape: { m: 32, k: 32, n: 32 } },
  { op: "gemv", shape: { rows: 300, cols: 300 } },
  { op: "sum", shape: { n: 70001 } },
  { op: "dot", shape: { n: 300000 } },
  { op: "add", shape: { n: 900000 } },
  { op: "gemv", shape: { rows: 1500, cols: 1500 } },
  { op: "matmul", shape: { m: 128, k: 128, n: 128 } },
];

/**
 * Added to scenario (c)'s mix: workloads where the two-thread wasm-mt leads single-thread wasm on a
 * quiet machine by less than its second core is worth, so a busy core on one of the two takes the
 * lead away. Measured here in the loop (medians of single calls, three 2000-call runs): matmul 256
 * wasm-mt 0.51–0.59 ms against wasm 0.70, then ×1.5–1.6 slower with the busy core, 7–20 % behind
 * wasm; gemv 2500 0.55–0.71 against 0.81–0.98, then ×1.5, level to 5 % behind; softmax 512×1024
 * 0.99–1.10 against 1.64–1.67, then ×1.5–1.8, level to 5 % behind. The margin after the drift is
 * small and varies from run to run; the bench reports each workload the drift turned. Left out of
 * (a) and (b): wasm-mt's lead on them comes and goes with whatever else the machine runs.
 *
 * @example
 * ```ts
 * import { CROSSOVER_WORKLOADS } from "./_adaptive_loop.ts";
 * console.log(CROSSOVER_WORKLOADS.length); // 3
 * ```
 */
export const CROSSOVER_WORKLOADS: ReadonlyArray<Workload> = [
  { op: "matmul", shape: { m: 256, k: 256, n: 256 } },
  { op: "gemv", shape: { rows: 2500, cols: 2500 } },
  { op: "softmax", shape: { rows: 512, cols: 1024 } },
];

/**
 * An op and shape of the mix (f32, end-to-end).
 *
 * @example
 * ```ts
 * import type { Workload } from "./_adaptive_loop.ts";
 * const w: Workload = { op: "dot", shape: { n: 300000 } };
 * ```
 */
export interface Workload {
  readonly op: string;
  readonly shape: Shape;
}

/**
 * Candidates for scenario (c)'s crossover workloads: wasm-mt's lead over wasm on them, measured
 * here, runs from ×1.1 to ×1.7 on a quiet machine, and with two busy processes on one core
 * (scenario (c)'s drift) wasm leads on most of them by 5–50 %. Which ones turn, and by how much,
 * varies with what else the machine runs, so `bench:adaptive` screens them just before (c)'s loop
 * and takes the ones the drift turns by the widest margin.
 *
 * @example
 * ```ts
 * import { CROSSOVER_CANDIDATES } from "./_adaptive_loop.ts";
 * console.log(CROSSOVER_CANDIDATES.length > 3); // true
 * ```
 */
export const CROSSOVER_CANDIDATES: ReadonlyArray<Workload> = [
  ...CROSSOVER_WORKLOADS,
  { op: "matmul", shape: { m: 192, k: 192, n: 192 } },
  { op: "matmul", shape: { m: 224, k: 224, n: 224 } },
  { op: "gemv", shape: { rows: 2000, cols: 2000 } },
  { op: "softmax", shape: { rows: 256, cols: 1024 } },
  { op: "softmax", shape: { rows: 384, cols: 1024 } },
];

/**
 * A scenario's mix: {@linkcode WORKLOADS}, and for (c) the crossover workloads too.
 *
 * @param name The scenario.
 * @param crossover (c)'s crossover workloads (default {@linkcode CROSSOVER_WORKLOADS}).
 * @returns Its workloads, in the order its loop indexes them.
 * @example
 * ```ts
 * import { mixOf, WORKLOADS } from "./_adaptive_loop.ts";
 * console.log(mixOf("a") === WORKLOADS); // true
 * ```
 */
export function mixOf(
  name: ScenarioName,
  crossover: ReadonlyArray<Workload> = CROSSOVER_WORKLOADS,
): ReadonlyArray<Workload> {
  return name === "c" ? [...WORKLOADS, ...crossover] : WORKLOADS;
}

/** The scenarios: (a) correct prior, (b) wrong prior, (c) correct prior and drift. */
export type ScenarioName = "a" | "b" | "c";

/**
 * Every scenario, in the order they run.
 *
 * @example
 * ```ts
 * import { SCENARIOS } from "./_adaptive_loop.ts";
 * console.log(SCENARIOS.join(",")); // a,b,c
 * ```
 */
export const SCENARIOS: readonly ScenarioName[] = ["a", "b", "c"];

/**
 * A report taken as a scenario's prior, and why, for people.
 *
 * @example
 * ```ts ignore
 * const prior: Prior = { report, label: "this machine's report" };
 * ```
 */
export interface Prior {
  readonly report: Report;
  readonly label: string;
}

/**
 * Single calls of one workload's backends, timed together at one point of a loop.
 *
 * @example
 * ```ts
 * import type { Probe } from "./_adaptive_loop.ts";
 * const p: Probe = { call: 120, phase: 0, ms: [0.041, 0.039, 0.040] };
 * ```
 */
export interface Probe {
  /** The loop call it was taken after. */
  readonly call: number;
  /** 0 before the drift started, 1 after. */
  readonly phase: number;
  readonly ms: readonly number[];
}

/** The oracle of a call pools at least this many samples, of its workload's nearest probes. */
const POOLED_SAMPLES = 15;

/**
 * The samples of the probes nearest to a call, in its phase (any phase when the phase has none),
 * nearest first until there are `POOLED_SAMPLES`: what the oracle is taken of, and what the
 * replay draws from.
 *
 * @param probes One workload's probes of one backend, in call order.
 * @param call The loop call.
 * @param phase Its phase.
 * @returns Times, ms (empty without probes).
 * @example
 * ```ts
 * import { nearestSamples } from "./_adaptive_loop.ts";
 * const probes = [{ call: 0, phase: 0, ms: [1, 2] }, { call: 99, phase: 1, ms: [9] }];
 * console.log(nearestSamples(probes, 98, 0)); // [1, 2]
 * ```
 */
export function nearestSamples(probes: readonly Probe[], call: number, phase: number): number[] {
  const same = probes.filter((p) => p.phase === phase);
  const nearest = (same.length > 0 ? same : probes)
    .map((p) => ({ p, d: Math.abs(p.call - call) }))
    .sort((a, b) => a.d - b.d);
  const samples: number[] = [];
  for (const { p } of nearest) {
    if (samples.length >= POOLED_SAMPLES) break;
    samples.push(...p.ms);
  }
  return samples;
}

/** Share of a pool's samples left out at each end by {@linkcode trimmedMean}. */
const TRIM = 0.1;

/**
 * The mean of the samples without the `TRIM` share at each end: what a call costs on average, the
 * rare stall left out. The median is the bench's oracle; this is its second, because a median
 * misjudges a backend whose times have two modes (wasm-mt when its worker waits for a core: half
 * its calls fast, half slow), and an application pays the average.
 *
 * @param samples Times, ms, in any order (at least one).
 * @returns Their trimmed mean, ms.
 * @example
 * ```ts
 * import { trimmedMean } from "./_adaptive_loop.ts";
 * console.log(trimmedMean([1, 2, 3, 4, 5, 6, 7, 8, 9, 100])); // 5.5
 * ```
 */
export function trimmedMean(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const k = Math.floor(sorted.length * TRIM);
  const kept = sorted.slice(k, sorted.length - k);
  return kept.reduce((sum, x) => sum + x, 0) / kept.length;
}

/**
 * Each backend's median probed time over a phase, ms.
 *
 * @param probes One workload's probes per backend.
 * @param phase The phase.
 * @returns The medians of the backends probed in it.
 * @example
 * ```ts
 * import { phaseMedians } from "./_adaptive_loop.ts";
 * console.log(phaseMedians({ wasm: [{ call: 0, phase: 0, ms: [1, 3, 2] }] }, 0)); // { wasm: 2 }
 * ```
 */
export function phaseMedians(
  probes: Partial<Record<Backend, readonly Probe[]>>,
  phase: number,
): Partial<Record<Backend, number>> {
  const out: Partial<Record<Backend, number>> = {};
  for (const [b, list] of Object.entries(probes) as Array<[Backend, readonly Probe[]]>) {
    const ms = list.filter((p) => p.phase === phase).flatMap((p) => p.ms);
    if (ms.length > 0) out[b] = median(ms);
  }
  return out;
}

/**
 * What a run of `bench:adaptive` measured, kept so its loops can be replayed without the machine:
 * per scenario, every workload's probes — single calls of each backend, timed between the loop's
 * calls as the machine then ran them (its other load, and (c)'s busy core, included).
 *
 * @example
 * ```ts
 * import type { Recording } from "./_adaptive_loop.ts";
 * const r: Recording = {
 *   fingerprint: "1ec2aa7f915f3025",
 *   otherFingerprint: "32776e59cbc67aaa",
 *   scenarios: {
 *     a: {
 *       calls: 2000,
 *       driftAt: null,
 *       workloads: [{ op: "add", shape: { n: 3000 } }],
 *       probes: [{ wasm: [[0, 0.004], [24, 0.0041]] }],
 *     },
 *   },
 * };
 * ```
 */
export interface Recording {
  /** Fingerprint of the report taken as the correct prior (scenarios a and c). */
  readonly fingerprint: string;
  /** Fingerprint of the report taken as the wrong prior (scenario b); null when permuted. */
  readonly otherFingerprint: string | null;
  readonly scenarios: Partial<Record<ScenarioName, RecordedScenario>>;
}

/**
 * One scenario of a {@linkcode Recording}.
 *
 * @example
 * ```ts
 * import type { RecordedScenario } from "./_adaptive_loop.ts";
 * const s: RecordedScenario = {
 *   calls: 96,
 *   driftAt: 48,
 *   workloads: [{ op: "dot", shape: { n: 300000 } }],
 *   probes: [{ js: [[0, 0.2], [60, 0.3]] }],
 * };
 * ```
 */
export interface RecordedScenario {
  readonly calls: number;
  readonly driftAt: number | null;
  /** Its mix, in the order its loop indexed them. */
  readonly workloads: ReadonlyArray<Workload>;
  /**
   * Per workload and backend, the probes in call order, each `[call, ms]` (ms at 4 significant
   * digits; from `driftAt` on, after the drift).
   */
  readonly probes: ReadonlyArray<
    Partial<Record<Backend, ReadonlyArray<readonly [number, number]>>>
  >;
}

/**
 * One workload's probes of a recorded scenario, as the bench took them.
 *
 * @param scenario The recorded scenario.
 * @param workload The workload's index in its mix.
 * @returns Per backend, the probes in call order.
 * @example
 * ```ts
 * import { probesOf } from "./_adaptive_loop.ts";
 * const s = { calls: 4, driftAt: 2, workloads: [], probes: [{ js: [[1, 0.5], [3, 0.9]] as const }] };
 * console.log(probesOf(s, 0).js![1]); // { call: 3, phase: 1, ms: [0.9] }
 * ```
 */
export function probesOf(
  scenario: RecordedScenario,
  workload: number,
): Partial<Record<Backend, Probe[]>> {
  const phaseOf = (call: number) => scenario.driftAt !== null && call >= scenario.driftAt ? 1 : 0;
  return Object.fromEntries(
    Object.entries(scenario.probes[workload] ?? {}).map(([b, list]) => [
      b,
      list.map(([call, ms]) => ({ call, phase: phaseOf(call), ms: [ms] })),
    ]),
  );
}

/**
 * A workload's name for people: op and shape.
 *
 * @param w The workload.
 * @returns e.g. `gemv 1500x1500`.
 * @example
 * ```ts
 * import { workloadLabel } from "./_adaptive_loop.ts";
 * console.log(workloadLabel({ op: "dot", shape: { n: 300000 } })); // dot 300000
 * ```
 */
export function workloadLabel(w: Workload): string {
  return `${w.op} ${formatShape(getOp(w.op), w.shape)}`;
}

/**
 * Every report in a folder, newest first.
 *
 * @param dir The folder.
 * @returns The reports.
 * @throws {UsageError} when the folder does not exist or holds no report.
 * @example
 * ```ts ignore
 * const reports = await loadReports("reports");
 * ```
 */
export async function loadReports(dir: string): Promise<Report[]> {
  const reports: Report[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".json") || entry.name.startsWith(".")) continue;
      if (NON_REPORT_FILES.includes(entry.name)) continue;
      reports.push(await loadReport(`${dir}/${entry.name}`));
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new UsageError(`--reports "${dir}" does not exist: pass the folder of the reports`);
    }
    throw e;
  }
  if (reports.length === 0) {
    throw new UsageError(`--reports "${dir}" holds no report: calibrate this machine first`);
  }
  return reports.sort((a, b) => b.provenance.date.localeCompare(a.provenance.date));
}

/**
 * The priors of the scenarios: (a) the report of this machine's fingerprint, else the newest AMD
 * report, else the newest; (b) the newest report of another machine, else (a) with its CPU
 * backends' figures permuted. Among reports of one machine, one of the configuration the bench
 * runs in (its driver settings, `calibrate/machine.ts`) comes first: the dataset holds the AMD VM
 * with lavapipe on one thread beside its default configuration.
 *
 * @param reports The reports, newest first.
 * @param fingerprint This machine's fingerprint.
 * @param driverEnv The driver settings the bench runs with (none by default).
 * @returns The correct prior and the wrong one.
 * @example
 * ```ts ignore
 * const [correct, wrong] = choosePriors(await loadReports("reports"), fingerprint);
 * ```
 */
export function choosePriors(
  reports: readonly Report[],
  fingerprint: string,
  driverEnv: Readonly<Record<string, string>> = {},
): [Prior, Prior] {
  const sameSettings = (r: Report) => sameConfiguration(r.provenance.driverEnv, driverEnv);
  reports = [...reports.filter(sameSettings), ...reports.filter((r) => !sameSettings(r))];
  const name = (r: Report) => `${r.slug} (${r.machine.cpuModel}, ${r.provenance.date})`;
  const own = reports.find((r) => r.fingerprint === fingerprint);
  const amd = reports.find((r) => /\bAMD\b/i.test(r.machine.cpuModel));
  const correct: Prior = own !== undefined
    ? { report: own, label: `${name(own)}: this machine's fingerprint` }
    : amd !== undefined
    ? { report: amd, label: `${name(amd)}: no report has this fingerprint; newest AMD report` }
    : { report: reports[0]!, label: `${name(reports[0]!)}: newest report` };
  const other = reports.find((r) => r.machine.cpuModel !== correct.report.machine.cpuModel) ??
    reports.find((r) => r.fingerprint !== correct.report.fingerprint);
  const wrong: Prior = other !== undefined
    ? { report: other, label: `${name(other)}: another machine's report` }
    : {
      report: permuteCpuBackends(correct.report),
      label: `${name(correct.report)} with js → wasm → wasm-mt → js permuted: only one machine`,
    };
  return [correct, wrong];
}

/** The report with each CPU backend's figures relabelled as the next one's. */
function permuteCpuBackends(report: Report): Report {
  const next: Partial<Record<Backend, Backend>> = { js: "wasm", wasm: "wasm-mt", "wasm-mt": "js" };
  return JSON.parse(
    JSON.stringify(report),
    (key, value) =>
      key === "backend" && typeof value === "string" ? next[value as Backend] ?? value : value,
  );
}

/**
 * The static `BackendSelector`'s pick among the backends available (its own pick when it is one
 * of them, else its fastest prediction among them).
 *
 * @param report The prior.
 * @param workload The workload.
 * @param available The backends that run it here.
 * @returns The backend.
 * @example
 * ```ts ignore
 * const b = staticChoice(report, { op: "dot", shape: { n: 300000 } }, ["wasm", "js"]);
 * ```
 */
export function staticChoice(
  report: Report,
  workload: Workload,
  available: readonly Backend[],
): Backend {
  const selection = BackendSelector.fromReport(report).select({ ...workload, dtype: "f32" });
  if (available.includes(selection.backend)) return selection.backend;
  const ranked = Object.entries(selection.predictedMs)
    .filter(([b]) => available.includes(b as Backend))
    .sort((a, b) => a[1] - b[1]);
  return (ranked[0]?.[0] as Backend | undefined) ?? available[0]!;
}

/**
 * The backends probed in a recorded scenario, in `BACKENDS` order.
 *
 * @param scenario The recorded scenario.
 * @returns Every backend some workload was probed on.
 * @example
 * ```ts
 * import { recordedBackends } from "./_adaptive_loop.ts";
 * const workloads = [{ op: "dot", shape: { n: 9 } }];
 * const probes = [{ js: [[0, 1]] as const, wasm: [[1, 0.5]] as const }];
 * console.log(recordedBackends({ calls: 9, driftAt: null, workloads, probes }));
 * // ["wasm", "js"]
 * ```
 */
export function recordedBackends(scenario: RecordedScenario): Backend[] {
  const seen = new Set(scenario.probes.flatMap((w) => Object.keys(w)));
  return BACKENDS.filter((b) => seen.has(b));
}
