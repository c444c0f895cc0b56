import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { syntheticReport } from "./_fixtures.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

/** Serves the repository read-only, as a raw-file host would, plus one report. */
function serveRepo(report: unknown) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    if (path === "/report.json") {
      return new Response(JSON.stringify(report), { headers: { "content-type": "text/plain" } });
    }
    if (path.includes("..")) return new Response("Bad path", { status: 400 });
    try {
      const body = await Deno.readFile(ROOT + path);
      return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
    } catch {
      return new Response("Not found", { status: 404 });
    }
  });
}

// What a user writes: import gpucal from a URL, with no import map and no lockfile of ours.
const PROGRAM = `
const [base] = Deno.args;
const { BackendSelector, loadReport } = await import(base + "/mod.ts");
const report = await loadReport(base + "/report.json");
const choice = BackendSelector.fromReport(report)
  .select({ op: "matmul", shape: { m: 512, k: 512, n: 512 }, dtype: "f32" });
console.log(JSON.stringify({ backend: choice.backend, ms: choice.predictedMs[choice.backend] }));
`;

Deno.test("mod.ts imported over HTTP loads a report over HTTP and selects a backend", async () => {
  const server = serveRepo(syntheticReport());
  const dir = await Deno.makeTempDir();
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    const program = `${dir}/user.ts`;
    await Deno.writeTextFile(program, PROGRAM);
    // A separate process, so the remote modules never enter this repository's lockfile.
    const out = await new Deno.Command("deno", {
      args: [
        "run",
        "--no-lock",
        "--no-config",
        "--allow-net=127.0.0.1",
        "--allow-import=127.0.0.1",
        "--allow-env",
        program,
        base,
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, `the user's program failed:\n${stderr}`);
    const result = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").pop()!);
    assert.ok(["js", "wasm", "wasm-mt", "webgpu"].includes(result.backend));
    assert.ok(result.ms > 0);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
