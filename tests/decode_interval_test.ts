import assert from "node:assert/strict";
import { normal, normalQuantile } from "../core/numeric.ts";
import { seededRng } from "../kernels/_random.ts";
import {
  DECODE_INTERVAL_LEVEL,
  kernelSumBand,
  type PricedLaunches,
} from "../models/llm/interval.ts";
import {
  type DeviceRates,
  estimateTokensPerSec,
  type KernelTimeModel,
  type RateFigure,
} from "../models/llm/estimate.ts";
import { getPreset } from "../models/llm/presets.ts";

// Synthetic kernels and rates: not measurements of any device.
const Z90 = normalQuantile(0.95);

/** A kernel whose 90 % interval is drift σ and its cost model's own σ, combined as predictTime does. */
function launch(
  name: string,
  model: string,
  ms: number,
  launches: number,
  drift: number,
  own: number,
): PricedLaunches {
  const h = Z90 * Math.hypot(drift, own);
  return {
    name,
    op: "gemv",
    dtype: "f32",
    variant: model,
    launches,
    ms,
    interval: [ms * Math.exp(-h), ms * Math.exp(h)],
    level: 0.9,
    driftSigma: drift,
  };
}

Deno.test("the decode range holds its level on synthetic kernels with known noise", () => {
  // A step like a tiny decode's: three cost models (projections, attention, the rest), each
  // wrong by its own lognormal factor shared by its kernels, and one drift shared by all.
  const drift = 0.15;
  const models = { proj: 0.25, attn: 0.4, other: 0.3 } as const;
  const kernels = [
    launch("q_proj", "proj", 0.2, 4, drift, models.proj),
    launch("gate_proj", "proj", 0.45, 8, drift, models.proj),
    launch("lm_head", "proj", 1.0, 1, drift, models.proj),
    launch("attn_scores", "attn", 0.04, 8, drift, models.attn),
    launch("add", "other", 0.03, 12, drift, models.other),
  ];
  const band = kernelSumBand(kernels);
  assert.ok(typeof band === "object", String(band));
  const predicted = kernels.reduce((a, k) => a + k.launches * k.ms, 0);
  const rng = seededRng(7);
  const draws = 4000;
  let inside = 0;
  for (let i = 0; i < draws; i++) {
    const shared = drift * normal(rng);
    const errors = Object.fromEntries(
      Object.entries(models).map(([m, sigma]) => [m, sigma * normal(rng)]),
    );
    const truth = kernels.reduce(
      (a, k) => a + k.launches * k.ms * Math.exp(shared + errors[k.variant]!),
      0,
    );
    if (Math.abs(Math.log(truth / predicted)) <= band.halfWidth) inside++;
  }
  const coverage = inside / draws;
  assert.ok(
    coverage >= DECODE_INTERVAL_LEVEL - 0.05 && coverage <= DECODE_INTERVAL_LEVEL + 0.05,
    `coverage ${coverage}`,
  );
});

Deno.test("kernels of one cost model err together, kernels of different ones apart", () => {
  const same = kernelSumBand([
    launch("q_proj", "a", 0.2, 4, 0.1, 0.3),
    launch("o_proj", "a", 0.2, 4, 0.1, 0.3),
  ]);
  const apart = kernelSumBand([
    launch("q_proj", "a", 0.2, 4, 0.1, 0.3),
    launch("o_proj", "b", 0.2, 4, 0.1, 0.3),
  ]);
  assert.ok(typeof same === "object" && typeof apart === "object");
  assert.ok(Math.abs(same.sigmas.models - 0.3) < 1e-9, `${same.sigmas.models}`);
  assert.ok(Math.abs(apart.sigmas.models - 0.3 / Math.SQRT2) < 1e-9, `${apart.sigmas.models}`);
  // The drift moves both alike either way.
  assert.ok(Math.abs(same.sigmas.drift - 0.1) < 1e-9 && Math.abs(apart.sigmas.drift - 0.1) < 1e-9);
});

