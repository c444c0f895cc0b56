/**
 * Loading calibration reports safely: from a file or an HTTP(S) URL, size-capped, optionally
 * pinned to a SHA-256, migrated from older schema versions and fully validated. Nothing in a
 * report is ever evaluated; it is parsed as JSON (duplicate keys and deep nesting refused before
 * anything recurses into it), checked against `core/schema.ts`, then against what the schema
 * cannot say (`reports/_semantic.ts`: positive times and rates, ordered intervals, shapes in their
 * op's dimensions, an adapter consistent with the measurements), and finally against itself
 * (`reports/_consistency.ts`: stored crossovers, thresholds and fits against its own
 * measurements), which is warned about.
 *
 * @example
 * ```ts
 * import { parseReport, ReportError } from "./load.ts";
 * try {
 *   parseReport({ schemaVersion: 1 });
 * } catch (e) {
 *   if (e instanceof ReportError) console.log(e.issues[0]); // { path: "gpucal", message: "is missing, expected an object" }
 * }
 * ```
 *
 * @module
 */
import config from "../deno.json" with { type: "json" };
import { checkConsistency } from "./_consistency.ts";
import { fetchCapped, redactUrl } from "./_http.ts";
import { summariseIssues, toReportIssues } from "./_issues.ts";
import { checkJsonLimits, checkJsonText } from "./_json_guard.ts";
import { readFileCapped, sha256Hex } from "./_read.ts";
import { semanticIssues } from "./_semantic.ts";
import { writeFileAtomic } from "../core/atomic.ts";
import { ReportError, type ReportIssue } from "./error.ts";
import { type Report, ReportSchema, SCHEMA_VERSION } from "../core/schema.ts";

export { checkConsistency } from "./_consistency.ts";
export { ReportError, type ReportErrorKind, type ReportIssue } from "./error.ts";

/** Default deadline for fetching a report over HTTP, ms. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Default cap on a report's size, bytes (64 MiB). */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Upgrades a report document from schema version `n` to `n + 1`. It receives a structurally
 * unchecked object whose `schemaVersion` is `n` and returns a new object whose `schemaVersion` is
 * `n + 1`; validation happens once, after the last step.
 *
 * @example
 * ```ts
 * import type { Migration } from "./load.ts";
 * const v0to1: Migration = (doc) => ({ ...doc, schemaVersion: 1, llm: null });
 * ```
 */
export type Migration = (doc: Readonly<Record<string, unknown>>) => Record<string, unknown>;

/**
 * The migrations gpucal ships, keyed by the version they upgrade from. Version 1 is the first
 * published format, so the table is empty; a `0 → 1` step would be `new Map([[0, v0to1]])`.
 */
export const MIGRATIONS: ReadonlyMap<number, Migration> = new Map();

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readableVersions(migrations: ReadonlyMap<number, Migration>): string {
  let oldest = SCHEMA_VERSION;
  while (migrations.has(oldest - 1)) oldest--;
  return oldest === SCHEMA_VERSION ? `${SCHEMA_VERSION}` : `${oldest} to ${SCHEMA_VERSION}`;
}

/**
 * Brings a report document to the current schema version by applying migrations in order,
 * without validating the rest of it.
 *
 * @param doc A parsed report document of any version.
 * @param migrations The upgrade steps; gpucal's own {@linkcode MIGRATIONS} by default.
 * @returns The document at {@linkcode SCHEMA_VERSION}, unvalidated.
 * @throws {ReportError} Kind `invalid` when `doc` is not an object or has no integer
 * `schemaVersion`; kind `version` when it is newer than this gpucal reads or too old to migrate.
 * @example
 * ```ts
 * import { migrateReport } from "./load.ts";
 * const v0to1 = (doc: Readonly<Record<string, unknown>>) => ({ ...doc, schemaVersion: 1 });
 * console.log(migrateReport({ schemaVersion: 0 }, new Map([[0, v0to1]])).schemaVersion); // 1
 * ```
 */
