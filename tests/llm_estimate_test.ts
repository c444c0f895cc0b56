import assert from "node:assert/strict";
import {
  type DeviceRates,
  estimateTokensPerSec,
  KERNELS_PER_LAYER,
  MissingRateError,
  MODEL_KERNELS,
  type RateFigure,
} from "../models/llm/estimate.ts";
import { getPreset } from "../models/llm/presets.ts";

// Synthetic rates to exercise the arithmetic: round numbers, not measurements of any device.
const fig = (value: number, unit: string, tag: RateFigure["tag"] = "measured"): RateFigure => ({
  value,
  unit,
  tag,
  source: `synthetic ${unit}`,
});

function rates(over: Partial<DeviceRates> = {}): DeviceRates {
  return {
    name: "synthetic-gpu",
    memoryBytes: 24e9,
    matmulGflops: { f32: fig(20_000, "GFLOP/s"), f16: fig(80_000, "GFLOP/s") },
    gemvGBps: {
      f32: fig(900, "GB/s"),
      f16: fig(800, "GB/s"),
      q8: fig(600, "GB/s"),
      q4: fig(500, "GB/s"),
    },
    perDispatchUs: fig(5, "us"),
    syncRoundTripMs: fig(0.05, "ms"),
    hostLinkGBps: { upload: fig(25, "GB/s"), readback: fig(20, "GB/s") },
    ...over,
  };
}

const llama = getPreset("llama-3-8b");
// Streamed per decode step: every parameter but the embedding table (one row is looked up):
// 8,030,261,248 − 525,336,576 = 7,504,924,672 params.
const STREAMED = 7_504_924_672;

Deno.test("KERNELS_PER_LAYER lists 16 distinct named kernels", () => {
  assert.equal(KERNELS_PER_LAYER.length, 16);
  const names = [...KERNELS_PER_LAYER, ...MODEL_KERNELS].map((k) => k.name);
  assert.equal(new Set(names).size, names.length);
  assert.deepEqual(MODEL_KERNELS.map((k) => k.name), ["embed", "final_norm", "lm_head", "argmax"]);
});

Deno.test("estimateTokensPerSec() streams the weight bytes at the quant's gemv bandwidth", () => {
  const e = estimateTokensPerSec(llama, "int4", rates(), { context: 4096, batch: 1 });
  // 7,504,924,672 × 0.625 B = 4,690,577,920 B at 500 GB/s (5e8 B/ms) = 9.38115584 ms
  assert.ok(Math.abs(e.perTokenMs.weightsStreamMs - 9.38115584) < 1e-9);
  assert.equal(e.perTokenMs.bound, "bandwidth");
  // KV cache 536,870,912 B (f16) at the f16 gemv rate 800 GB/s = 0.67108864 ms
  assert.ok(Math.abs(e.perTokenMs.kvReadMs - 0.67108864) < 1e-9);

  const faster = rates({ gemvGBps: { ...rates().gemvGBps, q4: fig(1000, "GB/s") } });
  const f = estimateTokensPerSec(llama, "int4", faster, { context: 4096, batch: 1 });
  assert.ok(Math.abs(f.perTokenMs.weightsStreamMs - e.perTokenMs.weightsStreamMs / 2) < 1e-9);

  // f16 weights: 2 B per weight at 800 GB/s
  const h = estimateTokensPerSec(llama, "f16", rates(), { context: 4096, batch: 1 });
  assert.ok(Math.abs(h.perTokenMs.weightsStreamMs - STREAMED * 2 / 8e8) < 1e-9);
  assert.ok(h.decodeTokensPerSec < e.decodeTokensPerSec);
});

Deno.test("estimateTokensPerSec() charges every kernel launch and one sync per step", () => {
  const e = estimateTokensPerSec(llama, "int4", rates(), { context: 4096, batch: 1 });
  assert.equal(e.kernelsPerLayer, 16);
  assert.equal(e.kernelsPerStep, 16 * 32 + 4);
  // 516 launches × 5 µs = 2.58 ms
  assert.ok(Math.abs(e.perTokenMs.dispatchMs - 2.58) < 1e-9);
  // 0.05 ms round trip + 4 B up at 25 GB/s + 4 B down at 20 GB/s
  assert.ok(Math.abs(e.perTokenMs.syncMs - (0.05 + 4 / 25e6 + 4 / 20e6)) < 1e-12);
  assert.equal(e.perTokenMs.commMs, 0);
  const p = e.perTokenMs;
  const total = Math.max(p.weightsStreamMs, p.matmulMs) + p.kvReadMs + p.dispatchMs + p.syncMs;
  assert.ok(Math.abs(p.totalMs - total) < 1e-9);
  assert.ok(Math.abs(e.decodeTokensPerSec - 1000 / total) < 1e-9);

  const slowSync = rates({ syncRoundTripMs: fig(11, "ms") });
  const s = estimateTokensPerSec(llama, "int4", slowSync, { context: 4096, batch: 1 });
  assert.ok(Math.abs(s.perTokenMs.totalMs - p.totalMs - 10.95) < 1e-9);
});

