import assert from "node:assert/strict";
import { loadReport, ReportError, type ReportErrorKind } from "../reports/load.ts";
import { syntheticReport } from "./_fixtures.ts";
import { readCapped } from "../reports/_read.ts";

const REPORT_TEXT = JSON.stringify(syntheticReport());
const REPORT_BYTES = new TextEncoder().encode(REPORT_TEXT);

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

const json = (body: BodyInit, init: ResponseInit = {}) =>
  new Response(body, { ...init, headers: { "content-type": "application/json", ...init.headers } });

/** What a route sees: the server's base URL and a promise settled when the test is over. */
interface RouteContext {
  readonly base: string;
  /** Resolves before the server shuts down, so stalled handlers can finish. */
  readonly testOver: Promise<void>;
}

/**
 * Serves `routes` on 127.0.0.1 (a random port) for the duration of `fn`; counts requests per path.
 * Unknown paths get 404.
 */
async function withServer(
  routes: Record<string, (context: RouteContext) => Response | Promise<Response>>,
  fn: (base: string, hits: Map<string, number>) => Promise<void>,
): Promise<void> {
  const hits = new Map<string, number>();
  const over = Promise.withResolvers<void>();
  let base = "";
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      const path = new URL(request.url).pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const route = routes[path];
      return route
        ? route({ base, testOver: over.promise })
        : new Response("no such report", { status: 404 });
    },
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await fn(base, hits);
  } finally {
    over.resolve();
    await server.shutdown();
  }
}

/** The ReportError `promise` rejects with, checked for kind and message. */
async function rejectsWith(
  promise: Promise<unknown>,
  kind: ReportErrorKind,
  message: RegExp,
): Promise<ReportError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ReportError, `expected a ReportError, got ${error}`);
    assert.equal(error.kind, kind, error.message);
    assert.match(error.message, message);
    return error;
  }
  assert.fail("loadReport() resolved, expected a rejection");
}

Deno.test("loadReport() fetches and validates a report over HTTP", async () => {
  await withServer({ "/report.json": () => json(REPORT_TEXT) }, async (base) => {
    const report = await loadReport(`${base}/report.json`);
    assert.equal(report.slug, syntheticReport().slug);
    assert.equal(report.measurements.length, syntheticReport().measurements.length);
  });
});

Deno.test("loadReport() accepts raw GitHub's text/plain and a matching sha256 pin", async () => {
  const pin = await sha256(REPORT_BYTES);
  await withServer({
    "/raw": () =>
      new Response(REPORT_TEXT, { headers: { "content-type": "text/plain; charset=utf-8" } }),
  }, async (base) => {
    const report = await loadReport(new URL(`${base}/raw`), { sha256: pin.toUpperCase() });
    assert.equal(report.schemaVersion, 1);
  });
});

Deno.test("loadReport() reports HTTP 404 and 500 with the URL", async () => {
  await withServer({ "/broken": () => new Response("oops", { status: 500 }) }, async (base) => {
    await rejectsWith(
      loadReport(`${base}/missing.json`),
      "not-found",
      new RegExp(`${base}/missing\\.json: HTTP 404 .*check the URL`),
    );
    await rejectsWith(loadReport(`${base}/broken`), "http", /HTTP 500 .*try again later/);
  });
});

Deno.test("loadReport() gives up on a server that never answers", async () => {
  await withServer({
    "/slow": async ({ testOver }) => {
      await testOver;
      return json("{}");
    },
  }, async (base) => {
    await rejectsWith(
      loadReport(`${base}/slow`, { timeoutMs: 150 }),
      "timeout",
      /no complete answer within 150 ms; .*pass a larger timeoutMs/,
    );
  });
});

Deno.test("loadReport() gives up on a body that stalls midway", async () => {
  await withServer({
    "/stall": ({ testOver }) => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(REPORT_BYTES.subarray(0, 100));
          await testOver;
          controller.close();
        },
      });
      return json(body);
    },
  }, async (base) => {
    await rejectsWith(loadReport(`${base}/stall`, { timeoutMs: 150 }), "timeout", /150 ms/);
  });
});

