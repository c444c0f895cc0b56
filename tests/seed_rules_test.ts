import assert from "node:assert/strict";
import {
  PCIE_RULE_DEFAULTS,
  pcieRule,
  SEED_THRESHOLDS,
  tfjsHandoffRule,
  thresholdRule,
} from "../bench/_seed_rules.ts";

Deno.test("pcieRule() picks the GPU only above 3125 FLOP per byte with the seeds' defaults", () => {
  assert.equal(pcieRule(3125 * 1001, 1000), "webgpu");
  assert.equal(pcieRule(3125 * 999, 1000), "wasm");
  assert.equal(pcieRule(1000, 1000), "wasm");
});

Deno.test("pcieRule() sends a 1024³ f32 matmul to SIMD: 171 FLOP per byte is far below 3125", () => {
  const n = 1024;
  assert.equal(pcieRule(2 * n ** 3, 3 * n * n * 4), "wasm");
});

Deno.test("pcieRule() never answers scalar, even for an empty workload", () => {
  assert.equal(pcieRule(0, 0), "wasm");
});

Deno.test("pcieRule() uses the given link, throughput and ratio instead of the defaults", () => {
  // 1 FLOP per byte: GPU once compute at 1 FLOP/s beats 5 × transfer at 10 B/s.
  assert.equal(pcieRule(100, 100, { gpuFlopsPerS: 1, linkBytesPerS: 10 }), "webgpu");
  assert.equal(
    pcieRule(100, 100, { gpuFlopsPerS: 1, linkBytesPerS: 10, dispatchRatio: 20 }),
    "wasm",
  );
  assert.deepEqual(PCIE_RULE_DEFAULTS, {
    linkBytesPerS: 32e9,
    gpuFlopsPerS: 20e12,
    dispatchRatio: 5,
  });
});

Deno.test("pcieRule() rejects negative or non-finite counts", () => {
  assert.throws(() => pcieRule(-1, 10), RangeError);
  assert.throws(() => pcieRule(10, NaN), RangeError);
});

Deno.test("thresholdRule() never sends elementwise ops to the GPU and uses SIMD above 1M", () => {
  assert.equal(thresholdRule("elementwise", 1_000_000), "js");
  assert.equal(thresholdRule("elementwise", 1_000_001), "wasm");
  assert.equal(thresholdRule("elementwise", 1e12), "wasm");
  assert.equal(SEED_THRESHOLDS.elementwise.gpuAbove, null);
});

Deno.test("thresholdRule() routes reductions to SIMD above 10K and the GPU above 100K", () => {
  assert.equal(thresholdRule("reduction", 10_000), "js");
  assert.equal(thresholdRule("reduction", 10_001), "wasm");
  assert.equal(thresholdRule("reduction", 100_000), "wasm");
  assert.equal(thresholdRule("reduction", 100_001), "webgpu");
});

Deno.test("thresholdRule() routes matrix ops to SIMD above 1K and the GPU above 10K", () => {
  assert.equal(thresholdRule("matrix", 1_000), "js");
  assert.equal(thresholdRule("matrix", 1_001), "wasm");
  assert.equal(thresholdRule("matrix", 10_000), "wasm");
  assert.equal(thresholdRule("matrix", 50_000), "webgpu");
});

Deno.test("thresholdRule() rejects a negative element count", () => {
  assert.throws(() => thresholdRule("matrix", -1), RangeError);
});

Deno.test("tfjsHandoffRule() runs on the CPU only when every input has fewer than 1000 elements", () => {
  assert.equal(tfjsHandoffRule([999]), "wasm");
  assert.equal(tfjsHandoffRule([529, 529]), "wasm");
  assert.equal(tfjsHandoffRule([1000]), "webgpu");
  assert.equal(tfjsHandoffRule([10, 1000]), "webgpu");
  assert.equal(tfjsHandoffRule([5000, 5000], 10_000), "wasm");
});

Deno.test("tfjsHandoffRule() rejects an empty input list and bad counts", () => {
  assert.throws(() => tfjsHandoffRule([]), RangeError);
  assert.throws(() => tfjsHandoffRule([Infinity]), RangeError);
});
