/**
 * `deno task calibrate`: measures this machine and writes `reports/<machine>.json`.
 *
 * @module
 */
import { OPS } from "../kernels/catalog.ts";
import { BACKENDS, DTYPES } from "../kernels/types.ts";
import { removeStaleTemps, removeTempFilesSync } from "../core/atomic.ts";
import { loadReport } from "../reports/load.ts";
import type { Report } from "../core/schema.ts";
import {
  listFlag,
  parseFlags,
  positiveNumberFlag,
  UsageError,
  usageFailure,
} from "../core/cli_args.ts";
import {
  checkReplaceable,
  checkWritable,
  chooseOutput,
  jobKey,
  lossOnReplacing,
  type RunScope,
} from "./_output.ts";
import type { CalibrateOptions } from "../calibrate/calibrate.ts";
import { calibrate } from "../decode/hook.ts";
import { MAX_PASSES, planFor } from "../calibrate/plan.ts";
import { progressPrinter } from "../calibrate/progress.ts";
import { formatSummary } from "../calibrate/summary.ts";

const HELP = `Usage: deno task calibrate [options]

Measures this machine's WebGPU adapter and CPU backends (js, wasm, wasm-mt), fits cost models and
crossover thresholds, and writes a calibration report (JSON) atomically after every op.

Modes (times on a 2-core VM with a software GPU; faster machines finish sooner):
  (default)            Plans 5 minutes and takes 9-13 here (its sure work runs however late):
                       a complete report, LLM validation included
  --quick              About 50 s: fewer sizes, smaller budgets, no variant search, no LLM check,
                       no f16 unless --dtypes names it (the report says f16 was not measured)
  --thorough           Every size, budget and pass, about 30 minutes (the exhaustive run)

Options:
  --ops LIST           Ops to calibrate, comma-separated (default: all): ${
  OPS.map((o) => o.name).join(",")
}
  --dtypes LIST        Dtypes (default: all each op supports; --quick: all but f16): ${
  DTYPES.join(",")
}
  --backends LIST      Backends (default: all): ${BACKENDS.join(",")}
  --budget SECONDS     Stop after this long and write a partial report (complete: false)
  --passes N           Windows per sweep point, minutes apart, pooled (default: 2, the noisy
                       points only; --thorough: 2, every fitted point; --quick: 1). On a machine
                       whose speed drifts, more passes make each point stand for the whole run
  --out PATH           Report path (default: the --resume report, else reports/<machine-slug>.json;
                       a run with driver settings such as LP_NUM_THREADS=1 is another
                       configuration, reports/<machine-slug>-lp_num_threads-1.json)
  --resume PATH        Continue a partial report of this machine without redoing its measurements;
                       the result is written back to PATH unless --out says otherwise
  --force              Replace an --out report that holds more measurements than this run
                       starts from (a fresh run saves after every op, so it would shrink a full
                       calibration to the ops done so far). This machine's report at the default
                       path needs no --force: the run saves beside it (<slug>.partial.json) and
                       replaces it once complete, unless the run measures less of it (a lighter
                       mode, or ops, dtypes or backends it leaves out): then --force, or --out
  --earlier-runs-from LIST
                       Comma-separated earlier reports of this machine whose drift probes join
                       the ones carried over from the report this run replaces: with three runs
                       or more the report states how far whole runs move (betweenRunSigma), and
                       prediction intervals include it. Reports of another machine, or of
                       other driver settings (LP_NUM_THREADS, ...), add nothing
  --fresh              Keep this run's own measurements. By default a run that finishes pools
                       them with the report it replaces (the geometric mean of the two runs'
                       medians, the newest run weighing at least a quarter), when that report is
                       of this machine and mode, complete, on the same Deno, measured by the
                       kernels and runners of this checkout (its gpucal commit's are,
                       uncommitted changes included) and with the same driver settings (LP_*,
                       MESA_*, VK_*, DENO_WEBGPU_*, ...): each calibration then refines the
                       report instead of redrawing one moment of a drifting host. A backend
                       whose runs sit typically over x1.35 apart keeps this run's times
  --no-llm             Skip the LLM decode validation (a synthetic WebGPU decode, ~1 min;
                       --quick skips it unless --llm is given)
  --llm                Run the LLM decode validation even with --quick
  --json               Machine-readable progress: one JSON object per line on stdout
  -h, --help           Show this help

The output path is checked before anything is measured: write access (with the command that
grants it) and what it holds. Ctrl-C (or SIGTERM) stops measuring and writes what was measured
(complete: false); --resume continues it. A second Ctrl-C quits at once, removing a half-written
temporary file; one left by a killed run is removed by the next run writing the same report.
Exit codes: 0 done, 1 calibration error, 2 bad flags, an unusable --resume report or an output
path that cannot or should not be written, 130 interrupted.`;