Deno.test("loadReport() refuses a body over maxBytes, declared or streamed", async () => {
  const chunked = () =>
    json(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 8; i++) controller.enqueue(new Uint8Array(1024).fill(32));
          controller.close();
        },
      }),
    );
  await withServer({ "/big": () => json(REPORT_TEXT), "/chunked": chunked }, async (base) => {
    await rejectsWith(
      loadReport(`${base}/big`, { maxBytes: 1000 }),
      "size",
      /is \d+ bytes, over the 1000 byte limit; pass a larger maxBytes/,
    );
    await rejectsWith(
      loadReport(`${base}/chunked`, { maxBytes: 3000 }),
      "size",
      /larger than 3000 bytes/,
    );
  });
});

Deno.test("loadReport() explains invalid JSON, a web page and a non-UTF-8 body", async () => {
  await withServer({
    "/bad.json": () => json("{ not json"),
    "/page": () => new Response("<html></html>", { headers: { "content-type": "text/html" } }),
    "/latin1": () => json(new Uint8Array([0x7b, 0xff, 0x7d])),
  }, async (base) => {
    await rejectsWith(
      loadReport(`${base}/bad.json`),
      "json",
      new RegExp(`${base}/bad\\.json: not valid JSON \\(.*\\); check that it is a raw report`),
    );
    await rejectsWith(
      loadReport(`${base}/page`),
      "http",
      /Content-Type "text\/html"; link the raw/,
    );
    await rejectsWith(loadReport(`${base}/latin1`), "json", /not UTF-8/);
  });
});

Deno.test("loadReport() rejects a schema-invalid report and a future schemaVersion", async () => {
  const invalid = { ...syntheticReport(), fingerprint: "nope" };
  const future = { ...syntheticReport(), schemaVersion: 3 };
  await withServer({
    "/invalid": () => json(JSON.stringify(invalid)),
    "/future": () => json(JSON.stringify(future)),
  }, async (base) => {
    const e = await rejectsWith(loadReport(`${base}/invalid`), "invalid", /"fingerprint"/);
    assert.equal(e.issues[0]?.path, "fingerprint");
    await rejectsWith(
      loadReport(`${base}/future`),
      "version",
      /"schemaVersion" is 3, .* reads 1; upgrade gpucal/,
    );
  });
});

Deno.test("loadReport() names both hashes when the sha256 pin does not match", async () => {
  const actual = await sha256(REPORT_BYTES);
  const pin = "0".repeat(64);
  await withServer({ "/report.json": () => json(REPORT_TEXT) }, async (base) => {
    await rejectsWith(
      loadReport(`${base}/report.json`, { sha256: pin }),
      "integrity",
      new RegExp(`SHA-256 is ${actual}, expected ${pin}`),
    );
  });
});

Deno.test("loadReport() follows same-host redirects and refuses other hosts and loops", async () => {
  await withServer({
    "/report.json": () => json(REPORT_TEXT),
    "/moved": () => new Response(null, { status: 301, headers: { location: "/report.json" } }),
    "/elsewhere": ({ base }) =>
      new Response(null, {
        status: 302,
        headers: { location: base.replace("127.0.0.1", "localhost") + "/report.json" },
      }),
    "/loop": () => new Response(null, { status: 302, headers: { location: "/loop" } }),
  }, async (base, hits) => {
    const report = await loadReport(`${base}/moved`);
    assert.equal(report.schemaVersion, 1);
    await rejectsWith(
      loadReport(`${base}/elsewhere`),
      "http",
      /refusing its redirect to http:\/\/localhost:\d+\/report\.json, another host/,
    );
    await rejectsWith(loadReport(`${base}/loop`), "http", /more than 3 redirects/);
    assert.equal(hits.get("/loop"), 4);
  });
});

