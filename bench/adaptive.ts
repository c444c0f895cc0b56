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
import { oneLineFailure } from "../core/cli_args.ts";
import { openGpu } from "../calibrate/device.ts";
import { describeMachine, driverSettings, machineFingerprint } from "../calibrate/machine.ts";
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
  CROSSOVER_CANDIDATES,
  loadReports,
  mixOf,
  nearestSamples,
  phaseMedians,
  type Prior,
  type Probe,
  type Recording,
  type ScenarioName,
  staticChoice,
  trimmedMean,
  type Workload,
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

/** WebGPU's pairs are probed in one of this many cycles over the pairs (it is never close here). */
const GPU_PROBE_EVERY = 12;
/** Untimed calls per prepared kernel before the loop (compile, JIT, first-touch). */
const WARM_UP_CALLS = 3;
/** The core the busy processes of scenario (c) are pinned to. */
const BUSY_CORE = "1";
/**
 * Busy processes scenario (c) pins to that core. One shares the core with wasm-mt's worker, which
 * then runs its share now on time, now a scheduler slice late: on this 2-vCPU VM some workloads
 * turned to wasm and others did not, run to run (one run turned none). Two take the core: the
 * worker's share there is a third, or the scheduler moves it onto the caller's core, and either
 * way wasm-mt loses most of its second core.
 */
const BUSY_PROCESSES = 2;
/** Crossover workloads (c) adds to the mix, the candidates the drift turns by most. */
const CROSSOVER_PICKS = 3;
/** Single calls per backend and condition when screening the crossover candidates. */
const SCREEN_CALLS = 21;
/** Margin by which a candidate must lead on a quiet machine and lose under the drift. */
const SCREEN_MARGIN = 0.1;

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

/** A workload prepared on every backend that runs it here. */
interface Kernel {
  readonly op: string;
  readonly shape: Shape;
  readonly label: string;
  readonly prepared: ReadonlyMap<Backend, Prepared>;
}

/** Per workload and backend, a scenario's probes in call order. */
type Probes = ReadonlyArray<ReadonlyMap<Backend, readonly Probe[]>>;

/** A scenario's loop, its probes and its mix. */
interface Scenario {
  readonly run: LoopRun;
  readonly probes: Probes;
  readonly workloads: ReadonlyArray<Workload>;
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

/** `BUSY_PROCESSES` busy loops pinned to `BUSY_CORE`; null (and why) when they cannot start. */
function startBusyCore(): { stop(): Promise<void> } | string {
  const children: Deno.ChildProcess[] = [];
  const stop = async () => {
    for (const child of children) {
      child.kill("SIGKILL");
      await child.status;
    }
  };
  try {
    for (let i = 0; i < BUSY_PROCESSES; i++) {
      children.push(
        new Deno.Command("taskset", {
          args: ["-c", BUSY_CORE, "sh", "-c", "while :; do :; done"],
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).spawn(),
      );
    }
  } catch (e) {
    void stop();
    return `cannot start taskset: ${e instanceof Error ? e.message : String(e)}`;
  }
  return { stop };
}

/** One crossover candidate's screening: wasm-mt's and wasm's medians, quiet and under the drift. */
interface Screened {
  readonly kernel: Kernel;
  readonly quiet: { wasm: number; mt: number };
  readonly busy: { wasm: number; mt: number };
  /** The smaller of wasm-mt's quiet lead and its loss under the drift, as shares. */
  readonly margin: number;
}

/** Medians of `SCREEN_CALLS` alternated single calls of wasm and wasm-mt. */
async function pairMedians(kernel: Kernel): Promise<{ wasm: number; mt: number }> {
  const wasm: number[] = [], mt: number[] = [];
  for (let i = 0; i < SCREEN_CALLS; i++) {
    wasm.push((await kernel.prepared.get("wasm")!.time(1)).wallMs);
    mt.push((await kernel.prepared.get("wasm-mt")!.time(1)).wallMs);
  }
  return { wasm: median(wasm), mt: median(mt) };
}

/**
 * Times the crossover candidates quiet, then with (c)'s busy processes started, and ranks them by
 * how surely the drift turns them (widest margin first): what makes (c) exercise a change of the
 * fastest backend whatever else the machine runs today.
 */
async function screenCrossover(candidates: readonly Kernel[]): Promise<Screened[] | string> {
  const runnable = candidates.filter((k) => k.prepared.has("wasm") && k.prepared.has("wasm-mt"));
  const quiet: Array<{ wasm: number; mt: number }> = [];
  for (const k of runnable) quiet.push(await pairMedians(k));
  const busy = startBusyCore();
  if (typeof busy === "string") return busy;
  const loaded: Array<{ wasm: number; mt: number }> = [];
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const k of runnable) loaded.push(await pairMedians(k));
  } finally {
    await busy.stop();
  }
  return runnable.map((kernel, i): Screened => {
    const q = quiet[i]!, b = loaded[i]!;
    return { kernel, quiet: q, busy: b, margin: Math.min(q.wasm / q.mt - 1, b.mt / b.wasm - 1) };
  }).sort((x, y) => y.margin - x.margin);
}