Deno.test("a kernel interval without its drift part counts wholly as drift", () => {
  const k = { ...launch("lm_head", "a", 1, 1, 0.2, 0.2) };
  const { driftSigma: _, ...whole } = k;
  const band = kernelSumBand([whole]);
  assert.ok(typeof band === "object");
  assert.equal(band.sigmas.models, 0);
  assert.ok(Math.abs(band.sigmas.drift - Math.hypot(0.2, 0.2)) < 1e-9);
});

Deno.test("a kernel without a finite interval around its time leaves no range, and says which", () => {
  const band = kernelSumBand([
    launch("q_proj", "a", 0.2, 4, 0.1, 0.3),
    { ...launch("softmax", "b", 0.05, 4, 0.1, 0.3), interval: [0, Infinity] },
  ]);
  assert.equal(typeof band, "string");
  assert.match(band as string, /softmax/);
});

Deno.test("the chain factor's own interval widens the range", () => {
  const kernels = [launch("q_proj", "a", 0.2, 4, 0.1, 0.3)];
  const plain = kernelSumBand(kernels) as { halfWidth: number };
  const factor = {
    value: 1.1,
    unit: "x",
    tag: "measured" as const,
    ci: [1.0, 1.2] as [number, number],
  };
  const widened = kernelSumBand(kernels, factor) as { halfWidth: number };
  assert.ok(widened.halfWidth > plain.halfWidth, `${widened.halfWidth} vs ${plain.halfWidth}`);
});

const fig = (value: number, unit: string): RateFigure => ({ value, unit, tag: "measured" });

function rates(kernelTime?: KernelTimeModel): DeviceRates {
  return {
    name: "synthetic-gpu",
    memoryBytes: 24e9,
    matmulGflops: { f32: fig(20_000, "GFLOP/s") },
    gemvGBps: { f32: fig(900, "GB/s"), q4: fig(500, "GB/s") },
    perDispatchUs: fig(5, "us"),
    syncRoundTripMs: fig(10, "ms"),
    hostLinkGBps: { upload: fig(25, "GB/s"), readback: fig(20, "GB/s") },
    ...(kernelTime ? { kernelTime } : {}),
  };
}

/** Every launch 0.1 ms, ×1.5 either way at 90 %, of which σ 0.1 is drift. */
const flat: KernelTimeModel = (r) => ({
  ms: 0.1,
  interval: [0.1 / 1.5, 0.15],
  level: 0.9,
  driftSigma: 0.1,
  tag: "fitted",
  variant: `v-${r.op}`,
  source: "synthetic",
});

Deno.test("estimateTokensPerSec() states a decode range around its estimate, the host's part fixed", () => {
  const opts = { context: 64, batch: 1, kvDtype: "f32" } as const;
  const e = estimateTokensPerSec(getPreset("tiny-16m"), "int4", rates(flat), opts);
  const range = e.decodeInterval;
  assert.equal(range.level, DECODE_INTERVAL_LEVEL);
  assert.ok(range.tokensPerSec !== null, range.note);
  const [slow, fast] = range.tokensPerSec;
  assert.ok(slow < e.decodeTokensPerSec && e.decodeTokensPerSec < fast, `${slow} ${fast}`);
  // 68 launches of 0.1 ms move; the 10 ms round trip does not: the range is narrower than the
  // kernels' own ×1.5.
  const t = e.perTokenMs;
  const kernels = t.weightsStreamMs + t.kvReadMs + t.dispatchMs;
  assert.ok(1000 / slow - t.totalMs < kernels * 0.5, `${1000 / slow} vs ${t.totalMs}`);
  assert.ok(fast / slow < 1.5 * 1.5, `${fast / slow}`);
});

Deno.test("a roofline estimate states no range and says why", () => {
  const e = estimateTokensPerSec(getPreset("tiny-16m"), "int4", rates(), {
    context: 64,
    batch: 1,
  });
  assert.equal(e.decodeInterval.tokensPerSec, null);
  assert.match(e.decodeInterval.note, /roofline/);
});
