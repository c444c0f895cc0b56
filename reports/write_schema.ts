/**
 * Regenerates `reports/schema.json` from `reports/schema.ts`: `deno task schema`.
 *
 * @example
 * ```ts
 * import { renderReportJsonSchema } from "./write_schema.ts";
 * console.log(renderReportJsonSchema().startsWith("{")); // true
 * ```
 *
 * @module
 */
import { reportJsonSchema } from "./schema.ts";

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

if (import.meta.main) {
  if (Deno.args.length > 0) {
    console.error(
      `error: deno task schema takes no arguments, got ${JSON.stringify(Deno.args[0])}`,
    );
    Deno.exit(2);
  }
  await Deno.writeTextFile(SCHEMA_JSON_URL, renderReportJsonSchema());
  console.log(`Wrote ${SCHEMA_JSON_URL.pathname}`);
}
