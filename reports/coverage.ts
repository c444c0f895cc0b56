/**
 * What a current report no longer measures that its baseline did, and whether the current run
 * says it skipped it on purpose. A series (op × dtype × backend × residency) that was measured in
 * the baseline and is gone from the current report, or that now fails its correctness check, is
 * a regression: a backend that stopped working, an adapter that vanished, an op that crashes. It
 * is not one when the current run's command restricted it (`--ops`, `--dtypes`, `--backends`) or
 * the run stopped at its own `--budget`; the check says which. Pure.
 *
 * @example
 * ```ts ignore
 * import { seriesCoverage } from "./coverage.ts";
 * for (const g of seriesCoverage(baseline, current)) console.log(g.key, g.note);
 * ```
 *
 * @module
 */
import { QUICK_SKIPPED_DTYPES } from "../calibrate/plan.ts";
import type { Backend } from "../kernels/types.ts";
import type { Measurement, Report } from "../core/schema.ts";

/**
 * What a run's command restricted it to (null: not restricted), and whether it stopped at its
 * own budget.
 *
 * @example
 * ```ts
 * import type { RunScope } from "./coverage.ts";
 * const s: RunScope = { ops: new Set(["add"]), dtypes: null, backends: null, flags: "--ops add", budget: false };
 * ```
 */
export interface RunScope {
  readonly ops: ReadonlySet<string> | null;
  readonly dtypes: ReadonlySet<string> | null;
  readonly backends: ReadonlySet<string> | null;
  /** The restricting flags as given, e.g. `"--ops matmul,add"`, for messages. */
  readonly flags: string;
  /** The run stopped at its `--budget` before it finished. */
  readonly budget: boolean;
  /** Dtypes its mode left out because no `--dtypes` named them (f16 in `--quick`), or null. */
  readonly modeSkipped?: ReadonlySet<string> | null;
}

/**
 * One series the baseline measured that the current report lost or now fails.
 *
 * @example
 * ```ts
 * import type { SeriesChange } from "./coverage.ts";
 * const failing = (s: SeriesChange) => s.regressed;
 * ```
 */
export interface SeriesChange {
  /** `"op dtype backend residency"`. */
  readonly key: string;
  readonly op: string;
  readonly backend: Backend;
  /** Sizes measured correctly in the baseline. */
  readonly baselineSizes: number;
  /** Sizes measured correctly in the current report. */
  readonly currentSizes: number;
  /** Gone or failing, and the current run did not say it skipped it. */
  readonly regressed: boolean;
  readonly note: string;
}

const RESTRICTING = ["ops", "dtypes", "backends"] as const;

/** The value of `--name X` or `--name=X` in a command line, or undefined. */
function flagValue(command: readonly string[], name: string): string | undefined {
  for (let i = 0; i < command.length; i++) {
    const arg = command[i]!;
    if (arg === `--${name}`) return command[i + 1];
    if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
  }
  return undefined;
}

/**
 * What a report's run was restricted to, read from the command line in its provenance.
 *
 * @param report A report.
 * @returns The ops, dtypes and backends the command named (null where it named none), the flags
 * as words, and whether the run stopped at its budget.
 * @example
 * ```ts ignore
 * import { runScope } from "./coverage.ts";
 * console.log(runScope(report).flags); // e.g. "--ops matmul,add"
 * ```
 */
export function runScope(report: Report): RunScope {
  const command = report.provenance.command;
  const lists = RESTRICTING.map((name) => {
    const value = flagValue(command, name);
    return value === undefined ? null : new Set(value.split(",").map((s) => s.trim()));
  });
  const flags = RESTRICTING.flatMap((name) => {
    const value = flagValue(command, name);
    return value === undefined ? [] : [`--${name} ${value}`];
  }).join(" ");
  const quick = report.provenance.mode === "quick" || report.provenance.quick;
  return {
    ops: lists[0]!,
    dtypes: lists[1]!,
    backends: lists[2]!,
    flags,
    budget: report.provenance.stopReason === "budget",
    modeSkipped: quick && lists[1] === null ? new Set(QUICK_SKIPPED_DTYPES) : null,
  };
}

