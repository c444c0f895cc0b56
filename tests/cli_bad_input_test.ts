import assert from "node:assert/strict";
import { main as estimate } from "../models/llm/estimate_cli.ts";
import { main as select } from "../models/select_cli.ts";
import { main as check } from "../reports/check_cli.ts";
import { main as report } from "../reports/report_cli.ts";
import { BAD_REPORTS, badReport, editedGpuCrossover } from "./_bad_reports.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

const REPO = new URL("..", import.meta.url).pathname;

/** The bad report files every CLI is given: missing, truncated, not JSON, and invalid. */
async function withBadFiles(fn: (files: Record<string, string>) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpucal_bad_" });
  try {
    const text = JSON.stringify(syntheticReport());
    const files: Record<string, string> = {
      missing: `${dir}/missing.json`,
      truncated: `${dir}/truncated.json`,
      "not JSON": `${dir}/page.json`,
      "zero median": `${dir}/zero-median.json`,
      "duplicate key": `${dir}/duplicate.json`,
    };
    await Deno.writeTextFile(files.truncated!, text.slice(0, text.length / 2));
    await Deno.writeTextFile(files["not JSON"]!, "<html>a web page</html>");
    await Deno.writeTextFile(
      files["zero median"]!,
      JSON.stringify(badReport(BAD_REPORTS.find((b) => b.name === "a zero median")!)),
    );
    await Deno.writeTextFile(
      files["duplicate key"]!,
      text.replace('"slug":', '"slug":"x","slug":'),
    );
    await fn(files);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** One error line first, then at most a usage hint: no stack trace. */
function assertOneErrorLine(err: string, what: string): void {
  const [first, ...rest] = err.split("\n").filter((l) => l !== "");
  assert.match(first ?? "", /^error: /, what);
  assert.ok(rest.every((l) => l.startsWith("Usage:")), `${what}: ${err}`);
  assert.doesNotMatch(err, /^\s+at /m, `${what}: a stack trace`);
}

Deno.test("select, estimate, check and report give exit 2 and one error line for every bad report", async () => {
  await withBadFiles(async (files) => {
    const good = `${Deno.cwd()}/reports/llvmpipe-vulkan-x86_64-1ec2aa7f.json`;
    const clis: Record<string, (path: string) => Promise<number>> = {
      select: (p) => select(["--report", p, "--op", "add", "--shape", "1024"]),
      estimate: (p) => estimate(["--report", p, "--model", "llama-3-8b", "--quant", "int4"]),
      check: (p) => check(["--baseline", good, "--current", p]),
      report: (p) => report(["--report", p, "--format", "markdown"]),
    };
    for (const [cli, run] of Object.entries(clis)) {
      for (const [what, path] of Object.entries(files)) {
        const result = await captureCli(() => run(path));
        assert.equal(result.code, 2, `${cli} with a ${what} report: ${result.err}`);
        assertOneErrorLine(result.err, `${cli} with a ${what} report`);
      }
    }
  });
});

Deno.test("check fails on a report that contradicts its own measurements, naming the finding: 1 for the current run, 2 for the baseline", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const edited = syntheticReport();
    editedGpuCrossover(edited);
    await Deno.writeTextFile(`${dir}/base.json`, JSON.stringify(syntheticReport()));
    await Deno.writeTextFile(`${dir}/edited.json`, JSON.stringify(edited));
    const current = await captureCli(() =>
      check(["--baseline", `${dir}/base.json`, "--current", `${dir}/edited.json`])
    );
    assert.equal(current.code, 1);
    assert.match(
      current.err,
      /^error: --current ".*edited\.json" contradicts its own measurements: "crossovers\[\d+\]" \(add f32 cpu→webgpu end-to-end\) says the CPU is faster below 1000 elements/m,
    );
    const baseline = await captureCli(() =>
      check(["--baseline", `${dir}/edited.json`, "--current", `${dir}/base.json`])
    );
    assert.equal(baseline.code, 2);
    assert.match(
      baseline.err,
      /^error: --baseline: ".*edited\.json" contradicts its own measurements: "crossovers\[\d+\]"/,
    );
    assertOneErrorLine(baseline.err, "check");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs a deno task's script in a subprocess with the task's permissions. */
async function runScript(permissions: string[], script: string, args: string[]) {
  const out = await new Deno.Command("deno", {
    args: ["run", ...permissions, `${REPO}${script}`, ...args],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  return { code: out.code, err: new TextDecoder().decode(out.stderr) };
}

Deno.test("bench:regret gives exit 2 and one line for a missing or truncated --report", async () => {
  await withBadFiles(async (files) => {
    for (const what of ["missing", "truncated"]) {
      const { code, err } = await runScript(
        ["--allow-read", "--allow-env", "--allow-sys"],
        "bench/regret.ts",
        ["--report", files[what]!],
      );
      assert.equal(code, 2, err);
      assert.equal(err.trim().split("\n").length, 1, err);
      assert.match(err, /^error: --report: Cannot load report/);
    }
  });
});

Deno.test("bench:regret gives exit 2 and one line naming the file and line of a bad --shapes list, before measuring", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/list.txt`, "# mine\nmatmul f32 1x3072x768\ngemv q4 3072\n");
    const bad = await runScript(
      ["--allow-read", "--allow-env", "--allow-sys"],
      "bench/regret.ts",
      ["--report", `${dir}/no-report.json`, "--shapes", `${dir}/list.txt`],
    );
    assert.equal(bad.code, 2, bad.err);
    assert.equal(bad.err.trim().split("\n").length, 1, bad.err);
    assert.match(bad.err, /^error: --shapes: .*list\.txt:3: "3072" is not 2 positive integers/);
    const missing = await runScript(
      ["--allow-read", "--allow-env", "--allow-sys"],
      "bench/regret.ts",
      ["--report", `${dir}/no-report.json`, "--shapes", `${dir}/none.txt`],
    );
    assert.equal(missing.code, 2, missing.err);
    assert.match(missing.err, /^error: --shapes: .*none\.txt/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task schema refuses an argument with exit 2 instead of rewriting the schema", async () => {
  const { code, err } = await runScript(
    ["--allow-write=/nonexistent/schema.json"],
    "reports/write_schema.ts",
    ["--out"],
  );
  assert.equal(code, 2);
  assert.match(err.trim().split("\n")[0]!, /^error: Unknown option '--out'/);
});
