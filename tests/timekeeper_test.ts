import assert from "node:assert/strict";
import { getOp } from "../kernels/catalog.ts";
import { planFor } from "../calibrate/plan.ts";
import { lastRunSeconds, TimeKeeper } from "../calibrate/timekeeper.ts";
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

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

Deno.test("until the jobs are done, the ETA reaches at least the end the same run reached last time on this machine", () => {
  let now = 0;
  const planned = new TimeKeeper(plan, () => now, true);
  const remembered = new TimeKeeper(plan, () => now, true, 560);
  for (const time of [planned, remembered]) {
    time.systemDone();
    time.startJob(0);
  }
  now = 100;
  // The plan's 290 s would say under 200 s left; last time the run took 560 s.
  assert.ok(planned.etaS()! < 200, `${planned.etaS()}`);
  assert.equal(remembered.etaS(), 460);
  // Past the last run's length, the plan's own estimate is all there is.
  now = 600;
  assert.equal(remembered.etaS(), planned.etaS());
  // The revisit and the LLM validation have deadlines of their own.
  now = 200;
  for (const time of [planned, remembered]) {
    time.endJob(0);
    time.startRevisit();
  }
  assert.equal(remembered.etaS(), planned.etaS());
});

/** A report of `plan`'s jobs as `lastRunSeconds` reads it: provenance, fingerprint, measured ops. */
function earlierReport(
  durationS: number,
  changes: {
    date?: string;
    fingerprint?: string;
    mode?: "quick";
    complete?: false;
    ops?: string[];
    driverEnv?: Record<string, string>;
  } = {},
): Report {
  const report = syntheticReport();
  const template = report.measurements.find((m) => m.op === "add" && m.dtype === "f32")!;
  return {
    ...report,
    fingerprint: changes.fingerprint ?? report.fingerprint,
    provenance: {
      ...report.provenance,
      date: changes.date ?? "2026-11-27T10:00:00.000Z",
      durationS,
      mode: changes.mode ?? "default",
      complete: changes.complete ?? true,
      stopReason: "finished",
      resumedFrom: null,
      ...(changes.driverEnv === undefined ? {} : { driverEnv: changes.driverEnv }),
    },
    // One measurement of each job the report ran.
    measurements: (changes.ops ?? ["add", "mul"]).map((op) => ({ ...template, op })),
  };
}

Deno.test("lastRunSeconds() takes the latest complete run of the same machine, configuration, mode and jobs", () => {
  const fingerprint = syntheticReport().fingerprint;
  const run = { fingerprint, plan };
  assert.equal(lastRunSeconds([], run), null, "a first calibration has none");
  assert.equal(lastRunSeconds([earlierReport(560)], run), 560);
  assert.equal(
    lastRunSeconds([
      earlierReport(560),
      earlierReport(610, { date: "2026-11-28T10:00:00.000Z" }),
    ], run),
    610,
    "the latest",
  );
  for (
    const other of [
      earlierReport(560, { fingerprint: "another" }),
      earlierReport(560, { mode: "quick" }),
      earlierReport(560, { complete: false }),
      earlierReport(560, { ops: ["add", "gemv"] }),
      earlierReport(560, { driverEnv: { LP_NUM_THREADS: "1" } }),
    ]
  ) {
    assert.equal(lastRunSeconds([other], run), null, JSON.stringify(other.provenance));
  }
  // The backend choice is the fingerprint's; another setting is another configuration's run.
  const vulkan = earlierReport(560, { driverEnv: { DENO_WEBGPU_BACKEND: "vulkan" } });
  assert.equal(lastRunSeconds([vulkan], run), 560);
  const oneThread = { ...run, driverEnv: { LP_NUM_THREADS: "1" } };
  assert.equal(lastRunSeconds([earlierReport(560)], oneThread), null);
  assert.equal(
    lastRunSeconds([earlierReport(900, { driverEnv: { LP_NUM_THREADS: "1" } })], oneThread),
    900,
  );
});