/**
 * Why a run did not measure something on purpose, or null when it should have.
 *
 * @param scope The current run's scope ({@linkcode runScope}).
 * @param what The op, dtype and backend(s) of the missing figure (any may be omitted).
 * @returns The reason in words, or null.
 * @example
 * ```ts
 * import { skipReason } from "./coverage.ts";
 * const scope = { ops: new Set(["add"]), dtypes: null, backends: null, flags: "--ops add", budget: false };
 * console.log(skipReason(scope, { op: "matmul" })); // "skipped: the current run was made with --ops add"
 * ```
 */
export function skipReason(
  scope: RunScope,
  what: { op?: string; dtype?: string; backends?: readonly string[] },
): string | null {
  const outside = (set: ReadonlySet<string> | null, value: string | undefined) =>
    set !== null && value !== undefined && !set.has(value);
  const skipped = outside(scope.ops, what.op) || outside(scope.dtypes, what.dtype) ||
    (what.backends ?? []).some((b) => outside(scope.backends, b));
  if (skipped) return `skipped: the current run was made with ${scope.flags}`;
  if (what.dtype !== undefined && scope.modeSkipped?.has(what.dtype)) {
    return `skipped: a --quick run leaves ${what.dtype} out unless --dtypes names it`;
  }
  if (scope.budget) return "not reached: the current run stopped at its --budget";
  return null;
}

function seriesKey(m: Pick<Measurement, "op" | "dtype" | "backend" | "residency">): string {
  return `${m.op} ${m.dtype} ${m.backend} ${m.residency}`;
}

/**
 * Per series, the sizes measured ok, the first wrong answer (a failed correctness check: it has a
 * `maxRelError`), and the first other failure or unsupported reason (a timing that drowned in
 * noise, a crash).
 */
function tally(report: Report) {
  const out = new Map<string, { ok: Set<number>; failed: string | null; other: string | null }>();
  for (const m of report.measurements) {
    const key = seriesKey(m);
    const t = out.get(key) ?? { ok: new Set<number>(), failed: null, other: null };
    out.set(key, t);
    if (m.state === "ok") t.ok.add(m.size);
    else if (m.state === "failed" && m.maxRelError !== undefined) {
      t.failed ??= `failed at ${m.size}: ${m.error}`;
    } else t.other ??= `${m.state} at ${m.size}: ${m.state === "failed" ? m.error : m.reason}`;
  }
  return out;
}

/**
 * Every series the baseline measured correctly that the current report lost, or in which it
 * now gives a wrong answer the baseline did not: a regression unless the current run skipped it
 * on purpose ({@linkcode skipReason}); a wrong answer always is. A timing that failed at one size
 * (drowned in noise) while others were measured is not counted.
 *
 * @param baseline The baseline report.
 * @param current The current report.
 * @returns One entry per such series, in the baseline's order.
 * @example
 * ```ts ignore
 * import { seriesCoverage } from "./coverage.ts";
 * const lost = seriesCoverage(baseline, current).filter((s) => s.regressed);
 * ```
 */
export function seriesCoverage(baseline: Report, current: Report): SeriesChange[] {
  const scope = runScope(current);
  const base = tally(baseline);
  const cur = tally(current);
  const out: SeriesChange[] = [];
  const seen = new Set<string>();
  for (const m of baseline.measurements) {
    const key = seriesKey(m);
    const b = base.get(key)!;
    if (seen.has(key) || b.ok.size === 0) continue;
    seen.add(key);
    const c = cur.get(key);
    const currentSizes = c?.ok.size ?? 0;
    const newFailure = c?.failed != null && b.failed === null;
    if (currentSizes > 0 && !newFailure) continue;
    const skip = skipReason(scope, { op: m.op, dtype: m.dtype, backends: [m.backend] });
    const why = c?.failed ?? c?.other ?? null;
    const what = newFailure
      ? `now fails its correctness check (${why})`
      : why !== null
      ? `no size measured correctly (${why})`
      : "gone from the current report";
    out.push({
      key,
      op: m.op,
      backend: m.backend,
      baselineSizes: b.ok.size,
      currentSizes,
      regressed: newFailure || skip === null,
      note: newFailure || skip === null ? `${what}: regression` : `${what}: ${skip}`,
    });
  }
  return out;
}
