import assert from "node:assert/strict";
import {
  activationsBytes,
  BYTES_PER_WEIGHT,
  fitCheck,
  kvCacheBytes,
  memoryBreakdown,
  parseQuant,
} from "../models/llm/memory.ts";
import { getPreset, modelFromJson, paramBreakdown, PRESETS } from "../models/llm/presets.ts";

Deno.test("countParams() matches the published sizes of the built-in models", () => {
  // Published: Llama 3 8B 8.03 B, Llama 2 7B 6.74 B, Mistral 7B 7.24 B, Qwen2.5 0.5B 0.49 B
  // (494,032,768 on its model card, q/k/v biases included).
  assert.equal(getPreset("llama-3-8b").params, 8_030_261_248);
  assert.equal(getPreset("llama-2-7b").params, 6_738_415_616);
  assert.equal(getPreset("mistral-7b").params, 7_241_732_096);
  assert.equal(getPreset("qwen2.5-0.5b").params, 494_032_768);
});

Deno.test("paramBreakdown() of llama-3-8b adds up by hand", () => {
  // embedding 128256 × 4096                                   =   525,336,576
  // per layer: q 4096×4096 + k,v 4096×1024 each + o 4096×4096 =    41,943,040
  //            gate, up, down 3 × 4096 × 14336               =   176,160,768
  //            two norms 2 × 4096                             =         8,192  → 218,112,000
  // 32 layers                                                 = 6,979,584,000
  // final norm 4096, lm head (untied) 525,336,576
  // total = 525,336,576 + 6,979,584,000 + 4,096 + 525,336,576 = 8,030,261,248
  const pb = paramBreakdown(getPreset("llama-3-8b"));
  assert.equal(pb.embedding, 525_336_576);
  assert.equal(pb.attentionPerLayer, 41_943_040);
  assert.equal(pb.mlpPerLayer, 176_160_768);
  assert.equal(pb.perLayer, 218_112_000);
  assert.equal(pb.lmHead, 525_336_576);
  assert.equal(pb.total, 8_030_261_248);
});

Deno.test("the tiny test models are about 16 M and 64 M parameters", () => {
  assert.ok(Math.abs(getPreset("tiny-16m").params - 16e6) / 16e6 < 0.05);
  assert.ok(Math.abs(getPreset("tiny-64m").params - 64e6) / 64e6 < 0.05);
  // Every matrix of a tiny model must fit one 128 MiB WebGPU storage binding in f32.
  for (const name of ["tiny-16m", "tiny-64m"]) {
    const m = PRESETS[name]!;
    const biggest = Math.max(m.vocab * m.hidden, m.hidden * m.intermediate);
    assert.ok(biggest * 4 < 128 * 2 ** 20, name);
  }
});

Deno.test("BYTES_PER_WEIGHT counts one f32 scale per group of 32", () => {
  assert.equal(BYTES_PER_WEIGHT.f32, 4);
  assert.equal(BYTES_PER_WEIGHT.f16, 2);
  assert.equal(BYTES_PER_WEIGHT.int8, 1.125); // 1 + 4/32
  assert.equal(BYTES_PER_WEIGHT.int4, 0.625); // 0.5 + 4/32
});

Deno.test("memoryBreakdown() of llama-3-8b int4 at context 4096 matches the hand computation", () => {
  // weights: 8,030,261,248 params × 0.625 B                      = 5,018,913,280 B
  // KV (f16): 4096 ctx × 32 layers × 8 kvHeads × 128 headDim × 2 (K and V) × 2 B × 1 = 536,870,912 B
  // activations, f32 per element:
  //   x, xn, out 3 × 4096 = 12,288; q, attn 2 × 32 × 128 = 8,192; k 8 × 128 = 1,024;
  //   scores 32 × 4096 = 131,072; gate, up 2 × 14336 = 28,672  → 181,248 elements × 4 = 724,992 B
  //   logits 128,256 × 4 = 513,024 B                                  → 1,238,016 B
  // total = 5,018,913,280 + 536,870,912 + 1,238,016                  = 5,557,022,208 B
  const m = memoryBreakdown(getPreset("llama-3-8b"), "int4", { context: 4096, batch: 1 });
  assert.equal(m.kvDtype, "f16");
  assert.equal(m.weightsBytes, 5_018_913_280);
  assert.equal(m.kvCacheBytes, 536_870_912);
  assert.equal(m.activationsBytes, 1_238_016);
  assert.equal(m.totalBytes, 5_557_022_208);
});

Deno.test("memoryBreakdown() scales the KV cache and activations with batch, not the weights", () => {
  const model = getPreset("llama-3-8b");
  const one = memoryBreakdown(model, "int4", { context: 4096, batch: 1 });
  const four = memoryBreakdown(model, "int4", { context: 4096, batch: 4 });
  assert.equal(four.weightsBytes, one.weightsBytes);
  assert.equal(four.kvCacheBytes, 4 * 536_870_912);
  assert.equal(four.activationsBytes, 4 * 1_238_016);
});

