/**
 * Private to `bench:adaptive` and its replay: how a closed loop's calls are scored against the
 * per-call oracle — regret over spans and windows, where the regret comes from (per workload:
 * explorations, the first calls of a workload, greedy picks after them), how soon a drift is
 * followed — and how the scores are printed. Pure but for the printing.
 *
 * @module
 */
import { textTable } from "../core/format.ts";
import type { Backend } from "../kernels/types.ts";
import type { ScenarioName } from "./_adaptive_loop.ts";

/** The regret a window must stay under for the selector to count as settled. */
export const UNDER_REGRET = 0.05;
/** Calls per window when following the regret of the whole mix from the start or the drift. */
const WINDOW = 300;
/** Calls of the drift-changed workloads per window when following their regret. */
const CHANGED_WINDOW = 60;
/** Step between the starts of two windows, as a share of the window. */
const WINDOW_STEP = 1 / 6;
/** A workload's first this many calls are "early": the prior still decides them. */
const EARLY_CALLS = 20;

/**
 * One call of the loop.
 *
 * @example
 * ```ts
 * import type { Call } from "./_adaptive_score.ts";
 * const c: Call = { workload: 0, backend: "wasm", static: "wasm-mt", explored: false, ms: 0.04, phase: 0 };
 * ```
 */
export interface Call {
  readonly workload: number;
  readonly backend: Backend;
  /** The static selector's pick for the workload. */
  readonly static: Backend;
  readonly explored: boolean;
  /** The time recorded, ms. */
  readonly ms: number;
  /** 0 before the drift started, 1 after (always 0 without drift). */
  readonly phase: number;
}

/**
 * A scenario's loop, as the bench or the replay ran it.
 *
 * @example
 * ```ts ignore
 * const result = summarize(run, WORKLOADS.map(workloadLabel));
 * ```
 */
export interface LoopRun {
  readonly name: ScenarioName;
  readonly prior: string;
  readonly seconds: number;
  readonly calls: readonly Call[];
  /** Per call, each backend's oracle time for its workload then (a median), ms. */
  readonly oracle: ReadonlyArray<ReadonlyMap<Backend, number>>;
  /** The same as trimmed means (`trimmedMean()`): the second oracle. */
  readonly meanOracle: ReadonlyArray<ReadonlyMap<Backend, number>>;
  /** Per workload and phase, each backend's median time, ms. */
  readonly phaseMs: ReadonlyArray<ReadonlyArray<Partial<Record<Backend, number>>>>;
  readonly driftAt: number | null;
  readonly driftNote: string | null;
  /** The selector's own account: time recorded, and the part recorded for explorations, ms. */
  readonly selectorSpentMs: number;
  readonly selectorExploredMs: number;
  readonly changes: number;
  /** Per workload, the selector's estimate of each backend at the end, ms. */
  readonly believed: ReadonlyArray<Partial<Record<Backend, number>>>;
}

/**
 * Scores of a span of calls.
 *
 * @example
 * ```ts
 * import type { Score } from "./_adaptive_score.ts";
 * function ok(s: Score) { return s.regret <= 0.05 && s.fastest >= 0.9; }
 * ```
 */
