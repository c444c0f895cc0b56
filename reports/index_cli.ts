/**
 * `deno task reports:index`: validates every report in `reports/` and writes `reports/index.json`
 * atomically.
 *
 * @module
 */
import { parseFlags, usageFailure } from "../core/cli_args.ts";
import { writeJsonAtomic } from "../core/atomic.ts";
import { buildIndex } from "./index.ts";
import { ReportError } from "./load.ts";

const USAGE = "Usage: deno task reports:index [--dir reports]";

const HELP = `${USAGE}

Validates every calibration report (*.json) in the folder and writes <dir>/index.json: one entry
per report with its machine, adapter, date, schema version, completeness and SHA-256 (the pin for
loadReport(url, { sha256 })). An invalid report stops the run and is named.

Options:
  --dir PATH   The reports folder (default: reports)
  -h, --help   Show this help

Exit codes: 0 written, 1 an invalid report, 2 bad flags or a missing folder.`;

/**
 * Runs the index command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 written, 1 an invalid report, 2 bad flags or a missing folder.
 * @example
 * ```ts ignore
 * import { main } from "./index_cli.ts";
 * Deno.exit(await main(["--dir", "reports"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  let dir: string;
  try {
    const { values } = parseFlags(args, {
      dir: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    dir = (values.dir ?? "reports").replace(/[\\/]+$/, "");
  } catch (e) {
    return usageFailure(e, USAGE);
  }
  try {
    const index = await buildIndex(dir);
    const out = `${dir}/index.json`;
    await writeJsonAtomic(out, index);
    console.log(`Indexed ${index.reports.length} report(s) into ${out}`);
    return 0;
  } catch (e) {
    if (e instanceof ReportError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    if (e instanceof Deno.errors.NotFound) {
      console.error(`error: --dir: "${dir}" does not exist; pass the reports folder`);
      return 2;
    }
    if (e instanceof Deno.errors.NotCapable) {
      console.error(
        `error: ${e.message}\nThe reports:index task reads and writes under reports/ only; for another --dir, run reports/index_cli.ts with --allow-read=<dir> --allow-write=<dir>`,
      );
      return 2;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