/** The screening, one line per candidate, and which were taken. */
function screeningLines(screened: readonly Screened[], taken: readonly Kernel[]): string[] {
  return [
    `(c) crossover candidates, ${SCREEN_CALLS} calls each: wasm / wasm-mt medians quiet, then ` +
    `with ${BUSY_PROCESSES} busy processes on core ${BUSY_CORE}; margin = the smaller of ` +
    `wasm-mt's lead and its loss (taken: the ${CROSSOVER_PICKS} widest, ≥ ` +
    `${100 * SCREEN_MARGIN} % when enough are)`,
    ...screened.map((s) =>
      `  ${taken.includes(s.kernel) ? "*" : " "} ${s.kernel.label}: quiet ` +
      `${s.quiet.wasm.toPrecision(3)} / ${s.quiet.mt.toPrecision(3)} ms, busy ` +
      `${s.busy.wasm.toPrecision(3)} / ${s.busy.mt.toPrecision(3)} ms, margin ` +
      `${(100 * s.margin).toFixed(0)} %`
    ),
  ];
}

/** The crossover workloads (c) runs: the widest screened margins, past `SCREEN_MARGIN` if enough. */
function pickCrossover(screened: readonly Screened[]): Kernel[] {
  const sure = screened.filter((s) => s.margin >= SCREEN_MARGIN);
  return (sure.length > 0 ? sure : screened).slice(0, CROSSOVER_PICKS).map((s) => s.kernel);
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
  options: LoopOptions,
): Promise<Scenario> {
  const backends = [...new Set(kernels.flatMap((k) => [...k.prepared.keys()]))];
  const adaptive = new AdaptiveSelector(prior.report, {
    backends,
    explorationBudget: options.budget,
    seed: options.seeds[0]!,
  });
  const statics = kernels.map((k) => staticChoice(prior.report, k, [...k.prepared.keys()]));
  const pick = seededRng(options.seeds[0]!);
  const spacing = seededRng(options.seeds[0]! + 1);
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
  return { run, probes, workloads: kernels.map((k) => ({ op: k.op, shape: k.shape })) };
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
  runs: readonly Scenario[],
  correct: Prior,
  wrong: Prior,
): Recording {
  return {
    fingerprint: correct.report.fingerprint,
    otherFingerprint: wrong.report.fingerprint === correct.report.fingerprint
      ? null
      : wrong.report.fingerprint,
    scenarios: Object.fromEntries(runs.map(({ run, probes, workloads }) => [run.name, {
      calls: run.calls.length,
      driftAt: run.driftAt,
      workloads,
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
  let options: LoopOptions;
  try {
    const parsed = parseLoopOptions(args, "bench");
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
  const [correct, wrong] = choosePriors(
    reports,
    await thisFingerprint(),
    driverSettings(Deno.env.toObject()),
  );
  const runners = await openRunners(log);
  const kernels = new Map<string, Kernel>();
  const prepare = async (w: Workload) => {
    const label = workloadLabel(w);
    if (!kernels.has(label)) {
      kernels.set(label, await prepareKernel(correct.report, runners, w.op, w.shape, log));
    }
    return kernels.get(label)!;
  };
  try {
    let crossover: ReadonlyArray<Workload> | undefined;
    if (options.scenarios.includes("c")) {
      const candidates = [];
      for (const w of CROSSOVER_CANDIDATES) candidates.push(await prepare(w));
      const screened = await screenCrossover(candidates);
      if (typeof screened === "string") log(`(c) crossover candidates not screened: ${screened}`);
      else {
        const taken = pickCrossover(screened);
        screeningLines(screened, taken).forEach((line) => log(line));
        crossover = taken.map((k) => ({ op: k.op, shape: k.shape }));
      }
    }
    const backends = BACKENDS.filter((b) => runners.has(b));
    const results: ScenarioResult[] = [];
    const runs: Scenario[] = [];
    for (const name of options.scenarios) {
      const prior = name === "b" ? wrong : correct;
      const mix: Kernel[] = [];
      for (const w of mixOf(name, crossover)) mix.push(await prepare(w));
      const scenario = await runScenario(name, prior, mix, options);
      const result = summarize(scenario.run, mix.map((k) => k.label));
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
