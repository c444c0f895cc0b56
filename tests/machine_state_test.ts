import assert from "node:assert/strict";
import { atUsualLevel, machineStateAt, STATE_DEADBAND } from "../calibrate/machine_state.ts";
import type { Measurement } from "../core/schema.ts";
import type { StabilityProbe } from "../calibrate/stability.ts";
import type { WindowSamples } from "../calibrate/measure.ts";
import { summarize } from "../core/stats.ts";

/** Probes every 10 s: js 0.041 ms and wasm 0.009 usually, both ×1.37 from 40 to 60 s. */
const SLOW = Math.log(0.056 / 0.041);
const PROBES: StabilityProbe[] = [0, 10, 20, 30, 40, 50, 60, 70, 80].map((atS) => {
  const f = atS >= 40 && atS <= 60 ? Math.exp(SLOW) : 1;
  return { atS, ms: { js: 0.041 * f, wasm: 0.009 * f, "wasm-mt": 0.011 } };
});

function jsMeasurement(windows: readonly WindowSamples[], backend = "js" as const): Measurement {
  const wall = summarize(windows.flatMap((w) => w.wall));
  return {
    op: "add",
    shape: { n: 4096 },
    dtype: "f32",
    backend,
    variant: "default",
    residency: "end-to-end",
    state: "ok",
    wall,
    compileMs: 0,
    maxRelError: 0,
    flops: 4096,
    bytes: 49152,
    gflops: 4096 / wall.median / 1e6,
    gbps: 49152 / wall.median / 1e6,
    noisy: false,
    size: 4096,
    seq: 7,
  };
}

Deno.test("the machine's state is read between the probes on either side, against the run's median", () => {
  assert.ok(Math.abs(machineStateAt(PROBES, 50)! - SLOW) < 1e-12, "inside a slow stretch");
  assert.ok(Math.abs(machineStateAt(PROBES, 35)! - SLOW / 2) < 1e-12, "halfway into one");
  assert.equal(machineStateAt(PROBES, 5), 0, "the usual level");
  assert.equal(machineStateAt(PROBES, 500), 0, "after the last probe: the last probe's state");
  assert.equal(machineStateAt(PROBES.slice(0, 4), 5), null, "too few probes for a usual level");
});

Deno.test("the state is one-thread js's and wasm's together: one of them alone counts half", () => {
  const onlyJs = PROBES.map((p) => ({
    ...p,
    ms: { ...p.ms, js: p.atS === 50 ? 0.041 * 1.2 : 0.041, wasm: 0.009 },
  }));
  assert.equal(machineStateAt(onlyJs, 50), 0, "js alone ×1.2: half of it is under the deadband");
  const jsOnly = PROBES.map((p) => ({ ...p, ms: { js: p.ms.js! } }));
  assert.ok(Math.abs(machineStateAt(jsOnly, 50)! - SLOW) < 1e-12, "a run without wasm: js's");
  const twoThreads = PROBES.map((p) => ({ ...p, ms: { "wasm-mt": p.ms.js! } }));
  assert.equal(machineStateAt(twoThreads, 50), null, "two-thread wasm's probe is not read");
});

Deno.test("a probe's own scatter is not a state: within the deadband the level is the usual one", () => {
  const scatter = PROBES.map((p, i) => ({
    atS: p.atS,
    ms: { js: 0.041 * Math.exp((i % 2 ? 1 : -1) * 0.45 * STATE_DEADBAND) },
  }));
  for (const atS of [0, 10, 15, 45, 80]) assert.equal(machineStateAt(scatter, atS), 0, `${atS}`);
});

Deno.test("a window taken in a slow stretch is brought to the run's usual level, and the report says by how much", () => {
  const usual = { wall: [1.0, 1.02, 0.98, 1.01, 0.99], gpu: [], atS: 10 };
  const slow = { wall: [1.37, 1.4, 1.36, 1.38, 1.39], gpu: [], atS: 50 };
  const m = jsMeasurement([usual, slow]);
  const level = atUsualLevel(m, [usual, slow], PROBES);
  assert.equal(level.state, "ok");
  if (level.state !== "ok") return;
  assert.ok(Math.abs(level.wall.median - 1.005) < 0.01, `${level.wall.median}`);
  assert.ok(level.machineState! > 0.1 && level.machineState! < SLOW, `${level.machineState}`);
  assert.equal(level.seq, 7);
  assert.equal(level.size, 4096);
  assert.ok(m.state === "ok" && level.gflops > m.gflops, "its rate follows its time");
  // Both windows slow: the whole case moves by the state.
  const both = atUsualLevel(jsMeasurement([slow, { ...slow, atS: 55 }]), [slow, {
    ...slow,
    atS: 55,
  }], PROBES);
  assert.ok(
    both.state === "ok" && Math.abs(both.machineState! - SLOW) < 1e-3,
    `${both.state === "ok" && both.machineState}`,
  );
});

Deno.test("a case taken at the usual level, untimed windows, and WebGPU end to end stay as measured", () => {
  const usual = { wall: [1.0, 1.02, 0.98], gpu: [], atS: 10 };
  const m = jsMeasurement([usual]);
  assert.equal(atUsualLevel(m, [usual], PROBES), m);
  const untimed = { wall: [1.4, 1.38], gpu: [] };
  assert.equal(atUsualLevel(jsMeasurement([untimed]), [untimed], PROBES).state, "ok");
  assert.equal(
    (atUsualLevel(jsMeasurement([untimed]), [untimed], PROBES) as { machineState?: number })
      .machineState,
    undefined,
  );
  const slow = { wall: [0.9, 0.91], gpu: [], atS: 50 };
  const e2e = { ...jsMeasurement([slow]), backend: "webgpu" as const };
  assert.equal(atUsualLevel(e2e, [slow], PROBES), e2e, "WebGPU end to end is mostly the sync");
  const resident = { ...e2e, residency: "device-resident" as const };
  assert.equal(atUsualLevel(resident, [slow], PROBES), resident, "and moves with device-resident");
  const mt = { ...jsMeasurement([slow]), backend: "wasm-mt" as const };
  const moved = atUsualLevel(mt, [slow], PROBES);
  assert.ok(moved.state === "ok" && Math.abs(moved.machineState! - SLOW) < 1e-3, "wasm-mt moves");
  assert.equal(atUsualLevel(m, [], PROBES), m, "a resumed case has no windows of this run");
});
