import assert from "node:assert/strict";
import { main } from "../models/select_cli.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("select prints the chosen backend and a prediction per backend", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/r.json`;
    await Deno.writeTextFile(path, JSON.stringify(syntheticReport()));
    const text = await captureCli(() =>
      main(["--report", path, "--op", "matmul", "--shape", "512x512x512"])
    );
    assert.equal(text.code, 0, text.err);
    assert.match(text.out, /predicted ms/);
    for (const backend of ["js", "wasm", "wasm-mt", "webgpu"]) {
      assert.match(text.out, new RegExp(backend));
    }
    const json = await captureCli(() =>
      main(["--report", path, "--op", "add", "--shape", "1048576", "--json"])
    );
    const decision = JSON.parse(json.out);
    assert.ok(["js", "wasm", "wasm-mt", "webgpu"].includes(decision.backend));
    assert.ok(decision.predictions.length >= 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("select names the bad flag and exits with code 2", async () => {
  const missing = await captureCli(() => main(["--op", "matmul", "--shape", "2x2x2"]));
  assert.equal(missing.code, 2);
  assert.match(missing.err, /--report is required/);
  const shape = await captureCli(() =>
    main(["--report", "r.json", "--op", "matmul", "--shape", "2x2"])
  );
  assert.equal(shape.code, 2);
  assert.match(shape.err, /--shape: "2x2" is not 3 positive integers/);
  const op = await captureCli(() => main(["--report", "r.json", "--op", "conv", "--shape", "2"]));
  assert.equal(op.code, 2);
  assert.match(op.err, /--op: "conv" is not one of/);
});

Deno.test("deno task select reads its report from an http URL (the task has --allow-net)", async () => {
  const body = JSON.stringify(syntheticReport());
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) =>
      new URL(req.url).pathname === "/r.json"
        ? new Response(body, { headers: { "content-type": "application/json" } })
        : new Response("Not found", { status: 404 }),
  );
  try {
    const url = `http://127.0.0.1:${server.addr.port}/r.json`;
    const run = await new Deno.Command("deno", {
      args: ["task", "-q", "select", "--report", url, "--op", "matmul", "--shape", "64x64x64"],
      cwd: new URL("..", import.meta.url),
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(120_000),
    }).output();
    const out = new TextDecoder().decode(run.stdout);
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    assert.match(out, /^(js|wasm|wasm-mt|webgpu) \(/);
    assert.match(out, /predicted ms/);
  } finally {
    await server.shutdown();
  }
});
