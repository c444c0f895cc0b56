/**
 * `deno task report`: renders a calibration report as a self-contained HTML page (the "what to
 * use where" map, plots with error bars and fitted curves, rooflines, tables) or as compact
 * Markdown, optionally against a baseline report and with the datasheet peaks of
 * `reports/specs.json`.
 *
 * @module
 */
import { parseFlags, UsageError, usageFailure } from "../core/cli_args.ts";
import { renderMarkdown } from "./html/markdown.ts";
import { renderHtml } from "./html/render.ts";
import { loadReport } from "./load.ts";
import type { Report } from "../core/schema.ts";
import { readSpecsFile, type SpecsFile } from "./specs_file.ts";

const FORMATS = ["html", "markdown"] as const;
type Format = typeof FORMATS[number];

const USAGE =
  "Usage: deno task report --report R.json [--baseline B.json] [--specs S.json] [--out PATH] [--format html|markdown]";

/** Where `deno task specs:import` writes the vendor peak figures. */
const DEFAULT_SPECS = "reports/specs.json";

const HELP = `${USAGE}

Renders a calibration report for people. HTML is one self-contained page (inline CSS and SVG, no
scripts, nothing fetched when viewed) that opens with the answer: a map of the fastest backend
along each op's sizes (ties shown as ties, crossovers with their 95 % CI). Then per op and dtype a
log-log plot of time against size for every backend (medians with their 95 % CI, the fitted cost
model drawn through them, crossovers); rooflines (attained GFLOP/s against arithmetic intensity
under each backend's measured ceilings and, when the specs file lists the adapter, the
datasheet's); the tables (crossovers, tuning heatmap, system figures, LLM tokens/s validation,
machine and run). Markdown is a compact summary for a terminal or a pull-request comment.

Options:
  --report PATH|URL     The report to render (required)
  --baseline PATH|URL   An earlier report: what moved beyond noise is listed and highlighted
  --specs PATH          Vendor peak figures from deno task specs:import (default:
                        ${DEFAULT_SPECS} when it exists)
  --out PATH            Where to write; HTML defaults to reports/<slug>.html, Markdown to stdout
  --format F            html (default) or markdown
  -h, --help            Show this help

The task may write only under reports/. To write elsewhere, run the module with a permission for
that one path:
  deno run --allow-read --allow-write=/tmp/r.html reports/report_cli.ts --report R.json --out /tmp/r.html

Exit codes: 0 written, 2 unusable input (bad flags, an invalid or unreadable report, an
unwritable --out).`;

function formatFlag(value: string | undefined): Format {
  if (value === undefined) return "html";
  const format = FORMATS.find((f) => f === value);
  if (format === undefined) {
    throw new UsageError(`--format: "${value}" is not one of ${FORMATS.join(", ")}`);
  }
  return format;
}

async function load(flag: string, path: string): Promise<Report> {
  try {
    return await loadReport(path);
  } catch (e) {
    throw new UsageError(`${flag}: cannot use "${path}": ${e instanceof Error ? e.message : e}`);
  }
}

async function loadSpecs(path: string | undefined): Promise<SpecsFile["specs"] | null> {
  try {
    const file = await readSpecsFile(path ?? DEFAULT_SPECS);
    if (file === null && path !== undefined) {
      throw new UsageError(`--specs: "${path}" does not exist; run deno task specs:import first`);
    }
    return file?.specs ?? null;
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`--specs: ${e instanceof Error ? e.message : e}`);
  }
}

async function write(path: string, text: string): Promise<void> {
  try {
    await Deno.writeTextFile(path, text);
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      throw new UsageError(
        `--out: not allowed to write "${path}": the task writes only under reports/; run \`deno run --allow-read --allow-write=${path} reports/report_cli.ts ...\` instead`,
      );
    }
    throw new UsageError(`--out: cannot write "${path}": ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * Runs the report command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 written, 2 unusable input.
 * @example
 * ```ts ignore
 * import { main } from "./report_cli.ts";
 * Deno.exit(await main(["--report", "reports/x.json", "--format", "markdown"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  try {
    const { values } = parseFlags(args, {
      report: { type: "string" },
      baseline: { type: "string" },
      out: { type: "string" },
      format: { type: "string" },
      specs: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    const format = formatFlag(values.format);
    if (values.report === undefined) throw new UsageError("--report PATH is required");
    if (values.out === "") throw new UsageError("--out needs a path");
    const report = await load("--report", values.report);
    const baseline = values.baseline === undefined
      ? undefined
      : await load("--baseline", values.baseline);
    const options = baseline === undefined ? {} : { baseline };
    if (format === "markdown") {
      const md = renderMarkdown(report, options);
      if (values.out === undefined) {
        console.log(md);
        return 0;
      }
      await write(values.out, `${md}\n`);
      console.error(`Wrote ${values.out}`);
      return 0;
    }
    const out = values.out ?? `reports/${report.slug}.html`;
    await write(out, renderHtml(report, { ...options, specs: await loadSpecs(values.specs) }));
    console.error(`Wrote ${out}`);
    return 0;
  } catch (e) {
    return usageFailure(e, USAGE);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
