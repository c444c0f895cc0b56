/**
 * Atomic file replacement: readers see the old file or the new one, never a torn write, and a
 * failure at any step leaves the old file as it was.
 *
 * @module
 */

function tempPathFor(path: string): string {
  const slash = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  const dir = path.slice(0, slash + 1);
  const base = path.slice(slash + 1);
  // Same directory as the target, so the final rename never crosses a file system.
  return `${dir}.${base}.${crypto.randomUUID().slice(0, 8)}.tmp`;
}

/**
 * Writes bytes or text to `path` atomically: into a temporary file in the same directory, flushed
 * to disk, then renamed over `path`.
 *
 * @param path The file to create or replace.
 * @param data The new contents; strings are written as UTF-8.
 * @throws {Deno.errors.NotCapable} Without write permission for the directory of `path`.
 * @throws {Error} Whatever the file system reports; the old file is then intact and the
 * temporary file removed.
 * @example
 * ```ts
 * import { writeFileAtomic } from "./atomic.ts";
 * const dir = await Deno.makeTempDir();
 * await writeFileAtomic(`${dir}/hello.txt`, "hello\n");
 * ```
 */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const temp = tempPathFor(path);
  try {
    const file = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
    try {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      await file.syncData();
    } finally {
      file.close();
    }
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {
      // The temporary file was never created, or is already gone: nothing to clean.
    });
    throw error;
  }
}

/**
 * Writes `value` as pretty-printed JSON (two-space indent, final newline) to `path` atomically.
 * The value is serialised before any file is touched, so a value that cannot be serialised
 * leaves the disk unchanged.
 *
 * @param path The file to create or replace.
 * @param value A JSON-serialisable value.
 * @throws {TypeError} When `value` cannot be serialised (a cycle, a BigInt, `undefined`).
 * @throws {Error} Whatever the file system reports; the old file is then intact.
 * @example
 * ```ts
 * import { writeJsonAtomic } from "./atomic.ts";
 * const dir = await Deno.makeTempDir();
 * await writeJsonAtomic(`${dir}/report.json`, { schemaVersion: 1 });
 * ```
 */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const text = JSON.stringify(value, null, 2);
  if (typeof text !== "string") {
    throw new TypeError(
      `Cannot write ${typeof value} as JSON to "${path}": pass an object, array or primitive`,
    );
  }
  await writeFileAtomic(path, `${text}\n`);
}
