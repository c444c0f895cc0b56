import assert from "node:assert/strict";
import { measureDecode, parseVariantId } from "../decode/decode.ts";
import { KERNELS_PER_LAYER, MODEL_KERNELS } from "../models/llm/decode_kernels.ts";
import { getPreset } from "../models/llm/presets.ts";
import { gpuTest } from "./_gpu.ts";

Deno.test("parseVariantId() reads back report variant ids", () => {
  assert.deepEqual(parseVariantId("rpw=4,tpr=32,unpack=bits,vec4=true"), {
    rpw: 4,
    tpr: 32,
    unpack: "bits",
    vec4: true,
  });
  assert.deepEqual(parseVariantId("default"), {});
  assert.throws(() => parseVariantId("tpr"), /items are key=value, got "tpr"/);
});

for (const quant of ["f32", "int4"] as const) {
  gpuTest(
    `measureDecode() of tiny-16m in ${quant} yields valid token ids and a positive rate`,
    async (gpu) => {
      const model = getPreset("tiny-16m");
      const m = await measureDecode(gpu, model, quant, { tokens: 3, context: 8, warmup: 1 });
      assert.equal(m.tokenIds.length, 4);
      for (const id of m.tokenIds) assert.ok(Number.isInteger(id) && id >= 0 && id < model.vocab);
      assert.equal(m.perTokenMs.length, 3);
      assert.ok(m.tokensPerSec > 0 && Number.isFinite(m.tokensPerSec));
      assert.equal(
        m.dispatchesPerToken,
        model.layers * KERNELS_PER_LAYER.length + MODEL_KERNELS.length,
      );
      if (!gpu.device.features.has("timestamp-query")) {
        assert.equal(m.gpuPerTokenMs, null);
        return;
      }
      // The pass's GPU time is part of the token's wall time, never more.
      assert.equal(m.gpuPerTokenMs?.length, 3);
      m.gpuPerTokenMs!.forEach((g, i) => assert.ok(g > 0 && g <= m.perTokenMs[i]!, `${g} ms`));
      assert.ok(m.gpuMedianMs! > 0 && m.gpuMedianMs! <= m.medianMs);
    },
  );
}

gpuTest("measureDecode() refuses more tokens than the context holds", async (gpu) => {
  await assert.rejects(
    measureDecode(gpu, getPreset("tiny-16m"), "f32", { tokens: 8, context: 8 }),
    /needs a context of at least 10, got 8/,
  );
});

gpuTest("measureDecode() runs each projection's own gemv variant when given one", async (gpu) => {
  const m = await measureDecode(gpu, getPreset("tiny-16m"), "f32", {
    tokens: 1,
    context: 4,
    warmup: 1,
    gemvVariant: "rpw=1,tpr=64,vec4=true",
    gemvVariants: { lm_head: "rpw=4,tpr=32,vec4=true" },
  });
  assert.equal(m.gemvVariant, "rpw=1,tpr=64,vec4=true;rpw=4,tpr=32,vec4=true");
});

gpuTest(
  "measureDecode() refuses a softmax variant its attention softmax cannot run, naming it",
  async (gpu) => {
    const model = getPreset("tiny-16m");
    for (const id of ["acc=f16,wg=64", "acc=f32,wg=128"]) {
      await assert.rejects(
        () => measureDecode(gpu, model, "f32", { tokens: 1, context: 4, softmaxVariant: id }),
        new RegExp(`Softmax variant "${id}" cannot run in the decode`),
      );
    }
  },
);

gpuTest("measureDecode() runs the attention softmax with 256 lanes when asked", async (gpu) => {
  const model = getPreset("tiny-16m");
  const opts = { tokens: 2, context: 8, warmup: 1 };
  const wide = await measureDecode(gpu, model, "f32", {
    ...opts,
    softmaxVariant: "acc=f32,wg=256",
  });
  const narrow = await measureDecode(gpu, model, "f32", opts);
  // Same seeded weights, same greedy tokens: the lane count changes speed, not the result.
  assert.deepEqual(wide.tokenIds, narrow.tokenIds);
});
