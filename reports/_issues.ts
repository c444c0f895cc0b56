/**
 * Turns zod issues into {@linkcode ReportIssue}s that name the field and say what was expected
 * and what was found, in words a report's author can act on.
 *
 * @module
 */
// Library code imports npm packages by full specifier, so it works without this deno.json.
// deno-lint-ignore no-import-prefix
import type { z } from "npm:zod@4.6.7";
import type { ReportIssue } from "./error.ts";

type Issue = z.core.$ZodIssue;

/**
 * Formats a path as `provenance.durationS`, `measurements[3].wall`, `limits["max size"]`.
 *
 * @param path Keys from the root.
 * @returns The path as text; `""` for the root.
 * @example
 * ```ts
 * import { formatPath } from "./_issues.ts";
 * console.log(formatPath(["measurements", 3, "wall"])); // "measurements[3].wall"
 * ```
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) {
      out += out === "" ? key : `.${key}`;
    } else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/**
 * Describes a found value briefly, quoting strings and never echoing large values whole.
 *
 * @param value Any value from a parsed document.
 * @returns E.g. `"x"`, `2.5`, `null`, `an array of 3 items`, `nothing` (missing).
 * @example
 * ```ts
 * import { describeValue } from "./_issues.ts";
 * console.log(describeValue([1, 2, 3])); // "an array of 3 items"
 * ```
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null || typeof value === "number" || typeof value === "boolean") {
    return String(value);
  }
  if (typeof value === "string") {
    const quoted = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    return value.length > 40 ? `${quoted} (${value.length} characters)` : quoted;
  }
  if (Array.isArray(value)) return `an array of ${value.length} items`;
  return typeof value === "object" ? "an object" : typeof value;
}

const ARTICLE: Readonly<Record<string, string>> = {
  array: "an array",
  object: "an object",
  int: "an integer",
  number: "a number",
  string: "a string",
  boolean: "a boolean",
  null: "null",
};

function expectedType(expected: string): string {
  return ARTICLE[expected] ?? expected;
}

function bound(issue: Issue & { code: "too_big" | "too_small" }): string {
  const big = issue.code === "too_big";
  const limit = big ? issue.maximum : issue.minimum;
  const inclusive = issue.inclusive ?? true;
  const found = issue.input;
  switch (issue.origin) {
    case "string": {
      const n = typeof found === "string" ? `, got ${found.length}` : "";
      return `expected ${big ? "at most" : "at least"} ${limit} characters${n}`;
    }
    case "array": {
      const n = Array.isArray(found) ? `, got ${found.length}` : "";
      return `expected ${big ? "at most" : "at least"} ${limit} items${n}`;
    }
    default: {
      const op = big ? (inclusive ? "<=" : "<") : (inclusive ? ">=" : ">");
      return `expected a number ${op} ${limit}, got ${describeValue(found)}`;
    }
  }
}

function describeIssue(issue: Issue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined
        ? `is missing, expected ${expectedType(issue.expected)}`
        : `expected ${expectedType(issue.expected)}, got ${describeValue(issue.input)}`;
    case "invalid_value": {
      const values = issue.values.map((v) => JSON.stringify(v)).join(", ");
      const what = issue.values.length === 1 ? values : `one of ${values}`;
      return issue.input === undefined
        ? `is missing, expected ${what}`
        : `expected ${what}, got ${describeValue(issue.input)}`;
    }
    case "too_big":
    case "too_small":
      return bound(issue);
    case "invalid_format": {
      const want = issue.format === "regex" && issue.pattern !== undefined
        ? `a string matching ${issue.pattern}`
        : issue.format === "datetime"
        ? 'an ISO 8601 date-time such as "2026-01-15T10:30:00Z"'
        : `a string in ${issue.format} format`;
      return `expected ${want}, got ${describeValue(issue.input)}`;
    }
    case "unrecognized_keys": {
      const keys = issue.keys.map((k) => JSON.stringify(k)).join(", ");
      return `has unexpected key${issue.keys.length === 1 ? "" : "s"} ${keys}; remove ${
        issue.keys.length === 1 ? "it" : "them"
      }`;
    }
    case "invalid_union": {
      if ("discriminator" in issue && typeof issue.discriminator === "string") {
        const options = "options" in issue && issue.options !== undefined
          ? issue.options.map((o) => JSON.stringify(o)).join(", ")
          : "";
        const input = issue.input;
        const found = typeof input === "object" && input !== null
          ? (input as Record<string, unknown>)[issue.discriminator]
          : undefined;
        return found === undefined
          ? `is missing, expected one of ${options}`
          : `expected one of ${options}, got ${describeValue(found)}`;
      }
      return "matches none of the allowed forms";
    }
    case "invalid_key": {
      const inner = issue.issues[0];
      const why = inner === undefined ? "" : `: ${describeIssue(inner)}`;
      return `has an invalid key ${describeValue(issue.input)}${why}`;
    }
    default:
      return issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  }
}

/**
 * Converts zod issues into report issues.
 *
 * @param issues Issues from a `safeParse` run with `reportInput: true`.
 * @returns One report issue per zod issue, in the same order.
 * @example
 * ```ts
 * import { z } from "npm:zod@4.6.7";
 * import { toReportIssues } from "./_issues.ts";
 * const r = z.object({ n: z.number() }).safeParse({ n: "x" }, { reportInput: true });
 * if (!r.success) console.log(toReportIssues(r.error.issues)); // [{ path: "n", message: 'expected a number, got "x"' }]
 * ```
 */
export function toReportIssues(issues: readonly Issue[]): ReportIssue[] {
  return issues.map((issue) => ({
    path: formatPath(issue.path),
    message: describeIssue(issue),
  }));
}

/**
 * Summarises issues in one line: the first few in full, then how many more.
 *
 * @param issues Report issues, most important first.
 * @param shown How many to spell out.
 * @returns E.g. `"provenance.durationS" expected a number, got "x"; and 2 more`.
 * @example
 * ```ts
 * import { summariseIssues } from "./_issues.ts";
 * console.log(summariseIssues([{ path: "slug", message: "expected a string, got 5" }])); // "\"slug\" expected a string, got 5"
 * ```
 */
export function summariseIssues(issues: readonly ReportIssue[], shown = 3): string {
  const parts = issues.slice(0, shown).map((i) =>
    i.path === "" ? `the report ${i.message}` : `"${i.path}" ${i.message}`
  );
  const rest = issues.length - shown;
  return parts.join("; ") + (rest > 0 ? `; and ${rest} more` : "");
}
