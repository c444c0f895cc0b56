import assert from "node:assert/strict";

Deno.test("the ./models entry loads a report and decides without runners, wabt or the decode", async () => {
  const entry = new URL("../models/light.ts", import.meta.url);
  const out = await new Deno.Command("deno", {
    args: ["info", "--json", entry.pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  };
  const specifiers = info.modules.map((m) => m.specifier);
  for (const heavy of ["/calibrate/runners/", "wabt", "/decode/", "/cli/"]) {
    assert.ok(!specifiers.some((s) => s.includes(heavy)), `${heavy} is loaded`);
  }
  const light = await import("../models/light.ts");
  for (const name of ["loadReport", "BackendSelector", "predictTime", "estimateTokensPerSec"]) {
    assert.equal(typeof (light as Record<string, unknown>)[name], "function", name);
  }
  const deno = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  assert.equal(deno.exports["./models"], "./models/light.ts");
});