export interface Score {
  readonly calls: number;
  /** The adaptive selector's and the static selector's regret against the oracle. */
  readonly regret: number;
  readonly staticRegret: number;
  /** The adaptive selector's regret against the trimmed-mean oracle; null without it. */
  readonly regretAtMeans: number | null;
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

/**
 * Scores calls `from` to `to` (excluded), or the calls at `indices`.
 *
 * @param calls The loop's calls.
 * @param oracle Per call, each backend's oracle time.
 * @param indices The calls to score, in loop order.
 * @param meanOracle Per call, each backend's trimmed-mean time, for the second regret.
 * @returns Regret, static regret, fastest share, exploring.
 * @example
 * ```ts
 * import { score } from "./_adaptive_score.ts";
 * const call = { workload: 0, backend: "js", static: "js", explored: false, ms: 2, phase: 0 } as const;
 * const oracle = [new Map([["js", 2], ["wasm", 1]] as const)];
 * console.log(score([call], oracle, [0]).regret); // 1
 * ```
 */
export function score(
  calls: readonly Call[],
  oracle: ReadonlyArray<ReadonlyMap<Backend, number>>,
  indices: readonly number[],
  meanOracle: ReadonlyArray<ReadonlyMap<Backend, number>> | null = null,
): Score {
  let chosen = 0, fixed = 0, best = 0, hits = 0, spent = 0, explored = 0, longest = 0;
  let exploredAtOracle = 0, chosenAtMeans = 0, bestAtMeans = 0;
  for (const i of indices) {
    const c = calls[i]!;
    const times = oracle[i]!;
    if (meanOracle !== null) {
      const means = meanOracle[i]!;
      chosenAtMeans += means.get(c.backend)!;
      bestAtMeans += Math.min(...means.values());
    }
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
    calls: indices.length,
    regret: chosen / best - 1,
    staticRegret: fixed / best - 1,
    regretAtMeans: meanOracle === null ? null : chosenAtMeans / bestAtMeans - 1,
    fastest: hits / indices.length,
    explored: explored / spent,
    exploredAtOracle: exploredAtOracle / chosen,
    longestExplorationMs: longest,
  };
}

/**
 * `[from, from + 1, …, to - 1]`.
 *
 * @example
 * ```ts
 * import { span } from "./_adaptive_score.ts";
 * console.log(span(2, 5)); // [2, 3, 4]
 * ```
 */
export function span(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, k) => from + k);
}

/**
 * Regret over sliding windows of `window` consecutive calls among `indices` (starts a sixth of a
 * window apart), and the first start from which every window is under {@linkcode UNDER_REGRET}.
 *
 * @example
 * ```ts ignore
 * const w = regretWindows(run.calls, run.oracle, span(run.driftAt, run.calls.length), 300);
 * ```
 */
export interface RegretWindows {
  /** Calls per window, and the first call of each window (a loop index). */
  readonly window: number;
  readonly starts: readonly number[];
  readonly windows: readonly number[];
  /**
   * Position in `indices` of the first window from which every window is under 5 %; null when
   * the last one is not.
   */
  readonly settledFrom: number | null;
  /** The loop index of that window's first call; null with it. */
  readonly settledAtCall: number | null;
}

/**
 * Sliding-window regret over the calls at `indices` (see {@linkcode RegretWindows}).
 *
 * @param calls The loop's calls.
 * @param oracle Per call, each backend's oracle time.
 * @param indices The calls to follow, in loop order.
 * @param window Calls per window.
 * @returns The windows' regret and where it settles under 5 %.
 * @example
 * ```ts
 * import { regretWindows, span } from "./_adaptive_score.ts";
 * const calls = span(0, 12).map(() => ({ workload: 0, backend: "wasm", static: "wasm", explored: false, ms: 1, phase: 0 } as const));
 * const oracle = calls.map(() => new Map([["wasm", 1]] as const));
 * console.log(regretWindows(calls, oracle, span(0, 12), 6).settledFrom); // 0
 * ```
 */
export function regretWindows(
  calls: readonly Call[],
  oracle: ReadonlyArray<ReadonlyMap<Backend, number>>,
  indices: readonly number[],
  window: number,
): RegretWindows {
  const step = Math.max(1, Math.round(window * WINDOW_STEP));
  const starts: number[] = [];
  const windows: number[] = [];
  for (let from = 0; from + window <= indices.length; from += step) {
    starts.push(from);
    windows.push(score(calls, oracle, indices.slice(from, from + window)).regret);
  }
  let first = windows.length;
  while (first > 0 && windows[first - 1]! <= UNDER_REGRET) first--;
  const settledFrom = first < windows.length ? starts[first]! : null;
  return {
    window,
    starts: starts.map((s) => indices[s]!),
    windows,
    settledFrom,
    settledAtCall: settledFrom === null ? null : indices[settledFrom]!,
  };
}

/**
 * Where one workload's share of the loop's regret comes from. Shares are of the loop's Σ fastest
 * time, so a scenario's rows add up to its whole-loop regret.
 *
 * @example
 * ```ts
 * import type { RegretSource } from "./_adaptive_score.ts";
 * function early(s: RegretSource) { return s.greedyEarly > s.greedyLate; }
 * ```
 */
