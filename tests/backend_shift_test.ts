import assert from "node:assert/strict";
import { backendShifts, hostReferences } from "../reports/backend_shift.ts";
import { compareReports } from "../reports/compare.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";
import { probesWith, slowedBackends, withRelCi } from "./_report_variants.ts";

/** A synthetic report measured on a noisy machine (±15 % per figure), with calm probes. */
function noisy(stability = probesWith(0.05)): Report {
  return { ...withRelCi(syntheticReport(), 0.15), stability };
}

Deno.test("compareReports() detects a backend-wide 25 % slowdown that no single figure shows", () => {
  const current = slowedBackends(noisy(), ["webgpu"], 1.25);
  const result = compareReports(noisy(), current);
  const webgpuRows = result.rows.filter((r) => r.key.includes("webgpu") && r.kind === "rate");
  assert.ok(webgpuRows.length > 5);
  assert.equal(webgpuRows.some((r) => r.regressed), false, "each figure alone is within noise");
  const webgpu = result.backends.find((b) => b.backend === "webgpu");
  assert.ok(webgpu);
  assert.equal(webgpu.regressed, true, webgpu.note);
  assert.ok(Math.abs(webgpu.change - 0.25) < 1e-9);
  assert.match(
    webgpu.note,
    /\+25\.0 % time against wasm, js \(host \+0\.0 % over the run\) .*slower beyond noise/,
  );
  assert.equal(result.regressed, true);
  assert.deepEqual(result.backends.filter((b) => b.regressed).map((b) => b.backend), ["webgpu"]);
});

Deno.test("backendShifts() names the figures that carry the verdict, largest first", () => {
  const current = slowedBackends(noisy(), ["webgpu"], 1.5);
  current.measurements = current.measurements.map((m) =>
    m.state === "ok" && m.backend === "webgpu" && m.op === "matmul" &&
      m.residency === "device-resident"
      ? {
        ...m,
        wall: { ...m.wall, median: m.wall.median * 3 },
        ...(m.gpu ? { gpu: { ...m.gpu, median: m.gpu.median * 3 } } : {}),
      }
      : m
  );
  const webgpu = backendShifts(noisy(), current).find((s) => s.backend === "webgpu")!;
  assert.equal(webgpu.regressed, true);
  assert.equal(webgpu.carriers.length, webgpu.points.length, "every figure moved beyond 10 %");
  const first = webgpu.carriers.slice(0, 3).map((p) => p.key);
  assert.ok(
    first.every((key) => key.startsWith("matmul f32 device-resident at ")),
    first.join(", "),
  );
  assert.match(webgpu.note, /carried by \d+ of \d+ figures, most by matmul f32 device-resident/);
});

Deno.test("ratio normalisation cancels a simulated common-mode host slowdown", () => {
  // The whole host 40 % slower during the current run: every backend, every probe.
  const current = {
    ...slowedBackends(noisy(), ["webgpu", "wasm", "wasm-mt", "js"], 1.4),
    stability: probesWith(0.05, 1.4),
  };
  const result = compareReports(noisy(), current);
  assert.equal(result.regressed, false);
  assert.equal(result.backends.some((b) => b.beyondNoise), false);
  const rate = result.rows.find((r) => r.key === "matmul f32 wasm end-to-end compute");
  assert.ok(rate?.change !== null && rate?.own);
  assert.ok(Math.abs(rate.change! - (1 / 1.4 - 1)) < 1e-9, "the absolute figure is shown");
  assert.ok(Math.abs(rate.own.change) < 1e-9, "against the host, nothing moved");
  assert.match(
    rate.note,
    /^-28\.6 % \(\+0\.0 % against the host: js time \+40\.0 % over the run\)/,
  );
});

Deno.test("the same slowdown on one backend alone is not cancelled", () => {
  const current = slowedBackends(noisy(), ["wasm"], 1.4);
  const wasm = compareReports(noisy(), current).backends.find((b) => b.backend === "wasm");
  assert.equal(wasm?.regressed, true, wasm?.note);
});

Deno.test("hostReferences() judges a hardware GPU on absolute times, and leaves it out of the CPU's reference", () => {
  const hardware = (r: Report): Report => ({ ...r, adapter: { ...r.adapter!, software: false } });
  const baseline = hardware(noisy());
  const current = hardware(slowedBackends(noisy(), ["webgpu"], 2));
  const refs = hostReferences(baseline, current);
  assert.equal(refs.reference("webgpu"), null);
  assert.deepEqual(refs.reference("wasm")?.backends, ["js"], "js runs on one core as wasm does");
  assert.deepEqual(refs.reference("wasm-mt")?.backends, ["wasm", "js"]);
  assert.equal(refs.reference("wasm")?.logShift, 0);
});

Deno.test("backendShifts() allows for each backend's drift between runs", () => {
  const wild = probesWith(0.8);
  const current = { ...slowedBackends(noisy(wild), ["webgpu"], 1.25) };
  const webgpu = backendShifts(noisy(wild), current).find((s) => s.backend === "webgpu")!;
  assert.equal(webgpu.regressed, false, webgpu.note);
  assert.match(webgpu.note, /within noise \(its run-to-run drift σ \d+ %\)/);
});

