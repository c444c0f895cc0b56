/**
 * `deno task bench:adaptive`: `AdaptiveSelector` in a closed loop on real kernels, as an
 * application runs it — choose a backend, run one call of the kernel through gpucal's runners,
 * record its time — over a seeded mix of ops and sizes (tiny ones included, where a WebGPU round
 * trip costs 100× the op), in three scenarios: (a) the prior is this machine's report, (b) the
 * prior is another machine's report, (c) as (a), with three workloads added whose fastest backend
 * is the two-thread wasm-mt on a quiet machine and can be wasm once a busy process pinned to one
 * core starts, half way. After every loop call, one backend of one workload is timed, in the
 * conditions the loop leaves (caches, wasm-mt's worker): these probes are the per-call oracle.
 * Regret = Σ(time of the choice − time of the fastest) / Σ time of the fastest, both read from
 * the probes nearest the call, for the adaptive selector and for the static `BackendSelector` of
 * the same prior. With `--json` it also prints the probes' times as a
 * recording (`bench/adaptive_replay.ts` replays the loop from it without the machine). Bench only:
 * nothing reachable from mod.ts imports this module.
 *
 * @module
 */
import { oneLineFailure, parseFlags, UsageError } from "../core/cli_args.ts";
import { openGpu } from "../calibrate/device.ts";
import { describeMachine, machineFingerprint } from "../calibrate/machine.ts";
import type { Prepared, Runner } from "../calibrate/runner.ts";
import { openRunner } from "../calibrate/runners/mod.ts";
import { median } from "../core/stats.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  BACKENDS,
  implOf,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { Report } from "../core/schema.ts";