Deno.test("memoryBreakdown() honours the KV dtype", () => {
  const model = getPreset("llama-3-8b");
  // 4096 × 32 × 8 × 128 × 2 = 268,435,456 elements: × 4 B = 1,073,741,824 B, × 1.125 B = 301,989,888 B
  assert.equal(
    memoryBreakdown(model, "int4", { context: 4096, batch: 1, kvDtype: "f32" }).kvCacheBytes,
    1_073_741_824,
  );
  assert.equal(kvCacheBytes(model, "int8", 4096, 1), 301_989_888);
  assert.equal(memoryBreakdown(model, "f32", { context: 16, batch: 1 }).kvDtype, "f32");
});

Deno.test("activationsBytes() uses 2-byte activations for f16 models", () => {
  const model = getPreset("llama-3-8b");
  // 181,248 × 2 + 513,024 (logits stay f32) = 875,520
  assert.equal(activationsBytes(model, "f16", 4096, 1), 875_520);
});

Deno.test("memoryBreakdown() rejects a negative or zero context or batch", () => {
  const model = getPreset("tiny-16m");
  assert.throws(() => memoryBreakdown(model, "f32", { context: -1, batch: 1 }), {
    name: "RangeError",
    message: /"context" must be a positive integer, got -1/,
  });
  assert.throws(() => memoryBreakdown(model, "f32", { context: 128, batch: 0 }), {
    name: "RangeError",
    message: /"batch" must be a positive integer, got 0/,
  });
  assert.throws(() => memoryBreakdown(model, "f32", { context: 1.5, batch: 1 }), RangeError);
});

Deno.test("fitCheck() names the part that overflows and by how much", () => {
  const m = memoryBreakdown(getPreset("llama-3-8b"), "int4", { context: 4096, batch: 1 });
  const weights = fitCheck(m, 4e9);
  assert.equal(weights.fits, false);
  assert.equal(weights.limitedBy, "weights");
  assert.equal(weights.headroomBytes, 4e9 - 5_557_022_208);
  assert.match(
    weights.message,
    /weights alone \(5\.02 GB\) exceed the device's 4\.00 GB by 1\.02 GB/,
  );
  // weights + KV = 5,555,784,192 B > 5.5e9 by 55,784,192 B
  const kv = fitCheck(m, 5.5e9);
  assert.equal(kv.limitedBy, "kv-cache");
  assert.match(kv.message, /KV cache for context 4096 × batch 1 \(536\.87 MB\).* by 55\.78 MB/);
  const act = fitCheck(m, 5_556_000_000);
  assert.equal(act.limitedBy, "activations");
  const ok = fitCheck(m, 8e9);
  assert.equal(ok.fits, true);
  assert.equal(ok.limitedBy, null);
  assert.match(ok.message, /^Fits: 5\.56 GB of the device's 8\.00 GB \(2\.44 GB free\)$/);
  assert.throws(() => fitCheck(m, 0), RangeError);
});

Deno.test("modelFromJson() computes params and names the invalid field", () => {
  const arch = {
    name: "toy",
    layers: 2,
    hidden: 64,
    intermediate: 128,
    heads: 4,
    kvHeads: 2,
    headDim: 16,
    vocab: 256,
    tiedEmbeddings: true,
  };
  const toy = modelFromJson(arch);
  assert.equal(toy.params, 90_432);
  assert.equal(toy.qkvBias, false);
  assert.equal(modelFromJson({ ...arch, params: 90_000 }).params, 90_432);
  assert.throws(() => modelFromJson({ ...arch, hidden: -64 }), {
    name: "TypeError",
    message: /field "hidden"/,
  });
  assert.throws(() => modelFromJson({ ...arch, tiedEmbeddings: undefined }), {
    name: "TypeError",
    message: /field "tiedEmbeddings"/,
  });
  assert.throws(() => modelFromJson({ ...arch, kvHeads: 3 }), {
    name: "RangeError",
    message: /"kvHeads" \(3\) must divide "heads" \(4\)/,
  });
  assert.throws(() => modelFromJson({ ...arch, params: 7e9 }), {
    name: "RangeError",
    message: /"params" is 7000000000 but the architecture gives 90432/,
  });
});

Deno.test("parseQuant() lists the quantizations on a typo", () => {
  assert.equal(parseQuant("int4"), "int4");
  assert.throws(() => parseQuant("q4_k"), {
    name: "RangeError",
    message: /Unknown quantization "q4_k": use one of f32, f16, int8, int4/,
  });
});