export interface RegretSource {
  readonly workload: string;
  readonly calls: number;
  readonly total: number;
  /** Regret of explorations. */
  readonly explored: number;
  /** Regret of the greedy picks among the workload's first `EARLY_CALLS` calls. */
  readonly greedyEarly: number;
  /** Regret of the greedy picks after them. */
  readonly greedyLate: number;
  /** Late greedy picks off the fastest, by backend: calls and their oracle time over the fastest. */
  readonly lateMisses: Partial<Record<Backend, { readonly calls: number; readonly ratio: number }>>;
}

/**
 * Where the regret of a loop comes from, per workload ({@linkcode RegretSource}).
 *
 * @param calls The loop's calls.
 * @param oracle Per call, each backend's oracle time.
 * @param labels The workloads' names.
 * @returns One row per workload, in workload order.
 * @example
 * ```ts
 * import { regretSources } from "./_adaptive_score.ts";
 * const call = { workload: 0, backend: "js", static: "js", explored: true, ms: 2, phase: 0 } as const;
 * const oracle = [new Map([["js", 2], ["wasm", 1]] as const)];
 * console.log(regretSources([call], oracle, ["add 3000"])[0]!.explored); // 1
 * ```
 */
export function regretSources(
  calls: readonly Call[],
  oracle: ReadonlyArray<ReadonlyMap<Backend, number>>,
  labels: readonly string[],
): RegretSource[] {
  let best = 0;
  const rows = labels.map((workload) => ({
    workload,
    calls: 0,
    explored: 0,
    greedyEarly: 0,
    greedyLate: 0,
    misses: new Map<Backend, { calls: number; ratios: number }>(),
  }));
  calls.forEach((c, i) => {
    const times = oracle[i]!;
    const fastest = Math.min(...times.values());
    best += fastest;
    const row = rows[c.workload]!;
    row.calls++;
    const lost = times.get(c.backend)! - fastest;
    if (c.explored) row.explored += lost;
    else if (row.calls <= EARLY_CALLS) row.greedyEarly += lost;
    else {
      row.greedyLate += lost;
      if (lost > 0) {
        const m = row.misses.get(c.backend) ?? { calls: 0, ratios: 0 };
        m.calls++;
        m.ratios += times.get(c.backend)! / fastest;
        row.misses.set(c.backend, m);
      }
    }
  });
  return rows.map((r) => ({
    workload: r.workload,
    calls: r.calls,
    total: (r.explored + r.greedyEarly + r.greedyLate) / best,
    explored: r.explored / best,
    greedyEarly: r.greedyEarly / best,
    greedyLate: r.greedyLate / best,
    lateMisses: Object.fromEntries(
      [...r.misses].map(([b, m]) => [b, { calls: m.calls, ratio: m.ratios / m.calls }]),
    ),
  }));
}

/**
 * A workload whose fastest backend the drift changed, and when the selector followed.
 *
 * @example
 * ```ts
 * import type { Switch } from "./_adaptive_score.ts";
 * function followed(s: Switch) { return s.afterCalls !== null; }
 * ```
 */
export interface Switch {
  readonly workload: string;
  readonly before: Backend;
  readonly after: Backend;
  /** Its backends' median times after the drift over before. */
  readonly slowdown: Partial<Record<Backend, number>>;
  /** Loop calls from the drift's start to the first chosen (not explored) call on `after`. */
  readonly afterCalls: number | null;
  /** The same, counting this workload's calls only. */
  readonly afterOwnCalls: number | null;
}

/** The fastest backend of a phase's median times. */
function fastestOf(ms: Partial<Record<Backend, number>>): Backend | null {
  let best: Backend | null = null;
  for (const [b, t] of Object.entries(ms) as Array<[Backend, number]>) {
    if (best === null || t < ms[best]!) best = b;
  }
  return best;
}

function switches(run: LoopRun, labels: readonly string[]): Switch[] | null {
  if (run.driftAt === null) return null;
  const driftAt = run.driftAt;
  const out: Switch[] = [];
  labels.forEach((workload, w) => {
    const [msBefore, msAfter] = [run.phaseMs[w]![0] ?? {}, run.phaseMs[w]![1] ?? {}];
    const before = fastestOf(msBefore), after = fastestOf(msAfter);
    if (before === null || after === null || before === after) return;
    let own = 0;
    let found: number | null = null;
    for (let i = driftAt; i < run.calls.length && found === null; i++) {
      const c = run.calls[i]!;
      if (c.workload !== w) continue;
      own++;
      if (c.backend === after && !c.explored) found = i - driftAt;
    }
    const slowdown = Object.fromEntries(
      (Object.keys(msBefore) as Backend[])
        .filter((b) => msAfter[b] !== undefined)
        .map((b) => [b, msAfter[b]! / msBefore[b]!]),
    );
    out.push({
      workload,
      before,
      after,
      slowdown,
      afterCalls: found,
      afterOwnCalls: found === null ? null : own,
    });
  });
  return out;
}

