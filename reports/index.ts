/**
 * The index of published reports (`reports/index.json`): one validated entry per report file,
 * with the machine and adapter it describes and the SHA-256 to pin it by when importing it from a
 * URL.
 *
 * @example
 * ```ts ignore
 * import { buildIndex } from "./index.ts";
 * const index = await buildIndex("reports");
 * for (const r of index.reports) console.log(r.file, r.adapter?.description ?? "CPU only");
 * ```
 *
 * @module
 */
import { configurationSettings } from "../calibrate/machine.ts";
import { checkJsonText } from "./_json_guard.ts";
import { sha256Hex } from "./_read.ts";
import { DEFAULT_MAX_BYTES, parseReport, ReportError } from "./load.ts";
import type { AdapterInfo, Report } from "../core/schema.ts";

/** JSON files in the reports folder that are not calibration reports. */
export const NON_REPORT_FILES: readonly string[] = ["index.json", "schema.json", "specs.json"];

/**
 * One published report, as listed in the index.
 *
 * @example
 * ```ts
 * import type { IndexEntry } from "./index.ts";
 * function label(e: IndexEntry) { return `${e.machine.cpuModel} ×${e.machine.cores}`; }
 * ```
 */
export interface IndexEntry {
  /** File name inside the reports folder. */
  readonly file: string;
  /** The report's machine slug. */
  readonly slug: string;
  /** The report's machine fingerprint (16 hex digits). */
  readonly fingerprint: string;
  /** The host CPU. */
  readonly machine: { readonly cpuModel: string; readonly cores: number };
  /** The WebGPU adapter, or null for a CPU-only report. */
  readonly adapter:
    | Pick<AdapterInfo, "description" | "backend" | "vendor" | "software">
    | null;
  /** When the report was measured (ISO 8601). */
  readonly date: string;
  /** The report's schema version. */
  readonly schemaVersion: number;
  /** SHA-256 of the file's bytes, for `loadReport(url, { sha256 })`. */
  readonly sha256: string;
  /** Whether the calibration finished (false: stopped by budget, interrupt or error). */
  readonly complete: boolean;
  /**
   * The driver settings of a configuration other than the machine's default, e.g.
   * `{ LP_NUM_THREADS: "1" }` (`calibrate/machine.ts` `configurationSettings`); absent for the
   * default configuration.
   */
  readonly driverEnv?: Readonly<Record<string, string>>;
}

/**
 * The index of a reports folder.
 *
 * @example
 * ```ts
 * import type { ReportIndex } from "./index.ts";
 * const empty: ReportIndex = { generated: new Date(0).toISOString(), reports: [] };
 * ```
 */
export interface ReportIndex {
  /** When the index was built (ISO 8601). */
  readonly generated: string;
  /** One entry per report, sorted by file name. */
  readonly reports: readonly IndexEntry[];
}

/**
 * Options of {@linkcode buildIndex}.
 *
 * @example
 * ```ts
 * import type { BuildIndexOptions } from "./index.ts";
 * const o: BuildIndexOptions = { now: new Date("2026-01-01T00:00:00Z") };
 * ```
 */
export interface BuildIndexOptions {
  /** The build time to record; the current time by default. */
  readonly now?: Date;
}

/**
 * The index entry of one parsed report.
 *
 * @param file The report's file name.
 * @param report The validated report.
 * @param sha256 SHA-256 of the file's bytes.
 * @returns The entry.
 * @example
 * ```ts ignore
 * import { indexEntry } from "./index.ts";
 * const entry = indexEntry("x.json", report, "ab".repeat(32));
 * ```
 */
export function indexEntry(file: string, report: Report, sha256: string): IndexEntry {
  const a = report.adapter;
  const settings = configurationSettings(report.provenance.driverEnv);
  return {
    file,
    slug: report.slug,
    fingerprint: report.fingerprint,
    machine: { cpuModel: report.machine.cpuModel, cores: report.machine.cores },
    adapter: a === null
      ? null
      : { description: a.description, backend: a.backend, vendor: a.vendor, software: a.software },
    date: report.provenance.date,
    schemaVersion: report.schemaVersion,
    sha256,
    complete: report.provenance.complete,
    ...(Object.keys(settings).length === 0 ? {} : { driverEnv: settings }),
  };
}

async function readEntry(dir: string, file: string): Promise<IndexEntry> {
  const path = `${dir.replace(/[\\/]+$/, "")}/${file}`;
  const info = await Deno.stat(path);
  if (info.size > DEFAULT_MAX_BYTES) {
    throw new ReportError(
      "size",
      `Cannot index "${path}": it is larger than ${DEFAULT_MAX_BYTES} bytes; remove it or shrink it`,
    );
  }
  const bytes = await Deno.readFile(path);
  let report: Report;
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    checkJsonText(text);
    report = parseReport(JSON.parse(text), {
      onWarning: (w) =>
        console.warn(`Warning: "${path}": ${w.path === "" ? "" : `"${w.path}" `}${w.message}`),
    });
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    const kind = cause instanceof ReportError ? cause.kind : "json";
    const issues = cause instanceof ReportError ? cause.issues : [];
    throw new ReportError(
      kind,
      `Cannot index "${path}": ${why}; fix or remove the file`,
      issues,
      { cause },
    );
  }
  return indexEntry(file, report, await sha256Hex(bytes));
}

/**
 * Builds the index of every report in a folder: each `*.json` file except
 * {@linkcode NON_REPORT_FILES} and hidden files is read and validated with `parseReport`.
 *
 * @param dir The reports folder, e.g. `"reports"`.
 * @param options The build time to record.
 * @returns The index, entries sorted by file name.
 * @throws {ReportError} Naming the first file that is not a valid report (kinds as for
 * `loadReport`: `json`, `invalid`, `version`, `size`).
 * @throws {Deno.errors.NotFound} When `dir` does not exist.
 * @example
 * ```ts ignore
 * import { buildIndex } from "./index.ts";
 * console.log((await buildIndex("reports")).reports.length);
 * ```
 */
export async function buildIndex(
  dir: string,
  options: BuildIndexOptions = {},
): Promise<ReportIndex> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    // Hidden files include writeFileAtomic's in-flight temporaries.
    if (entry.name.startsWith(".") || NON_REPORT_FILES.includes(entry.name)) continue;
    files.push(entry.name);
  }
  files.sort();
  const reports: IndexEntry[] = [];
  for (const file of files) reports.push(await readEntry(dir, file));
  return { generated: (options.now ?? new Date()).toISOString(), reports };
}
