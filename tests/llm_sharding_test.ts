import assert from "node:assert/strict";
import type { DeviceRates, RateFigure } from "../models/llm/estimate.ts";
import { getPreset } from "../models/llm/presets.ts";
import { hostInterconnect, planSharding, ShardingError } from "../models/llm/sharding.ts";
import { shardSlices } from "../models/llm/shards.ts";

// Synthetic rates to exercise the planner: round numbers, not measurements of any device.
const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });

function gpu(memoryBytes: number, gemvGBps = 800): DeviceRates {
  return {
    name: `gpu${memoryBytes / 1e9}`,
    memoryBytes,
    matmulGflops: { f32: fig(20_000, "GFLOP/s"), f16: fig(80_000, "GFLOP/s") },
    gemvGBps: {
      f32: fig(gemvGBps, "GB/s"),
      f16: fig(gemvGBps, "GB/s"),
      q8: fig(gemvGBps, "GB/s"),
      q4: fig(gemvGBps, "GB/s"),
    },
    perDispatchUs: fig(5, "us"),
    syncRoundTripMs: fig(0.05, "ms"),
    hostLinkGBps: { upload: fig(25, "GB/s"), readback: fig(25, "GB/s") },
  };
}

const llama = getPreset("llama-3-8b");
const nvlink = { kind: "nvlink", gbps: 300, latencyUs: 5 } as const;
const ethernet = { kind: "ethernet", gbps: 1.25, latencyUs: 50 } as const;
const opts = { context: 4096, batch: 1 } as const;

Deno.test("planSharding() keeps a model that fits on one device unsharded", () => {
  const plan = planSharding(llama, "int4", [{ rates: gpu(24e9), count: 2 }], nvlink, opts);
  assert.equal(plan.chosen.strategy, "none");
  assert.deepEqual(plan.chosen.devices, ["gpu24"]);
  assert.match(
    plan.explanation,
    /^Fits on one device: no sharding needed \(gpu24 holds 5\.56 GB of 24\.00 GB\)$/,
  );
  assert.deepEqual(plan.candidates.map((c) => c.strategy), [
    "none",
    "tensor-parallel",
    "pipeline-parallel",
  ]);
});

Deno.test("planSharding() splits tensor-parallel over a fast link when one device is too small", () => {
  // f16 weights: 8,030,261,248 × 2 B = 16.06 GB > 16 GB
  const plan = planSharding(llama, "f16", [{ rates: gpu(16e9), count: 2 }], nvlink, opts);
  assert.equal(plan.candidates[0]!.fits, false);
  assert.match(plan.candidates[0]!.problem ?? "", /weights alone \(16\.06 GB\)/);
  assert.equal(plan.chosen.strategy, "tensor-parallel");
  assert.match(
    plan.explanation,
    /^Tensor parallel over 2 devices: the 300 GB\/s nvlink link makes two all-reduces per layer/,
  );
  const pp = plan.candidates.find((c) => c.strategy === "pipeline-parallel")!;
  assert.ok(plan.chosen.estimate!.decodeTokensPerSec > pp.estimate!.decodeTokensPerSec);
  // 2 × 32 all-reduced buffers of 4096 × 2 B (f16 activations) + one 8 B argmax pair
  assert.equal(plan.chosen.commBytesPerToken, 64 * 8192 + 8);
});

Deno.test("planSharding() pipelines over a slow link", () => {
  const fast = gpu(16e9, 2000);
  const plan = planSharding(llama, "f16", [{ rates: fast, count: 2 }], ethernet, opts);
  assert.equal(plan.chosen.strategy, "pipeline-parallel");
  assert.deepEqual(plan.chosen.layers, [16, 16]);
  assert.match(
    plan.explanation,
    /^Pipeline parallel over 2 stages: on the 1\.25 GB\/s ethernet link, tensor parallel's 65 all-reduces per token/,
  );
  const tp = plan.candidates.find((c) => c.strategy === "tensor-parallel")!;
  assert.ok(tp.commMsPerToken > plan.chosen.commMsPerToken);
});

