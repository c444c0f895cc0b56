import assert from "node:assert/strict";
import {
  DEFAULT_STOPPING,
  median,
  medianCiHalfWidth,
  poolWindows,
  quantile,
  stopReason,
  summarize,
} from "../core/stats.ts";
import { seededRng } from "../kernels/_random.ts";

function lognormalSamples(n: number, center: number, sigma: number, seed: number): number[] {
  const rng = seededRng(seed);
  return Array.from({ length: n }, () => {
    const z = Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
    return center * Math.exp(sigma * z);
  });
}

Deno.test("quantile() interpolates between order statistics", () => {
  assert.equal(quantile([1, 2, 3, 4], 0), 1);
  assert.equal(quantile([1, 2, 3, 4], 1), 4);
  assert.equal(quantile([1, 2, 3, 4], 0.5), 2.5);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

Deno.test("median() ignores one wild outlier", () => {
  assert.equal(median([1, 1.1, 0.9, 1, 1000]), 1);
});

Deno.test("summarize() reports median, percentiles, MAD and extremes", () => {
  const s = summarize([5, 1, 4, 2, 3]);
  assert.equal(s.n, 5);
  assert.equal(s.median, 3);
  assert.equal(s.min, 1);
  assert.equal(s.max, 5);
  assert.equal(s.mad, 1);
  assert.ok(Math.abs(s.p10 - 1.4) < 1e-12);
  assert.ok(Math.abs(s.p90 - 4.6) < 1e-12);
});

Deno.test("summarize() refuses no samples and non-finite samples", () => {
  assert.throws(() => summarize([]), RangeError);
  assert.throws(() => summarize([1, NaN]), /non-finite/);
});

Deno.test("the median's confidence interval narrows like 1/sqrt(n)", () => {
  const small = summarize(lognormalSamples(25, 10, 0.05, 1));
  const large = summarize(lognormalSamples(400, 10, 0.05, 1));
  assert.ok(large.ciHalfWidth < small.ciHalfWidth);
  const ratio = small.ciHalfWidth / large.ciHalfWidth;
  assert.ok(ratio > 2 && ratio < 8, `ratio ${ratio} should be near sqrt(16) = 4`);
});

Deno.test("the median's 95 % interval covers the true median about 95 % of the time", () => {
  let covered = 0;
  const trials = 400;
  for (let t = 0; t < trials; t++) {
    const sorted = lognormalSamples(31, 10, 0.1, 1000 + t).sort((a, b) => a - b);
    const m = quantile(sorted, 0.5);
    const h = medianCiHalfWidth(sorted);
    if (Math.abs(m - 10) <= h) covered++;
  }
  const rate = covered / trials;
  assert.ok(rate > 0.88 && rate <= 1, `coverage ${rate}`);
});

Deno.test("stopReason() stops when the median is known to 2 %", () => {
  const tight = lognormalSamples(20, 1, 0.01, 3);
  assert.equal(stopReason(tight, 10, DEFAULT_STOPPING), "converged");
});

Deno.test("stopReason() keeps sampling a noisy kernel until its budget is spent", () => {
  const noisy = lognormalSamples(20, 1, 0.5, 4);
  assert.equal(stopReason(noisy, 10, DEFAULT_STOPPING), null);
  assert.equal(stopReason(noisy, DEFAULT_STOPPING.budgetMs, DEFAULT_STOPPING), "budget");
});

Deno.test("stopReason() never stops a steady kernel before the minimum sample count", () => {
  assert.equal(stopReason([1, 1, 1], 0, DEFAULT_STOPPING), null);
  const capped = { ...DEFAULT_STOPPING, maxSamples: 10 };
  assert.equal(stopReason(lognormalSamples(10, 1, 0.5, 5), 0, capped), "max-samples");
});

Deno.test("poolWindows() counts each window once, however many samples it took", () => {
  // A fast minute gave 100 samples, a slow one 10: the pooled median is between the two windows,
  // not the fast window's because it has more samples.
  const fast = Array.from({ length: 100 }, () => 1);
  const slow = Array.from({ length: 10 }, () => 2);
  const s = poolWindows([fast, slow]);
  assert.equal(s.median, 1.5);
  assert.equal(s.n, 110);
  assert.equal(s.min, 1);
  assert.equal(s.max, 2);
});

Deno.test("poolWindows() is at least as unsure as its windows disagree", () => {
  const s = poolWindows([[1, 1, 1, 1, 1, 1, 1], [1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2], [1.1]]);
  assert.equal(s.median, 1.1);
  assert.ok(Math.abs(s.ciHalfWidth - 0.1) < 1e-12);
  assert.ok(Math.abs(s.relCi - 0.1 / 1.1) < 1e-12);
});

Deno.test("poolWindows() of one window is that window's summary", () => {
  const w = lognormalSamples(50, 3, 0.05, 11);
  assert.deepEqual(poolWindows([w, []]), summarize(w));
  assert.throws(() => poolWindows([[], []]), /zero samples/);
});