/**
 * How soon the regret is back under 5 % after the drift started: over the whole mix, and over the
 * workloads whose fastest backend the drift changed (their calls only).
 *
 * @example
 * ```ts
 * import type { Recovery } from "./_adaptive_score.ts";
 * function within(r: Recovery, n: number) { return r.changedCalls !== null && r.changedCalls <= n; }
 * ```
 */
export interface Recovery {
  readonly all: RegretWindows;
  /** Loop calls after the drift's start from which every window of the mix is under 5 %. */
  readonly allCalls: number | null;
  readonly changed: RegretWindows | null;
  /**
   * Loop calls after the drift's start from which every window of `CHANGED_WINDOW` calls of the
   * changed workloads is under 5 %; null when none changed or it never settles.
   */
  readonly changedCalls: number | null;
}

function recovery(run: LoopRun, moved: readonly Switch[], labels: readonly string[]): Recovery {
  const driftAt = run.driftAt ?? 0;
  const after = span(driftAt, run.calls.length);
  const all = regretWindows(run.calls, run.oracle, after, WINDOW);
  const changedWorkloads = new Set(moved.map((s) => labels.indexOf(s.workload)));
  const changed = changedWorkloads.size === 0 ? null : regretWindows(
    run.calls,
    run.oracle,
    after.filter((i) => changedWorkloads.has(run.calls[i]!.workload)),
    CHANGED_WINDOW,
  );
  return {
    all,
    allCalls: all.settledAtCall === null ? null : all.settledAtCall - driftAt,
    changed,
    changedCalls: changed?.settledAtCall == null ? null : changed.settledAtCall - driftAt,
  };
}

/**
 * What the bench prints and emits per scenario.
 *
 * @example
 * ```ts ignore
 * const r: ScenarioResult = summarize(run, labels);
 * console.log(r.whole.regret, r.lastHalf.fastest);
 * ```
 */
export interface ScenarioResult {
  readonly name: ScenarioName;
  readonly prior: string;
  readonly seconds: number;
  readonly whole: Score;
  readonly firstHalf: Score;
  readonly lastHalf: Score;
  /** (c) only: the calls before the drift started, and after. */
  readonly beforeDrift: Score | null;
  readonly afterDrift: Score | null;
  /** Regret per window from the start (no drift) or from the drift's start. */
  readonly windows: RegretWindows;
  readonly sources: readonly RegretSource[];
  /** (c) only: the workloads whose fastest backend the drift changed, and when the choice followed. */
  readonly switches: readonly Switch[] | null;
  /**
   * The most time spent exploring, as a share, over the spans the bench prints (the whole loop,
   * each half, and for (c) before and after the drift): the budget's bar.
   */
  readonly mostExplored: number;
  readonly recovery: Recovery | null;
  readonly driftNote: string | null;
  readonly selectorExploredShare: number;
  readonly changes: number;
  readonly workloads: readonly WorkloadSummary[];
}

/**
 * One workload's line of a {@linkcode ScenarioResult}.
 *
 * @example
 * ```ts ignore
 * for (const w of result.workloads) console.log(w.workload, w.static, w.believedMs);
 * ```
 */