Deno.test("backendShifts() times device-resident WebGPU points by their GPU timestamps", () => {
  // The device slowed 2x; the host's fixed cost of each dispatch, in the wall time, did not.
  const current = noisy();
  current.measurements = current.measurements.map((m) =>
    m.state === "ok" && m.backend === "webgpu" && m.residency === "device-resident" && m.gpu
      ? { ...m, gpu: { ...m.gpu, median: m.gpu.median * 2 } }
      : m
  );
  const webgpu = backendShifts(noisy(), current).find((s) => s.backend === "webgpu")!;
  const resident = webgpu.points.filter((p) => p.key.includes("device-resident"));
  assert.ok(resident.length > 0);
  assert.ok(resident.every((p) => Math.abs(p.logChange - Math.log(2)) < 1e-9));
});

Deno.test("backendShifts() pools only points where the backend's work carries the time", () => {
  const webgpu = backendShifts(noisy(), noisy()).find((s) => s.backend === "webgpu")!;
  // End-to-end, the ~11 ms synchronisation carries every small case: only large ones count.
  const endToEnd = webgpu.points.filter((p) => p.key.includes("end-to-end"));
  assert.ok(endToEnd.every((p) => p.baselineMs >= 2 * 11.5), endToEnd.map((p) => p.key).join());
  assert.ok(webgpu.points.some((p) => p.key.includes("device-resident")));
});

Deno.test("losing the host's second core is drift of the all-core backends, not a regression", () => {
  // wasm-mt's workers and a software adapter's threads both lose the second core; wasm and js
  // run on one core and do not move.
  const current = slowedBackends(noisy(), ["wasm-mt", "webgpu"], 1.6);
  const shifts = backendShifts(noisy(), current);
  assert.deepEqual(shifts.filter((s) => s.beyondNoise).map((s) => s.backend), []);
  for (const s of shifts) assert.ok(Math.abs(s.change) < 1e-9, `${s.backend}: ${s.note}`);
  assert.match(shifts.find((s) => s.backend === "webgpu")!.note, /against wasm, js, wasm-mt/);
});

Deno.test("a regression of one all-core backend does not make the other look faster", () => {
  const current = slowedBackends(noisy(), ["webgpu"], 2);
  const shifts = backendShifts(noisy(), current);
  const wasmMt = shifts.find((s) => s.backend === "wasm-mt")!;
  assert.equal(wasmMt.beyondNoise, false, wasmMt.note);
  assert.ok(Math.abs(wasmMt.change) < 1e-9);
  assert.deepEqual(shifts.filter((s) => s.regressed).map((s) => s.backend), ["webgpu"]);
});

Deno.test("backendShifts() pools the shapes measured off the op's axis, named by their dimensions", () => {
  const withOffAxis = (r: Report, factor: number): Report => {
    const extra = r.measurements.flatMap((m) =>
      m.state === "ok" && m.backend === "webgpu" && m.op === "matmul" && m.size === 512
        ? [{
          ...m,
          shape: { m: 8, k: 512, n: 2048 },
          offAxis: true as const,
          wall: { ...m.wall, median: m.wall.median * factor },
          ...(m.gpu ? { gpu: { ...m.gpu, median: m.gpu.median * factor } } : {}),
        }]
        : []
    );
    return { ...r, measurements: [...r.measurements, ...extra] };
  };
  const webgpu = backendShifts(withOffAxis(noisy(), 1), withOffAxis(noisy(), 3))
    .find((s) => s.backend === "webgpu")!;
  const offAxis = webgpu.points.filter((p) => p.key.endsWith("at m=8 k=512 n=2048"));
  assert.ok(offAxis.length >= 1, webgpu.points.map((p) => p.key).join(", "));
  assert.ok(offAxis.every((p) => Math.abs(p.ownLogChange - Math.log(3)) < 1e-9));
});

Deno.test("pointNoise() reads the tail: points that strayed far widen every point's noise", () => {
  // One wasm-mt point in five strayed, each from a different series' median.
  const strayed = (factor: number) => {
    const r = noisy();
    let i = 0;
    r.measurements = r.measurements.map((m) =>
      m.state === "ok" && m.backend === "wasm-mt" && i++ % 5 === 2
        ? { ...m, wall: { ...m.wall, median: m.wall.median * factor } }
        : m
    );
    return r;
  };
  const at = { op: "matmul", dtype: "f32", residency: "end-to-end", size: 512 } as const;
  const calm = hostReferences(noisy(), strayed(1)).pointNoise("wasm-mt", at);
  const wild = hostReferences(noisy(), strayed(1.6)).pointNoise("wasm-mt", at);
  assert.ok(wild > calm + 0.05, `${calm} → ${wild}`);
  // A whole backend that moved is a change to detect, not noise of its points.
  const moved = hostReferences(noisy(), slowedBackends(noisy(), ["wasm-mt"], 1.6))
    .pointNoise("wasm-mt", at);
  assert.ok(Math.abs(moved - calm) < 1e-9, `${calm} → ${moved}`);
});

Deno.test("backendShifts() leaves out a drift estimated from fewer than five probes", () => {
  // Three probes, one of them odd: a σ of 0.8 from them would hide a 2x slowdown.
  const few = probesWith(0.8, 1, 3);
  const current = slowedBackends(noisy(few), ["webgpu"], 2);
  const webgpu = backendShifts(noisy(few), current).find((s) => s.backend === "webgpu")!;
  assert.equal(webgpu.drift, null);
  assert.equal(webgpu.regressed, true, webgpu.note);
  // The same σ from nine probes is used, and hides it.
  const many = probesWith(0.8, 1, 9);
  const hidden = backendShifts(noisy(many), slowedBackends(noisy(many), ["webgpu"], 2))
    .find((s) => s.backend === "webgpu")!;
  assert.ok(hidden.drift !== null);
});