Deno.test("planSharding() gives the fastest plan when asked, even if one device would do", () => {
  const plan = planSharding(llama, "int4", [{ rates: gpu(24e9), count: 2 }], nvlink, {
    ...opts,
    objective: "fastest-decode",
  });
  assert.equal(plan.chosen.strategy, "tensor-parallel");
});

Deno.test("planSharding() names the sizes when the model is larger than all devices together", () => {
  // f32: 8,030,261,248 × 4 B = 32.12 GB of weights against 2 × 8 GB
  assert.throws(
    () => planSharding(llama, "f32", [{ rates: gpu(8e9), count: 2 }], nvlink, opts),
    (e) =>
      e instanceof ShardingError && e.haveBytes === 16e9 &&
      /needs 33\.20 GB \(weights 32\.12 GB \+ KV cache 1\.07 GB \+ activations 1\.24 MB\)/.test(
        e.message,
      ) &&
      /all 2 device\(s\) together have 16\.00 GB/.test(e.message),
  );
});

Deno.test("planSharding() explains why no split fits when the devices only add up", () => {
  // Weights + KV cache 5,555,784,192 B against 2 × 2,779,100,000 B = 5,558,200,000 B: enough
  // together, but each device also holds the whole activation set (1,238,016 B) and a share
  // no finer than a layer: tensor parallel needs 2,779,213,312 B per device, the pipeline's
  // stages 2,779,128,832 B and 2,779,131,392 B.
  assert.throws(
    () => planSharding(llama, "int4", [{ rates: gpu(2.7791e9), count: 2 }], nvlink, opts),
    { name: "ShardingError", message: /fits no split of the 2 device\(s\)/ },
  );
});

Deno.test("planSharding() records a tensor-parallel split the heads cannot take", () => {
  const qwen = getPreset("qwen2.5-0.5b"); // 14 heads: 4 ways does not divide
  const plan = planSharding(qwen, "f32", [{ rates: gpu(1e9), count: 4 }], nvlink, opts);
  const tp4 = plan.candidates.find((c) =>
    c.strategy === "tensor-parallel" && c.devices.length === 4
  )!;
  assert.equal(tp4.estimate, null);
  assert.match(tp4.problem ?? "", /14 attention heads do not divide evenly/);
});

Deno.test("planSharding() rejects a negative context and an unknown preset", () => {
  assert.throws(
    () =>
      planSharding(llama, "int4", [{ rates: gpu(24e9), count: 1 }], nvlink, {
        context: -1,
        batch: 1,
      }),
    { name: "RangeError", message: /"context" must be a positive integer, got -1/ },
  );
  assert.throws(() => getPreset("llama-9000"), {
    name: "RangeError",
    message:
      /Unknown model "llama-9000": presets are llama-3-8b, llama-2-7b, mistral-7b, qwen2\.5-0\.5b, tiny-16m, tiny-64m/,
  });
});

Deno.test("shardSlices() halves the tensor-parallel weights but replicates the norms", () => {
  const [a, b] = shardSlices(llama, { strategy: "tensor-parallel", ways: 2, interconnect: nvlink });
  // (embedding 525,336,576 + 32 × (41,943,040 + 176,160,768) + lm head 525,336,576) / 2
  //   + norms 32 × 8,192 + 4,096 = 4,014,997,504 + 266,240 = 4,015,263,744
  assert.equal(a!.heldParams, 4_015_263_744);
  assert.equal(b!.kvHeads, 4);
  assert.equal(b!.heads, 16);
});

Deno.test("hostInterconnect() chains a readback and an upload through the host", () => {
  const link = hostInterconnect({
    ...gpu(8e9),
    syncRoundTripMs: fig(11, "ms"),
    hostLinkGBps: { upload: fig(3, "GB/s"), readback: fig(1.5, "GB/s") },
  });
  assert.equal(link.kind, "host");
  assert.ok(Math.abs(link.gbps - 1) < 1e-12); // 1 / (1/1.5 + 1/3)
  assert.equal(link.latencyUs, 11_000);
  assert.match(link.source ?? "", /syncRoundTripMs 11 ms/);
});
