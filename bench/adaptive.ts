/**
 * `deno task bench:adaptive`: `AdaptiveSelector` in a closed loop on real kernels, as an
 * application runs it — choose a backend, run one call of the kernel through gpucal's runners,
 * record its time — over a seeded mix of ops and sizes (tiny ones included, where a WebGPU round
 * trip costs 100× the op), in three scenarios: (a) the prior is this machine's report, (b) the
 * prior is another machine's report, (c) as (a), with a busy process pinned to one core from half
 * way. Every few calls, one workload's backends are all timed (single calls, interleaved): these
 * probes are the per-call oracle. Regret = Σ(time of the choice − time of the fastest) / Σ time of
 * the fastest, both read from the probes nearest the call, for the adaptive selector and for the
 * static `BackendSelector` of the same prior. Bench only: nothing reachable from mod.ts imports
 * this module.
 *
 * @module
 */
import { oneLineFailure, parseFlags, UsageError } from "../core/cli_args.ts";
import { openGpu } from "../calibrate/device.ts";
import { describeMachine, machineFingerprint } from "../calibrate/machine.ts";
import type { Prepared, Runner } from "../calibrate/runner.ts";
import { openRunner } from "../calibrate/runners/mod.ts";
import { median } from "../core/stats.ts";
import { textTable } from "../core/format.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  BACKENDS,
  formatShape,
  implOf,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import { NON_REPORT_FILES } from "../reports/index.ts";
import { loadReport } from "../reports/load.ts";
import type { Report } from "../core/schema.ts";
import { ADAPTIVE_DEFAULTS, AdaptiveSelector } from "../models/adaptive.ts";
import { predictTime } from "../models/predict.ts";
import { BackendSelector } from "../models/selector.ts";

const DEFAULT_CALLS = 10000;
/** One workload's backends are probed every this many calls. */
const PROBE_EVERY = 12;
/** Single calls per backend in one probe, interleaved across the backends. */
const PROBE_REPS = 3;
/** WebGPU is probed in one of this many probes of a workload (it is never close here). */
const GPU_PROBE_EVERY = 4;
/** The oracle of a call pools the samples of this many probes of its workload nearest to it. */
const PROBES_POOLED = 5;
/** Untimed calls per prepared kernel before the loop (compile, JIT, first-touch). */
const WARM_UP_CALLS = 3;
/** Calls per window when following regret from the start (or from the drift's start). */
const WINDOW = 300;
/** The regret the windows must stay under for the selector to count as settled. */
const UNDER_REGRET = 0.05;
/** The core the busy process of scenario (c) is pinned to. */
const BUSY_CORE = "1";

const HELP = `Usage: deno task bench:adaptive [options]

Runs AdaptiveSelector in a closed loop on real kernels (one call per choice, timed and recorded)
over a mix of ops and sizes, in three scenarios: (a) this machine's report as prior, (b) another
machine's report as prior, (c) as (a) with a busy process pinned to core 1 from half way. Prints
regret against the per-call oracle (all backends probed every few calls) and against the static
BackendSelector, the share of time spent exploring, and how soon (c) recovers.

Options:
  --calls N         Calls per scenario (default ${DEFAULT_CALLS}); one workload is probed every
                    ${PROBE_EVERY} calls
  --scenarios LIST  Comma-separated subset of a,b,c (default a,b,c)
  --budget SHARE    The selector's explorationBudget (default ${ADAPTIVE_DEFAULTS.explorationBudget})
  --seed N          Seed of the workload mix and of the selector (default 1)
  --reports DIR     Folder of the reports to take priors from (default reports)
  --json            Print the results as JSON on stdout
  -h, --help        Show this help`;

/** The mix: uniform over these, from tiny (a WebGPU round trip costs ~1000× the op) to ~1 ms. */
const WORKLOADS: ReadonlyArray<{ op: string; shape: Shape }> = [
  { op: "add", shape: { n: 3000 } },
  { op: "matmul", shape: { m: 32, k: 32, n: 32 } },
  { op: "gemv", shape: { rows: 300, cols: 300 } },
  { op: "sum", shape: { n: 70001 } },
  { op: "dot", shape: { n: 300000 } },
  { op: "add", shape: { n: 900000 } },
  { op: "gemv", shape: { rows: 1500, cols: 1500 } },
  { op: "matmul", shape: { m: 128, k: 128, n: 128 } },
];

