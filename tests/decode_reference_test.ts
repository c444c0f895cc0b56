import assert from "node:assert/strict";
import {
  checkBindings,
  opProgram,
  timestampSpanMs,
  wgslBindings,
  wgslWorkgroupSize,
} from "../calibrate/runners/gpu.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import {
  argmaxProgram,
  type DecodeDims,
  embedProgram,
  residualProgram,
  rmsNormProgram,
  ropeProgram,
  scoresProgram,
  siluMulProgram,
  softmaxProgram,
  valuesProgram,
} from "../decode/_decode_wgsl.ts";
import {
  checkDecodeStep,
  DECODE_TOLERANCE,
  DecodeCheckError,
  measureDecode,
} from "../decode/decode.ts";
import { buildDecodeGraph } from "../decode/graph.ts";
import { ReferenceDecoder } from "../decode/reference.ts";
import { gemvWebGpu } from "../kernels/gemv/webgpu.ts";
import { sum } from "../kernels/reduce/mod.ts";
import { defineModel, getPreset } from "../models/llm/presets.ts";
import { gpuTest } from "./_gpu.ts";

/**
 * A two-layer model small enough for a float64 reference in milliseconds, with grouped-query
 * attention (4 heads over 2 KV heads) and a KV row of 256 bytes, which every adapter's storage
 * offset alignment divides.
 */
const TOY = defineModel({
  name: "toy-decode",
  layers: 2,
  hidden: 128,
  intermediate: 256,
  heads: 4,
  kvHeads: 2,
  headDim: 32,
  vocab: 512,
  tiedEmbeddings: false,
  qkvBias: false,
});

const DIMS: DecodeDims = { ...TOY, context: 80 };

const PROGRAMS = [
  embedProgram(DIMS, false),
  embedProgram(DIMS, true),
  rmsNormProgram(DIMS.hidden),
  ropeProgram(DIMS),
  scoresProgram(DIMS),
  softmaxProgram(DIMS, 64),
  softmaxProgram(DIMS, 256),
  valuesProgram(DIMS),
  residualProgram(DIMS.hidden),
  siluMulProgram(DIMS.intermediate),
  argmaxProgram(DIMS.vocab),
];

Deno.test("every decode program declares the bindings and workgroup size its WGSL has", () => {
  for (const p of PROGRAMS) {
    assert.deepEqual(wgslBindings(p.code), p.bindings, p.key);
    assert.deepEqual(wgslWorkgroupSize(p.code), p.workgroupSize, p.key);
    assert.doesNotThrow(() => checkBindings(p), p.key);
  }
});

Deno.test("checkBindings() refuses a program whose bindings disagree with its WGSL", () => {
  const p = residualProgram(8);
  assert.throws(
    () => checkBindings({ ...p, bindings: ["read", "read"] }),
    /declares binding 0 as "read" but its WGSL has "read_write"/,
  );
  // A binding the WGSL leaves out stays in the layout: that is what "auto" layouts get wrong.
  assert.doesNotThrow(() => checkBindings({ ...p, bindings: [...p.bindings, "uniform"] }));
});

Deno.test("opProgram() binds a catalog program as the kernel contract says", () => {
  const gemv = gemvWebGpu.program({ rows: 8, cols: 64 }, "q4", gemvWebGpu.variants[0]!);
  assert.deepEqual(opProgram(gemv, "q4", 3).bindings, [
    "read",
    "read",
    "read",
    "read_write",
    "uniform",
  ]);
  assert.match(opProgram(gemv, "q4", 3).key, /\|q4$/);
  const reduce = sum.impls.webgpu!.program({ n: 1024 }, "f32", sum.impls.webgpu!.variants[0]!);
  assert.deepEqual(opProgram(reduce, "f32", 1).bindings, [
    "read",
    "read_write",
    "uniform",
    "read_write",
  ]);
  // Scratch without uniforms keeps its number, n + 2, and leaves n + 1 unbound.
  const bare = { code: "", key: "k", workgroups: [1, 1, 1] as const, scratchBytes: 16 };
  assert.deepEqual(opProgram(bare, "f32", 1).bindings, ["read", "read_write", null, "read_write"]);
});

Deno.test("timestampSpanMs() sums begin/end pairs and rejects spans that run backwards", () => {
  assert.equal(timestampSpanMs(new BigInt64Array([10n, 1_000_010n, 5n, 500_005n]), 2), 1.5);
  assert.equal(timestampSpanMs(new BigInt64Array([10n, 5n, 0n, 9_000_000n]), 2), null);
  assert.equal(timestampSpanMs(new BigInt64Array([7n, 7n]), 1), null);
});

