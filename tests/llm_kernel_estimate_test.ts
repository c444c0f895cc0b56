import assert from "node:assert/strict";
import { kernelDims, KERNELS_PER_LAYER, MODEL_KERNELS } from "../models/llm/decode_kernels.ts";
import {
  type DeviceRates,
  estimateTokensPerSec,
  type KernelTimeModel,
  type KernelTimeRequest,
  type RateFigure,
} from "../models/llm/estimate.ts";
import { getPreset, paramBreakdown } from "../models/llm/presets.ts";

// Synthetic rates and cost models to exercise the arithmetic: not measurements of any device.
const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });

/** A launch costs 0.1 ms plus 1 ms per million elements of its shape: easy to sum by hand. */
function linearModel(seen: KernelTimeRequest[] = []): KernelTimeModel {
  return (r) => {
    seen.push(r);
    const elements = Object.values(r.shape).reduce((a, b) => a * b, 1);
    return {
      ms: 0.1 + elements / 1e6,
      interval: [0.05, 1],
      tag: elements > 4e6 ? "extrapolated" : "fitted",
      variant: `v-${r.op}`,
      source: `synthetic ${r.op}`,
    };
  };
}

function rates(kernelTime?: KernelTimeModel): DeviceRates {
  return {
    name: "synthetic-gpu",
    memoryBytes: 24e9,
    matmulGflops: { f32: fig(20_000, "GFLOP/s"), f16: fig(80_000, "GFLOP/s") },
    gemvGBps: { f32: fig(900, "GB/s"), f16: fig(800, "GB/s"), q4: fig(500, "GB/s") },
    perDispatchUs: fig(5, "us"),
    syncRoundTripMs: fig(0.05, "ms"),
    hostLinkGBps: { upload: fig(25, "GB/s"), readback: fig(20, "GB/s") },
    ...(kernelTime ? { kernelTime } : {}),
  };
}

const tiny = getPreset("tiny-16m");

Deno.test("decode_kernels.ts projections hold exactly the model's streamed matrices", () => {
  for (const name of ["tiny-16m", "tiny-64m", "llama-3-8b"]) {
    const model = getPreset(name);
    const dims = kernelDims(model);
    const weights = (list: readonly (typeof KERNELS_PER_LAYER)[number][]) =>
      list.map((k) => k.work(dims, 64, 1)).filter((w) => w.reads === "weights")
        .reduce((a, w) => a + w.shape.rows! * w.shape.cols!, 0);
    const pb = paramBreakdown(model);
    assert.equal(weights(KERNELS_PER_LAYER), pb.attentionPerLayer + pb.mlpPerLayer, name);
    assert.equal(weights(MODEL_KERNELS), pb.lmHead, name);
  }
});