export interface WorkloadSummary {
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

/**
 * Scores a scenario's loop.
 *
 * @param run The loop.
 * @param labels The workloads' names, in workload order.
 * @returns Spans, windows, regret sources, drift switches and per-workload summaries.
 * @example
 * ```ts ignore
 * printScenario(summarize(run, labels), backends);
 * ```
 */
export function summarize(run: LoopRun, labels: readonly string[]): ScenarioResult {
  const n = run.calls.length;
  const half = Math.floor(n / 2);
  const workloads = labels.map((workload, w): WorkloadSummary => {
    const recorded = new Map<Backend, number[]>();
    for (const c of run.calls.slice(half)) {
      if (c.workload === w) recorded.set(c.backend, [...recorded.get(c.backend) ?? [], c.ms]);
    }
    const lastHalfPicks = Object.fromEntries(
      [...recorded].map(([b, ms]) => [b, { calls: ms.length, medianMs: medianOf(ms) }]),
    );
    const own = run.calls.filter((c) => c.workload === w);
    const explored = own.filter((c) => c.explored);
    return {
      workload,
      oracleMs: run.driftAt === null ? run.phaseMs[w]!.slice(0, 1) : run.phaseMs[w]!,
      explorations: explored.length,
      exploredMs: explored.reduce((sum, c) => sum + c.ms, 0),
      spentMs: own.reduce((sum, c) => sum + c.ms, 0),
      static: own[0]?.static ?? "wasm",
      lastHalfPicks,
      believedMs: run.believed[w]!,
    };
  });
  const moved = switches(run, labels);
  const spanScore = (from: number, to: number) =>
    score(run.calls, run.oracle, span(from, to), run.meanOracle);
  const spans = {
    whole: spanScore(0, n),
    firstHalf: spanScore(0, half),
    lastHalf: spanScore(half, n),
    beforeDrift: run.driftAt === null ? null : spanScore(0, run.driftAt),
    afterDrift: run.driftAt === null ? null : spanScore(run.driftAt, n),
  };
  return {
    name: run.name,
    prior: run.prior,
    seconds: run.seconds,
    ...spans,
    mostExplored: Math.max(
      ...Object.values(spans).filter((x): x is Score => x !== null).map((x) => x.explored),
    ),
    windows: regretWindows(run.calls, run.oracle, span(run.driftAt ?? 0, n), WINDOW),
    sources: regretSources(run.calls, run.oracle, labels),
    switches: moved,
    recovery: moved === null ? null : recovery(run, moved, labels),
    driftNote: run.driftNote,
    selectorExploredShare: run.selectorExploredMs / run.selectorSpentMs,
    changes: run.changes,
    workloads,
  };
}

function medianOf(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)} %`;
}

const TITLES: Record<ScenarioName, string> = {
  a: "(a) correct prior",
  b: "(b) wrong prior",
  c: "(c) correct prior, crossover workloads added, busy process on one core from half way",
};

/**
 * Prints one scenario: per workload the oracle, the picks and beliefs, where the regret comes
 * from, the regret windows and (c) the switches and how soon the regret is back under 5 %.
 *
 * @param r The scenario's result.
 * @param backends The backends, in column order.
 * @example
 * ```ts ignore
 * printScenario(summarize(run, labels), ["webgpu", "wasm", "wasm-mt", "js"]);
 * ```
 */
export function printScenario(r: ScenarioResult, backends: readonly Backend[]): void {
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
  printSources(r.sources);
  printWindows(r);
  if (r.switches === null) return;
  console.log(
    r.switches.length === 0
      ? "(c) not exercised: the drift turned no workload's fastest backend (medians of the " +
        "probes before and after it), so there was nothing to follow"
      : `the drift turned ${r.switches.length} of ${r.workloads.length} workloads' fastest backend`,
  );
  for (const s of r.switches) {
    const slower = Object.entries(s.slowdown)
      .map(([b, x]) => `${b} ×${x.toFixed(2)}`).join(", ");
    console.log(
      `${s.workload}: fastest ${s.before} → ${s.after} (after/before: ${slower}); ` +
        (s.afterCalls === null
          ? "the selector never switched"
          : `the selector switched ${s.afterCalls} calls after the drift started ` +
            `(${s.afterOwnCalls} calls of this workload)`),
    );
  }
  printRecovery(r.recovery!);
}

function printSources(sources: readonly RegretSource[]): void {
  console.log(
    `where the regret comes from (points of regret; early = a workload's first ${EARLY_CALLS} ` +
      "calls, late misses = later greedy picks off the fastest):",
  );
  console.log(textTable(
    ["workload", "calls", "regret", "exploring", "greedy early", "greedy late", "late misses"],
    sources.map((s) => [
      s.workload,
      `${s.calls}`,
      pct(s.total),
      pct(s.explored),
      pct(s.greedyEarly),
      pct(s.greedyLate),
      Object.entries(s.lateMisses)
        .map(([b, m]) => `${b} ${m.calls}× at ×${m.ratio.toFixed(2)}`).join(", "),
    ]),
  ));
}