Deno.test("the float64 reference decode is deterministic, attends to its cache and is never zero", () => {
  const a = new ReferenceDecoder(TOY, "f32", 4);
  const b = new ReferenceDecoder(TOY, "f32", 4);
  const first = a.step(0, 1);
  assert.deepEqual(b.step(0, 1).logits, first.logits);
  assert.ok(first.logits.some((v) => Math.abs(v) > 1e-3) && first.logits.every(Number.isFinite));
  // A token after another attends to the cached first one: not what it gives on its own.
  const second = a.step(1, 2);
  const alone = new ReferenceDecoder(TOY, "f32", 4).step(1, 2);
  assert.ok(verifyOutput(second.logits, alone.logits, 1e-3).maxRelError > 1e-3);
  assert.throws(() => a.step(4, 1), /outside the context/);
  assert.throws(() => a.step(0, TOY.vocab), /outside the vocabulary/);
});

const variantFor = (quant: "f32" | "int4") => {
  const dtype = quant === "f32" ? "f32" : "q4";
  const shape = { rows: TOY.hidden, cols: TOY.hidden };
  const v = gemvWebGpu.variants.find((v) => !gemvWebGpu.unsupported?.(shape, dtype, v))!;
  return () => v;
};

for (const quant of ["f32", "int4"] as const) {
  for (const softmaxWg of [64, 256] as const) {
    gpuTest(
      `decode steps of a tiny ${quant} model match the float64 reference within ` +
        `${DECODE_TOLERANCE} (logits and hidden state, ${softmaxWg}-lane softmax, past 64 positions)`,
      async (gpu) => {
        const graph = buildDecodeGraph(gpu.device, TOY, {
          quant,
          context: DIMS.context,
          gemvVariant: variantFor(quant),
          softmaxWg,
        });
        try {
          const reference = new ReferenceDecoder(TOY, quant, DIMS.context);
          let token = 1;
          // Positions 0–2 fill the cache; 70 attends past the first 64, where a softmax
          // reducing over 64 of its 256 lanes went wrong.
          for (const pos of [0, 1, 2, 70]) {
            const expected = reference.step(pos, token);
            const got = await graph.runStep(pos);
            const logits = verifyOutput(got.logits, expected.logits, DECODE_TOLERANCE);
            const hidden = verifyOutput(got.hidden, expected.hidden, DECODE_TOLERANCE);
            assert.ok(logits.ok, `${quant} logits at ${pos}: ${logits.message}`);
            assert.ok(hidden.ok, `${quant} hidden state at ${pos}: ${hidden.message}`);
            const sorted = [...expected.logits].sort((x, y) => y - x);
            if (sorted[0]! - sorted[1]! > 10 * DECODE_TOLERANCE * Math.abs(sorted[0]!)) {
              assert.equal(got.token, expected.token, `next token at ${pos}`);
            }
            token = got.token;
          }
        } finally {
          graph.destroy();
        }
      },
    );
  }
}

gpuTest("checkDecodeStep() fails a decode that computes something else, naming it", async (gpu) => {
  const graph = buildDecodeGraph(gpu.device, TOY, {
    quant: "int4",
    context: 8,
    gemvVariant: variantFor("int4"),
    softmaxWg: 64,
  });
  try {
    // int4 weights on the device, checked against the f32 model's reference: every logit differs.
    await assert.rejects(
      () => checkDecodeStep(graph, TOY, "f32", 3),
      (e) =>
        e instanceof DecodeCheckError && e.check.logitsError > DECODE_TOLERANCE &&
        /"toy-decode" \(f32\) does not match its float64 reference at position 3, so it was not timed: logits/
          .test(e.message),
    );
    const ok = await checkDecodeStep(graph, TOY, "int4", 3);
    assert.ok(ok.logitsError <= DECODE_TOLERANCE && ok.hiddenError <= DECODE_TOLERANCE);
  } finally {
    graph.destroy();
  }
});

gpuTest(
  "measureDecode() checks its first position against the reference before timing",
  async (gpu) => {
    const opts = { tokens: 2, context: 8, warmup: 1 };
    const m = await measureDecode(gpu, getPreset("tiny-16m"), "f32", opts);
    assert.ok(m.check);
    assert.equal(m.check.position, opts.context - opts.tokens - opts.warmup);
    assert.ok(m.check.logitsError <= DECODE_TOLERANCE && m.check.hiddenError <= DECODE_TOLERANCE);
    const unchecked = await measureDecode(gpu, getPreset("tiny-16m"), "f32", {
      ...opts,
      check: false,
    });
    assert.equal(unchecked.check, null);
    // The check leaves the decode as it found it: the same greedy tokens follow.
    assert.deepEqual(unchecked.tokenIds, m.tokenIds);
  },
);
