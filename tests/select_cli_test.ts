import assert from "node:assert/strict";
import { main } from "../models/select_cli.ts";
import { syntheticReport } from "./_fixtures.ts";

async function capture(
  fn: () => Promise<number>,
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  console.log = (...a: unknown[]) => out.push(a.join(" "));
  console.error = (...a: unknown[]) => err.push(a.join(" "));
  try {
    return { code: await fn(), out: out.join("\n"), err: err.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}

Deno.test("select prints the chosen backend and a prediction per backend", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/r.json`;
    await Deno.writeTextFile(path, JSON.stringify(syntheticReport()));
    const text = await capture(() =>
      main(["--report", path, "--op", "matmul", "--shape", "512x512x512"])
    );
    assert.equal(text.code, 0, text.err);
    assert.match(text.out, /predicted ms/);
    for (const backend of ["js", "wasm", "wasm-mt", "webgpu"]) {
      assert.match(text.out, new RegExp(backend));
    }
    const json = await capture(() =>
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
  const missing = await capture(() => main(["--op", "matmul", "--shape", "2x2x2"]));
  assert.equal(missing.code, 2);
  assert.match(missing.err, /--report is required/);
  const shape = await capture(() =>
    main(["--report", "r.json", "--op", "matmul", "--shape", "2x2"])
  );
  assert.equal(shape.code, 2);
  assert.match(shape.err, /--shape: "2x2" is not 3 positive integers/);
  const op = await capture(() => main(["--report", "r.json", "--op", "conv", "--shape", "2"]));
  assert.equal(op.code, 2);
  assert.match(op.err, /--op: "conv" is not one of/);
});
