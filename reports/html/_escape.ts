/**
 * Escaping for HTML and SVG text and attribute values. Reports are untrusted input: every string
 * taken from one goes through {@linkcode escapeHtml} before it reaches markup.
 *
 * @module
 */

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * Escapes a string for HTML or SVG text content and quoted attribute values.
 *
 * @param text Any string.
 * @returns The string with `& < > " '` replaced by entities.
 * @example
 * ```ts
 * import { escapeHtml } from "./_escape.ts";
 * console.log(escapeHtml('<script>"x"</script>')); // "&lt;script&gt;&quot;x&quot;&lt;/script&gt;"
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}
