import assert from "node:assert/strict";
import {
  measureStepProbe,
  PROBE_MODEL,
  probeOrders,
  type StepOrder,
  stepProbeFromSamples,
  type StepSample,
} from "../decode/step_probe.ts";
import type { Dispatch } from "../decode/graph.ts";
import { getPreset } from "../models/llm/presets.ts";
import { gpuTest } from "./_gpu.ts";

const sample = (
  order: StepOrder,
  round: number,
  wallMs: number,
  gpuMs: number,
  quant: "f32" | "int4" = "f32",
): StepSample => ({ quant, round, order, wallMs, gpuMs });

Deno.test("the chain factor is the median over rounds of chained over grouped GPU time", () => {
  const samples = [1.05, 1.1, 1.3, 1.08, 1.12].flatMap((ratio, round) => [
    sample("chain", round, 30, 10 * ratio),
    sample("chain", round, 30, 10 * ratio),
    sample("grouped", round, 30, 10),
    sample("grouped", round, 30, 10),
  ]);
  const p = stepProbeFromSamples(samples, 68, 17);
  assert.ok(Math.abs(p.chainFactor.value! - 1.1) < 1e-12, `${p.chainFactor.value}`);
  const [lo, hi] = p.chainFactor.ci!;
  assert.ok(lo <= 1.1 && hi >= 1.1 && hi - lo < 0.5, `${lo}–${hi}`);
});

Deno.test("the host's part of a step is a line through the one-layer and the whole step", () => {
  // Host time 12 ms + 10 µs per launch, whatever the GPU time.
  const host = (launches: number) => 12 + 0.01 * launches;
  const samples = [0, 1, 2].flatMap((round) => [
    sample("chain", round, host(68) + 9, 9),
    sample("layer", round, host(17) + 2.5, 2.5),
    sample("grouped", round, 30, 8),
  ]);
  const p = stepProbeFromSamples(samples, 68, 17);
  assert.ok(Math.abs(p.hostFixedMs.value! - 12) < 1e-9, `${p.hostFixedMs.value}`);
  assert.ok(Math.abs(p.hostPerDispatchUs.value! - 10) < 1e-9, `${p.hostPerDispatchUs.value}`);
  assert.equal(p.dispatches, 68);
});

Deno.test("a probe with nothing timed has every figure null and says why", () => {
  const p = stepProbeFromSamples([], 68, 17, "the adapter has no timestamp-query");
  for (const f of [p.chainFactor, p.hostFixedMs, p.hostPerDispatchUs]) {
    assert.equal(f.value, null);
    assert.match(f.reason!, /timestamp-query/);
  }
});

Deno.test("without timestamp-query the probe measures nothing and says why", async () => {
  const device = { features: new Set<string>() } as unknown as GPUDevice;
  const p = await measureStepProbe({ device });
  for (const f of [p.chainFactor, p.hostFixedMs, p.hostPerDispatchUs]) {
    assert.equal(f.value, null);
    assert.match(f.reason!, /no timestamp-query/);
  }
});

Deno.test("probeOrders() groups each kernel's launches in layer order and cuts the first layer", () => {
  const d = (name: string, layer: number) => ({ name, layer }) as unknown as Dispatch;
  const chain = [d("embed", 0), d("q", 0), d("add", 0), d("q", 1), d("add", 1), d("head", 9)];
  const o = probeOrders(chain, 3);
  assert.deepEqual(o.chain, chain);
  const named = (list: readonly Dispatch[]) =>
    list.map((x) => `${x.name}${(x as unknown as { layer: number }).layer}`).join(" ");
  assert.equal(named(o.grouped), "add0 add1 embed0 head9 q0 q1");
  assert.equal(named(o.layer), "embed0 q0 add0");
});

Deno.test("the probe's model is none of the models a validation checks", () => {
  for (const name of ["tiny-16m", "tiny-64m"]) {
    const m = getPreset(name);
    assert.notEqual(m.hidden, PROBE_MODEL.hidden, name);
    assert.notEqual(m.intermediate, PROBE_MODEL.intermediate, name);
  }
});

gpuTest("measureStepProbe() times a checked decode's step three ways", async (gpu) => {
  const p = await measureStepProbe(gpu, { rounds: 1 });
  if (!gpu.device.features.has("timestamp-query")) {
    assert.equal(p.chainFactor.value, null);
    assert.match(p.chainFactor.reason!, /timestamp-query/);
    return;
  }
  assert.ok(p.chainFactor.value! > 0, JSON.stringify(p.chainFactor));
  assert.ok(p.hostFixedMs.value! > 0, JSON.stringify(p.hostFixedMs));
  assert.ok(p.hostPerDispatchUs.value! >= 0, JSON.stringify(p.hostPerDispatchUs));
  assert.equal(p.dispatches, 68);
});
