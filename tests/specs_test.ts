import assert from "node:assert/strict";
import { parseSpecTables } from "../reports/specs.ts";
import { main, mergeSpecs } from "../reports/specs_cli.ts";

const FIXTURE = new URL("./fixtures/gpu_specs.html", import.meta.url);
const HTML = await Deno.readTextFile(FIXTURE);

function byModel(model: string) {
  return parseSpecTables(HTML, "gpu_specs.html").find((s) => s.model === model);
}

Deno.test("parseSpecTables() reads stacked headers and strips footnotes", () => {
  assert.deepEqual(byModel("Example RTX 9090"), {
    model: "Example RTX 9090",
    fp32Tflops: 82.58,
    fp16Tflops: 165.2,
    memoryGBps: 1008,
    source: "gpu_specs.html",
  });
  assert.equal(byModel("Example RTX 9080")?.fp32Tflops, 48.74);
});

Deno.test("parseSpecTables() expands rowspan and colspan cells", () => {
  const ti = byModel("Example RTX 9070 Ti");
  assert.equal(ti?.fp32Tflops, 40.09);
  assert.equal(ti.fp16Tflops, 40.09);
  assert.equal(ti.memoryGBps, 504.2);
  // A model spanning two rows takes what its first row lacks from the second.
  const split = byModel("Example RTX 9060");
  assert.equal(split?.memoryGBps, 288);
  assert.equal(split.fp16Tflops, 30.2);
});

Deno.test("parseSpecTables() converts GFLOPS and TB/s and ignores tables without figures", () => {
  const rx = byModel("Example RX 8900");
  assert.ok(Math.abs(rx!.fp32Tflops! - 61.39) < 1e-9);
  assert.ok(Math.abs(rx!.memoryGBps! - 960) < 1e-9);
  assert.ok(Math.abs(byModel("Example iGPU")!.fp32Tflops! - 2.15) < 1e-9);
  const models = parseSpecTables(HTML, "x").map((s) => s.model);
  assert.equal(models.length, 6);
  assert.ok(!models.some((m) => m === "Home" || m === "a"));
});

Deno.test("parseSpecTables() finds nothing in a page without spec tables", () => {
  assert.deepEqual(parseSpecTables("<p>No tables</p><table><tr><td>x</td></tr></table>", "p"), []);
});

Deno.test("mergeSpecs() replaces models already present and sorts by model", () => {
  const file = mergeSpecs(
    { "B": { fp32Tflops: 1, fp16Tflops: null, memoryGBps: null, source: "old" } },
    [{ model: "B", fp32Tflops: 2, fp16Tflops: 4, memoryGBps: 100, source: "new" }, {
      model: "A",
      fp32Tflops: 3,
      fp16Tflops: null,
      memoryGBps: null,
      source: "new",
    }],
    new Date("2026-01-01T00:00:00Z"),
  );
  assert.deepEqual(Object.keys(file.specs), ["A", "B"]);
  assert.equal(file.specs["B"]?.fp32Tflops, 2);
  assert.equal(file.generated, "2026-01-01T00:00:00.000Z");
});

Deno.test("specs:import merges a saved page into the specs file and names bad input", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpucal_specs_" });
  const { log, error } = console;
  const said: string[] = [];
  console.log = (...a: unknown[]) => said.push(a.join(" "));
  console.error = (...a: unknown[]) => said.push(a.join(" "));
  try {
    const out = `${dir}/specs.json`;
    assert.equal(await main([FIXTURE.pathname, "--out", out, "--source", "https://x.test/g"]), 0);
    const file = JSON.parse(await Deno.readTextFile(out));
    assert.equal(Object.keys(file.specs).length, 6);
    assert.equal(file.specs["Example RTX 9090"].source, "https://x.test/g");
    await Deno.writeTextFile(`${dir}/empty.html`, "<p>nothing</p>");
    assert.equal(await main([`${dir}/empty.html`, "--out", out]), 1);
    assert.equal(await main([`${dir}/missing.html`, "--out", out]), 2);
    assert.match(said.at(-1)!, /Cannot read ".*missing\.html"/);
    await Deno.writeTextFile(out, '{"generated": "x"}');
    assert.equal(await main([FIXTURE.pathname, "--out", out]), 1);
    assert.match(said.at(-1)!, /Cannot merge into ".*specs\.json"/);
    assert.equal(await main([]), 2);
  } finally {
    console.log = log;
    console.error = error;
    await Deno.remove(dir, { recursive: true });
  }
});
