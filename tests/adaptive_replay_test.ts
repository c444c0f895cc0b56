import assert from "node:assert/strict";
import {
  CROSSOVER_WORKLOADS,
  nearestSamples,
  probesOf,
  type Recording,
  trimmedMean,
  workloadLabel,
} from "../bench/_adaptive_loop.ts";
import { type LoopRun, summarize } from "../bench/_adaptive_score.ts";
import {
  readRecording,
  recordedPriors,
  recordedScenario,
  replayScenario,
} from "../bench/adaptive_replay.ts";
import { UsageError } from "../core/cli_args.ts";

/** A 2000-call bench:adaptive run on this 2-core AMD EPYC VM (all three scenarios). */
const FIXTURE = "tests/fixtures/adaptive_recording.json";
/**
 * The reports it was recorded with (its priors): the dataset's entries then, kept here so that
 * recalibrating a machine in reports/ does not change what these loops replay.
 */
const FIXTURE_REPORTS = "tests/fixtures/reports";
const CALLS = 4000;

async function replay(name: "a" | "b" | "c", seed: number) {
  const recording = await readRecording(FIXTURE);
  const [correct, wrong] = await recordedPriors(recording, FIXTURE_REPORTS);
  const run = replayScenario(name, recording, name === "b" ? wrong : correct, {
    calls: CALLS,
    seed,
    budget: 0.03,
  });
  const labels = recordedScenario(recording, name).workloads.map(workloadLabel);
  return { run, result: summarize(run, labels) };
}

function sameCalls(x: LoopRun, y: LoopRun): boolean {
  return JSON.stringify(x.calls) === JSON.stringify(y.calls);
}

Deno.test("replayScenario() gives the same loop for the same seed, and another for another", async () => {
  const [x, y, z] = await Promise.all([replay("b", 7), replay("b", 7), replay("b", 8)]);
  assert.ok(sameCalls(x.run, y.run));
  assert.ok(!sameCalls(x.run, z.run));
});

Deno.test("on recorded times, a correct prior keeps the last half's regret within 3 % and exploring within budget", async () => {
  for (const seed of [1, 2, 3]) {
    const { result } = await replay("a", seed);
    assert.ok(result.lastHalf.regret <= 0.03, `seed ${seed}: ${result.lastHalf.regret}`);
    assert.ok(result.whole.explored <= 0.03, `seed ${seed}: explored ${result.whole.explored}`);
  }
});

Deno.test("on recorded times, another machine's report costs at most 5 % over the loop and the last half picks the fastest 90 % of the time", async () => {
  for (const seed of [1, 2, 3]) {
    const { result } = await replay("b", seed);
    assert.ok(result.whole.regret <= 0.05, `seed ${seed}: regret ${result.whole.regret}`);
    assert.ok(result.lastHalf.fastest >= 0.9, `seed ${seed}: fastest ${result.lastHalf.fastest}`);
    assert.ok(result.whole.explored <= 0.03, `seed ${seed}: explored ${result.whole.explored}`);
  }
});

Deno.test("on recorded times, the selector follows a busy core to wasm on the crossover workloads within 1,600 calls", async () => {
  const crossover = CROSSOVER_WORKLOADS.map(workloadLabel);
  for (const seed of [1, 2, 3]) {
    const { result } = await replay("c", seed);
    const turned = result.switches!.filter((s) => crossover.includes(s.workload));
    assert.ok(turned.length > 0, `seed ${seed}: the drift turned no crossover workload`);
    for (const s of turned) {
      assert.equal(s.after, "wasm");
      assert.ok(s.afterCalls !== null && s.afterCalls <= 1600, `${s.workload}: ${s.afterCalls}`);
    }
    assert.ok(result.afterDrift!.regret <= 0.06, `seed ${seed}: ${result.afterDrift!.regret}`);
    assert.ok(result.whole.explored <= 0.03, `seed ${seed}: explored ${result.whole.explored}`);
  }
});

Deno.test("a recorded scenario's probes come back in their phases, and the oracle pools the nearest", () => {
  const scenario = {
    calls: 100,
    driftAt: 50,
    workloads: [{ op: "dot", shape: { n: 300000 } }],
    probes: [{ wasm: [[10, 1], [40, 2], [60, 9]] as const }],
  } as const;
  const probes = probesOf(scenario, 0).wasm!;
  assert.deepEqual(probes.map((p) => p.phase), [0, 0, 1]);
  assert.deepEqual(nearestSamples(probes, 55, 0), [2, 1]);
  assert.deepEqual(nearestSamples(probes, 45, 1), [9]);
  assert.equal(trimmedMean([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000]), 5.5);
});

Deno.test("readRecording() refuses a missing file and a file without a recording", async () => {
  await assert.rejects(readRecording("tests/fixtures/no-such-recording.json"), UsageError);
  const path = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(path, JSON.stringify({ results: [] }));
    await assert.rejects(readRecording(path), /holds no "recording"/);
    const empty: Recording = { fingerprint: "f", otherFingerprint: null, scenarios: {} };
    await Deno.writeTextFile(path, JSON.stringify({ recording: empty }));
    assert.throws(() => recordedScenario(empty, "c"), RangeError);
  } finally {
    await Deno.remove(path);
  }
});