export function migrateReport(
  doc: unknown,
  migrations: ReadonlyMap<number, Migration> = MIGRATIONS,
): Record<string, unknown> {
  if (!isRecord(doc)) {
    const got = doc === null ? "null" : Array.isArray(doc) ? "an array" : typeof doc;
    throw new ReportError(
      "invalid",
      `Cannot load report: expected a JSON object, got ${got}; check that this is a gpucal report`,
    );
  }
  const version = doc["schemaVersion"];
  if (version === undefined) {
    throw new ReportError(
      "invalid",
      `Cannot load report: "schemaVersion" is missing; check that this is a gpucal report`,
      [{ path: "schemaVersion", message: "is missing, expected an integer" }],
    );
  }
  if (typeof version !== "number" || !Number.isSafeInteger(version) || version < 0) {
    const got = JSON.stringify(version)?.slice(0, 40) ?? String(version);
    throw new ReportError(
      "invalid",
      `Cannot load report: "schemaVersion" is ${got}, expected a non-negative integer; check that this is a gpucal report`,
      [{ path: "schemaVersion", message: `expected a non-negative integer, got ${got}` }],
    );
  }
  const reads = readableVersions(migrations);
  if (version > SCHEMA_VERSION) {
    throw new ReportError(
      "version",
      `Cannot load report: "schemaVersion" is ${version}, this version of gpucal (${config.version}) reads ${reads}; upgrade gpucal`,
    );
  }
  let current: Record<string, unknown> = doc;
  for (let v = version; v < SCHEMA_VERSION; v++) {
    const step = migrations.get(v);
    if (step === undefined) {
      throw new ReportError(
        "version",
        `Cannot load report: "schemaVersion" is ${version}, this version of gpucal (${config.version}) reads ${reads}; regenerate the report with a current gpucal`,
      );
    }
    current = step(current);
    if (current["schemaVersion"] !== v + 1) {
      throw new RangeError(
        `Migration from schema version ${v} returned schemaVersion ${
          JSON.stringify(current["schemaVersion"])
        }, expected ${v + 1}; fix the migration`,
      );
    }
  }
  return current;
}

/**
 * Options of {@linkcode parseReport}.
 *
 * @example
 * ```ts
 * import type { ParseReportOptions } from "./load.ts";
 * const quiet: ParseReportOptions = { onWarning: () => {} };
 * ```
 */
export interface ParseReportOptions {
  /**
   * Told of what is doubtful but not invalid: a finding of {@linkcode checkConsistency} (the
   * report contradicts its own measurements) or an op this gpucal does not know. By default each
   * is printed with `console.warn`.
   */
  readonly onWarning?: (warning: ReportIssue) => void;
}

function printWarning(label: string): (warning: ReportIssue) => void {
  return ({ path, message }) =>
    console.warn(`Warning: ${label}: ${path === "" ? "" : `"${path}" `}${message}`);
}

function schemaCheck(doc: Record<string, unknown>): Report {
  let result: ReturnType<typeof ReportSchema.safeParse>;
  try {
    result = ReportSchema.safeParse(doc, { reportInput: true });
  } catch (cause) {
    // What JSON.parse makes cannot get here; a caller's object graph (getters, proxies) can.
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new ReportError("invalid", `Invalid report: it could not be checked (${why})`, [], {
      cause,
    });
  }
  if (result.success) return result.data;
  const issues = toReportIssues(result.error.issues);
  throw new ReportError("invalid", `Invalid report: ${summariseIssues(issues)}`, issues);
}

/**
 * Validates a parsed JSON document as a report, migrating older schema versions first: its
 * nesting and free-form fields are bounded before the schema recurses into them, then the schema,
 * then what it cannot say (positive times and rates, ordered intervals, shapes in their op's own
 * dimensions, an adapter consistent with the measurements). Crossovers, thresholds and fits that
 * contradict the report's own measurements ({@linkcode checkConsistency}) are warned about.
 *
 * @param json The result of `JSON.parse` on a report file.
 * @param options Where warnings go.
 * @returns The report, typed.
 * @throws {ReportError} Kind `invalid` with every violation in `issues` and the first few in the
 * message (`Invalid report: "provenance.durationS" expected a number, got "x"`); kind `version`
 * for a schema version this gpucal cannot read.
 * @example
 * ```ts
 * import { parseReport } from "./load.ts";
 * const text = await Deno.readTextFile("reports/example.json").catch(() => null);
 * if (text !== null) console.log(parseReport(JSON.parse(text)).slug);
 * ```
 */
export function parseReport(json: unknown, options: ParseReportOptions = {}): Report {
  const doc = migrateReport(json);
  checkJsonLimits(doc);
  const report = schemaCheck(doc);
  const { errors, warnings } = semanticIssues(report);
  if (errors.length > 0) {
    throw new ReportError("invalid", `Invalid report: ${summariseIssues(errors)}`, errors);
  }
  const warn = options.onWarning ?? printWarning("report");
  for (const warning of [...warnings, ...checkConsistency(report)]) warn(warning);
  return report;
}

