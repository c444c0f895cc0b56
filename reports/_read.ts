/**
 * Byte-level input for report loading: capped reads of files and HTTP bodies, SHA-256, and the
 * permission-aware error messages both share.
 *
 * @module
 */
import { ReportError } from "./error.ts";

/**
 * Reads a stream into one buffer, cancelling it as soon as it passes `maxBytes`.
 *
 * @param stream The bytes.
 * @param maxBytes The most bytes accepted.
 * @param label What the stream is, for messages (a quoted path or a URL).
 * @returns All the bytes.
 * @throws {ReportError} Kind `size` past `maxBytes`; the stream is then cancelled.
 * @example
 * ```ts
 * import { readCapped } from "./_read.ts";
 * const bytes = await readCapped(new Blob(["{}"]).stream(), 10, "a blob");
 * console.log(bytes.length); // 2
 * ```
 */
export async function readCapped(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  label: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxBytes) {
        await reader.cancel();
        throw new ReportError(
          "size",
          `Cannot load report from ${label}: it is larger than ${maxBytes} bytes; pass a larger maxBytes if it is genuine`,
        );
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * Lowercase hex SHA-256 of `bytes`.
 *
 * @param bytes The data.
 * @returns 64 hex digits.
 * @example
 * ```ts
 * import { sha256Hex } from "./_read.ts";
 * console.log((await sha256Hex(new Uint8Array(0))).slice(0, 8)); // "e3b0c442"
 * ```
 */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Reads a local report file, refusing anything that is not a regular file under `maxBytes`
 * before reading it.
 *
 * @param path The file.
 * @param maxBytes The largest accepted size.
 * @param label How messages name the file.
 * @returns The file's bytes.
 * @throws {ReportError} Kind `not-found`, `permission`, `size` or `io`, saying what to do.
 * @example
 * ```ts
 * import { readFileCapped } from "./_read.ts";
 * const bytes = await readFileCapped("deno.json", 1 << 20, '"deno.json"');
 * console.log(bytes.length > 0); // true
 * ```
 */
export async function readFileCapped(
  path: string | URL,
  maxBytes: number,
  label: string,
): Promise<Uint8Array<ArrayBuffer>> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    throw fileError(error, label, path);
  }
  let info: Deno.FileInfo;
  try {
    info = await file.stat();
  } catch (error) {
    file.close();
    throw fileError(error, label, path);
  }
  if (!info.isFile) {
    file.close();
    throw new ReportError("io", `Cannot load report: ${label} is not a regular file`);
  }
  if (info.size > maxBytes) {
    file.close();
    throw new ReportError(
      "size",
      `Cannot load report: ${label} is ${info.size} bytes, over the ${maxBytes} byte limit; pass a larger maxBytes if it is genuine`,
    );
  }
  // The stream closes the file when it ends or is cancelled.
  return await readCapped(file.readable, maxBytes, label);
}

function fileError(error: unknown, label: string, path: string | URL): ReportError {
  const options = { cause: error };
  if (error instanceof Deno.errors.NotFound) {
    return new ReportError(
      "not-found",
      `Cannot load report: ${label} does not exist; check the path`,
      [],
      options,
    );
  }
  if (error instanceof Deno.errors.NotCapable) {
    const target = path instanceof URL ? decodeURIComponent(path.pathname) : path;
    return new ReportError(
      "permission",
      `Cannot load report: reading ${label} is not allowed; pass --allow-read=${target}`,
      [],
      options,
    );
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return new ReportError(
      "permission",
      `Cannot load report: the system refused to read ${label}; check the file's permissions`,
      [],
      options,
    );
  }
  const why = error instanceof Error ? error.message : String(error);
  return new ReportError("io", `Cannot load report: reading ${label} failed (${why})`, [], options);
}