Deno.test("loadReport() says which --allow-net flag is missing", async () => {
  const denied: typeof fetch = () => Promise.reject(new Deno.errors.NotCapable("net access"));
  await rejectsWith(
    loadReport("https://example.com:8443/r.json", { fetch: denied }),
    "permission",
    /pass --allow-net=example\.com:8443/,
  );
});

Deno.test("loadReport() serves a pinned report from the cache without fetching", async () => {
  const cacheDir = await Deno.makeTempDir();
  try {
    const pin = await sha256(REPORT_BYTES);
    await withServer({ "/report.json": () => json(REPORT_TEXT) }, async (base, hits) => {
      await loadReport(`${base}/report.json`, { cacheDir });
      assert.equal(await Deno.readTextFile(`${cacheDir}/${pin}.json`), REPORT_TEXT);
      const cached = await loadReport(`${base}/report.json`, { cacheDir, sha256: pin });
      assert.equal(cached.slug, syntheticReport().slug);
      assert.equal(hits.get("/report.json"), 1);
      await Deno.writeTextFile(`${cacheDir}/${pin}.json`, "corrupted");
      await loadReport(`${base}/report.json`, { cacheDir, sha256: pin });
      assert.equal(hits.get("/report.json"), 2);
      assert.equal(await Deno.readTextFile(`${cacheDir}/${pin}.json`), REPORT_TEXT);
    });
    assert.deepEqual(
      [...Deno.readDirSync(cacheDir)].map((e) => e.name),
      [`${pin}.json`],
    );
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("loadReport() reads a file by path or file: URL, size-checked first", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/report.json`;
    await Deno.writeTextFile(path, REPORT_TEXT);
    assert.equal((await loadReport(path)).slug, syntheticReport().slug);
    const url = new URL(`file://${path}`);
    assert.equal((await loadReport(url.href)).slug, syntheticReport().slug);
    await rejectsWith(loadReport(path, { maxBytes: 100 }), "size", /over the 100 byte limit/);
    await rejectsWith(
      loadReport(`${dir}/nope.json`),
      "not-found",
      /does not exist; check the path/,
    );
    await rejectsWith(loadReport(dir), "io", /is not a regular file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadReport() refuses other URL schemes and bad options", async () => {
  await rejectsWith(loadReport("ftp://example.com/r.json"), "invalid", /unsupported scheme "ftp:"/);
  await assert.rejects(loadReport("r.json", { sha256: "abc" }), TypeError);
  await assert.rejects(loadReport("r.json", { timeoutMs: 0 }), RangeError);
  await assert.rejects(loadReport("r.json", { maxBytes: -1 }), RangeError);
});

/** A byte stream of `bytes` that records whether any pull came with a BYOB request. */
function byteStream(
  bytes: Uint8Array,
): { stream: ReadableStream<Uint8Array>; byobPulls: () => number } {
  let byob = 0;
  let sent = false;
  const stream = new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (controller.byobRequest) byob++;
      if (sent) {
        controller.close();
        controller.byobRequest?.respond(0);
        return;
      }
      sent = true;
      controller.enqueue(bytes.slice());
    },
  });
  return { stream, byobPulls: () => byob };
}

Deno.test("readCapped() reads a file's byte stream without a BYOB reader, which would detach buffers", async () => {
  // A detached ArrayBuffer makes V8 check every later typed-array access: a plain js add ran
  // 2× slower for the rest of the process after one BYOB read.
  const plain = byteStream(new TextEncoder().encode("{}"));
  assert.equal(new TextDecoder().decode(await readCapped(plain.stream, 10, "a file")), "{}");
  assert.equal(plain.byobPulls(), 0);
  const compressed = byteStream(new TextEncoder().encode("{}"));
  assert.equal((await readCapped(compressed.stream, 10, "a body", { byob: true })).length, 2);
  assert.ok(compressed.byobPulls() > 0, "a compressed HTTP body is still read in place");
});