/**
 * Options of {@linkcode loadReport}.
 *
 * @example
 * ```ts
 * import type { LoadReportOptions } from "./load.ts";
 * const o: LoadReportOptions = { timeoutMs: 5000, cacheDir: ".cache/reports" };
 * ```
 */
export interface LoadReportOptions {
  /** Expected SHA-256 of the file's bytes, 64 hex digits; a mismatch is an error. */
  readonly sha256?: string;
  /** Deadline for the whole HTTP exchange, ms; {@linkcode DEFAULT_TIMEOUT_MS} by default. */
  readonly timeoutMs?: number;
  /** Largest acceptable report, bytes; {@linkcode DEFAULT_MAX_BYTES} by default. */
  readonly maxBytes?: number;
  /**
   * Directory caching fetched reports by SHA-256 (`<sha256>.json`). A pinned load is served from
   * it when present; every successful remote load is stored in it.
   */
  readonly cacheDir?: string;
  /** The fetch implementation, for tests and custom transports; the global `fetch` by default. */
  readonly fetch?: typeof fetch;
  /**
   * Load an unpinned `http:` URL without a warning. Anyone on the way can change a report sent in
   * the clear; pin it with `sha256` (then it is checked, and not warned about) or use `https:`.
   */
  readonly allowInsecure?: boolean;
  /**
   * Told of what is doubtful but not invalid: a plain-HTTP load, a finding of
   * {@linkcode checkConsistency}, an op this gpucal does not know. By default each is printed with
   * `console.warn`, naming the source.
   */
  readonly onWarning?: (warning: ReportIssue) => void;
}

function checkOptions(options: LoadReportOptions) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new RangeError(`Invalid timeoutMs ${timeoutMs}: pass a positive number of milliseconds`);
  }
  if (!(Number.isSafeInteger(maxBytes) && maxBytes > 0)) {
    throw new RangeError(`Invalid maxBytes ${maxBytes}: pass a positive integer`);
  }
  let sha256: string | null = null;
  if (options.sha256 !== undefined) {
    if (!/^[0-9a-fA-F]{64}$/.test(options.sha256)) {
      throw new TypeError(
        `Invalid sha256 ${JSON.stringify(options.sha256)}: pass 64 hexadecimal digits`,
      );
    }
    sha256 = options.sha256.toLowerCase();
  }
  return { timeoutMs, maxBytes, sha256 };
}

/** A URL when `source` is one (a scheme followed by `:`, but not a Windows drive), else null. */
function asUrl(source: string | URL): URL | null {
  if (source instanceof URL) return source;
  if (!/^[A-Za-z][A-Za-z0-9+.-]+:/.test(source)) return null;
  try {
    return new URL(source);
  } catch (cause) {
    throw new ReportError(
      "invalid",
      `Cannot load report: ${JSON.stringify(source)} is not a valid URL; check it`,
      [],
      { cause },
    );
  }
}

function decodeJson(bytes: Uint8Array, label: string): unknown {
  const text = decodeText(bytes, label);
  // JSON.parse keeps the last of two equal keys without a word, and nests as deep as it is told.
  checkJsonText(text);
  try {
    return JSON.parse(text);
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new ReportError(
      "json",
      `Cannot load report from ${label}: not valid JSON (${why}); check that it is a raw report file`,
      [],
      { cause },
    );
  }
}

function decodeText(bytes: Uint8Array, label: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new ReportError(
      "json",
      `Cannot load report from ${label}: it is not UTF-8 text; check that it is a report`,
      [],
      { cause },
    );
  }
}

/** Origins already warned about as plain HTTP, so a program loading often warns once. */
const warnedInsecure = new Set<string>();

/** Loopback hosts: plain HTTP to them never leaves the machine. */
function isLoopback(url: URL): boolean {
  return url.hostname === "localhost" || url.hostname === "[::1]" ||
    /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
}

function warnIfInsecure(
  url: URL,
  pinned: boolean,
  options: LoadReportOptions,
  warn: (w: ReportIssue) => void,
): void {
  if (url.protocol !== "http:" || pinned || options.allowInsecure || isLoopback(url)) return;
  if (warnedInsecure.has(url.origin)) return;
  warnedInsecure.add(url.origin);
  warn({
    path: "",
    message: `loaded over plain HTTP from ${url.origin}: anyone on the way can change it; use ` +
      `https:, pin it with sha256, or pass allowInsecure: true`,
  });
}

function cachePath(cacheDir: string, sha256: string): string {
  return `${cacheDir.replace(/[\\/]+$/, "")}/${sha256}.json`;
}

