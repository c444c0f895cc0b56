import assert from "node:assert/strict";
import {
  formatCount,
  formatMs,
  formatNumber,
  formatPercent,
  formatSeconds,
} from "../core/format.ts";

Deno.test("formatNumber() keeps three significant digits and no more", () => {
  assert.equal(formatNumber(85.47549601364616), "85.5");
  assert.equal(formatNumber(4.6), "4.60");
  assert.equal(formatNumber(0.020812), "0.0208");
  assert.equal(formatNumber(-13.349), "-13.3");
  assert.equal(formatNumber(2.2617458552997163, 2), "2.3");
});

Deno.test("formatNumber() writes thousands plainly and only very large or small numbers with an exponent", () => {
  assert.equal(formatNumber(1818.498), "1820");
  assert.equal(formatNumber(999.7), "1000");
  assert.equal(formatNumber(770742), "771000");
  assert.equal(formatNumber(11863283), "1.19e7");
  assert.equal(formatNumber(0.00003466960050067386), "3.47e-5");
  assert.equal(formatNumber(0.001), "0.00100");
});

Deno.test("formatNumber() prints missing and infinite values as symbols", () => {
  assert.equal(formatNumber(null), "—");
  assert.equal(formatNumber(Number.NaN), "—");
  assert.equal(formatNumber(Infinity), "∞");
  assert.equal(formatNumber(0), "0");
});

Deno.test("formatSeconds() picks the unit that keeps the value at least 1", () => {
  assert.equal(formatSeconds(1818.498), "30.3 min");
  assert.equal(formatSeconds(59.99), "1.00 min");
  assert.equal(formatSeconds(23.4), "23.4 s");
  assert.equal(formatSeconds(7200), "2.00 h");
  assert.equal(formatSeconds(0.0122), "12.2 ms");
  assert.equal(formatSeconds(0), "0 s");
});

Deno.test("formatMs() prints a time per run in ns, µs, ms, s or min", () => {
  assert.equal(formatMs(0.0000209), "20.9 ns");
  assert.equal(formatMs(0.0363), "36.3 µs");
  assert.equal(formatMs(12.2), "12.2 ms");
  assert.equal(formatMs(770742), "12.8 min");
});

Deno.test("formatPercent() has one decimal and an optional sign", () => {
  assert.equal(formatPercent(0.15, true), "+15.0 %");
  assert.equal(formatPercent(-0.05, true), "-5.0 %");
  assert.equal(formatPercent(0.024), "2.4 %");
});

Deno.test("formatCount() writes sizes with a metric prefix and three significant digits", () => {
  assert.equal(formatCount(4), "4");
  assert.equal(formatCount(61.5), "61.5");
  assert.equal(formatCount(22100), "22.1k");
  assert.equal(formatCount(999.9), "1k");
  assert.equal(formatCount(11863283), "11.9M");
  assert.equal(formatCount(4096), "4.1k");
});
