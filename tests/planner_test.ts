import assert from "node:assert/strict";
import { getOp } from "../kernels/catalog.ts";
import { planFor } from "../calibrate/plan.ts";
import { Planner } from "../calibrate/planner.ts";
import type { MeasureRequest } from "../calibrate/result.ts";
import { drive } from "./_fake_runner.ts";

/** add on js (10 ns per element) and wasm (2 ns per element), both with 1 µs of overhead. */
const addTimes = (req: MeasureRequest) =>
  0.001 + req.shape.n! * (req.backend === "js" ? 1e-5 : 2e-6);

Deno.test("a planner driven by a fake runner measures the system, the grid, probes and saves, then ends", () => {
  const clock = { s: 0 };
  const planner = new Planner({
    plan: planFor({ quick: true, ops: [getOp("add")], dtypes: ["f32"], backends: ["js", "wasm"] }),
    llm: false,
    clock: () => clock.s,
  });
  const steps = drive(planner, addTimes, clock);
  assert.equal(steps[0]!.kind, "system");
  assert.deepEqual(
    [...new Set(steps.map((s) => s.kind))].sort(),
    ["measure", "probe", "save", "system"],
  );
  assert.equal(planner.done, true);
  assert.equal(planner.next(), null);
  const sizes = (backend: string) =>
    planner.measurements.filter((m) => m.backend === backend && m.state === "ok").length;
  assert.ok(sizes("js") >= 3 && sizes("wasm") >= 3, `js ${sizes("js")}, wasm ${sizes("wasm")}`);
  const seqs = planner.measurements.map((m) => m.seq);
  assert.deepEqual(seqs, seqs.map((_, i) => i), "one seq per measurement, in order");
});

Deno.test("a planner does not measure again what a resumed run measured", () => {
  const clock = { s: 0 };
  const plan = planFor({ quick: true, ops: [getOp("add")], dtypes: ["f32"], backends: ["js"] });
  const first = new Planner({ plan, llm: false, clock: () => clock.s });
  drive(first, addTimes, clock);
  const again = new Planner({
    plan,
    llm: false,
    clock: () => clock.s,
    resumed: first.measurements,
    system: null,
  });
  const steps = drive(again, addTimes, clock);
  assert.equal(steps.filter((s) => s.kind === "measure" && s.record).length, 0);
  assert.equal(again.measurements.length, first.measurements.length);
});

Deno.test("a planner ends with the LLM validation when asked, and gives an ETA from its time plan", () => {
  const clock = { s: 0 };
  const plan = planFor({
    quick: false,
    mode: "default",
    ops: [getOp("add")],
    dtypes: ["f32"],
    backends: ["js", "wasm"],
  });
  const planner = new Planner({ plan, llm: true, clock: () => clock.s });
  assert.equal(planner.etaS(), plan.time.totalS, "before anything ran, the whole plan is left");
  const steps = drive(planner, addTimes, clock);
  assert.equal(steps.at(-1)!.kind, "llm");
  const thorough = new Planner({
    plan: planFor({
      quick: false,
      mode: "thorough",
      ops: [getOp("add")],
      dtypes: ["f32"],
      backends: ["js"],
    }),
    llm: false,
    clock: () => 0,
  });
  assert.equal(thorough.etaS(), null, "no budget, no planned ETA: the pace decides");
});