Deno.test("estimateTokensPerSec() streams the weights once per step for the whole batch", () => {
  const one = estimateTokensPerSec(llama, "int4", rates(), { context: 1024, batch: 1 });
  const eight = estimateTokensPerSec(llama, "int4", rates(), { context: 1024, batch: 8 });
  assert.equal(eight.perTokenMs.weightsStreamMs, one.perTokenMs.weightsStreamMs);
  assert.ok(Math.abs(eight.perTokenMs.kvReadMs - 8 * one.perTokenMs.kvReadMs) < 1e-9);
  assert.equal(eight.perTokenMs.dispatchMs, one.perTokenMs.dispatchMs);
  assert.ok(eight.decodeTokensPerSec > 4 * one.decodeTokensPerSec);
  assert.ok(Math.abs(eight.decodeTokensPerSec - 8000 / eight.perTokenMs.totalMs) < 1e-9);
});

Deno.test("estimateTokensPerSec() becomes compute-bound when the batch is large enough", () => {
  // 2 × 7,504,924,672 × 256 FLOPs at 80,000 GFLOP/s = 48.03 ms > 9.38 ms of weight streaming
  const e = estimateTokensPerSec(llama, "int4", rates(), { context: 128, batch: 256 });
  assert.equal(e.perTokenMs.bound, "compute");
  assert.ok(Math.abs(e.perTokenMs.matmulMs - 2 * STREAMED * 256 / 8e10) < 1e-9);
});

Deno.test("estimateTokensPerSec() prefills at the f16 matmul rate for int4 weights", () => {
  const e = estimateTokensPerSec(llama, "int4", rates(), {
    context: 4096,
    batch: 1,
    promptTokens: 512,
  });
  // 2 × 7,504,924,672 × 512 FLOPs at 80,000 GFLOP/s (8e10 FLOP/ms) = 96.06303580 ms
  assert.ok(Math.abs(e.prefillMs.matmulMs - 2 * STREAMED * 512 / 8e10) < 1e-9);
  // causal attention: 2 × 128 × 512 × 513 × 32 heads × 32 layers FLOPs
  assert.ok(Math.abs(e.prefillMs.attentionMs - 2 * 128 * 512 * 513 * 32 * 32 / 8e10) < 1e-9);
  assert.ok(Math.abs(e.prefillTokensPerSec - 512_000 / e.prefillMs.totalMs) < 1e-9);
  assert.ok(
    e.sources.some((s) => s.startsWith("prefill matmulMs: synthetic-gpu matmulGflops.f16")),
  );

  const noF16 = rates({ matmulGflops: { f32: fig(20_000, "GFLOP/s") } });
  const f = estimateTokensPerSec(llama, "int4", noF16, {
    context: 4096,
    batch: 1,
    promptTokens: 512,
  });
  assert.ok(Math.abs(f.prefillMs.matmulMs - 4 * e.prefillMs.matmulMs) < 1e-9);
  assert.ok(f.sources.some((s) => /no f16 matmul figure; f32 matmul rate used/.test(s)));
});

Deno.test("estimateTokensPerSec() names the measured figure behind every term", () => {
  const e = estimateTokensPerSec(llama, "int4", rates(), { context: 4096, batch: 1 });
  for (
    const prefix of [
      "weightsStreamMs: synthetic-gpu gemvGBps.q4 = 500 GB/s (measured; synthetic GB/s)",
      "kvReadMs: synthetic-gpu gemvGBps.f16",
      "dispatchMs: synthetic-gpu perDispatchUs = 5.00 us",
      "syncMs: synthetic-gpu syncRoundTripMs = 0.0500 ms",
      "matmulMs: synthetic-gpu matmulGflops.f16",
      "loadMs: synthetic-gpu hostLinkGBps.upload",
    ]
  ) {
    assert.ok(e.sources.some((s) => s.startsWith(prefix)), `missing source "${prefix}"`);
  }
  assert.equal(e.tag, "fitted");
});

Deno.test("estimateTokensPerSec() carries the weakest provenance of its inputs", () => {
  const r = rates({ perDispatchUs: fig(5, "us", "extrapolated") });
  assert.equal(
    estimateTokensPerSec(llama, "int4", r, { context: 64, batch: 1 }).tag,
    "extrapolated",
  );
});

Deno.test("estimateTokensPerSec() refuses a missing, null or mislabelled figure", () => {
  const noQ4 = rates({ gemvGBps: { f32: fig(900, "GB/s"), f16: fig(800, "GB/s") } });
  assert.throws(() => estimateTokensPerSec(llama, "int4", noQ4, { context: 64, batch: 1 }), {
    name: "MissingRateError",
    message: /device "synthetic-gpu": "gemvGBps\.q4" was not measured/,
  });
  const nullSync = rates({
    syncRoundTripMs: { value: null, unit: "ms", tag: "measured", reason: "device lost" },
  });
  assert.throws(
    () => estimateTokensPerSec(llama, "int4", nullSync, { context: 64, batch: 1 }),
    (e) => e instanceof MissingRateError && /device lost/.test(e.message),
  );
  const wrongUnit = rates({ perDispatchUs: fig(0.005, "ms") });
  assert.throws(() => estimateTokensPerSec(llama, "int4", wrongUnit, { context: 64, batch: 1 }), {
    message: /"perDispatchUs" is in "ms", expected "us"/,
  });
});

