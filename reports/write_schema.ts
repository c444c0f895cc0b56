/**
 * Regenerates `reports/schema.json` from `core/schema.ts`: `deno task schema`.
 *
 * @example
 * ```ts
 * import { renderReportJsonSchema } from "./write_schema.ts";
 * console.log(renderReportJsonSchema().startsWith("{")); // true
 * ```
 *
 * @module
 */
import { parseFlags, usageFailure } from "../core/cli_args.ts";
import { reportJsonSchema } from "../core/schema.ts";

const USAGE = "Usage: deno task schema";

const HELP = `${USAGE}

Regenerates reports/schema.json, the JSON Schema every calibration report satisfies, from the zod
schema in core/schema.ts (the one definition). Commit the two together.

Options:
  -h, --help   Show this help

Exit codes: 0 written, 2 bad flags.`;

/** Where the generated JSON Schema is committed. */
export const SCHEMA_JSON_URL: URL = new URL("./schema.json", import.meta.url);

/**
 * The exact text of `reports/schema.json`: the JSON Schema, two-space indented, final newline.
 *
 * @returns The file contents.
 * @example
 * ```ts
 * import { renderReportJsonSchema } from "./write_schema.ts";
 * console.log(JSON.parse(renderReportJsonSchema()).title);
 * ```
 */
export function renderReportJsonSchema(): string {
  return `${JSON.stringify(reportJsonSchema(), null, 2)}\n`;
}

/**
 * Runs the schema command line: writes `reports/schema.json`, or with `--help` only prints usage.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 written or help shown, 2 bad flags.
 * @example
 * ```ts ignore
 * import { main } from "./write_schema.ts";
 * Deno.exit(await main(["--help"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  try {
    const { values } = parseFlags(args, { help: { type: "boolean", short: "h" } });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
  } catch (e) {
    return usageFailure(e, USAGE);
  }
  await Deno.writeTextFile(SCHEMA_JSON_URL, renderReportJsonSchema());
  console.log(`Wrote ${SCHEMA_JSON_URL.pathname}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