/**
 * Runs the calibrate command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 done, 1 calibration error, 2 bad flags, 130 interrupted.
 * @example
 * ```ts ignore
 * import { main } from "./calibrate.ts";
 * Deno.exit(await main(["--quick"]));
 * ```
 */
export async function main(args: string[]): Promise<number> {
  let options: CalibrateOptions;
  /** The report this run replaces once complete, when it saves beside it until then. */
  let replaces: string | null = null;
  let json = false;
  try {
    const { values } = parseFlags(args, {
      quick: { type: "boolean" },
      thorough: { type: "boolean" },
      ops: { type: "string" },
      dtypes: { type: "string" },
      backends: { type: "string" },
      budget: { type: "string" },
      passes: { type: "string" },
      out: { type: "string" },
      resume: { type: "string" },
      force: { type: "boolean" },
      "earlier-runs-from": { type: "string" },
      fresh: { type: "boolean" },
      "no-llm": { type: "boolean" },
      llm: { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    json = values.json ?? false;
    const ops = listFlag("--ops", values.ops, OPS.map((o) => o.name));
    const dtypes = listFlag("--dtypes", values.dtypes, DTYPES);
    const backends = listFlag("--backends", values.backends, BACKENDS);
    const budgetS = positiveNumberFlag("--budget", values.budget);
    const passes = passesFlag(values.passes);
    if (values.quick && values.thorough) {
      throw new UsageError(
        "--quick and --thorough exclude each other: give one of them, or neither",
      );
    }
    const resume = values.resume === undefined ? undefined : await resumable(values.resume);
    const out = await prepareOutput(values.out, values.resume, resume, {
      backends,
      force: values.force ?? false,
      args,
    });
    replaces = out.replaces;
    const replaced = resume ? null : await replacedReport(replaces ?? out.path);
    const mode = values.quick ? "quick" : values.thorough ? "thorough" : "default";
    if (replaced !== null && out.replaces !== null && !values.force) {
      const loss = lossOnReplacing(replaced, scopeOf(mode, ops, dtypes, backends));
      if (loss !== null) {
        throw new UsageError(
          `"${out.replaces}" holds this machine's complete calibration (${replaced.measurements.length} ` +
            `measurements), and this run would replace it with less: ${loss}. Pass --out ` +
            `reports/<name>.json to keep both, or --force to replace it`,
        );
      }
    }
    const earlier = [
      ...(replaced === null ? [] : [replaced]),
      ...await earlierReports(values["earlier-runs-from"]),
    ];
    options = {
      quick: values.quick ?? false,
      mode,
      ...(ops ? { ops } : {}),
      ...(dtypes ? { dtypes } : {}),
      ...(backends ? { backends } : {}),
      ...(budgetS !== undefined ? { budgetS } : {}),
      ...(passes !== undefined ? { passes } : {}),
      out: out.path,
      ...(resume ? { resume, resumePath: values.resume! } : {}),
      ...(earlier.length > 0 ? { earlier } : {}),
      ...(replaced !== null && !values.fresh ? { poolWith: replaced } : {}),
      ...(values["no-llm"] ? { llm: false } : values.llm ? { llm: true } : {}),
      command: ["deno", "task", "calibrate", ...args],
    };
  } catch (e) {
    return usageFailure(e, "Usage: deno task calibrate [options]");
  }

  const mode = json ? "json" : Deno.stderr.isTerminal() ? "tty" : "plain";
  const interrupt = new AbortController();
  const onSigint = () => {
    if (interrupt.signal.aborted) {
      // Quitting in the middle of a save would leave its temporary file beside the report.
      removeTempFilesSync();
      Deno.exit(130);
    }
    console.error(
      "\nInterrupted: finishing the current measurement and saving (Ctrl-C again to quit now)",
    );
    interrupt.abort();
  };
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  for (const signal of signals) Deno.addSignalListener(signal, onSigint);
  try {
    const result = await calibrate({
      ...options,
      signal: interrupt.signal,
      onProgress: progressPrinter(mode),
    });
    const { report } = result;
    let path = result.path;
    if (replaces !== null) {
      if (report.provenance.complete) {
        await Deno.rename(path, replaces);
        path = replaces;
      } else {
        console.error(
          `The report at "${replaces}" is kept: this run is not complete; continue it with ` +
            `deno task calibrate --resume ${path}`,
        );
      }
    }
    if (json) {
      console.log(JSON.stringify({ kind: "done", path, complete: report.provenance.complete }));
    } else {
      console.error("");
      console.log(formatSummary(report, path));
    }
    return interrupt.signal.aborted ? 130 : 0;
  } catch (e) {
    if (e instanceof RangeError) {
      console.error(`error: ${e.message}`);
      return 2;
    }
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      console.error(
        `error: ${e.message}\nThe calibrate task may write under reports/ only; for another --out, run cli/calibrate.ts with --allow-write=<that folder>`,
      );
      return 2;
    }
    console.error(`error: calibration failed: ${e instanceof Error ? e.stack ?? e.message : e}`);
    return 1;
  } finally {
    for (const signal of signals) Deno.removeSignalListener(signal, onSigint);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));

/** The report `--resume` names, loaded and validated. */
async function resumable(path: string): Promise<Report> {
  try {
    return await loadReport(path);
  } catch (e) {
    throw new UsageError(`--resume: cannot use "${path}": ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * The report the run will replace, when gpucal can read it (one it cannot is left to the
 * replacement checks, and carries nothing over), else null.
 */
async function replacedReport(path: string): Promise<Report | null> {
  if (await Deno.stat(path).catch(() => null) === null) return null;
  try {
    return await loadReport(path, { onWarning: () => {} });
  } catch (e) {
    console.error(
      `Note: "${path}" cannot be read as a report (${e instanceof Error ? e.message : e}); ` +
        `its earlier runs are not carried over`,
    );
    return null;
  }
}

/** The `--earlier-runs-from` reports, whose drift probes the run carries over; each must load. */
async function earlierReports(list: string | undefined): Promise<Report[]> {
  const reports: Report[] = [];
  for (const path of list === undefined ? [] : list.split(",").map((p) => p.trim())) {
    if (path === "") throw new UsageError("--earlier-runs-from: an empty path in the list");
    try {
      reports.push(await loadReport(path, { onWarning: () => {} }));
    } catch (e) {
      throw new UsageError(
        `--earlier-runs-from: cannot use "${path}": ${e instanceof Error ? e.message : e}`,
      );
    }
  }
  return reports;
}

/**
 * Decides where the report goes and checks, before anything is measured, that it may be written
 * there and should be; removes what a killed run left beside it.
 */
async function prepareOutput(
  out: string | undefined,
  resumePath: string | undefined,
  resume: Report | undefined,
  run: { backends: CalibrateOptions["backends"]; force: boolean; args: readonly string[] },
): Promise<{ path: string; replaces: string | null }> {
  const choice = await chooseOutput(out, resumePath);
  await checkWritable(choice, run.args);
  const replace = {
    ...(resumePath === undefined ? {} : { resumePath }),
    startsWith: resume?.measurements.length ?? 0,
    force: run.force,
  };
  // Recalibrating a machine whose report is already in reports/ is what the main command is
  // for: the run saves its progress beside that report and replaces it only once complete, so
  // an interrupted run leaves it as it was. An explicit --out is never replaced unasked.
  const staged = choice.flag === "the default path" &&
    await checkReplaceable(choice, replace).then(() => false, () => true);
  const path = staged ? partialPath(choice.path) : choice.path;
  if (staged) await checkReplaceable({ path, flag: "the partial path" }, replace);
  else await checkReplaceable(choice, replace);
  for (const temp of await removeStaleTemps(path)) {
    console.error(`Removed ${temp}, left by a run that was killed while saving`);
  }
  // Resuming a staged run: once complete, it replaces the report it was staged beside.
  const resumedStage = choice.flag === "--resume" && path.endsWith(".partial.json")
    ? path.slice(0, -".partial.json".length) + ".json"
    : null;
  return { path, replaces: staged ? choice.path : resumedStage };
}

/** The jobs a run of these flags plans, as `op|dtype|backend`, and its mode. */
function scopeOf(
  mode: RunScope["mode"],
  ops: readonly string[] | undefined,
  dtypes: CalibrateOptions["dtypes"],
  backends: CalibrateOptions["backends"],
): RunScope {
  const plan = planFor({
    quick: mode === "quick",
    mode,
    ops: ops ? OPS.filter((op) => ops.includes(op.name)) : OPS,
    dtypes: dtypes ?? null,
    backends: backends ?? BACKENDS,
  });
  const jobs = plan.jobs.flatMap((j) => j.backends.map((b) => jobKey(j.op.name, j.dtype, b)));
  return { mode, jobs: new Set(jobs) };
}

/** Where a run staged beside `path` saves until it is complete: `x.json` → `x.partial.json`. */
function partialPath(path: string): string {
  return path.replace(/(\.json)?$/, ".partial.json");
}

function passesFlag(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < 1 || n > MAX_PASSES) {
    throw new UsageError(`--passes must be an integer from 1 to ${MAX_PASSES}, got "${text}"`);
  }
  return n;
}
