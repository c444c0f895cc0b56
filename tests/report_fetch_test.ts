import assert from "node:assert/strict";
import { DEFAULT_MAX_BYTES, loadReport, ReportError, type ReportIssue } from "../reports/load.ts";
import { syntheticReport } from "./_fixtures.ts";

const REPORT_TEXT = JSON.stringify(syntheticReport());

/** Serves `handler` on 127.0.0.1 (a random port) for the duration of `fn`. */
async function withServer(
  handler: (request: Request) => Response,
  fn: (base: string) => Promise<void>,
): Promise<void> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
}

const json = (body: BodyInit, headers: Record<string, string> = {}) =>
  new Response(body, { headers: { "content-type": "application/json", ...headers } });

Deno.test("loadReport() refuses a redirect to the same host on another port", async () => {
  await withServer(() => json(REPORT_TEXT), async (other) => {
    const port = new URL(other).port;
    await withServer(
      () => new Response(null, { status: 302, headers: { location: `${other}/report.json` } }),
      async (base) => {
        const e = await loadReport(`${base}/moved`).catch((e: unknown) => e);
        assert.ok(e instanceof ReportError, String(e));
        assert.equal(e.kind, "http");
        assert.match(
          e.message,
          new RegExp(
            `refusing its redirect to http://127\\.0\\.0\\.1:${port}/report\\.json, another host, port or scheme`,
          ),
        );
      },
    );
  });
});

/** A transport answering every URL with the synthetic report, counting requests. */
function fakeServer(): { fetch: typeof fetch; hits: () => number } {
  let hits = 0;
  return {
    fetch: () => {
      hits++;
      return Promise.resolve(json(REPORT_TEXT));
    },
    hits: () => hits,
  };
}

Deno.test("loadReport() warns once per origin about an unpinned plain-HTTP report", async () => {
  const server = fakeServer();
  const warnings: ReportIssue[] = [];
  const options = { fetch: server.fetch, onWarning: (w: ReportIssue) => warnings.push(w) };
  await loadReport("http://reports.example.test/a.json", options);
  await loadReport("http://reports.example.test/b.json", options);
  assert.equal(server.hits(), 2);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  assert.equal(warnings[0]!.path, "");
  assert.match(
    warnings[0]!.message,
    /plain HTTP from http:\/\/reports\.example\.test: .* use https:, pin it with sha256, or pass allowInsecure: true/,
  );
});

Deno.test("loadReport() loads plain HTTP quietly with allowInsecure, a pin, or on loopback", async () => {
  const server = fakeServer();
  const warnings: ReportIssue[] = [];
  const onWarning = (w: ReportIssue) => warnings.push(w);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(REPORT_TEXT));
  const sha256 = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0"))
    .join("");
  await loadReport("http://insecure.example.test/r.json", {
    fetch: server.fetch,
    onWarning,
    allowInsecure: true,
  });
  await loadReport("http://pinned.example.test/r.json", { fetch: server.fetch, onWarning, sha256 });
  await loadReport("http://127.0.0.1:9/r.json", { fetch: server.fetch, onWarning });
  assert.equal(server.hits(), 3);
  assert.deepEqual(warnings, []);
});

const CAP = DEFAULT_MAX_BYTES;

/**
 * A body of `total` bytes (a `{` then spaces), produced only as fast as it is read: a 10 GiB bomb
 * is never in memory or on disk, and the server stops when the client gives up.
 */
function lazyBody(total: number): ReadableStream<Uint8Array<ArrayBuffer>> {
  const chunk = new Uint8Array(1 << 20).fill(0x20);
  let sent = 0;
  return new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (sent >= total) return controller.close();
      controller.enqueue(sent === 0 ? new TextEncoder().encode("{") : chunk);
      sent += sent === 0 ? 1 : chunk.length;
    },
  }, { highWaterMark: 0 });
}

/** A gzip compressor, typed as the byte transform it is. */
function gzip(): TransformStream<Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>> {
  return new CompressionStream("gzip") as unknown as TransformStream<
    Uint8Array<ArrayBuffer>,
    Uint8Array<ArrayBuffer>
  >;
}

/** Loads `url` in a subprocess at the default limits: how it ended and its peak RSS. */
async function loadInSubprocess(url: string): Promise<{ outcome: string; peakRssBytes: number }> {
  const child = new Deno.Command("deno", {
    args: [
      "run",
      "--allow-run=deno",
      "--allow-net=127.0.0.1",
      new URL("./_load_rss_child.ts", import.meta.url).pathname,
      url,
    ],
    stdout: "piped",
    stderr: "piped",
    // Bounded: a hang is a failure, not a stuck suite.
    signal: AbortSignal.timeout(180_000),
  });
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, `child failed: ${text}${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

Deno.test("a 10 GiB gzip bomb stops at the 64 MiB cap with peak RSS under 3× the cap", async () => {
  await withServer(
    () =>
      json(lazyBody(10 * 2 ** 30).pipeThrough(gzip()), {
        "content-encoding": "gzip",
      }),
    async (base) => {
      const { outcome, peakRssBytes } = await loadInSubprocess(`${base}/bomb.json`);
      assert.equal(outcome, "size");
      assert.ok(
        peakRssBytes < 3 * CAP,
        `peak RSS ${(peakRssBytes / 2 ** 20).toFixed(0)} MiB, over 3 × the ${
          CAP / 2 ** 20
        } MiB cap`,
      );
    },
  );
});

Deno.test("a plain 256 MiB body stops at the cap with peak RSS under 3× the cap", async () => {
  await withServer(() => json(lazyBody(256 * 2 ** 20)), async (base) => {
    const { outcome, peakRssBytes } = await loadInSubprocess(`${base}/plain.json`);
    assert.equal(outcome, "size");
    assert.ok(peakRssBytes < 3 * CAP, `peak RSS ${(peakRssBytes / 2 ** 20).toFixed(0)} MiB`);
  });
});
