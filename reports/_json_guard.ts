/**
 * Guards on untrusted JSON, applied before the schema library recurses into it: nesting depth,
 * the size of the free-form `details` of LLM validations, and duplicate keys (which `JSON.parse`
 * resolves silently, the last one winning). Both walks are iterative, so no input can exhaust the
 * call stack.
 *
 * @module
 */
import { formatPath } from "./_issues.ts";
import { ReportError } from "./error.ts";

/**
 * Deepest nesting a report may have, counting the root as 0. A real report nests 7 levels (an
 * LLM validation's details, 3 of them); the schema library recurses once per level, and 2,000
 * levels of arrays (4 KB of JSON) exhausted its stack.
 */
export const MAX_DEPTH = 32;

/** Most values (of any kind, nested ones included) in one free-form `details` object. */
export const MAX_DETAILS_VALUES = 10_000;

/** Longest string in a free-form `details` object, characters (the schema's cap on text). */
export const MAX_DETAILS_STRING = 4096;

/** Most values a whole document may hold: ample for the schema's largest arrays. */
const MAX_VALUES = 1 << 25;

interface Frame {
  readonly value: unknown;
  readonly depth: number;
  readonly parent: Frame | null;
  readonly key: PropertyKey;
  /** The free-form `details` object this value sits in, or null. */
  readonly details: Frame | null;
}

function pathOf(frame: Frame): string {
  const keys: PropertyKey[] = [];
  for (let f: Frame | null = frame; f !== null && f.parent !== null; f = f.parent) {
    keys.push(f.key);
  }
  return formatPath(keys.reverse());
}

function invalid(frame: Frame, message: string): ReportError {
  const path = pathOf(frame);
  return new ReportError(
    "invalid",
    `Invalid report: ${path === "" ? "the report" : `"${path}"`} ${message}`,
    [{ path, message }],
  );
}

/** Whether `frame` is `llm.validations[i].details`. */
function isDetails(frame: Frame): boolean {
  const validation = frame.parent;
  const validations = validation?.parent;
  const llm = validations?.parent;
  return frame.key === "details" && validations?.key === "validations" && llm?.key === "llm" &&
    llm.parent?.parent === null;
}

/**
 * Checks a parsed document's nesting depth and the size of its free-form fields, without
 * recursion.
 *
 * @param doc A parsed JSON document (or any object graph: a cycle counts as too deep).
 * @throws {ReportError} Kind `invalid`, naming the path where a limit was passed.
 * @example
 * ```ts
 * import { checkJsonLimits } from "./_json_guard.ts";
 * let deep: unknown = 0;
 * for (let i = 0; i < 100; i++) deep = [deep];
 * try {
 *   checkJsonLimits({ llm: { validations: [{ details: { x: deep } }] } });
 * } catch (e) {
 *   console.log((e as Error).message.startsWith("Invalid report")); // true
 * }
 * ```
 */
export function checkJsonLimits(doc: unknown): void {
  const root: Frame = { value: doc, depth: 0, parent: null, key: "", details: null };
  const stack: Frame[] = [root];
  const detailsValues = new Map<Frame, number>();
  let values = 1;
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const value = frame.value as object;
    if (frame.depth >= MAX_DEPTH) {
      throw invalid(
        frame,
        `is nested more than ${MAX_DEPTH} levels deep; a report nests at most a few levels`,
      );
    }
    const keys = Array.isArray(value) ? null : Object.keys(value);
    const n = keys === null ? (value as unknown[]).length : keys.length;
    values += n;
    if (values > MAX_VALUES) {
      throw invalid(
        frame,
        `makes the report hold more than ${MAX_VALUES} values; it is not a report`,
      );
    }
    for (let i = n - 1; i >= 0; i--) {
      const key = keys === null ? i : keys[i]!;
      const child = (value as Record<PropertyKey, unknown>)[key];
      const next: Frame = {
        value: child,
        depth: frame.depth + 1,
        parent: frame,
        key,
        details: null,
      };
      const details = frame.details ?? (isDetails(next) ? next : null);
      if (details !== null) checkDetailsValue(next, details, detailsValues);
      if (typeof child === "object" && child !== null) stack.push({ ...next, details });
    }
  }
}

function checkDetailsValue(frame: Frame, details: Frame, counts: Map<Frame, number>): void {
  const n = (counts.get(details) ?? 0) + 1;
  counts.set(details, n);
  if (n > MAX_DETAILS_VALUES) {
    throw invalid(details, `holds more than ${MAX_DETAILS_VALUES} values; keep details small`);
  }
  if (typeof frame.value === "string" && frame.value.length > MAX_DETAILS_STRING) {
    throw invalid(
      frame,
      `is a string of ${frame.value.length} characters, over the ${MAX_DETAILS_STRING} allowed in details`,
    );
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

interface Container {
  /** Keys seen so far; null for an array. */
  readonly keys: Set<string> | null;
  readonly key: PropertyKey;
  /** The key or index the next value is stored under. */
  next: PropertyKey;
}

/** The end of the string literal starting at `start` (its opening quote), exclusive. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return text.length;
    let backslashes = 0;
    for (let j = quote - 1; text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

/**
 * Scans JSON text for an object with the same key twice, and for nesting deeper than
 * {@linkcode MAX_DEPTH}, before `JSON.parse` runs. The text is assumed to be JSON otherwise;
 * `JSON.parse` reports any syntax error afterwards.
 *
 * @param text JSON text.
 * @throws {ReportError} Kind `invalid` naming the duplicated key's path, or the path nested too
 * deep.
 * @example
 * ```ts
 * import { checkJsonText } from "./_json_guard.ts";
 * try {
 *   checkJsonText('{"slug": "a", "slug": "b"}');
 * } catch (e) {
 *   console.log((e as Error).message); // 'Invalid report: "slug" appears twice in the same object; keep one'
 * }
 * ```
 */
export function checkJsonText(text: string): void {
  const open: Container[] = [];
  const pathHere = () => formatPath([...open.slice(1).map((c) => c.key), open.at(-1)!.next]);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      const top = open.at(-1);
      if (top?.keys && isKeyPosition(text, end)) {
        const raw = text.slice(i, end);
        const key = raw.includes("\\") ? decodeKey(raw) : raw.slice(1, -1);
        top.next = key;
        if (top.keys.has(key)) {
          const path = pathHere();
          throw new ReportError(
            "invalid",
            `Invalid report: "${path}" appears twice in the same object; keep one`,
            [{ path, message: "appears twice in the same object; keep one" }],
          );
        }
        top.keys.add(key);
      }
      i = end - 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const key = open.at(-1)?.next ?? "";
      if (open.length >= MAX_DEPTH) {
        const path = formatPath([...open.slice(1).map((o) => o.key), key]);
        const message =
          `is nested more than ${MAX_DEPTH} levels deep; a report nests at most a few levels`;
        throw new ReportError("invalid", `Invalid report: "${path}" ${message}`, [{
          path,
          message,
        }]);
      }
      open.push({ keys: c === OPEN_OBJECT ? new Set() : null, key, next: 0 });
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
    } else if (c === COMMA) {
      const top = open.at(-1);
      if (top !== undefined && top.keys === null) top.next = (top.next as number) + 1;
    }
  }
}

/** Whether the string that ended at `end` is followed by a colon (so it is a key). */
function isKeyPosition(text: string, end: number): boolean {
  for (let j = end; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === COLON) return true;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return false;
  }
  return false;
}

function decodeKey(raw: string): string {
  try {
    return JSON.parse(raw) as string;
  } catch {
    // Not a valid string literal: JSON.parse of the whole text will say so.
    return raw;
  }
}
