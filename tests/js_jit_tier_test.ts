import assert from "node:assert/strict";

Deno.test("js add runs at its loop's own speed whatever ran before it, with V8's default tiers", async () => {
  // V8's Maglev tier inlined a kernel's loop into the runner code that calls it and kept it at
  // Maglev's speed: js add n = 77 777 ran 0.130 ms as a process's first kernel where it ran
  // 0.057 ms after another kernel, or 2.3× the same loop written locally once a matmul had run
  // before it. The child compares both against that local loop, within one process.
  const child = await new Deno.Command("deno", {
    args: ["run", new URL("./_jit_tier_child.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(child.stdout) + new TextDecoder().decode(child.stderr);
  assert.ok(child.success, text.slice(-2000));
  const { first, later } = JSON.parse(text.trim().split("\n").at(-1)!);
  for (const ratio of [first, later]) {
    assert.ok(ratio < 1.4, `runner / local loop: first ${first}, after a matmul ${later}`);
  }
});
