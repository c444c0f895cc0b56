/**
 * Where `deno task calibrate` writes, decided and checked before anything is measured: `--out`,
 * else the report `--resume` continues, else `reports/<machine-slug>.json`. Write access is
 * checked up front with the command that grants it, a report holding more measurements than the
 * run starts from is never replaced without `--force` (nor is the machine's complete report by a
 * run that measures less of it), and the temporary files of a run killed mid-save are removed.
 *
 * @module
 */
import config from "../deno.json" with { type: "json" };
import { loadReport } from "../reports/load.ts";
import type { CalibrationMode, Report } from "../core/schema.ts";
import { UsageError } from "../core/cli_args.ts";
import { peekAdapter } from "../calibrate/device.ts";
import { describeMachine, machineFingerprint, machineSlug } from "../calibrate/machine.ts";

/**
 * The report path and the flag that chose it, for messages.
 *
 * @example
 * ```ts
 * import type { OutputChoice } from "./_output.ts";
 * const o: OutputChoice = { path: "reports/x.json", flag: "--out" };
 * ```
 */
export interface OutputChoice {
  readonly path: string;
  /** `--out`, `--resume` or `the default path`. */
  readonly flag: string;
}

/**
 * The report path of this machine as `calibrate()` names it, `reports/<slug>.json`: the adapter is
 * asked for its description only (no device is opened), also for a run that leaves WebGPU out,
 * whose report still names the machine's adapter in its fingerprint and slug.
 *
 * @returns The path.
 * @example
 * ```ts ignore
 * import { defaultReportPath } from "./_output.ts";
 * console.log(await defaultReportPath()); // "reports/llvmpipe-vulkan-x86_64-….json"
 * ```
 */
export async function defaultReportPath(): Promise<string> {
  const machine = await describeMachine();
  const adapter = await peekAdapter();
  const fingerprint = await machineFingerprint(machine, adapter);
  return `reports/${machineSlug(machine, adapter, fingerprint)}.json`;
}

/**
 * Chooses where the run writes: `--out`, else the report it resumes (so a resumed run completes
 * that file and never replaces another), else this machine's default path.
 *
 * @param out `--out`, if given.
 * @param resume `--resume`, if given.
 * @returns The path and the flag that chose it.
 * @example
 * ```ts
 * import { chooseOutput } from "./_output.ts";
 * console.log((await chooseOutput(undefined, "tmp/partial.json")).path); // "tmp/partial.json"
 * ```
 */
export async function chooseOutput(
  out: string | undefined,
  resume: string | undefined,
): Promise<OutputChoice> {
  if (out !== undefined) return { path: out, flag: "--out" };
  if (resume !== undefined) return { path: resume, flag: "--resume" };
  return { path: await defaultReportPath(), flag: "the default path" };
}

function splitPath(path: string): { folder: string; base: string } {
  const slash = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return {
    folder: slash < 0 ? "." : slash === 0 ? "/" : path.slice(0, slash),
    base: path.slice(slash + 1),
  };
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'"'"'`)}'`;
}

/**
 * The command that runs calibrate with write access to `folder` too: the task's own permissions,
 * widened by that one folder.
 *
 * @param folder The folder to allow.
 * @param args The command line's flags.
 * @returns The command, ready to paste.
 * @example
 * ```ts
 * import { grantingCommand } from "./_output.ts";
 * console.log(grantingCommand("/tmp/out", ["--out", "/tmp/out/r.json"]).includes("--allow-write=reports,/tmp/out")); // true
 * ```
 */
export function grantingCommand(folder: string, args: readonly string[]): string {
  const task = config.tasks.calibrate.replace(
    /--allow-write=(\S+)/,
    (_, allowed: string) => `--allow-write=${allowed},${folder}`,
  );
  return [task, ...args.map(shellQuote)].join(" ");
}

/**
 * Checks that the run may write its report at `path` — Deno's permission, then the file system's,
 * by creating and removing a temporary file beside it — so a run is refused before it measures,
 * not after.
 *
 * @param choice The path and the flag that chose it.
 * @param args The command line's flags, for the command that grants access.
 * @throws {UsageError} naming the path, why it cannot be written, and what to do.
 * @example
 * ```ts ignore
 * import { checkWritable } from "./_output.ts";
 * await checkWritable({ path: "reports/x.json", flag: "--out" }, ["--out", "reports/x.json"]);
 * ```
 */
