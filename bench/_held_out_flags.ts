/**
 * Private: the command line shared by the held-out benches (`bench:regret`, `bench:tuning`): a
 * report, how many held-out items, how many rounds, JSON or text; and the report, loaded.
 *
 * @module
 */
import { oneLineFailure, parseFlags, UsageError } from "../core/cli_args.ts";
import { loadReport, ReportError } from "../reports/load.ts";
import type { Report } from "../core/schema.ts";
import { describeSettingsDifference, driverSettings } from "../calibrate/machine.ts";

/** What a held-out bench runs, from its command line. */
export interface HeldOutArgs {
  readonly reportPath: string;
  /** Most held-out items to run (Infinity: all). */
  readonly limit: number;
  readonly rounds: number;
  readonly json: boolean;
  /** The list of items to run instead of the bench's own, when its flag was given. */
  readonly listPath?: string;
}

/** How a bench names and bounds its flags. */
export interface HeldOutFlags {
  /** Its `--help` text. */
  readonly help: string;
  /** The flag that limits how many items run (`workloads`, `cases`). */
  readonly limitFlag: string;
  readonly defaultRounds: number;
  readonly maxRounds: number;
  /** The flag naming a file of items to run instead of the bench's own (`shapes`), if any. */
  readonly listFlag?: string;
}

/**
 * Parses `--report PATH [--<limitFlag> N] [--rounds N] [--json] [-h]`.
 *
 * @param args Command-line arguments.
 * @param flags The bench's help text, limit flag and rounds.
 * @returns The choices, or the exit code when it asked for help (0) or was wrong (printed).
 * @example
 * ```ts
 * import { parseHeldOutArgs } from "./_held_out_flags.ts";
 * const flags = { help: "Usage: …", limitFlag: "cases", defaultRounds: 2, maxRounds: 10 };
 * const args = parseHeldOutArgs(["--report", "r.json", "--cases", "4"], flags);
 * console.log(typeof args === "number" ? args : args.limit); // 4
 * ```
 */
export function parseHeldOutArgs(args: string[], flags: HeldOutFlags): HeldOutArgs | number {
  try {
    const { values } = parseFlags(args, {
      report: { type: "string" },
      [flags.limitFlag]: { type: "string" },
      rounds: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      ...(flags.listFlag === undefined ? {} : { [flags.listFlag]: { type: "string" as const } }),
    });
    if (values.help) {
      console.log(flags.help);
      return 0;
    }
    const report = values.report;
    if (typeof report !== "string") throw new UsageError("--report is required: see --help");
    const given = values[flags.limitFlag];
    const limit = given === undefined ? Infinity : Number(given);
    if (!(Number.isSafeInteger(limit) && limit > 0) && limit !== Infinity) {
      throw new UsageError(`--${flags.limitFlag} must be a positive integer, got "${given}"`);
    }
    const rounds = values.rounds === undefined ? flags.defaultRounds : Number(values.rounds);
    if (!Number.isInteger(rounds) || rounds < 1 || rounds > flags.maxRounds) {
      throw new UsageError(
        `--rounds must be an integer from 1 to ${flags.maxRounds}, got "${values.rounds}"`,
      );
    }
    const list = flags.listFlag === undefined ? undefined : values[flags.listFlag];
    return {
      reportPath: report,
      limit,
      rounds,
      json: values.json === true,
      ...(typeof list === "string" ? { listPath: list } : {}),
    };
  } catch (e) {
    return oneLineFailure(e);
  }
}

/**
 * Loads `--report`: the report, or exit code 2 after one line saying why it cannot be used (a
 * missing file, a bad URL, a report that fails validation).
 *
 * @param path The `--report` path or URL.
 * @returns The report, or the exit code.
 * @example
 * ```ts ignore
 * const report = await loadHeldOutReport(args.reportPath);
 * if (typeof report === "number") return report;
 * ```
 */
export async function loadHeldOutReport(path: string): Promise<Report | number> {
  let report: Report;
  try {
    report = await loadReport(path);
  } catch (e) {
    if (!(e instanceof ReportError)) throw e;
    console.error(`error: --report: ${e.message}`);
    return 2;
  }
  const differing = settingsUnlikeReport(report, Deno.env.toObject());
  if (differing !== null) console.error(`warning: ${differing}`);
  return report;
}

/**
 * What a held-out bench says when it runs with other driver settings than its report was
 * calibrated with (`calibrate/machine.ts` `driverSettings`): its truth is of one configuration of
 * the machine and the predictions of another, so its errors are the setting's as much as the
 * models'. Null when they match, or the report does not record its settings (then it was made in
 * the default configuration, and so is the bench unless the environment sets one).
 *
 * @param report The report the bench judges.
 * @param env This process's environment.
 * @returns The warning, or null.
 * @example
 * ```ts
 * import { settingsUnlikeReport } from "./_held_out_flags.ts";
 * import { syntheticReport } from "../tests/_fixtures.ts";
 * console.log(settingsUnlikeReport(syntheticReport(), { LP_NUM_THREADS: "1" })?.slice(0, 33));
 * // "this bench runs with other driver"
 * ```
 */
export function settingsUnlikeReport(
  report: Report,
  env: Readonly<Record<string, string>>,
): string | null {
  const differing = describeSettingsDifference(
    driverSettings(env),
    report.provenance.driverEnv,
    ["this bench", "the report"],
  );
  return differing === null ? null : `this bench runs with other driver settings than the ` +
    `report was calibrated with (${differing}): its held-out times are of another configuration ` +
    `of the machine than the predictions, so its errors are the setting's as much as the models'`;
}