function printWindows(r: ScenarioResult): void {
  const from = r.afterDrift === null ? "the start" : "the drift's start";
  const w = r.windows;
  console.log(
    `regret per ${w.window} calls from ${from} (a window every ${w.starts[1]! - w.starts[0]!}): ` +
      `${w.windows.map(pct).join(", ")}; ` +
      (w.settledFrom === null
        ? `the last window is over ${pct(UNDER_REGRET)}`
        : `under ${pct(UNDER_REGRET)} for good from call ${w.settledFrom}`),
  );
}

function printRecovery(r: Recovery): void {
  console.log(
    `after the drift started, every window of ${r.all.window} calls has regret ≤ ` +
      `${pct(UNDER_REGRET)} from call ${r.allCalls ?? "— (never)"}`,
  );
  if (r.changed === null) return;
  console.log(
    `over the workloads the drift changed, every window of ${r.changed.window} of their calls has ` +
      `regret ≤ ${pct(UNDER_REGRET)} from loop call ${r.changedCalls ?? "— (never)"} after the ` +
      `drift started; their windows: ${r.changed.windows.slice(0, 12).map(pct).join(", ")}` +
      (r.changed.windows.length > 12 ? ", …" : ""),
  );
}

/**
 * Prints every scenario's spans side by side: regret, static regret, fastest picked, exploring.
 *
 * @param results The scenarios' results.
 * @param budget The selector's exploration budget.
 * @example
 * ```ts ignore
 * printSummary(results, 0.03);
 * ```
 */
export function printSummary(results: readonly ScenarioResult[], budget: number): void {
  console.log(
    `\nRegret = Σ(oracle time of the choice − oracle time of the fastest) / Σ fastest, the oracle ` +
      "a median of the nearest probes (and, beside it, their 10 %-trimmed mean: what a call " +
      "costs on average); " +
      `exploring = time recorded for explorations / time recorded (budget ${pct(budget)}), and ` +
      "the same with every call at its backend's oracle time (without what the OS took):",
  );
  const rows = results.flatMap((r) => {
    const lines: Array<[string, Score]> = [
      ["whole loop", r.whole],
      ["first half", r.firstHalf],
      ["last half", r.lastHalf],
    ];
    if (r.beforeDrift !== null) lines.push(["before the drift", r.beforeDrift]);
    if (r.afterDrift !== null) lines.push(["after the drift", r.afterDrift]);
    return lines.map(([label, s]) => [
      TITLES[r.name].slice(0, 3),
      label,
      `${s.calls}`,
      pct(s.regret),
      s.regretAtMeans === null ? "—" : pct(s.regretAtMeans),
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
      "at trimmed means",
      "static regret",
      "fastest picked",
      "exploring",
      "at oracle times",
      "longest exploration ms",
    ],
    rows,
  ));
  printBars(results, budget);
}

/** The bars, one line each: met or not, with the figure. */
function printBars(results: readonly ScenarioResult[], budget: number): void {
  const mark = (ok: boolean) => ok ? "met" : "NOT met";
  for (const r of results) {
    const bars: string[] = [];
    if (r.name === "a") {
      bars.push(
        `last half regret ${pct(r.lastHalf.regret)} ≤ 3 %: ${mark(r.lastHalf.regret <= 0.03)}`,
      );
    }
    if (r.name === "b") {
      const ok = r.whole.regret <= 0.05 && r.lastHalf.fastest >= 0.9;
      bars.push(
        `whole regret ${pct(r.whole.regret)} ≤ 5 % and fastest in the last half ` +
          `${pct(r.lastHalf.fastest)} ≥ 90 %: ${mark(ok)}`,
      );
    }
    if (r.name === "c") {
      const changed = r.recovery?.changedCalls ?? null;
      bars.push(
        r.switches === null || r.switches.length === 0
          ? "drift followed: not exercised (the drift turned no workload)"
          : `the turned workloads' regret ≤ 5 % from ${changed ?? "— (never)"} calls after the ` +
            `drift started: ${mark(changed !== null)}`,
      );
    }
    bars.push(
      `exploring ≤ ${pct(budget)} in every span above (most ${pct(r.mostExplored)}): ` +
        mark(r.mostExplored <= budget),
    );
    console.log(`${TITLES[r.name].slice(0, 3)} ${bars.join("; ")}`);
  }
}
