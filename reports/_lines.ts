/**
 * Private: the lines of a byte stream, for the two ends of `check:ab` (its CLI reads a worker's
 * stdout and stderr, the worker reads its stdin).
 *
 * @module
 */

/**
 * The lines of a byte stream, as they arrive; a last line without a newline is yielded too.
 *
 * @param stream UTF-8 bytes.
 * @returns The lines, without their newlines.
 * @example
 * ```ts
 * import { lines } from "./_lines.ts";
 * const stream = ReadableStream.from([new TextEncoder().encode("a\nb")]);
 * for await (const line of lines(stream)) console.log(line); // "a", then "b"
 * ```
 */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
    }
  }
  if (buffer.trim() !== "") yield buffer;
}
