/**
 * Byte-level input for report loading: capped reads of files and HTTP bodies, SHA-256, and the
 * permission-aware error messages both share.
 *
 * @module
 */
import { ReportError } from "./error.ts";

/** Size of the blocks a capped read fills. */
const BLOCK_BYTES = 1 << 20;

/**
 * Reads a stream into one buffer, cancelling it as soon as it passes `maxBytes`.
 *
 * The bytes are copied into fixed-size blocks, never kept as they came: a decompressing HTTP
 * client hands out small views on much larger buffers (4 KiB on 64 KiB), and keeping the views
 * kept 16× the cap alive. A body over the cap is refused holding at most `maxBytes` plus one
 * block; a body within it is copied once more into the result.
 *
 * A compressed HTTP body (`byob`) is read with a BYOB reader instead, straight into the blocks: a
 * decompressing client's chunks are views on buffers 16× their size, and copying them let a 10 GiB
 * gzip bomb reach 248 MiB of RSS against a 64 MiB cap. Everything else is read plainly, because a
 * BYOB read transfers (detaches) the buffer it fills, and once a process has detached an
 * ArrayBuffer that way, V8 checks every typed-array access of optimised code for detachment: a
 * plain JavaScript `add` over Float32Arrays ran 2.0–2.7× slower for the rest of the process
 * (0.64–0.87 → 1.66–1.77 ns per element, three runs each), and `bench:regret`, which loads its
 * report first, timed its js truth that slowly.
 *
 * @param stream The bytes.
 * @param maxBytes The most bytes accepted.
 * @param label What the stream is, for messages (a quoted path or a URL).
 * @param options `byob`: read a byte stream with a BYOB reader (a compressed HTTP body).
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
  options: { readonly byob?: boolean } = {},
): Promise<Uint8Array<ArrayBuffer>> {
  const blocks = new Blocks(maxBytes + 1);
  let byob: ReadableStreamBYOBReader | null = null;
  if (options.byob) {
    try {
      byob = stream.getReader({ mode: "byob" });
    } catch {
      // Not a byte stream: its chunks are copied instead.
    }
  }
  const reader = byob ?? stream.getReader();
  try {
    for (;;) {
      const done = byob === null
        ? await readChunk(reader as ReadableStreamDefaultReader<Uint8Array>, blocks)
        : await readInto(byob, blocks);
      if (blocks.total > maxBytes) {
        await reader.cancel();
        throw new ReportError(
          "size",
          `Cannot load report from ${label}: it is larger than ${maxBytes} bytes; pass a larger maxBytes if it is genuine`,
        );
      }
      if (done) break;
    }
  } finally {
    reader.releaseLock();
  }
  return blocks.joined();
}

/** Reads straight into the free part of the current block; true at the end of the stream. */
async function readInto(reader: ReadableStreamBYOBReader, blocks: Blocks): Promise<boolean> {
  const { done, value } = await reader.read(blocks.free());
  if (value !== undefined) blocks.filled(value);
  return done;
}

/** Copies the next chunk into the blocks (at most to their capacity); true at the end. */
async function readChunk(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  blocks: Blocks,
): Promise<boolean> {
  const { done, value } = await reader.read();
  if (value !== undefined) blocks.append(value);
  return done;
}

/** Bytes in fixed-size blocks up to a capacity, allocated as they fill. */
class Blocks {
  readonly #capacity: number;
  readonly #full: Uint8Array<ArrayBuffer>[] = [];
  #current: Uint8Array<ArrayBuffer>;
  #used = 0;
  /** Bytes held; the capacity when more came than it holds. */
  total = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#current = new Uint8Array(Math.min(BLOCK_BYTES, capacity));
  }

  /** The unfilled rest of the current block, a new block when it is full. */
  free(): Uint8Array<ArrayBuffer> {
    if (this.#used === this.#current.length) this.#next();
    return new Uint8Array(this.#current.buffer, this.#used, this.#current.length - this.#used);
  }

  /** Takes back the view a BYOB read returned (its buffer was transferred) with its new bytes. */
  filled(view: Uint8Array): void {
    this.#current = new Uint8Array(view.buffer as ArrayBuffer);
    this.#used += view.length;
    this.total += view.length;
  }

  /** Copies `chunk` in, up to the capacity: a chunk that overflows it fills it. */
  append(chunk: Uint8Array): void {
    let rest = chunk.subarray(0, Math.min(chunk.length, this.#capacity - this.total));
    while (rest.length > 0) {
      const free = this.free();
      const n = Math.min(free.length, rest.length);
      free.set(rest.subarray(0, n));
      this.#used += n;
      this.total += n;
      rest = rest.subarray(n);
    }
  }

  /** Everything held, in one buffer. */
  joined(): Uint8Array<ArrayBuffer> {
    if (this.#full.length === 0) return this.#current.subarray(0, this.#used);
    const out = new Uint8Array(this.total);
    let offset = 0;
    for (const block of [...this.#full, this.#current.subarray(0, this.#used)]) {
      out.set(block, offset);
      offset += block.length;
    }
    return out;
  }

  #next(): void {
    this.#full.push(this.#current);
    const held = this.#full.length * BLOCK_BYTES;
    this.#current = new Uint8Array(Math.max(0, Math.min(BLOCK_BYTES, this.#capacity - held)));
    this.#used = 0;
  }
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
