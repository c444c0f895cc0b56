import assert from "node:assert/strict";
import { getOp } from "../kernels/catalog.ts";
import { planFor } from "../calibrate/plan.ts";
import { TimeKeeper } from "../calibrate/timekeeper.ts";

const plan = planFor({
  quick: false,
  mode: "default",
  ops: [getOp("add"), getOp("mul")],
  dtypes: ["f32"],
  backends: ["js", "wasm"],
});

Deno.test("a default plan shares its jobs' time by weight, and time a job does not need rolls on", () => {
  let now = 0;
  const time = new TimeKeeper(plan, () => now, false);
  time.systemDone();
  time.startJob(0);
  const first = time.jobDeadline();
  // Two jobs of equal weight before the revisit reserve: the first gets half.
  const jobsEnd = plan.time.totalS! * 0.95 -
    plan.time.revisitShare * (plan.time.totalS! - plan.time.systemS);
  assert.ok(Math.abs(first - jobsEnd / 2) < 1e-9, `${first} vs ${jobsEnd / 2}`);
  assert.ok(time.gridDeadline() < first, "the off-axis share is kept at the end of the job");
  now = first / 4;
  time.endJob(0);
  time.startJob(1);
  assert.ok(Math.abs(time.jobDeadline() - jobsEnd) < 1e-9, "the second job gets all that is left");
});

Deno.test("the planned ETA follows the pace of the jobs so far and counts the reserves", () => {
  let now = 0;
  const time = new TimeKeeper(plan, () => now, true);
  assert.equal(time.etaS(), plan.time.totalS);
  time.systemDone();
  time.startJob(0);
  now = 20;
  time.endJob(0);
  time.startJob(1);
  // The first job used 20 s of a ~100 s slice: the second is expected to end as early.
  const eta = time.etaS()!;
  assert.ok(eta < plan.time.totalS! - now, `${eta}`);
  assert.ok(eta > plan.time.llmS, "the LLM reserve is still ahead");
  time.endJob(1);
  time.revisitDone();
  assert.equal(time.etaS(), plan.time.llmS);
});

Deno.test("a thorough plan has no deadlines and no planned ETA", () => {
  const thorough = planFor({
    ...{ quick: false, mode: "thorough" as const },
    ops: [getOp("add")],
    dtypes: ["f32"],
    backends: ["js"],
  });
  const time = new TimeKeeper(thorough, () => 1e6, true);
  time.systemDone();
  time.startJob(0);
  assert.equal(time.gridDeadline(), Infinity);
  assert.equal(time.past(time.jobDeadline()), false);
  assert.equal(time.etaS(), null);
});

Deno.test("a default plan's ETA counts the jobs to come at the pace so far, not at the quickest job's seconds", () => {
  const four = planFor({
    quick: false,
    mode: "default",
    ops: [getOp("matmul"), getOp("add")],
    dtypes: ["f32", "f16"],
    backends: ["webgpu", "js", "wasm"],
  });
  let now = 0;
  const time = new TimeKeeper(four, () => now, false);
  time.systemDone();
  const reserves = four.time.totalS! * 0.05 +
    four.time.revisitShare * (four.time.totalS! - four.time.systemS);
  const weights = four.jobs.map((j) => Math.max(1, j.weight));
  const perWeight = (four.time.totalS! - reserves) / weights.reduce((a, b) => a + b, 0);
  time.startJob(0);
  // matmul f32 ends at 40 % of its slice; the f16 jobs to come have smaller slices.
  now = 0.4 * weights[0]! * perWeight;
  time.endJob(0);
  time.startJob(1);
  const jobsLeft = time.etaS()! - reserves;
  const atThatPace = 0.4 * perWeight * (weights[1]! + weights[2]! + weights[3]!);
  assert.ok(
    jobsLeft <= atThatPace + 1e-9,
    `${jobsLeft} s left for jobs, ${atThatPace} at its pace`,
  );
});

Deno.test("a quick plan's ETA counts each job to come at least at the quickest job's seconds", () => {
  const quick = planFor({
    quick: true,
    mode: "quick",
    ops: [getOp("add"), getOp("mul"), getOp("fma")],
    dtypes: ["f32"],
    backends: ["js", "wasm"],
  });
  let now = 0;
  const time = new TimeKeeper(quick, () => now, false);
  time.systemDone();
  time.startJob(0);
  // A loaded machine: the first job took twice the whole jobs' time.
  now = 2 * time.jobDeadline() * 3;
  const quickest = now;
  time.endJob(0);
  time.startJob(1);
  assert.ok(time.etaS()! >= quickest, `${time.etaS()} vs one more job of ${quickest} s`);
});

Deno.test("the LLM decode samples between jobs come out of the LLM reserve, not the jobs' time", () => {
  let now = 0;
  const time = new TimeKeeper(plan, () => now, true);
  time.systemDone();
  time.startJob(0);
  now = 10;
  time.endJob(0);
  time.startJob(1);
  const before = time.jobDeadline();
  time.llmSampled(4);
  assert.equal(time.llmLeftS(), plan.time.llmS - 4);
  time.startJob(1);
  assert.ok(Math.abs(time.jobDeadline() - (before + 4)) < 1e-9, "the jobs keep their time");
  time.llmSampled(1e6);
  assert.equal(time.llmLeftS(), 0, "never below nothing");
  time.endJob(1);
  time.revisitDone();
  assert.equal(time.etaS(), 0, "the validation at the end has what is left");
});

Deno.test("a default run's revisit takes its reserve even when the jobs ran past the plan", () => {
  let now = 0;
  const time = new TimeKeeper(plan, () => now, false);
  time.systemDone();
  time.startJob(0);
  now = plan.time.totalS! * 1.6; // the jobs took 8 minutes of a 5-minute plan
  time.endJob(0);
  const reserve = plan.time.revisitShare * (plan.time.totalS! - plan.time.systemS);
  assert.ok(Math.abs(time.startRevisit() - (now + reserve)) < 1e-9, "the reserve, from now");
  assert.ok(!time.past(time.startRevisit()), "the noisy points still get their second window");
});
