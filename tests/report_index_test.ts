import assert from "node:assert/strict";
import { buildIndex } from "../reports/index.ts";
import { main } from "../reports/index_cli.ts";
import { ReportError } from "../reports/load.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";
import { cpuOnlyReport } from "./_report_variants.ts";

async function withDir(
  files: Record<string, Report | string>,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpucal_index_" });
  try {
    for (const [name, content] of Object.entries(files)) {
      await Deno.writeTextFile(
        `${dir}/${name}`,
        typeof content === "string" ? content : JSON.stringify(content),
      );
    }
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

const CPU_ONLY = cpuOnlyReport({
  slug: "cpu-only-arm64-00000000",
  fingerprint: "0000000011111111",
  machine: {
    cpuModel: "Apple M2",
    cores: 8,
    memoryGiB: 16,
    os: "darwin",
    osRelease: "24.1.0",
    arch: "aarch64",
  },
});

Deno.test("buildIndex() lists every report with its machine, adapter and SHA-256", async () => {
  const gpu = syntheticReport();
  await withDir({
    "b-gpu.json": gpu,
    "a-cpu.json": CPU_ONLY,
    "schema.json": "{}",
    "index.json": "{}",
    ".b-gpu.json.1234abcd.tmp": "partial",
    "notes.txt": "not json",
  }, async (dir) => {
    const index = await buildIndex(dir, { now: new Date("2026-02-01T00:00:00Z") });
    assert.equal(index.generated, "2026-02-01T00:00:00.000Z");
    assert.deepEqual(index.reports.map((r) => r.file), ["a-cpu.json", "b-gpu.json"]);
    const [cpu, g] = index.reports;
    assert.equal(cpu?.adapter, null);
    assert.deepEqual(cpu?.machine, { cpuModel: "Apple M2", cores: 8 });
    assert.deepEqual(g?.adapter, {
      description: "llvmpipe (LLVM 19.1.7, 256 bits)",
      backend: "vulkan",
      vendor: "mesa",
      software: true,
    });
    assert.equal(g?.slug, gpu.slug);
    assert.equal(g?.fingerprint, gpu.fingerprint);
    assert.equal(g?.date, gpu.provenance.date);
    assert.equal(g?.schemaVersion, 1);
    assert.equal(g?.complete, true);
    assert.equal(g?.sha256, await sha256(JSON.stringify(gpu)));
  });
});

Deno.test("buildIndex() lists a configuration's driver settings, and none for the default one", async () => {
  const oneThread = syntheticReport({ slug: "llvmpipe-vulkan-x86_64-3f9a1c0d-lp_num_threads-1" });
  oneThread.provenance.driverEnv = { DENO_WEBGPU_BACKEND: "vulkan", LP_NUM_THREADS: "1" };
  const usual = syntheticReport();
  usual.provenance.driverEnv = { DENO_WEBGPU_BACKEND: "vulkan" };
  await withDir({ "a.json": usual, "b.json": oneThread }, async (dir) => {
    const [a, b] = (await buildIndex(dir)).reports;
    assert.equal(a?.driverEnv, undefined);
    assert.deepEqual(b?.driverEnv, { LP_NUM_THREADS: "1" });
  });
});

Deno.test("buildIndex() names the file of an invalid report", async () => {
  const bad = { ...syntheticReport(), slug: "Not A Slug" };
  await withDir({ "good.json": syntheticReport(), "broken.json": bad as Report }, async (dir) => {
    await assert.rejects(() => buildIndex(dir), (e: unknown) => {
      assert.ok(e instanceof ReportError);
      assert.equal(e.kind, "invalid");
      assert.match(e.message, /Cannot index ".*broken\.json": Invalid report: "slug"/);
      return true;
    });
  });
  await withDir({ "torn.json": '{"schemaVersion": 1, ' }, async (dir) => {
    await assert.rejects(() => buildIndex(dir), /Cannot index ".*torn\.json": .*JSON/);
  });
});

Deno.test("reports:index writes index.json atomically and exits 1 on an invalid report", async () => {
  const { log, error } = console;
  const said: string[] = [];
  console.log = (...a: unknown[]) => said.push(a.join(" "));
  console.error = (...a: unknown[]) => said.push(a.join(" "));
  try {
    await withDir({ "r.json": syntheticReport() }, async (dir) => {
      assert.equal(await main(["--dir", dir]), 0);
      const index = JSON.parse(await Deno.readTextFile(`${dir}/index.json`));
      assert.equal(index.reports.length, 1);
      // The index itself is not indexed on the next run.
      assert.equal(await main(["--dir", dir]), 0);
      const again = JSON.parse(await Deno.readTextFile(`${dir}/index.json`));
      assert.equal(again.reports.length, 1);
      await Deno.writeTextFile(`${dir}/x.json`, "[]");
      assert.equal(await main(["--dir", dir]), 1);
      assert.match(said.at(-1)!, /x\.json/);
      assert.equal(await main(["--dir", `${dir}/missing`]), 2);
      assert.equal(await main(["--nope"]), 2);
    });
  } finally {
    console.log = log;
    console.error = error;
  }
});
