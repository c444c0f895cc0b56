/**
 * The measuring side of `deno task check:ab`. Each side of an A/B comparison runs this file in
 * its own long-lived process, with its own runtime and environment: it imports the side's
 * checkout of gpucal (its `mod.ts`) and prints `ready`; then for every line it reads, a JSON
 * array of measure requests, it measures them once, interleaved round-robin, and prints one JSON
 * line `{ "ms": [...], "errors": [...] }` (each request's median ms per run, or null and why). It
 * needs only `measureMany`, which every gpucal checkout exports, so an older checkout is
 * measured by its own code.
 *
 * Usage: `deno run --allow-read --allow-env --allow-sys=cpus reports/ab_worker.ts MOD_URL`
 *
 * @module
 */
import { lines } from "./_lines.ts";

/** The part of `mod.ts` the worker uses. */
interface Gpucal {
  measureMany(
    requests: readonly unknown[],
    options: {
      stopping: { budgetMs: number; minSamples: number; targetRelCi: number };
      runners?: (backend: string) => Promise<unknown>;
    },
  ): Promise<
    readonly (
      | { state: "ok"; wall: { median: number } }
      | { state: "failed"; error: string }
      | { state: "unsupported"; reason: string }
    )[]
  >;
}

/** Short measurements: each side measures every case again in every round. */
const STOPPING = { budgetMs: 200, minSamples: 5, targetRelCi: 0.03 };

/**
 * Measures requests with a checkout's `measureMany` and returns the reply line.
 *
 * @param gpucal The checkout's module.
 * @param line A JSON array of measure requests.
 * @returns `{ ms, errors }` as a JSON string.
 * @example
 * ```ts ignore
 * import { measureLine } from "./ab_worker.ts";
 * console.log(await measureLine(await import("../mod.ts"), "[]"));
 * ```
 */
export async function measureLine(
  gpucal: Gpucal,
  line: string,
  runners?: (backend: string) => Promise<unknown>,
): Promise<string> {
  const requests = JSON.parse(line) as unknown[];
  const results = await gpucal.measureMany(requests, {
    stopping: STOPPING,
    ...(runners ? { runners } : {}),
  });
  return JSON.stringify({
    ms: results.map((r) => r.state === "ok" ? r.wall.median : null),
    errors: results.map((r) => r.state === "ok" ? null : r.state === "failed" ? r.error : r.reason),
  });
}

/**
 * The checkout's runners, opened once and kept for every request (opening one compiles its
 * kernels and, for WebGPU, requests a device: seconds per request otherwise); undefined when the
 * checkout has no `calibrate/runners/mod.ts`, and `measureMany` opens its own each time.
 */
async function keptRunners(
  modUrl: string,
): Promise<((backend: string) => Promise<unknown>) | undefined> {
  try {
    const { openRunner } = await import(new URL("calibrate/runners/mod.ts", modUrl).href) as {
      openRunner(backend: string): Promise<unknown>;
    };
    const open = new Map<string, Promise<unknown>>();
    return (backend) => {
      if (!open.has(backend)) open.set(backend, openRunner(backend));
      return open.get(backend)!;
    };
  } catch {
    return undefined;
  }
}

if (import.meta.main) {
  const [modUrl] = Deno.args;
  if (modUrl === undefined) {
    console.error("Usage: ab_worker.ts MOD_URL, then one JSON array of requests per line");
    Deno.exit(2);
  }
  const gpucal = await import(modUrl) as Gpucal;
  const runners = await keptRunners(modUrl);
  console.log("ready");
  for await (const line of lines(Deno.stdin.readable)) {
    if (line.trim() !== "") console.log(await measureLine(gpucal, line, runners));
  }
  // Runner pools (wasm-mt workers, the GPU device) would keep the process alive.
  Deno.exit(0);
}
