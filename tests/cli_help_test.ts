import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import config from "../deno.json" with { type: "json" };

const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

/** Tasks that are not gpucal commands (they run tools over the repository). */
const NOT_COMMANDS = new Set(["test", "check:all"]);

/** One task's run is stopped after this long; `--help` answers in a few seconds. */
const TASK_TIMEOUT_MS = 120_000;

/** Every file under `reports/` with its modification time, to see what a command wrote. */
async function snapshot(dir: string): Promise<Map<string, number>> {
  const files = new Map<string, number>();
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) {
      for (const [p, t] of await snapshot(path)) files.set(p, t);
    } else files.set(path, (await Deno.stat(path)).mtime?.getTime() ?? 0);
  }
  return files;
}

Deno.test("every deno task command prints its usage on --help and writes nothing", async () => {
  const tasks = Object.keys(config.tasks).filter((t) => !NOT_COMMANDS.has(t));
  assert.ok(tasks.includes("schema") && tasks.includes("calibrate"), tasks.join(", "));
  const before = await snapshot(`${ROOT}/reports`);
  for (const task of tasks) {
    const run = await new Deno.Command("deno", {
      args: ["task", "-q", task, "--help"],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(TASK_TIMEOUT_MS),
    }).output();
    const out = new TextDecoder().decode(run.stdout);
    const err = new TextDecoder().decode(run.stderr);
    assert.equal(run.code, 0, `deno task ${task} --help exited ${run.code}: ${err}`);
    assert.match(out, /^Usage: /m, `deno task ${task} --help prints its usage`);
  }
  assert.deepEqual(await snapshot(`${ROOT}/reports`), before, "no file under reports/ changed");
});
