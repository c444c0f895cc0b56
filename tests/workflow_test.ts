import assert from "node:assert/strict";

const root = new URL("../", import.meta.url);
const workflow = await Deno.readTextFile(new URL(".github/workflows/calibrate.yml", root));
const tasks = Object.keys(
  (JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as { tasks: object }).tasks,
);

Deno.test("the CI workflow runs only deno tasks that exist", () => {
  const used = [...workflow.matchAll(/deno task ([\w:]+)/g)].map((m) => m[1]!);
  assert.ok(used.includes("calibrate") && used.includes("check"), used.join());
  for (const task of used) assert.ok(tasks.includes(task), `deno task ${task} is not in deno.json`);
});

Deno.test("the CI workflow names no baseline file that does not exist", async () => {
  // A fixed baseline path that was never committed made the first run of a fork fail.
  const paths = [...workflow.matchAll(/(?<![\w$/{])reports\/[\w./-]+\.json/g)].map((m) => m[0]);
  for (const path of paths.filter((p) => p !== "reports/current.json")) {
    await Deno.stat(new URL(path, root)).catch(() => assert.fail(`${path} does not exist`));
  }
});

Deno.test("the CI workflow creates the baseline on a runner class's first run, and says so", () => {
  assert.match(workflow, /actions\/cache\/restore@v4/);
  assert.match(workflow, /actions\/cache\/save@v4/);
  assert.match(workflow, /No baseline for runner class/);
  assert.match(workflow, /--format markdown > check\.md/);
  assert.match(workflow, /cat check\.md >> "\$GITHUB_STEP_SUMMARY"\n\s+exit \$code/);
});

Deno.test("the CI workflow calibrates with the command its baseline is made with", () => {
  const commands = [...workflow.matchAll(/deno task calibrate ([^\n]+)/g)].map((m) => m[1]);
  assert.deepEqual(commands, ["--quick --ops matmul,add --out reports/current.json"]);
});