type ScenarioName = "a" | "b" | "c";
const SCENARIOS: readonly ScenarioName[] = ["a", "b", "c"];

interface Options {
  readonly calls: number;
  readonly scenarios: readonly ScenarioName[];
  readonly budget: number;
  readonly seed: number;
  readonly reportsDir: string;
  readonly json: boolean;
}

interface Prior {
  readonly report: Report;
  /** Which report it is and why it was taken, for people. */
  readonly label: string;
}

/** A workload prepared on every backend that runs it here. */
interface Kernel {
  readonly op: string;
  readonly shape: Shape;
  readonly label: string;
  readonly prepared: ReadonlyMap<Backend, Prepared>;
}

interface Call {
  readonly workload: number;
  readonly backend: Backend;
  readonly static: Backend;
  readonly explored: boolean;
  readonly ms: number;
  /** 0 before the drift started, 1 after (always 0 without drift). */
  readonly phase: number;
}

interface Probe {
  readonly call: number;
  readonly phase: number;
  readonly ms: readonly number[];
}

interface ScenarioRun {
  readonly name: ScenarioName;
  readonly prior: string;
  readonly calls: readonly Call[];
  /** Per workload and backend, the probes in call order. */
  readonly probes: ReadonlyArray<ReadonlyMap<Backend, Probe[]>>;
  readonly driftAt: number | null;
  readonly driftNote: string | null;
  readonly seconds: number;
  readonly selectorExploredMs: number;
  readonly selectorSpentMs: number;
  readonly changes: number;
  /** Per workload, the selector's estimate of each backend at the end, ms. */
  readonly believed: ReadonlyArray<Partial<Record<Backend, number>>>;
}