Deno.test("estimateTokensPerSec() prices every launch of the step with the cost model", () => {
  const seen: KernelTimeRequest[] = [];
  const e = estimateTokensPerSec(tiny, "int4", rates(linearModel(seen)), {
    context: 64,
    batch: 1,
    kvDtype: "f32",
  });
  assert.equal(e.perTokenMs.method, "per-kernel");
  assert.deepEqual(
    e.kernels.map((k) => k.name),
    ["embed", ...KERNELS_PER_LAYER.map((k) => k.name), "final_norm", "lm_head", "argmax"],
  );
  const layerNames = new Set(KERNELS_PER_LAYER.map((k) => k.name));
  for (const k of e.kernels) assert.equal(k.launches, layerNames.has(k.name) ? 4 : 1, k.name);
  const sum = (f: (k: (typeof e.kernels)[number]) => boolean) =>
    e.kernels.filter(f).reduce((a, k) => a + k.launches * k.ms, 0);
  const weights = sum((k) => k.op === "gemv" && k.dtype === "q4");
  assert.ok(Math.abs(e.perTokenMs.weightsStreamMs - weights) < 1e-12);
  assert.ok(
    Math.abs(e.perTokenMs.kvReadMs - sum((k) => k.name.startsWith("attn_") && k.op === "gemv")) <
      1e-12,
  );
  assert.ok(Math.abs(e.perTokenMs.totalMs - (sum(() => true) + e.perTokenMs.syncMs)) < 1e-9);
  // gate_proj is 1536 × 512, priced at its own shape (predictions learn proportions).
  assert.ok(
    seen.some((r) =>
      r.op === "gemv" && r.dtype === "q4" && r.shape.rows === 1536 && r.shape.cols === 512
    ),
  );
  assert.ok(
    e.sources.some((s) =>
      s.startsWith("decode kernel gate_proj ×4 on synthetic-gpu: gemv 1536×512 q4 =")
    ),
  );
  assert.ok(e.sources.some((s) => /decode kernel softmax ×4 .*softmax 8×64 f32 =/.test(s)));
  assert.ok(e.sources.some((s) => /decode kernel attn_norm .*\[stand-in: dot/.test(s)));
  // Wall-clock kernel times hold the host's recording of each launch: nothing more is charged.
  assert.equal(e.perTokenMs.encodeMs, 0);
});

Deno.test("estimateTokensPerSec() charges GPU-timed launches the host's recording of them", () => {
  const gpuTimed: KernelTimeModel = (r) => ({ ...linearModel()(r), gpuOnly: true });
  const opts = { context: 64, batch: 1, kvDtype: "f32" } as const;
  const e = estimateTokensPerSec(tiny, "int4", {
    ...rates(gpuTimed),
    encodePerDispatchUs: fig(10, "us"),
  }, opts);
  // tiny-16m launches 4 layers × 16 kernels + 4 model kernels = 68 per token, 10 µs each.
  assert.ok(Math.abs(e.perTokenMs.encodeMs - 0.68) < 1e-12, `${e.perTokenMs.encodeMs}`);
  const kernels = e.kernels.reduce((a, k) => a + k.launches * k.ms, 0);
  assert.ok(Math.abs(e.perTokenMs.totalMs - (kernels + 0.68 + e.perTokenMs.syncMs)) < 1e-9);
  assert.ok(
    e.sources.some((s) => s.startsWith("encodeMs: synthetic-gpu encodePerDispatchUs = 10")),
  );
  // A report calibrated before the figure existed: the term is left out, and the estimate says so.
  const old = estimateTokensPerSec(tiny, "int4", rates(gpuTimed), opts);
  assert.equal(old.perTokenMs.encodeMs, 0);
  assert.ok(
    old.sources.some((s) => /host's recording of 68 GPU-timed launches is not priced/.test(s)),
  );
});

Deno.test("estimateTokensPerSec() prices a step probe's chaining and host line", () => {
  const opts = { context: 64, batch: 1, kvDtype: "f32" } as const;
  const plain = estimateTokensPerSec(tiny, "int4", rates(linearModel()), opts);
  const probed = estimateTokensPerSec(tiny, "int4", {
    ...rates(linearModel()),
    encodePerDispatchUs: fig(3, "us"),
    chainFactor: fig(1.1, "x"),
    stepHost: { fixedMs: fig(0.5, "ms"), perDispatchUs: fig(10, "us") },
  }, opts);
  const p = probed.perTokenMs;
  const q = plain.perTokenMs;
  // Every kernel term is the sum as timed alone × the chain factor.
  for (const term of ["weightsStreamMs", "kvReadMs", "dispatchMs"] as const) {
    assert.ok(Math.abs(p[term] - 1.1 * q[term]) < 1e-12, term);
  }
  // The intercept is the step's round trip; 68 launches at 10 µs are its host part, and the
  // recording figure is not charged on top.
  assert.ok(Math.abs(p.syncMs - q.syncMs - (0.5 - 0.05)) < 1e-12, `${p.syncMs}`);
  assert.ok(Math.abs(p.encodeMs - 0.68) < 1e-12, `${p.encodeMs}`);
  assert.ok(probed.sources.some((s) => s.startsWith("kernels chained: synthetic-gpu chainFactor")));
  assert.ok(plain.sources.some((s) => /has no chainFactor \(no step probe\)/.test(s)));
});

Deno.test("estimateTokensPerSec() tags a step extrapolated when a kernel's prediction is", () => {
  const e = estimateTokensPerSec(getPreset("llama-3-8b"), "int4", rates(linearModel()), {
    context: 4096,
    batch: 1,
  });
  assert.equal(e.perTokenMs.method, "per-kernel");
  assert.equal(e.tag, "extrapolated");
  assert.ok(
    e.sources.some((s) => /kernel predictions on synthetic-gpu extrapolate .*lm_head/.test(s)),
  );
});

Deno.test("estimateTokensPerSec() falls back to the roofline when a KV read has no cost model", () => {
  const noF32Gemv: KernelTimeModel = (r) => {
    if (r.op === "gemv" && r.dtype === "f32") throw new RangeError("Cannot predict gemv f32");
    return linearModel()(r);
  };
  const e = estimateTokensPerSec(tiny, "int4", rates(noF32Gemv), {
    context: 64,
    batch: 1,
    kvDtype: "f32",
  });
  assert.equal(e.perTokenMs.method, "roofline");
  assert.deepEqual(e.kernels, []);
  assert.ok(e.sources.some((s) => /cannot price kernel attn_scores .*roofline used/.test(s)));
  assert.ok(!e.sources.some((s) => s.startsWith("decode kernel")));
});

Deno.test("estimateTokensPerSec() charges an uncalibrated activation kernel the dispatch cost", () => {
  const noSoftmax: KernelTimeModel = (r) => {
    if (r.op === "softmax") throw new RangeError("Cannot predict softmax: not calibrated");
    return linearModel()(r);
  };
  const e = estimateTokensPerSec(tiny, "int4", rates(noSoftmax), { context: 64, batch: 1 });
  assert.equal(e.perTokenMs.method, "per-kernel");
  assert.equal(e.kernels.find((k) => k.name === "softmax")!.ms, 5 / 1000);
  assert.ok(e.sources.some((s) => /kernel softmax .*no softmax f32 data .*perDispatchUs/.test(s)));
});

Deno.test("estimateTokensPerSec() prices tensor-parallel slices and pipeline stages apart", () => {
  const llama = getPreset("llama-3-8b");
  const link = { kind: "nvlink" as const, gbps: 300 };
  const seen: KernelTimeRequest[] = [];
  estimateTokensPerSec(llama, "int4", rates(linearModel(seen)), {
    context: 1024,
    batch: 1,
    plan: { strategy: "tensor-parallel", ways: 2, interconnect: link },
  });
  // softmax rows are the device's query heads: 32 / 2.
  assert.ok(seen.some((r) => r.op === "softmax" && r.shape.rows === 16));
  const p = estimateTokensPerSec(llama, "int4", rates(linearModel()), {
    context: 1024,
    batch: 1,
    plan: { strategy: "pipeline-parallel", layersPerStage: [16, 16], interconnect: link },
  });
  assert.equal(p.perTokenMs.method, "per-kernel");
  assert.ok(p.sources.some((s) => s.startsWith("decode kernel embed ×1")));
  assert.ok(p.sources.some((s) => s.startsWith("decode kernel q_proj ×16")));
  assert.ok(p.sources.some((s) => s.startsWith("decode kernel lm_head ×1")));
});

Deno.test("estimateTokensPerSec() bounds a large batch's projections by the matmul rate", () => {
  const slowMatmul: DeviceRates = {
    ...rates(linearModel()),
    matmulGflops: { f32: fig(1, "GFLOP/s"), f16: fig(1, "GFLOP/s") },
  };
  // At batch 1 the projections' cost models are their whole time, however slow the matmul.
  const one = estimateTokensPerSec(tiny, "int4", slowMatmul, { context: 64, batch: 1 });
  assert.ok(one.perTokenMs.matmulMs > one.perTokenMs.weightsStreamMs);
  assert.equal(one.perTokenMs.bound, "bandwidth");
  const t = one.perTokenMs;
  assert.ok(
    Math.abs(t.totalMs - (t.weightsStreamMs + t.kvReadMs + t.dispatchMs + t.syncMs)) < 1e-9,
  );
  const many = estimateTokensPerSec(tiny, "int4", slowMatmul, { context: 64, batch: 4096 });
  assert.equal(many.perTokenMs.bound, "compute");
  assert.ok(many.perTokenMs.totalMs >= many.perTokenMs.matmulMs);
});