Deno.test("estimateTokensPerSec() reads an f16 KV cache at f32 bandwidth when f16 was not measured", () => {
  const glLike = rates({ gemvGBps: { f32: fig(900, "GB/s"), q4: fig(500, "GB/s") } });
  const e = estimateTokensPerSec(llama, "int4", glLike, { context: 4096, batch: 1 });
  assert.ok(Math.abs(e.perTokenMs.kvReadMs - 536_870_912 / 9e8) < 1e-9);
  assert.ok(e.sources.some((s) => /no f16 gemv figure; f32 gemv bandwidth used/.test(s)));
});

Deno.test("estimateTokensPerSec() rejects bad context, batch and prompt lengths", () => {
  assert.throws(() => estimateTokensPerSec(llama, "int4", rates(), { context: -4, batch: 1 }), {
    name: "RangeError",
    message: /"context" must be a positive integer, got -4/,
  });
  assert.throws(() => estimateTokensPerSec(llama, "int4", rates(), { context: 64, batch: 0 }), {
    message: /"batch" must be a positive integer/,
  });
  assert.throws(
    () => estimateTokensPerSec(llama, "int4", rates(), { context: 64, batch: 1, promptTokens: 65 }),
    { name: "RangeError", message: /"promptTokens" \(65\) exceeds "context" \(64\)/ },
  );
});

Deno.test("estimateTokensPerSec() reports per-device memory and whether it fits", () => {
  const small = rates({ memoryBytes: 4e9 });
  const e = estimateTokensPerSec(llama, "int4", small, { context: 4096, batch: 1 });
  assert.equal(e.memory.length, 1);
  assert.equal(e.memory[0]!.breakdown.totalBytes, 5_557_022_208);
  assert.equal(e.memory[0]!.fit.fits, false);
  // Load: 5,018,913,280 B at 25 GB/s = 200.7565312 ms
  assert.ok(Math.abs(e.loadMs - 200.7565312) < 1e-9);
});

Deno.test("estimateTokensPerSec() splits the weight stream across tensor-parallel devices", () => {
  const link = { kind: "nvlink", gbps: 300, latencyUs: 5 } as const;
  const one = estimateTokensPerSec(llama, "int4", rates(), { context: 4096, batch: 1 });
  const two = estimateTokensPerSec(llama, "int4", rates(), {
    context: 4096,
    batch: 1,
    plan: { strategy: "tensor-parallel", ways: 2, interconnect: link },
  });
  assert.equal(two.devices.length, 2);
  assert.ok(two.perTokenMs.weightsStreamMs < 0.51 * one.perTokenMs.weightsStreamMs);
  // 65 ring all-reduces over 2 devices: 64 of 4096 × 4 B and one argmax pair of 8 B, each with
  // 2 latencies of 5 µs and 2(p − 1)/p = 1 × bytes / 300 GB/s
  const expected = 64 * (0.01 + 16384 / 3e8) + (0.01 + 8 / 3e8);
  assert.ok(Math.abs(two.perTokenMs.commMs - expected) < 1e-12);
  assert.ok(two.sources.some((s) => s.startsWith("commMs: 65 ring all-reduces per step over 2")));
  assert.throws(
    () =>
      estimateTokensPerSec(llama, "int4", [rates()], {
        context: 64,
        batch: 1,
        plan: { strategy: "tensor-parallel", ways: 2, interconnect: link },
      }),
    { message: /needs 2 device rate set\(s\), got 1/ },
  );
});

Deno.test("estimateTokensPerSec() runs pipeline stages one after another", () => {
  const link = { kind: "pcie", gbps: 25, latencyUs: 10 } as const;
  const one = estimateTokensPerSec(llama, "int4", rates(), { context: 4096, batch: 1 });
  const pp = estimateTokensPerSec(llama, "int4", rates(), {
    context: 4096,
    batch: 1,
    plan: { strategy: "pipeline-parallel", layersPerStage: [16, 16], interconnect: link },
  });
  assert.ok(Math.abs(pp.perTokenMs.weightsStreamMs - one.perTokenMs.weightsStreamMs) < 1e-9);
  assert.ok(Math.abs(pp.perTokenMs.dispatchMs - one.perTokenMs.dispatchMs) < 1e-9);
  assert.ok(Math.abs(pp.perTokenMs.commMs - (0.01 + 16384 / 25e6)) < 1e-12);
  assert.ok(pp.decodeTokensPerSec < one.decodeTokensPerSec);
});
