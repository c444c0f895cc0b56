/**
 * The one error type report loading throws, with structured data for callers that want more than
 * the message.
 *
 * @module
 */

/**
 * One schema violation: where it is and what was expected.
 *
 * @example
 * ```ts
 * import type { ReportIssue } from "./error.ts";
 * const i: ReportIssue = { path: "provenance.durationS", message: "expected a number, got \"x\"" };
 * ```
 */
export interface ReportIssue {
  /** Dotted path of the offending field, `measurements[3].wall.median`; `""` for the root. */
  readonly path: string;
  /** What was expected and what was found. */
  readonly message: string;
}

/**
 * What went wrong, for callers that branch on it (exit codes, retries).
 *
 * - `invalid`: the document is not a valid report (see `issues`).
 * - `version`: its `schemaVersion` is newer than this gpucal reads, or too old to migrate.
 * - `json`: the bytes are not UTF-8 JSON.
 * - `integrity`: the bytes do not match the pinned SHA-256.
 * - `size`: larger than `maxBytes`.
 * - `not-found`: no such file, or HTTP 404.
 * - `http`: any other non-2xx HTTP status, a refused redirect or a non-JSON content type.
 * - `timeout`: the server did not answer in time.
 * - `permission`: Deno or the OS refused access.
 * - `io`: any other failure to read, fetch or cache.
 */
export type ReportErrorKind =
  | "invalid"
  | "version"
  | "json"
  | "integrity"
  | "size"
  | "not-found"
  | "http"
  | "timeout"
  | "permission"
  | "io";

/**
 * A report could not be loaded or is not valid.
 *
 * @example
 * ```ts
 * import { ReportError } from "./error.ts";
 * const e = new ReportError("version", "Cannot load report: \"schemaVersion\" is 3");
 * console.log(e.kind, e.issues.length); // "version" 0
 * ```
 */
export class ReportError extends TypeError {
  /** What went wrong. */
  readonly kind: ReportErrorKind;
  /** Every schema violation, in document order; empty unless `kind` is `invalid`. */
  readonly issues: readonly ReportIssue[];

  /**
   * Creates a report error.
   *
   * @param kind What went wrong.
   * @param message The full message for people.
   * @param issues Schema violations, when `kind` is `invalid`.
   * @param options The underlying error, if any.
   */
  constructor(
    kind: ReportErrorKind,
    message: string,
    issues: readonly ReportIssue[] = [],
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "ReportError";
    this.kind = kind;
    this.issues = issues;
  }
}
