import assert from "node:assert/strict";
import { parseLoopOptions } from "../bench/_adaptive_options.ts";
import { UsageError } from "../core/cli_args.ts";

Deno.test("parseLoopOptions() reads the bench's and the replay's flags with one set of defaults", () => {
  const bench = parseLoopOptions(["--seed", "7", "--scenarios", "c"], "bench");
  const replay = parseLoopOptions(["--from", "r.json", "--seeds", "1,2", "--detail"], "replay");
  assert.ok(bench !== "help" && replay !== "help");
  assert.deepEqual(bench.seeds, [7]);
  assert.deepEqual(bench.scenarios, ["c"]);
  assert.equal(bench.from, null);
  assert.equal(bench.calls, replay.calls);
  assert.equal(bench.budget, replay.budget);
  assert.deepEqual(replay.seeds, [1, 2]);
  assert.equal(replay.from, "r.json");
  assert.equal(replay.detail, true);
  assert.equal(parseLoopOptions(["-h"], "replay"), "help");
});

Deno.test("parseLoopOptions() refuses the other tool's flags and values out of range", () => {
  assert.throws(() => parseLoopOptions(["--seeds", "1,2"], "bench"), UsageError);
  assert.throws(() => parseLoopOptions(["--from", "r.json", "--seed", "1"], "replay"), UsageError);
  assert.throws(() => parseLoopOptions([], "replay"), /--from is required/);
  assert.throws(() => parseLoopOptions(["--calls", "100"], "bench"), /≥ 200/);
  assert.throws(() => parseLoopOptions(["--budget", "2"], "bench"), /\[0, 1\]/);
  assert.throws(() => parseLoopOptions(["--scenarios", "a,d"], "bench"), /a, b and c/);
});
