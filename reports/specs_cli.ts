/**
 * `deno task specs:import <saved-page.html>`: reads the GPU specification tables of a saved web
 * page and merges them into `reports/specs.json` (model → peak FP32/FP16 TFLOP/s, memory GB/s,
 * source), written atomically.
 *
 * @module
 */
import { parseFlags, UsageError, usageFailure } from "../core/cli_args.ts";
import { writeJsonAtomic } from "../core/atomic.ts";
import { type GpuSpec, parseSpecTables } from "./specs.ts";
import { type SpecsFile, SpecsFileSchema } from "./specs_file.ts";

const USAGE = "Usage: deno task specs:import <saved-page.html> [--source URL] [--out PATH]";

const HELP = `${USAGE}

Reads every GPU specification table of a saved HTML page (a table with a model column and peak
FP32, FP16 or memory bandwidth columns; merged cells and footnote markers are handled) and merges
the models into the specs file, replacing models already there. Nothing in the page is executed.
\`deno task report\` reads the file and draws the adapter's datasheet peaks on its rooflines.

Options:
  --source URL   Where the page came from, recorded with every model (default: the file name)
  --out PATH     The specs file (default: reports/specs.json)
  -h, --help     Show this help

Exit codes: 0 written, 1 no specification table found or an unreadable specs file, 2 bad flags
or an unreadable page.`;

/** Saved pages larger than this are refused (32 MiB): spec tables are small. */
const MAX_PAGE_BYTES = 32 * 1024 * 1024;

class ImportError extends TypeError {
  override name = "ImportError";
}

async function readExisting(path: string): Promise<SpecsFile["specs"]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return {};
    throw e;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ImportError(
      `Cannot merge into "${path}": not valid JSON (${
        e instanceof Error ? e.message : e
      }); fix or remove it`,
    );
  }
  const parsed = SpecsFileSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new ImportError(
      `Cannot merge into "${path}": "${first?.path.join(".") ?? ""}" ${
        first?.message ?? "is invalid"
      }; fix or remove it`,
    );
  }
  return parsed.data.specs;
}

async function readPage(path: string): Promise<string> {
  try {
    const info = await Deno.stat(path);
    if (info.size > MAX_PAGE_BYTES) {
      throw new UsageError(`"${path}" is larger than ${MAX_PAGE_BYTES} bytes: pass a saved page`);
    }
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`Cannot read "${path}": ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * Merges specs into a specs file's model map; later specs replace earlier ones of the same model.
 *
 * @param existing The current model map.
 * @param specs The specs to add.
 * @param now The time to record.
 * @returns The new file contents, models sorted by name.
 * @example
 * ```ts
 * import { mergeSpecs } from "./specs_cli.ts";
 * const file = mergeSpecs({}, [{ model: "X", fp32Tflops: 1, fp16Tflops: null, memoryGBps: null, source: "s" }], new Date(0));
 * console.log(Object.keys(file.specs)); // ["X"]
 * ```
 */
export function mergeSpecs(
  existing: SpecsFile["specs"],
  specs: readonly GpuSpec[],
  now: Date,
): SpecsFile {
  const merged: SpecsFile["specs"] = { ...existing };
  for (const { model, ...figures } of specs) merged[model] = figures;
  const sorted = Object.fromEntries(
    Object.entries(merged).sort(([a], [b]) => a.localeCompare(b)),
  );
  return { generated: now.toISOString(), specs: sorted };
}

/**
 * Runs the specs import command line.
 *
 * @param args The page path and flags (without the program name).
 * @returns The exit code: 0 written, 1 nothing found or a bad specs file, 2 bad flags or page.
 * @example
 * ```ts ignore
 * import { main } from "./specs_cli.ts";
 * Deno.exit(await main(["saved/gpus.html", "--source", "https://example.org/gpus"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  try {
    const { values, positionals } = parseFlags(args, {
      source: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", short: "h" },
    }, true);
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UsageError(
        `Expected one saved HTML page, got ${positionals.length}: ${JSON.stringify(positionals)}`,
      );
    }
    const page = positionals[0]!;
    const out = values.out ?? "reports/specs.json";
    const html = await readPage(page);
    const specs = parseSpecTables(html, values.source ?? page.replace(/^.*[\\/]/, ""));
    if (specs.length === 0) {
      console.error(
        `error: no GPU specification table in "${page}": expected a table with a model column and FP32, FP16 or memory bandwidth columns`,
      );
      return 1;
    }
    const file = mergeSpecs(await readExisting(out), specs, new Date());
    await writeJsonAtomic(out, file);
    console.log(
      `Imported ${specs.length} model(s) from "${page}" into ${out} (${
        Object.keys(file.specs).length
      } in total)`,
    );
    return 0;
  } catch (e) {
    if (e instanceof ImportError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    if (e instanceof Deno.errors.NotCapable) {
      console.error(
        `error: ${e.message}\nThe specs:import task writes under reports/ only; for another --out, run reports/specs_cli.ts with --allow-write=<that folder>`,
      );
      return 2;
    }
    return usageFailure(e, USAGE);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