export async function checkWritable(choice: OutputChoice, args: readonly string[]): Promise<void> {
  const { path, flag } = choice;
  const { folder, base } = splitPath(path);
  const where = `${flag} "${path}"`;
  const { state } = await Deno.permissions.query({ name: "write", path });
  if (state !== "granted") {
    throw new UsageError(
      `${where}: this run may not write in "${folder}"; run: ${grantingCommand(folder, args)}`,
    );
  }
  const info = await Deno.stat(path).catch(() => null);
  if (info !== null && !info.isFile) {
    throw new UsageError(`${where} is not a file; pass a file path`);
  }
  // Named as a temporary file of the report, so a run killed right here leaves nothing that
  // removeStaleTemps() does not clean.
  const probe = `${folder}/.${base}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  try {
    (await Deno.open(probe, { write: true, createNew: true })).close();
    await Deno.remove(probe);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound
      ? `the folder "${folder}" does not exist; create it first`
      : e instanceof Deno.errors.PermissionDenied
      ? `the system refuses writing in "${folder}"; check its permissions`
      : `writing in "${folder}" failed (${e instanceof Error ? e.message : e})`;
    throw new UsageError(`${where}: ${why}`);
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  try {
    return await Deno.realPath(a) === await Deno.realPath(b);
  } catch {
    return false;
  }
}

/**
 * Refuses to replace a report holding more measurements than the run starts from (a fresh run
 * saves after its first op, so it would shrink a full calibration to one op), or a file that is
 * not a readable report, unless `force`. Resuming a file in place is always allowed: its
 * measurements are carried over.
 *
 * @param choice The path and the flag that chose it.
 * @param run Where the run starts: the resumed report's path and measurement count, and `--force`.
 * @throws {UsageError} saying what the file holds and the flags that decide.
 * @example
 * ```ts ignore
 * import { checkReplaceable } from "./_output.ts";
 * await checkReplaceable({ path: "reports/x.json", flag: "--out" }, { startsWith: 0, force: false });
 * ```
 */
export async function checkReplaceable(
  choice: OutputChoice,
  run: { readonly resumePath?: string; readonly startsWith: number; readonly force: boolean },
): Promise<void> {
  const { path, flag } = choice;
  if (run.force) return;
  if (await Deno.stat(path).catch(() => null) === null) return;
  if (run.resumePath !== undefined && await sameFile(path, run.resumePath)) return;
  const where = `${flag} "${path}"`;
  let existing;
  try {
    existing = await loadReport(path, { onWarning: () => {} });
  } catch (e) {
    throw new UsageError(
      `${where} holds a file this gpucal cannot read as a report (${
        e instanceof Error ? e.message : e
      }); pass --force to replace it, or --out another path`,
    );
  }
  const held = existing.measurements.length;
  if (held <= run.startsWith) return;
  const what = existing.provenance.complete ? "a complete" : "a partial";
  const resume = existing.provenance.complete ? "" : `, --resume "${path}" to continue it`;
  throw new UsageError(
    `${where} holds ${what} report with ${held} measurements, and this run saves after every op ` +
      `starting from ${run.startsWith}: it would replace it with fewer; pass --force to ` +
      `replace it${resume}, or --out another path`,
  );
}

/**
 * What a run would measure, for comparing it with the report it would replace.
 *
 * @example
 * ```ts
 * import type { RunScope } from "./_output.ts";
 * const quickAdd: RunScope = { mode: "quick", jobs: new Set(["add|f32|js", "add|f32|wasm"]) };
 * ```
 */
export interface RunScope {
  readonly mode: CalibrationMode;
  /** The run's jobs as `op|dtype|backend`. */
  readonly jobs: ReadonlySet<string>;
}

/**
 * A job's key in a {@linkcode RunScope}.
 *
 * @param op The op's name.
 * @param dtype The dtype.
 * @param backend The backend.
 * @returns `op|dtype|backend`.
 * @example
 * ```ts
 * import { jobKey } from "./_output.ts";
 * console.log(jobKey("add", "f32", "js")); // "add|f32|js"
 * ```
 */
export function jobKey(op: string, dtype: string, backend: string): string {
  return `${op}|${dtype}|${backend}`;
}

/** How thorough a mode is: a run of a lower rank measures fewer sizes, budgets and passes. */
const MODE_RANK: Readonly<Record<CalibrationMode, number>> = { quick: 0, default: 1, thorough: 2 };

/**
 * What a run of `scope` would lose of the complete report `existing` by replacing it, in words:
 * a more thorough mode, or jobs (op, dtype, backend) the run does not measure; null when it loses
 * nothing (an incomplete report is the run's to finish or replace).
 *
 * @param existing The report at the path the run would replace.
 * @param scope The run.
 * @returns The loss, or null.
 * @example
 * ```ts ignore
 * import { lossOnReplacing } from "./_output.ts";
 * import { loadReport } from "../reports/load.ts";
 * const full = await loadReport("reports/llvmpipe-vulkan-x86_64-1ec2aa7f.json");
 * console.log(lossOnReplacing(full, { mode: "quick", jobs: new Set(["add|f32|js"]) }));
 * // "a default run's sizes and windows, and 44 jobs this run leaves out (matmul f32 on webgpu, …)"
 * ```
 */
export function lossOnReplacing(existing: Report, scope: RunScope): string | null {
  const p = existing.provenance;
  if (!p.complete) return null;
  const mode: CalibrationMode = p.mode ?? (p.quick ? "quick" : "default");
  const jobs = [...new Set(existing.measurements.map((m) => jobKey(m.op, m.dtype, m.backend)))];
  const leftOut = jobs.filter((j) => !scope.jobs.has(j));
  const losses = [
    ...(MODE_RANK[mode] > MODE_RANK[scope.mode] ? [`a ${mode} run's sizes and windows`] : []),
    ...(leftOut.length === 0 ? [] : [
      `${leftOut.length} job${leftOut.length === 1 ? "" : "s"} this run leaves out (${
        leftOut.slice(0, 3).map((j) => j.split("|").join(" ").replace(/ (\S+)$/, " on $1"))
          .join(", ")
      }${leftOut.length > 3 ? ", …" : ""})`,
    ]),
  ];
  return losses.length === 0 ? null : losses.join(", and ");
}
