/**
 * Fetches a report over HTTP(S) defensively: one deadline for the whole exchange, redirects
 * followed only within the same origin (scheme, host and port), JSON-ish content types only, and
 * a byte cap on the body.
 *
 * @module
 */
import { readCapped } from "./_read.ts";
import { ReportError } from "./error.ts";

/** Same-origin redirects followed before giving up. */
export const MAX_REDIRECTS = 3;

/** Media types a report may be served as: JSON, raw GitHub's text/plain, or plain bytes. */
const ACCEPTED_TYPES = new Set(["application/json", "text/plain", "application/octet-stream"]);

/**
 * Options of {@linkcode fetchCapped}.
 *
 * @example
 * ```ts
 * import type { FetchCappedOptions } from "./_http.ts";
 * const o: FetchCappedOptions = { timeoutMs: 10_000, maxBytes: 1 << 20, fetch };
 * ```
 */
export interface FetchCappedOptions {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly fetch: typeof fetch;
}

/**
 * The URL as text without credentials, safe to put in a message.
 *
 * @param url Any URL.
 * @returns Its href with user name and password removed.
 * @example
 * ```ts
 * import { redactUrl } from "./_http.ts";
 * console.log(redactUrl(new URL("https://me:secret@host/r.json"))); // "https://host/r.json"
 * ```
 */
export function redactUrl(url: URL): string {
  if (url.username === "" && url.password === "") return url.href;
  const copy = new URL(url.href);
  copy.username = "";
  copy.password = "";
  return copy.href;
}

function mediaType(contentType: string | null): string | null {
  if (contentType === null) return null;
  return contentType.split(";")[0]!.trim().toLowerCase();
}

function acceptable(type: string): boolean {
  return ACCEPTED_TYPES.has(type) || type.endsWith("+json");
}

/**
 * Fetches `url` and returns its body, enforcing the deadline, redirect, content-type and size
 * rules.
 *
 * @param url An `http:` or `https:` URL.
 * @param options Deadline, size cap and fetch implementation.
 * @returns The body's bytes.
 * @throws {ReportError} With kind `timeout`, `not-found`, `http`, `size`, `permission` or `io`.
 * @example
 * ```ts ignore
 * import { fetchCapped } from "./_http.ts";
 * const bytes = await fetchCapped(new URL("https://example.com/report.json"), {
 *   timeoutMs: 10_000, maxBytes: 64 << 20, fetch,
 * });
 * ```
 */
export async function fetchCapped(
  url: URL,
  options: FetchCappedOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  let current = url;
  try {
    for (let hops = 0;; hops++) {
      const response = await options.fetch(current, {
        redirect: "manual",
        signal: controller.signal,
        headers: { accept: "application/json, text/plain;q=0.9, */*;q=0.1" },
      });
      const next = await redirectTarget(response, current, hops);
      if (next !== null) {
        current = next;
        continue;
      }
      await checkResponse(response, current, options.maxBytes);
      if (response.body === null) return new Uint8Array(0);
      // Only a compressed body needs the BYOB read that bounds memory (see readCapped).
      return await readCapped(response.body, options.maxBytes, redactUrl(current), {
        byob: response.headers.has("content-encoding"),
      });
    }
  } catch (error) {
    throw fetchError(error, current, controller.signal.aborted, options.timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

/** The next URL when `response` is a redirect we may follow, null when it is not a redirect. */
async function redirectTarget(response: Response, from: URL, hops: number): Promise<URL | null> {
  const label = redactUrl(from);
  if (response.type === "opaqueredirect") {
    throw new ReportError(
      "http",
      `Cannot load report from ${label}: it redirects to a hidden location; use the final URL`,
    );
  }
  if (response.status < 300 || response.status > 399) return null;
  await response.body?.cancel();
  const location = response.headers.get("location");
  if (location === null) {
    throw new ReportError(
      "http",
      `Cannot load report from ${label}: HTTP ${response.status} without a Location header`,
    );
  }
  let next: URL;
  try {
    next = new URL(location, from);
  } catch (cause) {
    throw new ReportError(
      "http",
      `Cannot load report from ${label}: it redirects to an invalid URL ${
        JSON.stringify(location.slice(0, 200))
      }`,
      [],
      { cause },
    );
  }
  // The origin, not the host name: another port on the same host is another server.
  if (next.origin !== from.origin) {
    throw new ReportError(
      "http",
      `Cannot load report from ${label}: refusing its redirect to ${
        redactUrl(next)
      }, another host, port or scheme; load that URL directly if you trust it`,
    );
  }
  if (hops >= MAX_REDIRECTS) {
    throw new ReportError(
      "http",
      `Cannot load report from ${label}: more than ${MAX_REDIRECTS} redirects; use the final URL`,
    );
  }
  return next;
}

async function checkResponse(response: Response, url: URL, maxBytes: number): Promise<void> {
  const label = redactUrl(url);
  if (!response.ok) {
    await response.body?.cancel();
    const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
    if (response.status === 404 || response.status === 410) {
      throw new ReportError(
        "not-found",
        `Cannot load report from ${label}: ${status}; check the URL`,
      );
    }
    throw new ReportError("http", `Cannot load report from ${label}: ${status}; try again later`);
  }
  const type = mediaType(response.headers.get("content-type"));
  if (type === null || !acceptable(type)) {
    await response.body?.cancel();
    const got = type === null ? "no Content-Type" : `Content-Type "${type}"`;
    const hint = type === "text/html"
      ? "; link the raw file (e.g. raw.githubusercontent.com), not a web page"
      : "";
    throw new ReportError(
      "http",
      `Cannot load report from ${label}: expected JSON, got ${got}${hint}`,
    );
  }
  const length = Number(response.headers.get("content-length") ?? NaN);
  if (Number.isFinite(length) && length > maxBytes) {
    await response.body?.cancel();
    throw new ReportError(
      "size",
      `Cannot load report from ${label}: it is ${length} bytes, over the ${maxBytes} byte limit; pass a larger maxBytes if it is genuine`,
    );
  }
}

function fetchError(error: unknown, url: URL, timedOut: boolean, timeoutMs: number): ReportError {
  const label = redactUrl(url);
  const options = { cause: error };
  if (error instanceof ReportError) return error;
  if (timedOut) {
    return new ReportError(
      "timeout",
      `Cannot load report from ${label}: no complete answer within ${timeoutMs} ms; check the server or pass a larger timeoutMs`,
      [],
      options,
    );
  }
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
    return new ReportError(
      "permission",
      `Cannot load report from ${label}: network access to ${url.host} is not allowed; pass --allow-net=${url.host}`,
      [],
      options,
    );
  }
  const why = error instanceof Error ? error.message : String(error);
  return new ReportError(
    "io",
    `Cannot load report from ${label}: ${why}; check the URL and the network`,
    [],
    options,
  );
}