async function readCache(
  cacheDir: string,
  sha256: string,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const path = cachePath(cacheDir, sha256);
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = await readFileCapped(path, maxBytes, JSON.stringify(path));
  } catch (error) {
    if (error instanceof ReportError && error.kind === "not-found") return null;
    throw error;
  }
  // A corrupted cache entry is a miss: the fresh download overwrites it.
  return (await sha256Hex(bytes)) === sha256 ? bytes : null;
}

async function writeCache(cacheDir: string, sha256: string, bytes: Uint8Array): Promise<void> {
  try {
    await Deno.mkdir(cacheDir, { recursive: true });
    await writeFileAtomic(cachePath(cacheDir, sha256), bytes);
  } catch (cause) {
    const why = cause instanceof Error ? cause.message : String(cause);
    const hint = cause instanceof Deno.errors.NotCapable
      ? `pass --allow-write=${cacheDir}`
      : "check the directory or omit cacheDir";
    throw new ReportError(
      cause instanceof Deno.errors.NotCapable ? "permission" : "io",
      `Cannot cache report in ${JSON.stringify(cacheDir)}: ${why}; ${hint}`,
      [],
      { cause },
    );
  }
}

/**
 * Loads and validates a report from a file path, a `file:` URL or an `http(s):` URL.
 *
 * Files are size-checked before reading. HTTP loads have one deadline for the whole exchange,
 * follow at most 3 redirects and only within the same origin (scheme, host and port), accept
 * `application/json`, `text/plain` or `application/octet-stream` bodies, and stop reading past
 * `maxBytes`, holding no more than about `maxBytes` in memory even for a compressed body. An
 * unpinned `http:` URL to another machine is warned about once per origin (`allowInsecure`
 * silences it). With `sha256`, the bytes must hash to it. With `cacheDir`, fetched reports are
 * kept by hash and pinned loads are served from there. The text is then validated as
 * {@linkcode parseReport} does, duplicate keys refused.
 *
 * @param source A path, or a `file:`, `http:` or `https:` URL.
 * @param options Pin, limits, cache and transport.
 * @returns The validated report, migrated to the current schema version.
 * @throws {ReportError} With a `kind` saying what went wrong and a message saying what to do.
 * @throws {RangeError} For a non-positive `timeoutMs` or `maxBytes`.
 * @throws {TypeError} For a `sha256` that is not 64 hex digits.
 * @example
 * ```ts
 * import { loadReport } from "./load.ts";
 * const report = await loadReport("reports/example.json").catch(() => null);
 * console.log(report?.system.dispatchRoundTripMs.value);
 * ```
 */
export async function loadReport(
  source: string | URL,
  options: LoadReportOptions = {},
): Promise<Report> {
  const { timeoutMs, maxBytes, sha256 } = checkOptions(options);
  const url = asUrl(source);
  const remote = url !== null && (url.protocol === "http:" || url.protocol === "https:");
  if (url !== null && !remote && url.protocol !== "file:") {
    throw new ReportError(
      "invalid",
      `Cannot load report from ${
        redactUrl(url)
      }: unsupported scheme "${url.protocol}"; use a file path, a file: URL or an http(s) URL`,
    );
  }
  const label = url === null ? JSON.stringify(source) : redactUrl(url);
  const parse = { onWarning: options.onWarning ?? printWarning(label) };
  if (remote) warnIfInsecure(url, sha256 !== null, options, parse.onWarning);

  if (remote && sha256 !== null && options.cacheDir !== undefined) {
    const cached = await readCache(options.cacheDir, sha256, maxBytes);
    if (cached !== null) return parseReport(decodeJson(cached, label), parse);
  }

  const bytes = remote
    ? await fetchCapped(url, { timeoutMs, maxBytes, fetch: options.fetch ?? fetch })
    : await readFileCapped(url ?? String(source), maxBytes, label);
  const actual = sha256 !== null || (remote && options.cacheDir !== undefined)
    ? await sha256Hex(bytes)
    : null;
  if (sha256 !== null && actual !== sha256) {
    throw new ReportError(
      "integrity",
      `Cannot load report from ${label}: its SHA-256 is ${actual}, expected ${sha256}; the report changed or the pin is wrong`,
    );
  }
  const report = parseReport(decodeJson(bytes, label), parse);
  if (remote && options.cacheDir !== undefined && actual !== null) {
    await writeCache(options.cacheDir, actual, bytes);
  }
  return report;
}
