import assert from "node:assert/strict";
import { createWebGpuRunner } from "../calibrate/runners/webgpu.ts";
import { sampleDecodes, validateDecode } from "../decode/validate.ts";
import { loadReport } from "../reports/load.ts";
import { gpuTest } from "./_gpu.ts";

/** A published report with every WebGPU figure the estimate needs (any machine's will do). */
const REPORT = new URL("../reports/llvmpipe-vulkan-x86_64-32776e59.json", import.meta.url);

gpuTest(
  "validateDecode() pools the tokens of interleaved decodes into one measured rate",
  async (gpu) => {
    const report = await loadReport(REPORT.pathname);
    const order: string[] = [];
    const vs = await validateDecode(gpu, report, {
      models: ["tiny-16m"],
      quants: ["f32", "int4"],
      tokens: 2,
      repeats: 2,
      context: 8,
      kernelBudgetMs: 40,
      onStart: (model, quant) => order.push(`${model} ${quant}`),
    });
    // Every pair once, then again: a slow spell of the machine hits both alike.
    assert.deepEqual(order, ["tiny-16m f32", "tiny-16m int4", "tiny-16m f32", "tiny-16m int4"]);
    assert.equal(vs.length, 2);
    for (const v of vs) {
      const { measuredPerTokenMs, decodes } = v.details ?? {};
      assert.ok(Array.isArray(measuredPerTokenMs));
      const perToken = measuredPerTokenMs.map(Number);
      assert.equal(perToken.length, 4);
      assert.equal(decodes, 2);
      // The decode ran the softmax the estimate priced: the report's best f32 variant.
      assert.match(String(v.details?.softmaxVariant), /^acc=f32,wg=(64|256)$/);
      const sorted = [...perToken].sort((a, b) => a - b);
      const median = (sorted[1]! + sorted[2]!) / 2;
      assert.ok(Math.abs(v.measuredTokensPerSec - 1000 / median) / v.measuredTokensPerSec < 0.01);
      assert.ok(v.estimatedTokensPerSec > 0);
      assert.equal(v.error, v.estimatedTokensPerSec / v.measuredTokensPerSec - 1);
      // The headline is the estimate from the report's figures alone, what users get; the one
      // priced from kernels timed between the decodes is kept beside it, and says so.
      assert.match(String(v.details?.estimateFrom), /the report's figures alone/);
      const alongside = v.details?.alongsideEstimate as {
        tokensPerSec: number;
        error: number;
        from: string;
      };
      assert.ok(alongside.tokensPerSec > 0);
      assert.match(alongside.from, /timed alongside the decodes/);
      // Its projections' weights as cold as the decode leaves them: rotated through the bytes the
      // decode's projections stream per token. tiny-16m has 4 × (2·512² + 2·128·512 + 3·1536·512)
      // + 4096·512 = 14 155 776 projection weights (4 bytes each in f32; half a byte and a 4-byte
      // scale per 32 in int4) and reads and writes 42 496 f32 vector elements around them:
      // 56 793 088 B = 54.2 MiB in f32, 9 017 344 B = 8.6 MiB in int4.
      const span = /rotated through ([\d.]+) MiB/.exec(alongside.from);
      assert.ok(span, alongside.from);
      assert.equal(span[1], v.quant === "f32" ? "54.2" : "8.6");
      const kernels = (alongside as unknown as { sources: string[] }).sources
        .filter((s) => s.startsWith("decode kernel"));
      assert.ok(kernels.length > 0);
      // Four windows each (one before and one after each decode); a device-resident window of a
      // tiny kernel whose every sample was lost in the sync noise is left out, so a kernel may
      // keep fewer.
      for (const s of kernels) {
        assert.match(s, /measured alongside the decode: .* median of [1-4] window/);
      }
      const windows = v.details?.alongsideWindowMs as Record<string, number[]>;
      assert.ok(Object.values(windows).every((w) => w.length >= 1 && w.length <= 4));
      assert.ok(Object.values(windows).some((w) => w.length === 4));
      // And each decode against the estimate from the two windows around it.
      const perDecode = v.details?.perDecode as {
        measuredTokensPerSec: number;
        estimatedTokensPerSec: number;
        error: number;
      }[];
      assert.equal(perDecode.length, 2);
      for (const d of perDecode) {
        assert.ok(d.measuredTokensPerSec > 0 && d.estimatedTokensPerSec > 0);
        assert.ok(
          Math.abs(d.error - (d.estimatedTokensPerSec / d.measuredTokensPerSec - 1)) < 0.01,
        );
      }
      // With timestamps, each token splits into its pass's GPU time and the rest (the sync the
      // estimate prices separately), medians of the pooled tokens.
      if (gpu.device.features.has("timestamp-query")) {
        const gpuMs = Number(v.details?.measuredGpuMedianMs);
        const syncMs = Number(v.details?.measuredSyncMedianMs);
        assert.ok(gpuMs > 0 && syncMs >= 0, `${gpuMs} ${syncMs}`);
        assert.ok(
          gpuMs <= Math.max(...perToken),
          `${gpuMs} ms of GPU time in a ${median} ms token`,
        );
      }
      const errors = perDecode.map((d) => d.error);
      const medianError = Number(v.details?.perDecodeMedianError);
      assert.ok(Math.abs(medianError - (errors[0]! + errors[1]!) / 2) < 1e-9, `${medianError}`);
    }
  },
);

gpuTest(
  "validateDecode() pools the decodes sampled through the run that ran its kernels, and the bare rounds after its bracketed ones",
  async (gpu) => {
    const report = await loadReport(REPORT.pathname);
    const opts = { models: ["tiny-16m"], quants: ["int4" as const], tokens: 2, context: 8 };
    const sampled = await sampleDecodes(gpu, report, opts);
    assert.equal(sampled.length, 1, "one decode of the pair");
    // A decode whose projections ran another variant (the report's best changed since) is not the
    // kernels the estimate prices: left out.
    const other = { ...sampled[0]!, kernels: sampled[0]!.kernels.replace("rpw", "rpx") };
    let decodes = 0;
    const [v] = await validateDecode(gpu, report, {
      ...opts,
      repeats: 1,
      bareRounds: 2,
      alongside: false,
      earlier: [...sampled, other],
      onStart: () => decodes++,
    });
    assert.equal(decodes, 3, "one bracketed round and two bare ones");
    const d = v!.details!;
    assert.equal(d.decodes, 4, "the sample that ran its kernels and its own three");
    assert.equal(d.decodesThroughRun, 1);
    assert.equal(d.decodesWithOtherKernelsLeftOut, 1);
    assert.equal((d.measuredPerTokenMs as number[]).length, 8);
    assert.equal(
      (d.measuredDecodeMedianMs as number[])[0],
      Math.round(sampled[0]!.run.medianMs * 100) / 100,
    );
    assert.ok(Number(d.decodeSpanS) >= 0);
    await assert.rejects(
      () => validateDecode(gpu, report, { ...opts, bareRounds: -1 }),
      /"bareRounds" must be a non-negative integer, got -1/,
    );
  },
);

gpuTest(
  "validateDecode() without alongside timing gives the report-only estimate alone",
  async (gpu) => {
    const report = await loadReport(REPORT.pathname);
    const [v] = await validateDecode(gpu, report, {
      models: ["tiny-16m"],
      quants: ["int4"],
      tokens: 2,
      repeats: 1,
      context: 8,
      alongside: false,
    });
    assert.match(String(v!.details?.estimateFrom), /the report's figures alone/);
    assert.equal(v!.details?.perDecode, undefined);
    assert.ok(!("alongsideEstimate" in (v!.details ?? {})));
    assert.ok(!("alongsideWindowMs" in (v!.details ?? {})));
  },
);

gpuTest(
  "validateDecode() with its budget spent after the first round decodes no second one",
  async (gpu) => {
    const report = await loadReport(REPORT.pathname);
    const [v] = await validateDecode(gpu, report, {
      models: ["tiny-16m"],
      quants: ["int4"],
      tokens: 2,
      repeats: 3,
      context: 8,
      alongside: false,
      budgetMs: 1,
    });
    assert.equal(v!.details?.decodes, 1);
    await assert.rejects(
      () => validateDecode(gpu, report, { budgetMs: 0 }),
      /"budgetMs" must be positive, got 0/,
    );
  },
);

gpuTest("validateDecode() refuses a repeat count that is not a positive integer", async (gpu) => {
  const report = await loadReport(REPORT.pathname);
  await assert.rejects(
    () => validateDecode(gpu, report, { repeats: 0 }),
    /"repeats" must be a positive integer, got 0/,
  );
});

gpuTest("validateDecode() times every kernel alongside on the runners it is given", async (gpu) => {
  const report = await loadReport(REPORT.pathname);
  const runner = createWebGpuRunner(gpu);
  const [v] = await validateDecode(gpu, report, {
    models: ["tiny-16m"],
    quants: ["int4"],
    tokens: 1,
    repeats: 1,
    context: 4,
    kernelBudgetMs: 30,
    runners: (backend) => Promise.resolve(backend === "webgpu" ? runner : "webgpu only"),
  });
  const alongside = v!.details?.alongsideEstimate as { sources: string[] };
  const sources = alongside.sources.filter((s) => s.startsWith("decode kernel"));
  // The projections, which read weights, as much as the activation kernels.
  for (const name of ["q_proj", "gate_proj", "lm_head", "attn_norm"]) {
    const line = sources.find((s) => s.startsWith(`decode kernel ${name} `));
    assert.match(String(line), /measured alongside the decode/, name);
  }
});
