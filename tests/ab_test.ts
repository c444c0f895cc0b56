import assert from "node:assert/strict";
import { abCases, type AbRound, formatAb, judgeAb } from "../reports/ab.ts";
import { main } from "../reports/ab_cli.ts";
import { captureCli } from "./_console.ts";

const CASES = abCases(["webgpu", "wasm"], ["matmul", "add"]);

/** Rounds whose times drift by `drift` per round on both sides alike, B `slower`× A on `backend`. */
function rounds(count: number, backend: string, slower: number, jitter = 0.03): AbRound[] {
  return Array.from({ length: count }, (_, r) => {
    const host = 1 + 0.3 * Math.sin(r);
    return {
      a: CASES.map((_, i) => host * (1 + jitter * Math.sin(3 * r + i))),
      b: CASES.map((c, i) =>
        host * (1 + jitter * Math.cos(5 * r + i)) * (c.backend === backend ? slower : 1)
      ),
    };
  });
}

Deno.test("judgeAb() finds B 30 % slower on the backend that slowed, while the host drifts ±30 %", () => {
  const result = judgeAb(CASES, rounds(8, "webgpu", 1.3), 0.1);
  assert.equal(result.regressed, true);
  const [webgpu, wasm] = result.backends;
  assert.equal(webgpu?.backend, "webgpu");
  assert.equal(webgpu.regressed, true, webgpu.note);
  assert.ok(Math.abs(webgpu.change - 0.3) < 0.03, `${webgpu.change}`);
  assert.equal(wasm?.regressed, false, wasm?.note);
});

Deno.test("judgeAb() calls nothing between two identical sides", () => {
  const result = judgeAb(CASES, rounds(8, "webgpu", 1), 0.1);
  assert.equal(result.regressed, false);
  assert.ok(result.backends.every((b) => !b.beyondNoise));
});

Deno.test("judgeAb() does not call a change the rounds disagree on", () => {
  // B is 60 % slower in half of the rounds and 15 % faster in the others: +17 % on average.
  const wild = rounds(6, "webgpu", 1).map((r, i) => ({
    a: r.a,
    b: r.b.map((ms, j) => CASES[j]!.backend === "webgpu" ? ms! * (i % 2 ? 1.6 : 0.85) : ms),
  }));
  const webgpu = judgeAb(CASES, wild, 0.1).backends.find((b) => b.backend === "webgpu")!;
  assert.equal(webgpu.regressed, false, webgpu.note);
  assert.match(webgpu.note, /within noise/);
});

Deno.test("judgeAb() leaves out rounds in which a case failed, and needs two complete rounds", () => {
  const few = rounds(3, "wasm", 2);
  few[0] = { a: few[0]!.a, b: few[0]!.b.map(() => null) };
  few[1] = { a: few[1]!.a, b: few[1]!.b.map(() => null) };
  assert.equal(judgeAb(CASES, few, 0.1).backends.length, 0);
});

Deno.test("formatAb() heads a job summary with the verdict and names the backend", () => {
  const md = formatAb(judgeAb(CASES, rounds(8, "webgpu", 1.3), 0.1), "markdown", {
    a: "deno .",
    b: "LP_NUM_THREADS=1 deno .",
  });
  assert.match(md, /^### ❌ gpucal A\/B check$/m);
  assert.match(md, /B is slower than A beyond noise on webgpu/);
  assert.match(md, /^\| webgpu \| \+3\d\.\d % \| .* \| slower \|/m);
});

Deno.test("check:ab exits 2 on bad flags, naming the flag", async () => {
  const cases: Array<[string[], RegExp]> = [
    [["--rounds", "1"], /--rounds must be a whole number from 2 to 100/],
    [["--b-env", "LP_NUM_THREADS"], /--b-env: "LP_NUM_THREADS" is not KEY=VALUE/],
    [["--ops", "softmax"], /--ops: "softmax" is not one of matmul, add/],
    [["--b", "/nonexistent"], /--b: "\/nonexistent" has no mod\.ts/],
    [["--format", "html"], /--format: "html" is not one/],
  ];
  for (const [args, message] of cases) {
    const { code, err } = await captureCli(() => main(args));
    assert.equal(code, 2, args.join(" "));
    assert.match(err, message);
  }
});

Deno.test("check:ab measures two sides alternately and judges them", async () => {
  const { code, out } = await captureCli(() =>
    main(["--backends", "js", "--ops", "add", "--rounds", "2", "--tolerance", "50%"])
  );
  assert.notEqual(code, 2, out);
  assert.match(out, /^gpucal A\/B: A = deno .*; B = deno /m);
  assert.match(out, /^js +[+-]\d+\.\d % /m);
});
