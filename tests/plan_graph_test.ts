import assert from "node:assert/strict";
import { type GraphOp, planGraph } from "../models/plan_graph.ts";
import { syntheticReport } from "./_fixtures.ts";

const matmul = (n: number): GraphOp => ({ op: "matmul", shape: { m: n, k: n, n } });
const SYNC_11_MS = { roundTripMs: 11 };

Deno.test("planGraph() keeps a long chain resident on the GPU with one sync at the end", () => {
  const plan = planGraph(syntheticReport(), Array(10).fill(matmul(256)), SYNC_11_MS);
  assert.ok(plan.steps.every((s) => s.backend === "webgpu" && s.residency === "device-resident"));
  assert.equal(plan.syncs, 1);
  assert.equal(plan.uploads, 1);
  assert.equal(plan.readbacks, 1);
  assert.equal(plan.uploadBytes, 2 * 256 * 256 * 4);
  assert.equal(plan.readbackBytes, 256 * 256 * 4);
  assert.ok(Math.abs(plan.totalMs - (plan.kernelMs + plan.transferMs)) < 1e-9);
  assert.ok(plan.transferMs > 11);
});

Deno.test("planGraph() runs a short chain on the CPU with no sync", () => {
  const plan = planGraph(syntheticReport(), [matmul(256)], SYNC_11_MS);
  assert.notEqual(plan.steps[0]!.backend, "webgpu");
  assert.equal(plan.syncs, 0);
  assert.equal(plan.uploads + plan.readbacks, 0);
  assert.equal(plan.transferMs, 0);
});

Deno.test("planGraph() moves a lone op to the GPU when synchronising is cheap", () => {
  const plan = planGraph(syntheticReport(), [matmul(256)], { roundTripMs: 0.05 });
  assert.equal(plan.steps[0]!.backend, "webgpu");
  assert.equal(plan.syncs, 1);
});

Deno.test("planGraph() charges a readback and a sync when data leaves the GPU mid-chain", () => {
  // No device-resident add data: the add must run on the CPU (or as its own GPU round).
  const base = syntheticReport();
  const report = syntheticReport({
    fits: base.fits.filter((f) => !(f.op === "add" && f.residency === "device-resident")),
    measurements: base.measurements.filter((m) =>
      !(m.op === "add" && m.residency === "device-resident")
    ),
  });
  const chain = [...Array(6).fill(matmul(256)), { op: "add", shape: { n: 256 * 256 } }];
  const plan = planGraph(report, chain, SYNC_11_MS);
  const last = plan.steps.at(-1)!;
  assert.equal(plan.steps[0]!.backend, "webgpu");
  assert.notEqual(last.backend, "webgpu");
  assert.equal(last.readbacks, 1);
  assert.equal(last.syncs, 1);
  assert.equal(plan.syncs, 1);
  assert.ok(plan.notes.some((n) => /add f32/.test(n)));
});

Deno.test("planGraph() equals the per-op optimum when every op is cheaper on the CPU", () => {
  const plan = planGraph(syntheticReport(), [matmul(16), matmul(16), matmul(16)], SYNC_11_MS);
  assert.ok(plan.steps.every((s) => s.backend !== "webgpu"));
  assert.equal(plan.totalMs, plan.kernelMs);
});

Deno.test("planGraph() rejects an empty chain and ops the report cannot predict", () => {
  const report = syntheticReport();
  assert.throws(() => planGraph(report, []), /empty chain/);
  assert.throws(() => planGraph(report, [{ op: "fma", shape: { n: 64 } }]), /Cannot plan op 0/);
});
