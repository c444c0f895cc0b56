import assert from "node:assert/strict";
import { MAX_EXTRAPOLATION } from "../models/_bounds.ts";
import { predictTime, recommendTuning } from "../models/predict.ts";
import { main } from "../models/select_cli.ts";
import { BackendSelector } from "../models/selector.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

const report = syntheticReport();
const selector = BackendSelector.fromReport(report);

Deno.test("select() refuses work far beyond the report's reach, saying by how much", () => {
  assert.throws(
    () => selector.selectForMatmul(1e12, 1e12, 1e12),
    (e: unknown) =>
      e instanceof RangeError &&
      /^Cannot predict matmul f32 at 1000000000000x1000000000000x1000000000000: its work is [\d.e+]+× the largest the report measured or fitted \(beyond the 1000× gpucal extrapolates\)/
        .test(e.message),
  );
  assert.throws(
    () => predictTime(report, { op: "add", shape: { n: 2 ** 52 }, dtype: "f32", backend: "js" }),
    /beyond the 1000× gpucal extrapolates/,
  );
  assert.throws(
    () =>
      recommendTuning(report, { op: "matmul", shape: { m: 1e6, k: 1e6, n: 1e6 }, dtype: "f32" }),
    /beyond the 1000×/,
  );
  assert.throws(() => selector.selectForVectorOp(1e300, 2), /beyond the 1000×/);
  assert.throws(() => selector.selectByComplexity("high", 1e15), /beyond the 1000×/);
});

Deno.test("select() predicts within the reach, extrapolated up to 1000× the largest work", () => {
  // The synthetic report measured matmul up to n = 512: 1000× its flops is n = 5120.
  const n = Math.floor(512 * Math.cbrt(MAX_EXTRAPOLATION)) - 16;
  const pick = selector.selectForMatmul(n, n, n);
  assert.equal(pick.provenance, "extrapolated");
  for (const ms of Object.values(pick.predictedMs)) assert.ok(Number.isFinite(ms) && ms > 0);
});

Deno.test("select() and predictTime() refuse a dimension that is not a positive safe integer", () => {
  for (const bad of [0, -4, NaN]) {
    assert.throws(() => selector.select({ op: "add", shape: { n: bad } }));
  }
  for (const bad of [1e300, 9007199254740993, 2.5]) {
    assert.throws(
      () => selector.select({ op: "add", shape: { n: bad } }),
      (e: unknown) =>
        e instanceof RangeError &&
        e.message.startsWith(`Invalid shape for add: "n" is ${bad}; pass a positive integer up to`),
      String(bad),
    );
  }
  assert.throws(
    () =>
      predictTime(report, {
        op: "matmul",
        shape: { m: 64, k: 2 ** 53 + 2, n: 64 },
        dtype: "f32",
        backend: "js",
      }),
    /Invalid shape for matmul: "k" is 9007199254740994/,
  );
});

Deno.test("select --shape refuses an unsafe or out-of-reach shape with exit 2 and one error line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/r.json`;
    await Deno.writeTextFile(path, JSON.stringify(report));
    const cases: [string, string, RegExp][] = [
      ["matmul", "1e12x1e12x1e12", /beyond the 1000× gpucal extrapolates/],
      ["matmul", "1e300x2x2", /"m" is 1e\+300; pass a positive integer/],
      [
        "add",
        "9007199254740993",
        /"n" is 9007199254740992; pass a positive integer up to 9007199254740991/,
      ],
    ];
    for (const [op, shape, message] of cases) {
      const run = await captureCli(() => main(["--report", path, "--op", op, "--shape", shape]));
      assert.equal(run.code, 2, shape);
      assert.equal(run.out, "");
      const [first, ...rest] = run.err.split("\n");
      assert.match(first!, /^error: /);
      assert.match(first!, message);
      assert.ok(rest.every((line) => line === "" || line.startsWith("Usage:")), run.err);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