function parseOptions(args: string[]): Options | "help" {
  const { values } = parseFlags(args, {
    calls: { type: "string" },
    scenarios: { type: "string" },
    budget: { type: "string" },
    seed: { type: "string" },
    reports: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return "help";
  const calls = values.calls === undefined ? DEFAULT_CALLS : Number(values.calls);
  if (!Number.isSafeInteger(calls) || calls < 2 * PROBE_EVERY * WORKLOADS.length) {
    throw new UsageError(
      `--calls must be an integer ≥ ${2 * PROBE_EVERY * WORKLOADS.length}, got "${values.calls}"`,
    );
  }
  const scenarios = (values.scenarios ?? "a,b,c").split(",").map((s) => s.trim());
  for (const s of scenarios) {
    if (!SCENARIOS.includes(s as ScenarioName)) {
      throw new UsageError(`--scenarios takes a, b and c, got "${s}"`);
    }
  }
  const budget = values.budget === undefined
    ? ADAPTIVE_DEFAULTS.explorationBudget
    : Number(values.budget);
  if (!(budget >= 0 && budget <= 1)) {
    throw new UsageError(`--budget must be a share in [0, 1], got "${values.budget}"`);
  }
  const seed = values.seed === undefined ? 1 : Number(values.seed);
  if (!Number.isSafeInteger(seed)) {
    throw new UsageError(`--seed must be an integer, got "${values.seed}"`);
  }
  return {
    calls,
    scenarios: scenarios as ScenarioName[],
    budget,
    seed,
    reportsDir: values.reports ?? "reports",
    json: values.json ?? false,
  };
}

/** This machine's fingerprint, as `calibrate` would compute it (adapter included). */
async function thisFingerprint(): Promise<string> {
  const machine = await describeMachine();
  const gpu = await openGpu({ onUnavailable: () => {} });
  gpu?.device.destroy();
  return machineFingerprint(machine, gpu?.info ?? null);
}

async function loadReports(dir: string): Promise<Report[]> {
  const reports: Report[] = [];
  let entries: AsyncIterable<Deno.DirEntry>;
  try {
    entries = Deno.readDir(dir);
    for await (const entry of entries) {
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
 * (a) the report of this machine's fingerprint, else the newest AMD report, else the newest;
 * (b) the newest report of another machine, else (a) with its CPU backends' figures permuted.
 */
function choosePriors(reports: readonly Report[], fingerprint: string): [Prior, Prior] {
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

/** The variant the report predicts with, when it runs this shape; else the first that does. */
function runnableVariant(
  report: Report,
  op: string,
  shape: Shape,
  backend: Backend,
): Variant | null {
  const impl = implOf(getOp(op), backend);
  if (!impl) return null;
  const runs = (v: Variant) => (impl.unsupported?.(shape, "f32", v) ?? null) === null;
  let preferred: string | null = null;
  try {
    preferred = predictTime(report, { op, shape, dtype: "f32", backend }).variant;
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
  }
  return impl.variants.find((v) => variantId(v) === preferred && runs(v)) ??
    impl.variants.find(runs) ?? null;
}

/** Prepares, verifies and warms one workload on every runner; a backend that fails is left out. */
async function prepareKernel(
  report: Report,
  runners: ReadonlyMap<Backend, Runner>,
  op: string,
  shape: Shape,
  log: (line: string) => void,
): Promise<Kernel> {
  const spec = getOp(op);
  const label = `${op} ${formatShape(spec, shape)}`;
  const inputs = spec.inputs(shape, "f32", seededRng(0x5eed));
  const reference = spec.reference(shape, "f32", inputs);
  const prepared = new Map<Backend, Prepared>();
  for (const [backend, runner] of runners) {
    const variant = runnableVariant(report, op, shape, backend);
    if (variant === null) continue;
    const p = await runner.prepare(spec, shape, "f32", variant, inputs, "end-to-end");
    const check = verifyOutput(await p.output(), reference, spec.tolerance(shape, "f32"));
    if (!check.ok) {
      log(`${label} on ${backend} left out: ${check.message}`);
      p.dispose();
      continue;
    }
    for (let i = 0; i < WARM_UP_CALLS; i++) await p.time(1);
    prepared.set(backend, p);
  }
  return { op, shape, label, prepared };
}

/** A busy loop pinned to one core; null (and why) when it cannot be started. */
function startBusyCore(): { stop(): Promise<void> } | string {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("taskset", {
      args: ["-c", BUSY_CORE, "sh", "-c", "while :; do :; done"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (e) {
    return `cannot start taskset: ${e instanceof Error ? e.message : String(e)}`;
  }
  return {
    stop: async () => {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

/**
 * Times every backend of one workload, single calls as the loop makes them: each timed call comes
 * right after a `spacer` (a call of another workload, as in the loop, so the operands are no
 * warmer than the loop leaves them), `PROBE_REPS` rounds over the CPU backends, each round in a
 * fresh random order, then WebGPU once when `withGpu`. WebGPU goes last and rarely: its round trip
 * evicts the caches, and a CPU call right after one takes 2–8× its loop time.
 */
async function probe(
  kernel: Kernel,
  at: { call: number; phase: number },
  withGpu: boolean,
  rng: () => number,
  spacer: () => Promise<unknown>,
): Promise<Array<{ backend: Backend; probe: Probe }>> {
  const cpu = [...kernel.prepared.keys()].filter((b) => b !== "webgpu");
  const samples = new Map<Backend, number[]>(cpu.map((b) => [b, []]));
  for (let r = 0; r < PROBE_REPS; r++) {
    for (const backend of shuffled(cpu, rng)) {
      await spacer();
      samples.get(backend)!.push((await kernel.prepared.get(backend)!.time(1)).wallMs);
    }
  }
  const gpu = kernel.prepared.get("webgpu");
  if (withGpu && gpu !== undefined) {
    await spacer();
    samples.set("webgpu", [(await gpu.time(1)).wallMs]);
    await spacer();
  }
  return [...samples].map(([backend, ms]) => ({ backend, probe: { ...at, ms } }));
}

function shuffled<T>(items: readonly T[], rng: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function runScenario(
  name: ScenarioName,
  prior: Prior,
  kernels: readonly Kernel[],
  options: Options,
): Promise<ScenarioRun> {
  const backends = [...new Set(kernels.flatMap((k) => [...k.prepared.keys()]))];
  const adaptive = new AdaptiveSelector(prior.report, {
    backends,
    explorationBudget: options.budget,
    seed: options.seed,
  });
  const statics = kernels.map((k) => staticChoice(prior.report, k));
  const pick = seededRng(options.seed);
  const order = seededRng(options.seed + 1);
  /** Each workload's latest backend in the loop, for the probes' spacers. */
  const last = [...statics];
  const probes = kernels.map(() => new Map<Backend, Probe[]>());
  const calls: Call[] = [];
  const driftAt = name === "c" ? Math.floor(options.calls / 2) : null;
  let busy: { stop(): Promise<void> } | null = null;
  let driftNote: string | null = null;
  const started = performance.now();
  try {
    for (let i = 0; i < options.calls; i++) {
      if (i === driftAt) {
        const started = startBusyCore();
        if (typeof started === "string") driftNote = started;
        else busy = started;
      }
      const phase = driftAt !== null && i >= driftAt ? 1 : 0;
      const w = Math.floor(pick() * kernels.length);
      const kernel = kernels[w]!;
      const key = { op: kernel.op, shape: kernel.shape, dtype: "f32" } as const;
      const choice = adaptive.choose(key);
      const ms = (await kernel.prepared.get(choice.backend)!.time(1)).wallMs;
      adaptive.record(key, choice.backend, ms);
      last[w] = choice.backend;
      calls.push({
        workload: w,
        backend: choice.backend,
        static: statics[w]!,
        explored: choice.explored,
        ms,
        phase,
      });
      if (i % PROBE_EVERY === 0) {
        const round = i / PROBE_EVERY;
        const target = round % kernels.length;
        const withGpu = Math.floor(round / kernels.length) % GPU_PROBE_EVERY === 0;
        const at = { call: i, phase };
        const spacer = () => {
          const other = (target + 1 + Math.floor(order() * (kernels.length - 1))) % kernels.length;
          return kernels[other]!.prepared.get(last[other]!)!.time(1);
        };
        const probed = await probe(kernels[target]!, at, withGpu, order, spacer);
        for (const { backend, probe: p } of probed) {
          const list = probes[target]!.get(backend) ?? [];
          list.push(p);
          probes[target]!.set(backend, list);
        }
      }
    }
  } finally {
    await busy?.stop();
  }
  let changes = 0;
  const believed = kernels.map((k) => {
    const e = adaptive.estimates({ op: k.op, shape: k.shape, dtype: "f32" });
    changes += e.changes;
    return Object.fromEntries(e.arms.map((a) => [a.backend, a.ms ?? NaN]));
  });
  const { exploredMs, spentMs } = adaptive.exploration();
  return {
    name,
    prior: prior.label,
    calls,
    probes,
    driftAt,
    driftNote,
    seconds: (performance.now() - started) / 1000,
    selectorExploredMs: exploredMs,
    selectorSpentMs: spentMs,
    changes,
    believed,
  };
}

/** The static selector's pick among the backends prepared here (its own pick when it runs). */
function staticChoice(report: Report, kernel: Kernel): Backend {
  const selection = BackendSelector.fromReport(report).select({
    op: kernel.op,
    shape: kernel.shape,
    dtype: "f32",
  });
  if (kernel.prepared.has(selection.backend)) return selection.backend;
  const ranked = Object.entries(selection.predictedMs)
    .filter(([b]) => kernel.prepared.has(b as Backend))
    .sort((a, b) => a[1] - b[1]);
  return (ranked[0]?.[0] as Backend | undefined) ?? [...kernel.prepared.keys()][0]!;
}

/** Per call, each backend's oracle time: the median of its nearest probes in the same phase. */
function oracleTimes(run: ScenarioRun): Array<ReadonlyMap<Backend, number>> {
  return run.calls.map((c, i) => {
    const out = new Map<Backend, number>();
    for (const [backend, list] of run.probes[c.workload]!) {
      const same = list.filter((p) => p.phase === c.phase);
      const nearest = (same.length > 0 ? same : list)
        .map((p) => ({ p, d: Math.abs(p.call - i) }))
        .sort((a, b) => a.d - b.d)
        .slice(0, PROBES_POOLED)
        .flatMap(({ p }) => p.ms);
      if (nearest.length > 0) out.set(backend, median(nearest));
    }
    return out;
  });
}

interface Score {
  readonly calls: number;
  /** The adaptive selector's and the static selector's regret against the oracle. */
  readonly regret: number;
  readonly staticRegret: number;
  /** Share of calls on the backend the oracle says is fastest. */
  readonly fastest: number;
  /** Time recorded for explorations over time recorded. */
  readonly explored: number;
  /**
   * The same at oracle times (each call counted at its backend's median time then), which leaves
   * out what the OS took during a call (a stall lands on an exploration as on any call).
   */
  readonly exploredAtOracle: number;
  /** The longest exploration call, ms (a stall during one shows here). */
  readonly longestExplorationMs: number;
}

function score(
  calls: readonly Call[],
  oracle: ReadonlyArray<ReadonlyMap<Backend, number>>,
  from: number,
  to: number,
): Score {
  let chosen = 0, fixed = 0, best = 0, hits = 0, spent = 0, explored = 0, longest = 0;
  let exploredAtOracle = 0;
  for (let i = from; i < to; i++) {
    const c = calls[i]!;
    const times = oracle[i]!;
    const fastest = Math.min(...times.values());
    chosen += times.get(c.backend)!;
    fixed += times.get(c.static)!;
    best += fastest;
    if (times.get(c.backend) === fastest) hits++;
    spent += c.ms;
    if (c.explored) {
      explored += c.ms;
      exploredAtOracle += times.get(c.backend)!;
      longest = Math.max(longest, c.ms);
    }
  }
  return {
    calls: to - from,
    regret: chosen / best - 1,
    staticRegret: fixed / best - 1,
    fastest: hits / (to - from),
    explored: explored / spent,
    exploredAtOracle: exploredAtOracle / chosen,
    longestExplorationMs: longest,
  };
}

interface RegretWindows {
  /** Regret of each window of `WINDOW` calls from the start, or from the drift's start. */
  readonly windows: readonly number[];
  /** Calls from the start (or the drift's start) to the first window under 5 %; null if none. */
  readonly firstUnder5: number | null;
  /**
   * Calls from the start (or the drift's start) to the window from which every window is under
   * 5 %; null when the last one is not.
   */
  readonly under5From: number | null;
}

function regretWindows(
  run: ScenarioRun,
  oracle: ReadonlyArray<ReadonlyMap<Backend, number>>,
): RegretWindows {
  const start = run.driftAt ?? 0;
  const windows: number[] = [];
  for (let from = start; from + WINDOW <= run.calls.length; from += WINDOW) {
    windows.push(score(run.calls, oracle, from, from + WINDOW).regret);
  }
  let first = windows.length;
  while (first > 0 && windows[first - 1]! <= UNDER_REGRET) first--;
  const under = windows.findIndex((w) => w <= UNDER_REGRET);
  return {
    windows,
    firstUnder5: under < 0 ? null : under * WINDOW,
    under5From: first < windows.length ? first * WINDOW : null,
  };
}

interface Switch {
  readonly workload: string;
  readonly before: Backend;
  readonly after: Backend;
  /** Loop calls from the drift's start to the first chosen (not explored) call on `after`. */
  readonly afterCalls: number | null;
  /** The same, counting this workload's calls only. */
  readonly afterOwnCalls: number | null;
}

/** The fastest backend of a phase's median oracle times. */
function fastestOf(ms: Partial<Record<Backend, number>>): Backend | null {
  let best: Backend | null = null;
  for (const [b, t] of Object.entries(ms) as Array<[Backend, number]>) {
    if (best === null || t < ms[best]!) best = b;
  }
  return best;
}

function switches(run: ScenarioRun, kernels: readonly Kernel[]): Switch[] | null {
  if (run.driftAt === null) return null;
  const out: Switch[] = [];
  kernels.forEach((k, w) => {
    const phase = (p: number) => {
      const ms: Partial<Record<Backend, number>> = {};
      for (const [b, list] of run.probes[w]!) {
        const xs = list.filter((x) => x.phase === p).flatMap((x) => x.ms);
        if (xs.length > 0) ms[b] = median(xs);
      }
      return fastestOf(ms);
    };
    const before = phase(0), after = phase(1);
    if (before === null || after === null || before === after) return;
    let own = 0;
    let found: number | null = null;
    for (let i = run.driftAt!; i < run.calls.length && found === null; i++) {
      const c = run.calls[i]!;
      if (c.workload !== w) continue;
      own++;
      if (c.backend === after && !c.explored) found = i - run.driftAt!;
    }
    out.push({
      workload: k.label,
      before,
      after,
      afterCalls: found,
      afterOwnCalls: found === null ? null : own,
    });
  });
  return out;
}

interface ScenarioResult {
  readonly name: ScenarioName;
  readonly prior: string;
  readonly seconds: number;
  readonly whole: Score;
  readonly lastHalf: Score;
  readonly afterDrift: Score | null;
  readonly windows: RegretWindows;
  /** (c) only: the workloads whose fastest backend the drift changed, and when the choice followed. */
  readonly switches: readonly Switch[] | null;
  readonly driftNote: string | null;
  readonly selectorExploredShare: number;
  readonly changes: number;
  readonly workloads: readonly WorkloadSummary[];
}

interface WorkloadSummary {
  readonly workload: string;
  /** Median oracle time per backend, ms, per phase. */
  readonly oracleMs: ReadonlyArray<Partial<Record<Backend, number>>>;
  readonly static: Backend;
  /** The adaptive selector's picks over the last half, and their median recorded time, ms. */
  readonly lastHalfPicks: Partial<Record<Backend, { calls: number; medianMs: number }>>;
  /** The selector's estimate per backend at the end, ms. */
  readonly believedMs: Partial<Record<Backend, number>>;
  /** Over the whole loop: explorations, the time they took and the time of all calls, ms. */
  readonly explorations: number;
  readonly exploredMs: number;
  readonly spentMs: number;
}

function summarize(run: ScenarioRun, kernels: readonly Kernel[]): ScenarioResult {
  const oracle = oracleTimes(run);
  const n = run.calls.length;
  const half = Math.floor(n / 2);
  const workloads = kernels.map((k, w): WorkloadSummary => {
    const phases = run.driftAt === null ? [0] : [0, 1];
    const oracleMs = phases.map((phase) => {
      const out: Partial<Record<Backend, number>> = {};
      for (const [b, list] of run.probes[w]!) {
        const ms = list.filter((p) => p.phase === phase).flatMap((p) => p.ms);
        if (ms.length > 0) out[b] = median(ms);
      }
      return out;
    });
    const recorded = new Map<Backend, number[]>();
    for (const c of run.calls.slice(half)) {
      if (c.workload === w) recorded.set(c.backend, [...recorded.get(c.backend) ?? [], c.ms]);
    }
    const lastHalfPicks = Object.fromEntries(
      [...recorded].map(([b, ms]) => [b, { calls: ms.length, medianMs: median(ms) }]),
    );
    const own = run.calls.filter((c) => c.workload === w);
    const explored = own.filter((c) => c.explored);
    return {
      workload: k.label,
      oracleMs,
      explorations: explored.length,
      exploredMs: explored.reduce((sum, c) => sum + c.ms, 0),
      spentMs: own.reduce((sum, c) => sum + c.ms, 0),
      static: run.calls.find((c) => c.workload === w)?.static ?? "wasm",
      lastHalfPicks,
      believedMs: run.believed[w]!,
    };
  });
  return {
    name: run.name,
    prior: run.prior,
    seconds: run.seconds,
    whole: score(run.calls, oracle, 0, n),
    lastHalf: score(run.calls, oracle, half, n),
    afterDrift: run.driftAt === null ? null : score(run.calls, oracle, run.driftAt, n),
    windows: regretWindows(run, oracle),
    switches: switches(run, kernels),
    driftNote: run.driftNote,
    selectorExploredShare: run.selectorExploredMs / run.selectorSpentMs,
    changes: run.changes,
    workloads,
  };
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)} %`;
}

const TITLES: Record<ScenarioName, string> = {
  a: "(a) correct prior",
  b: "(b) wrong prior",
  c: `(c) correct prior, busy process on core ${BUSY_CORE} from half way`,
};

function printScenario(r: ScenarioResult, backends: readonly Backend[]): void {
  console.log(`\n${TITLES[r.name]} — prior ${r.prior}; ${r.seconds.toFixed(0)} s`);
  if (r.driftNote !== null) console.log(`no drift: ${r.driftNote}`);
  const phases = r.afterDrift === null ? [""] : [" before", " after"];
  console.log(textTable(
    [
      "workload",
      ...phases.flatMap((p) => backends.map((b) => `${b}${p}`)),
      "static",
      "last half: picks× median ms",
      `believed at the end (${backends.join(" ")})`,
      "explored",
    ],
    r.workloads.map((w) => [
      w.workload,
      ...w.oracleMs.flatMap((ms) => backends.map((b) => ms[b]?.toPrecision(3) ?? "—")),
      w.static,
      Object.entries(w.lastHalfPicks)
        .map(([b, p]) => `${b} ${p.calls}× ${p.medianMs.toPrecision(3)}`).join(", "),
      backends.map((b) => w.believedMs[b]?.toPrecision(3) ?? "—").join(" "),
      `${w.explorations}× ${w.exploredMs.toPrecision(3)} of ${w.spentMs.toPrecision(3)} ms`,
    ]),
  ));
  const from = r.afterDrift === null ? "the start" : "the drift's start";
  const w = r.windows;
  console.log(
    `regret per ${WINDOW} calls from ${from}: ${w.windows.map(pct).join(", ")}; ` +
      (w.firstUnder5 === null
        ? `never under ${pct(UNDER_REGRET)}`
        : `first under ${pct(UNDER_REGRET)} from call ${w.firstUnder5}, `) +
      (w.under5From === null
        ? `the last window is over it`
        : `under it for good from call ${w.under5From}`),
  );
  if (r.switches === null) return;
  if (r.switches.length === 0) {
    console.log("the drift changed no workload's fastest backend here: nothing to switch");
  }
  for (const s of r.switches) {
    console.log(
      `${s.workload}: fastest ${s.before} → ${s.after}; ` +
        (s.afterCalls === null
          ? "the selector never switched"
          : `the selector switched ${s.afterCalls} calls after the drift started ` +
            `(${s.afterOwnCalls} calls of this workload)`),
    );
  }
}

function printSummary(results: readonly ScenarioResult[], budget: number): void {
  console.log(
    `\nRegret = Σ(oracle time of the choice − oracle time of the fastest) / Σ fastest; ` +
      `exploring = time recorded for explorations / time recorded (budget ${pct(budget)}), and ` +
      "the same with every call at its backend's oracle time (without what the OS took):",
  );
  const rows = results.flatMap((r) => {
    const lines: Array<[string, Score]> = [["whole loop", r.whole], ["last half", r.lastHalf]];
    if (r.afterDrift !== null) lines.push(["after the drift", r.afterDrift]);
    return lines.map(([span, s]) => [
      TITLES[r.name].slice(0, 3),
      span,
      `${s.calls}`,
      pct(s.regret),
      pct(s.staticRegret),
      pct(s.fastest),
      pct(s.explored),
      pct(s.exploredAtOracle),
      s.longestExplorationMs.toPrecision(3),
    ]);
  });
  console.log(textTable(
    [
      "",
      "calls",
      "n",
      "adaptive regret",
      "static regret",
      "fastest picked",
      "exploring",
      "at oracle times",
      "longest exploration ms",
    ],
    rows,
  ));
}

async function openRunners(log: (line: string) => void): Promise<Map<Backend, Runner>> {
  const runners = new Map<Backend, Runner>();
  for (const b of BACKENDS) {
    const r = await openRunner(b);
    if (typeof r === "string") log(`${b} left out: ${r}; the loop runs without it`);
    else runners.set(b, r);
  }
  return runners;
}

async function main(args: string[]): Promise<number> {
  let options: Options;
  try {
    const parsed = parseOptions(args);
    if (parsed === "help") {
      console.log(HELP);
      return 0;
    }
    options = parsed;
  } catch (e) {
    return oneLineFailure(e);
  }
  const log = (line: string) => options.json ? console.error(line) : console.log(line);
  let reports: Report[];
  try {
    reports = await loadReports(options.reportsDir);
  } catch (e) {
    return oneLineFailure(e);
  }
  const [correct, wrong] = choosePriors(reports, await thisFingerprint());
  const runners = await openRunners(log);
  const kernels: Kernel[] = [];
  try {
    for (const w of WORKLOADS) {
      kernels.push(await prepareKernel(correct.report, runners, w.op, w.shape, log));
    }
    const backends = BACKENDS.filter((b) => runners.has(b));
    const results: ScenarioResult[] = [];
    for (const name of options.scenarios) {
      const prior = name === "b" ? wrong : correct;
      const run = await runScenario(name, prior, kernels, options);
      const result = summarize(run, kernels);
      results.push(result);
      if (!options.json) printScenario(result, backends);
    }
    if (options.json) console.log(JSON.stringify({ options, results }));
    else printSummary(results, options.budget);
  } finally {
    for (const k of kernels) for (const p of k.prepared.values()) p.dispose();
    for (const r of runners.values()) await r.close();
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