import { ADAPTIVE_DEFAULTS, AdaptiveSelector } from "../models/adaptive.ts";
import { predictTime } from "../models/predict.ts";
import {
  choosePriors,
  loadReports,
  mixOf,
  nearestSamples,
  phaseMedians,
  type Prior,
  type Probe,
  type Recording,
  type ScenarioName,
  SCENARIOS,
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

const DEFAULT_CALLS = 10000;
/** WebGPU's pairs are probed in one of this many cycles over the pairs (it is never close here). */
const GPU_PROBE_EVERY = 12;
/** Fewest calls per scenario: a few cycles of probes over every pair. */
const MIN_CALLS = 200;
/** Untimed calls per prepared kernel before the loop (compile, JIT, first-touch). */
const WARM_UP_CALLS = 3;
/** The core the busy process of scenario (c) is pinned to. */
const BUSY_CORE = "1";

const HELP = `Usage: deno task bench:adaptive [options]

Runs AdaptiveSelector in a closed loop on real kernels (one call per choice, timed and recorded)
over a mix of ops and sizes, in three scenarios: (a) this machine's report as prior, (b) another
machine's report as prior, (c) as (a) plus three workloads where wasm-mt leads wasm, with a busy
process pinned to core 1 from half way (it takes wasm-mt's second core). Prints regret
against the per-call oracle (all backends probed every few calls) and against the static
BackendSelector, where the regret comes from, the share of time spent exploring, and how many
calls after the drift started the regret is back under 5 %. --json adds the probes' times as a
recording, which bench/adaptive_replay.ts replays without running a kernel.

Options:
  --calls N         Calls per scenario (default ${DEFAULT_CALLS}); one backend of one workload
                    is probed after each
  --scenarios LIST  Comma-separated subset of a,b,c (default a,b,c)
  --budget SHARE    The selector's explorationBudget (default ${ADAPTIVE_DEFAULTS.explorationBudget})
  --seed N          Seed of the workload mix and of the selector (default 1)
  --reports DIR     Folder of the reports to take priors from (default reports)
  --json            Print the results as JSON on stdout
  -h, --help        Show this help`;

interface Options {
  readonly calls: number;
  readonly scenarios: readonly ScenarioName[];
  readonly budget: number;
  readonly seed: number;
  readonly reportsDir: string;
  readonly json: boolean;
}

/** A workload prepared on every backend that runs it here. */
interface Kernel {
  readonly op: string;
  readonly shape: Shape;
  readonly label: string;
  readonly prepared: ReadonlyMap<Backend, Prepared>;
}

/** Per workload and backend, a scenario's probes in call order. */
type Probes = ReadonlyArray<ReadonlyMap<Backend, readonly Probe[]>>;

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
  if (!Number.isSafeInteger(calls) || calls < MIN_CALLS) {
    throw new UsageError(`--calls must be an integer ≥ ${MIN_CALLS}, got "${values.calls}"`);
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
  const label = workloadLabel({ op, shape });
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
 * The (workload, backend) pairs to probe, one after each loop call: every CPU pair once a cycle, in
 * a fresh random order, and the WebGPU pairs in one cycle of `GPU_PROBE_EVERY` (their round trip
 * is never close here, and costs a hundred loop calls).
 */
function* probeOrder(
  kernels: readonly Kernel[],
  rng: () => number,
): Generator<{ workload: number; backend: Backend }> {
  for (let cycle = 0;; cycle++) {
    const pairs = kernels.flatMap((k, workload) =>
      [...k.prepared.keys()]
        .filter((b) => b !== "webgpu" || cycle % GPU_PROBE_EVERY === 0)
        .map((backend) => ({ workload, backend }))
    );
    yield* shuffled(pairs, rng);
  }
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
): Promise<{ run: LoopRun; probes: Probes }> {
  const backends = [...new Set(kernels.flatMap((k) => [...k.prepared.keys()]))];
  const adaptive = new AdaptiveSelector(prior.report, {
    backends,
    explorationBudget: options.budget,
    seed: options.seed,
  });
  const statics = kernels.map((k) => staticChoice(prior.report, k, [...k.prepared.keys()]));
  const pick = seededRng(options.seed);
  const spacing = seededRng(options.seed + 1);
  const order = probeOrder(kernels, spacing);
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
      // One backend of one workload, timed right after a loop call: what the loop's call would
      // have cost on it, caches and threads as the loop leaves them. A probe of a long kernel
      // leaves colder caches than a loop call would, so a spacer (a loop-like call, untimed)
      // comes before the next loop call; two after a WebGPU round trip.
      const { workload: target, backend } = order.next().value!;
      const probed = (await kernels[target]!.prepared.get(backend)!.time(1)).wallMs;
      const list = probes[target]!.get(backend) ?? [];
      list.push({ call: i, phase, ms: [probed] });
      probes[target]!.set(backend, list);
      for (let s = backend === "webgpu" ? 2 : 1; s > 0; s--) {
        const other = (target + 1 + Math.floor(spacing() * (kernels.length - 1))) % kernels.length;
        await kernels[other]!.prepared.get(last[other]!)!.time(1);
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
  const run: LoopRun = {
    name,
    prior: prior.label,
    seconds: (performance.now() - started) / 1000,
    calls,
    oracle: oracleTimes(calls, probes),
    meanOracle: oracleTimes(calls, probes, trimmedMean),
    phaseMs: probes.map((byBackend) =>
      (driftAt === null ? [0] : [0, 1]).map((phase) =>
        phaseMedians(Object.fromEntries(byBackend), phase)
      )
    ),
    driftAt,
    driftNote,
    selectorExploredMs: exploredMs,
    selectorSpentMs: spentMs,
    changes,
    believed,
  };
  return { run, probes };
}

/**
 * Per call, each backend's oracle time from the samples of its nearest probes in the same phase:
 * their median, or with `trimmedMean` the second oracle.
 */
function oracleTimes(
  calls: readonly Call[],
  probes: Probes,
  of: (samples: readonly number[]) => number = median,
): Array<ReadonlyMap<Backend, number>> {
  return calls.map((c, i) => {
    const out = new Map<Backend, number>();
    for (const [backend, list] of probes[c.workload]!) {
      const nearest = nearestSamples(list, i, c.phase);
      if (nearest.length > 0) out.set(backend, of(nearest));
    }
    return out;
  });
}

/**
 * Every scenario's probes, times at 4 significant digits (a probe is one call): what the replay
 * draws from.
 */
function recordingOf(
  runs: ReadonlyArray<{ run: LoopRun; probes: Probes }>,
  correct: Prior,
  wrong: Prior,
): Recording {
  return {
    fingerprint: correct.report.fingerprint,
    otherFingerprint: wrong.report.fingerprint === correct.report.fingerprint
      ? null
      : wrong.report.fingerprint,
    scenarios: Object.fromEntries(runs.map(({ run, probes }) => [run.name, {
      calls: run.calls.length,
      driftAt: run.driftAt,
      workloads: mixOf(run.name),
      probes: probes.map((byBackend) =>
        Object.fromEntries(
          [...byBackend].map((
            [b, list],
          ) => [b, list.map((p) => [p.call, Number(p.ms[0]!.toPrecision(4))] as const)]),
        )
      ),
    }])),
  };
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
  const kernels = new Map<string, Kernel>();
  try {
    for (const w of options.scenarios.flatMap(mixOf)) {
      const label = workloadLabel(w);
      if (kernels.has(label)) continue;
      kernels.set(label, await prepareKernel(correct.report, runners, w.op, w.shape, log));
    }
    const backends = BACKENDS.filter((b) => runners.has(b));
    const results: ScenarioResult[] = [];
    const runs: Array<{ run: LoopRun; probes: Probes }> = [];
    for (const name of options.scenarios) {
      const prior = name === "b" ? wrong : correct;
      const labels = mixOf(name).map(workloadLabel);
      const mix = labels.map((label) => kernels.get(label)!);
      const scenario = await runScenario(name, prior, mix, options);
      const result = summarize(scenario.run, labels);
      results.push(result);
      runs.push(scenario);
      if (!options.json) printScenario(result, backends);
    }
    if (options.json) {
      const recording = recordingOf(runs, correct, wrong);
      console.log(JSON.stringify({ options, results, recording }));
    } else printSummary(results, options.budget);
  } finally {
    for (const k of kernels.values()) for (const p of k.prepared.values()) p.dispose();
    for (const r of runners.values()) await r.close();
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
