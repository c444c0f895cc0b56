import assert from "node:assert/strict";

Deno.test("js kernels keep integer loop indices after any shape held a fraction", async () => {
  // Every { m, k, n } (and { rows, cols }) object shares its hidden class: once one held 0.5, all
  // of them hold boxed doubles, and a kernel handed one recompiles its loops in floating point
  // (a js matmul at half speed for the rest of the process). V8 says so as a "not a Smi"
  // deoptimisation of the kernel.
  const child = await new Deno.Command("deno", {
    args: [
      "run",
      "--v8-flags=--no-maglev,--trace-deopt",
      new URL("./_loop_bounds_child.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(child.stdout) + new TextDecoder().decode(child.stderr);
  assert.ok(child.success, text.slice(-2000));
  assert.match(text, /ran/);
  const kernels = /deoptimizing \S+ <JSFunction (naive|f32Rows|softmaxRows|run)\b/;
  const smiDeopts = text.split("\n").filter((l) => /not a Smi/.test(l) && kernels.test(l));
  assert.deepEqual(smiDeopts, []);
});
