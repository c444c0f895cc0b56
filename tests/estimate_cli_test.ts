import assert from "node:assert/strict";
import { main } from "../models/llm/estimate_cli.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

const run = (args: string[]) => captureCli(() => main(args));

async function withReport(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/report.json`;
  await Deno.writeTextFile(path, JSON.stringify(syntheticReport()));
  try {
    await fn(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("estimate --help prints the usage and exits 0", async () => {
  const r = await run(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.out, /Usage: deno task estimate --report PATH/);
});

Deno.test("estimate prints plan, memory, prefill and decode rates with their sources", async () => {
  await withReport(async (path) => {
    const r = await run([
      "--report",
      path,
      "--model",
      "tiny-16m",
      "--quant",
      "int4",
      "--context",
      "256",
    ]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /Plan: none on 1 device/);
    assert.match(r.out, /Memory per device:\n {2}0: llvmpipe/);
    assert.match(r.out, /Prefill: [\d.]+ tokens\/s/);
    assert.match(r.out, /Decode: {2}[\d.]+ tokens\/s/);
    assert.match(r.out, /ms per step, bandwidth-bound, per-kernel: projections [\d.]+/);
    assert.match(r.out, /decode kernel q_proj ×4 on llvmpipe.*: gemv 512×512 q4 = [\d.]+ ms each/);
  });
});

Deno.test("estimate --backend prices that backend and prints the decode's stated range", async () => {
  const report = new URL("../reports/llvmpipe-vulkan-x86_64-32776e59.json", import.meta.url);
  const args = ["--report", report.pathname, "--model", "tiny-16m", "--quant", "int4"];
  const gpu = await run([...args, "--context", "64", "--backend", "webgpu"]);
  assert.equal(gpu.code, 0, gpu.err);
  assert.match(gpu.out, /backend webgpu \(asked for\)/);
  assert.match(
    gpu.out,
    /90 % range [\d.]+–[\d.]+ tokens\/s, from the kernel predictions' 90 % intervals/,
  );
  const cpu = await run([...args, "--context", "64", "--backend", "wasm"]);
  assert.equal(cpu.code, 0, cpu.err);
  assert.match(cpu.out, /no range: wasm \(CPU\) is priced as a roofline/);
  const bad = await run([...args, "--backend", "cuda"]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--backend must be one of webgpu, wasm, wasm-mt, js, got "cuda"/);
});

Deno.test("estimate shards a model too large for one device over --count devices", async () => {
  await withReport(async (path) => {
    const r = await run([
      "--report",
      path,
      "--count",
      "4",
      "--memory-gb",
      "3",
      "--model",
      "llama-3-8b",
      "--quant",
      "int4",
      "--context",
      "4096",
      "--interconnect",
      "pcie:32",
      "--json",
    ]);
    assert.equal(r.code, 0, r.err);
    const json = JSON.parse(r.out);
    assert.notEqual(json.plan.chosen.strategy, "none");
    assert.ok(json.estimate.decodeTokensPerSec > 0);
    assert.equal(json.estimate.memory.length, json.plan.chosen.devices.length);
  });
});

Deno.test("estimate rejects an unknown preset, a negative context and a model that fits nowhere", async () => {
  await withReport(async (path) => {
    const unknown = await run(["--report", path, "--model", "gpt-9"]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /Unknown model "gpt-9": presets are/);
    const negative = await run(["--report", path, "--context=-5"]);
    assert.equal(negative.code, 2);
    assert.match(negative.err, /--context must be a positive integer, got "-5"/);
    const big = await run(["--report", path, "--memory-gb", "1", "--quant", "f32"]);
    assert.equal(big.code, 2);
    assert.match(big.err, /needs .* but all 1 device\(s\) together have/);
  });
});

Deno.test("estimate without --report or with a missing file exits 2", async () => {
  assert.equal((await run([])).code, 2);
  const r = await run(["--report", "/nonexistent/report.json"]);
  assert.equal(r.code, 2);
});
