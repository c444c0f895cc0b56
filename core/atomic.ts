/**
 * Atomic file replacement: readers see the old file or the new one, never a torn write, and a
 * failure at any step leaves the old file as it was.
 *
 * @module
 */

function splitPath(path: string): { dir: string; base: string } {
  const slash = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return { dir: path.slice(0, slash + 1), base: path.slice(slash + 1) };
}

function tempPathFor(path: string): string {
  const { dir, base } = splitPath(path);
  // Same directory as the target, so the final rename never crosses a file system.
  return `${dir}.${base}.${crypto.randomUUID().slice(0, 8)}.tmp`;
}

/** Temporary files this process is writing now, for {@linkcode removeTempFilesSync}. */
const inFlight = new Set<string>();

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
  inFlight.add(temp);
  try {
    const file = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
    try {
      // Held until the file is closed (or the process dies): removeStaleTemps() skips a locked
      // temp.
      await file.lock(true);
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
  } finally {
    inFlight.delete(temp);
  }
}

/**
 * Removes the temporary files this process is writing now, synchronously: for a signal handler
 * about to exit the process in the middle of a write. The targets stay as they were.
 *
 * @returns How many were removed.
 * @example
 * ```ts
 * import { removeTempFilesSync } from "./atomic.ts";
 * console.log(removeTempFilesSync()); // 0
 * ```
 */
export function removeTempFilesSync(): number {
  let removed = 0;
  for (const temp of inFlight) {
    try {
      Deno.removeSync(temp);
      removed++;
    } catch {
      // Not created yet, or already renamed over its target: nothing left to clean.
    }
  }
  return removed;
}

/**
 * Removes the temporary files an earlier writer of `path` left behind (killed between creating
 * and renaming one): `.<name>.<8 hex>.tmp` beside it that no live writer holds locked.
 *
 * @param path The target whose leftovers to remove.
 * @returns The paths removed.
 * @throws {Error} Whatever the file system reports about the directory, except that it does not
 * exist (then there is nothing to remove).
 * @example
 * ```ts
 * import { removeStaleTemps } from "./atomic.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/.report.json.1a2b3c4d.tmp`, "{");
 * console.log((await removeStaleTemps(`${dir}/report.json`)).length); // 1
 * ```
 */
export async function removeStaleTemps(path: string): Promise<string[]> {
  const { dir, base } = splitPath(path);
  const pattern = new RegExp(
    `^\\.${base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.[0-9a-f]{8}\\.tmp$`,
  );
  const removed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir === "" ? "." : dir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return removed;
    throw error;
  }
  for (const entry of entries) {
    if (!entry.isFile || !pattern.test(entry.name)) continue;
    const temp = `${dir}${entry.name}`;
    if (inFlight.has(temp) || !(await unlocked(temp))) continue;
    await Deno.remove(temp).catch(() => {
      // Gone since the listing: its writer finished or another cleaner was faster.
    });
    removed.push(temp);
  }
  return removed;
}

/** Whether no process holds `path` locked (a live writer does until it renames it). */
async function unlocked(path: string): Promise<boolean> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch {
    return false;
  }
  try {
    return await file.tryLock(true);
  } finally {
    file.close();
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
