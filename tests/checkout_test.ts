import assert from "node:assert/strict";
import { gitCheckout, MEASURING_CODE } from "../calibrate/checkout.ts";

const ROOT = new URL("../", import.meta.url);

/** Runs git in `dir` and returns its output; fails the test when git does. */
async function git(dir: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=gpucal", "-c", "user.email=gpucal@example.invalid", ...args],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

async function write(dir: string, path: string, text: string): Promise<void> {
  await Deno.mkdir(`${dir}/${path.split("/").slice(0, -1).join("/")}`, { recursive: true });
  await Deno.writeTextFile(`${dir}/${path}`, text);
}

Deno.test("a checkout measures as an earlier commit until a kernel, a runner or the measuring loop changes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await git(dir, "init", "-q");
    await write(dir, "kernels/add.ts", "export const add = 1;\n");
    await write(dir, "models/predict.ts", "export const p = 1;\n");
    await git(dir, "add", ".");
    await git(dir, "commit", "-q", "-m", "first");
    const first = await git(dir, "rev-parse", "HEAD");
    // A model and a report schema change what is made of times, not the times.
    await write(dir, "models/predict.ts", "export const p = 2;\n");
    await git(dir, "commit", "-q", "-am", "a model");
    const checkout = await gitCheckout(new URL(`file://${dir}/`));
    assert.equal(checkout.commit, await git(dir, "rev-parse", "HEAD"));
    assert.equal(await checkout.measuresAs(first), true);
    // An uncommitted kernel change is measured code.
    await write(dir, "kernels/add.ts", "export const add = 2;\n");
    assert.equal(await checkout.measuresAs(first), false);
    assert.equal(await checkout.measuresAs(checkout.commit!), false);
    // A commit git does not have, or no commit at all, tells nothing.
    assert.equal(await checkout.measuresAs("0123456789abcdef0123456789abcdef01234567"), null);
    assert.equal(await checkout.measuresAs("not a commit"), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("outside a git work tree a checkout has no commit and tells nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const checkout = await gitCheckout(new URL(`file://${dir}/`));
    assert.equal(checkout.commit, null);
    assert.equal(await checkout.measuresAs("0123456789abcdef0123456789abcdef01234567"), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const remote = await gitCheckout(new URL("https://example.invalid/gpucal/"));
  assert.equal(remote.commit, null);
});

/** The local modules `path` imports for their values (not `import type`), static or dynamic. */
async function valueImports(path: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(path, ROOT));
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const specifiers = [
    ...code.matchAll(/^\s*(?:import|export)\s+(?!type\s)(?:[^;]*?\sfrom\s+)?"([^"]+)"/gms),
    ...code.matchAll(/import\(\s*"([^"]+)"\s*\)/g),
    ...code.matchAll(/new URL\(\s*"([^"]+\.ts)",\s*import\.meta\.url\s*\)/g),
  ].map((m) => m[1]!);
  return specifiers
    .filter((s) => s.startsWith("."))
    .map((s) => new URL(s, new URL(path, ROOT)).pathname.slice(ROOT.pathname.length));
}

Deno.test("every module a measurement runs is measuring code", async () => {
  const seen = new Set<string>();
  const queue = ["calibrate/measure.ts", "calibrate/runners/mod.ts"];
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    queue.push(...await valueImports(path));
  }
  const covered = (p: string) => MEASURING_CODE.some((c) => p === c || p.startsWith(`${c}/`));
  assert.deepEqual([...seen].filter((p) => !covered(p)), []);
  // The walk reaches the kernels, every runner and the wasm worker.
  for (
    const p of [
      "kernels/catalog.ts",
      "calibrate/runners/webgpu.ts",
      "calibrate/runners/_wasm_worker.ts",
    ]
  ) {
    assert.ok(seen.has(p), p);
  }
});
