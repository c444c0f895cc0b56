import assert from "node:assert/strict";
import { defaultReportPath, lossOnReplacing } from "../cli/_output.ts";
import { calibrate } from "../calibrate/calibrate.ts";
import { main } from "../cli/calibrate.ts";
import { removeStaleTemps, removeTempFilesSync, writeFileAtomic } from "../core/atomic.ts";
import { parseReport } from "../reports/load.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

/** A short CPU-only run: one op on scalar JS. */
const QUICK = ["--quick", "--ops", "add", "--backends", "js", "--no-llm"];

const REPO = new URL("..", import.meta.url).pathname;

/** Runs `fn` in a fresh temporary directory as the working directory, then restores both. */
async function inTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpucal_output_" });
  const cwd = Deno.cwd();
  Deno.chdir(dir);
  try {
    await fn(dir);
  } finally {
    Deno.chdir(cwd);
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes `text` as this machine's report (js only) at its default path, and returns the path. */
async function machineReportOf(text: string): Promise<string> {
  const machinePath = await defaultReportPath();
  await Deno.mkdir("reports", { recursive: true });
  await Deno.writeTextFile(machinePath, text);
  return machinePath;
}

/** A partial report of this machine (js only), interrupted after two measurements. */
async function partialReport(out: string): Promise<number> {
  const stop = new AbortController();
  let seen = 0;
  const { report } = await calibrate({
    quick: true,
    ops: ["add"],
    backends: ["js"],
    out,
    signal: stop.signal,
    onProgress: (e) => {
      if (e.kind === "measured" && ++seen === 2) stop.abort();
    },
  });
  assert.equal(report.provenance.complete, false);
  return report.measurements.length;
}

function tempsIn(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".tmp"));
}

Deno.test("calibrate --resume R completes R and leaves the machine's full report as it was", async () => {
  await inTempDir(async (dir) => {
    const machinePath = await defaultReportPath();
    await Deno.mkdir("reports");
    const full = JSON.stringify(syntheticReport());
    await Deno.writeTextFile(machinePath, full);
    const partial = `${dir}/partial.json`;
    const started = await partialReport(partial);
    // What a run killed in the middle of a save left beside it.
    await Deno.writeTextFile(`${dir}/.partial.json.0badc0de.tmp`, '{"half": ');

    const run = await captureCli(() => main(["--resume", partial, ...QUICK]));
    assert.equal(run.code, 0, run.err);
    const resumed = parseReport(JSON.parse(await Deno.readTextFile(partial)));
    assert.equal(resumed.provenance.complete, true);
    assert.equal(resumed.provenance.resumedFrom, partial);
    assert.ok(resumed.measurements.length > started);
    assert.equal(await Deno.readTextFile(machinePath), full, "the machine's report is untouched");
    assert.deepEqual(tempsIn(dir), [], "the killed run's temporary file was removed");
    assert.match(
      run.err,
      /Removed .*\.partial\.json\.0badc0de\.tmp, left by a run that was killed/,
    );
  });
});

Deno.test("calibrate refuses to replace an --out report holding more measurements, before measuring", async () => {
  await inTempDir(async () => {
    const full = JSON.stringify(syntheticReport());
    const machinePath = await machineReportOf(full);
    await Deno.writeTextFile("other.json", full);
    await Deno.writeTextFile("notes.json", "my notes");

    // An explicit --out that holds more is refused before anything is measured.

    const out = await captureCli(() => main([...QUICK, "--out", "other.json"]));
    assert.equal(out.code, 2);
    assert.match(out.err, /^error: --out "other\.json" holds a complete report/);
    const notes = await captureCli(() => main([...QUICK, "--out", "notes.json"]));
    assert.equal(notes.code, 2);
    assert.match(notes.err, /^error: --out "notes\.json" holds a file this gpucal cannot read/);
    assert.equal(await Deno.readTextFile(machinePath), full);
    assert.equal(await Deno.readTextFile("other.json"), full);
    assert.equal(await Deno.readTextFile("notes.json"), "my notes");

    const forced = await captureCli(() =>
      main([...QUICK, "--out", "other.json", "--force", "--budget", "0.5"])
    );
    assert.equal(forced.code, 0, forced.err);
    assert.notEqual(await Deno.readTextFile("other.json"), full, "--force replaced it");
  });
});

Deno.test("calibrate --out where it may not write fails before measuring, naming the command that grants it", async () => {
  await inTempDir(async (dir) => {
    await Deno.mkdir("reports");
    await Deno.mkdir("elsewhere");
    const child = await new Deno.Command("deno", {
      args: [
        "run",
        `--allow-read`,
        `--allow-write=${dir}/reports`,
        "--allow-env",
        "--allow-sys",
        "--allow-run=git",
        `${REPO}cli/calibrate.ts`,
        ...QUICK,
        "--out",
        `${dir}/elsewhere/r.json`,
      ],
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(120_000),
    }).output();
    const err = new TextDecoder().decode(child.stderr);
    assert.equal(child.code, 2, err);
    assert.equal(new TextDecoder().decode(child.stdout), "");
    const [first, ...rest] = err.trim().split("\n");
    assert.equal(
      first,
      `error: --out "${dir}/elsewhere/r.json": this run may not write in "${dir}/elsewhere"; run: ` +
        `GLIBC_TUNABLES=glibc.malloc.hugetlb=1 deno run --v8-flags=--no-maglev --allow-read --allow-write=reports,${dir}/elsewhere ` +
        `--allow-env ` +
        `--allow-sys=cpus,osRelease,systemMemoryInfo --allow-run=git cli/calibrate.ts ` +
        `${QUICK.join(" ")} --out ${dir}/elsewhere/r.json`,
    );
    assert.deepEqual(rest.filter((l) => l !== ""), [
      "Usage: deno task calibrate [options] (see --help)",
    ]);
    assert.deepEqual([...Deno.readDirSync("elsewhere")], []);

    const missing = await captureCli(() => main([...QUICK, "--out", `${dir}/missing/r.json`]));
    assert.equal(missing.code, 2);
    assert.match(
      missing.err,
      /^error: --out ".*\/missing\/r\.json": the folder ".*\/missing" does not exist; create it first/,
    );
  });
});

Deno.test("a save killed with SIGKILL never tears the report, and its temporary file is cleaned", async () => {
  await inTempDir(async (dir) => {
    const target = `${dir}/report.json`;
    let leftovers = 0;
    for (let attempt = 0; attempt < 10 && leftovers === 0; attempt++) {
      const child = new Deno.Command("deno", {
        args: [
          "run",
          `--allow-read=${dir}`,
          `--allow-write=${dir}`,
          `${REPO}tests/_atomic_writer_child.ts`,
          target,
        ],
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const reader = child.stdout.getReader();
      await reader.read(); // "written": one save is complete, the next one has begun
      await new Promise((resolve) => setTimeout(resolve, 20 + 30 * attempt));
      child.kill("SIGKILL");
      await child.status;
      reader.releaseLock();
      await child.stdout.cancel();
      const saved = JSON.parse(await Deno.readTextFile(target));
      assert.equal(saved.rows.length, 400_000, "the report is whole");
      leftovers += tempsIn(dir).length;
      await removeStaleTemps(target);
      assert.deepEqual(tempsIn(dir), [], "no temporary file survives the next run's cleanup");
    }
    assert.ok(leftovers > 0, "no kill landed mid-save in 10 attempts: the test proved nothing");
  });
});

Deno.test("removeStaleTemps() leaves alone a temporary file a live writer holds locked", async () => {
  await inTempDir(async (dir) => {
    const temp = `${dir}/.report.json.c0ffee00.tmp`;
    const writer = await Deno.open(temp, { write: true, createNew: true });
    try {
      await writer.lock(true);
      assert.deepEqual(await removeStaleTemps(`${dir}/report.json`), []);
    } finally {
      writer.close();
    }
    assert.deepEqual(await removeStaleTemps(`${dir}/report.json`), [temp]);
  });
});

Deno.test("removeTempFilesSync() removes a save in flight, for a second Ctrl-C that quits at once", async () => {
  await inTempDir(async (dir) => {
    const target = `${dir}/report.json`;
    await Deno.writeTextFile(target, "old");
    const big = new Uint8Array(64 * 2 ** 20).fill(0x20);
    let caught = 0;
    for (let attempt = 0; attempt < 5 && caught === 0; attempt++) {
      const save = writeFileAtomic(target, big).then(() => "saved", () => "abandoned");
      let outcome: string | null = null;
      void save.then((o) => (outcome = o));
      while (outcome === null && tempsIn(dir).length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      if (outcome === null) caught += removeTempFilesSync();
      const ended = await save;
      assert.deepEqual(tempsIn(dir), []);
      if (ended === "abandoned") {
        assert.equal(await Deno.readTextFile(target), "old", "the report is as it was");
      } else await Deno.writeTextFile(target, "old");
    }
    assert.ok(caught > 0, "no save was caught in flight in 5 attempts: the test proved nothing");
  });
});

Deno.test("SIGTERM stops calibrate like Ctrl-C: a valid partial report, exit 130, no temporary file", async () => {
  await inTempDir(async (dir) => {
    const out = `${dir}/r.json`;
    const child = new Deno.Command("deno", {
      args: [
        "run",
        "--allow-read",
        `--allow-write=${dir}`,
        "--allow-env",
        "--allow-sys",
        "--allow-run=git",
        `${REPO}cli/calibrate.ts`,
        "--ops",
        "add,mul,fma",
        "--backends",
        "js",
        "--no-llm",
        "--json",
        "--out",
        out,
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes('"kind":"measured"')) {
      const { done, value } = await lines.read();
      if (done) break;
      text += value;
    }
    child.kill("SIGTERM");
    while (!(await lines.read()).done) {
      // Drain until the child exits.
    }
    const { code } = await child.status;
    assert.equal(code, 130);
    const report = parseReport(JSON.parse(await Deno.readTextFile(out)));
    assert.equal(report.provenance.complete, false);
    assert.equal(report.provenance.stopReason, "interrupted");
    assert.deepEqual(tempsIn(dir), []);
  });
});

Deno.test("calibrate of a machine whose report exists saves beside it and replaces it only once complete", async () => {
  await inTempDir(async () => {
    const machinePath = await defaultReportPath();
    const staged = machinePath.replace(/\.json$/, ".partial.json");
    await Deno.mkdir("reports");
    const full = JSON.stringify(syntheticReport());
    await Deno.writeTextFile(machinePath, full);

    // A staged run cut short leaves the machine's report as it was; resumed, it replaces it.
    await partialReport(staged);
    assert.equal(await Deno.readTextFile(machinePath), full);
    const resumed = await captureCli(() => main(["--resume", staged, ...QUICK]));
    assert.equal(resumed.code, 0, resumed.err);
    assert.equal(
      parseReport(JSON.parse(await Deno.readTextFile(machinePath))).provenance.complete,
      true,
    );
    assert.equal(
      await Deno.stat(staged).catch(() => null),
      null,
      "the staged file became the report",
    );

    // A fresh run does the same in one go (beside a report it may replace: an incomplete one).
    const partial = JSON.stringify({
      ...syntheticReport(),
      provenance: { ...syntheticReport().provenance, complete: false, stopReason: "budget" },
    });
    await Deno.writeTextFile(machinePath, partial);
    const fresh = await captureCli(() => main(QUICK));
    assert.equal(fresh.code, 0, fresh.err);
    const replaced = parseReport(JSON.parse(await Deno.readTextFile(machinePath)));
    assert.equal(replaced.provenance.complete, true);
    assert.notEqual(JSON.stringify(replaced), partial);
    assert.equal(await Deno.stat(staged).catch(() => null), null);
  });
});

Deno.test("calibrate does not replace the machine's complete report with a run that measures less of it, unless forced", async () => {
  await inTempDir(async () => {
    // A default run of matmul, add and gemv on every backend; the run below is a quick one of add
    // on js.
    const full = JSON.stringify(syntheticReport());
    const machinePath = await machineReportOf(full);
    const narrower = await captureCli(() => main(QUICK));
    assert.equal(narrower.code, 2);
    assert.match(
      narrower.err,
      /holds this machine's complete calibration \(\d+ measurements\), and this run would replace it with less: a default run's sizes and windows, and \d+ jobs this run leaves out \(matmul f32 on js, /,
    );
    assert.match(narrower.err, /Pass --out reports\/<name>\.json to keep both, or --force/);
    assert.equal(await Deno.readTextFile(machinePath), full, "refused before measuring");
    const forced = await captureCli(() => main([...QUICK, "--force"]));
    assert.equal(forced.code, 0, forced.err);
    assert.equal(
      parseReport(JSON.parse(await Deno.readTextFile(machinePath))).provenance.mode,
      "quick",
    );
  });
});

Deno.test("calibrate with driver settings writes that configuration's own report beside the machine's, which it leaves alone", async () => {
  await inTempDir(async () => {
    const full = JSON.stringify(syntheticReport());
    const machinePath = await machineReportOf(full);
    const before = Deno.env.get("LP_NUM_THREADS");
    Deno.env.set("LP_NUM_THREADS", "1");
    try {
      const onePath = await defaultReportPath();
      assert.equal(onePath, machinePath.replace(/\.json$/, "-lp_num_threads-1.json"));
      const run = await captureCli(() => main(QUICK));
      assert.equal(run.code, 0, run.err);
      const one = parseReport(JSON.parse(await Deno.readTextFile(onePath)));
      assert.equal(`reports/${one.slug}.json`, onePath);
      assert.equal(one.provenance.driverEnv?.LP_NUM_THREADS, "1");
    } finally {
      if (before === undefined) Deno.env.delete("LP_NUM_THREADS");
      else Deno.env.set("LP_NUM_THREADS", before);
    }
    assert.equal(await Deno.readTextFile(machinePath), full, "the default configuration's report");
  });
});

Deno.test("calibrate carries the drift probes of the report it replaces over, and from three runs states how far runs move", async () => {
  await inTempDir(async () => {
    const machinePath = await defaultReportPath();
    await Deno.mkdir("reports");
    const first = await captureCli(() => main(QUICK));
    assert.equal(first.code, 0, first.err);
    const one = parseReport(JSON.parse(await Deno.readTextFile(machinePath)));
    assert.ok(one.stability && one.stability.probes.length > 0, "a quick run probes its drift");
    assert.equal(one.stability.earlierRuns, undefined, "a machine's first run has none");
    // Another report of this machine, from a day when js ran 1.5× slower, named on the command
    // line; a report of another machine adds nothing.
    const slowDay = {
      ...one,
      provenance: { ...one.provenance, date: "2026-01-02T08:00:00.000Z" },
      stability: {
        ...one.stability,
        probes: one.stability.probes.map((p) => ({ ...p, ms: { js: 1.5 * p.ms.js! } })),
      },
    };
    await Deno.writeTextFile("slow.json", JSON.stringify(slowDay));
    await Deno.writeTextFile(
      "other.json",
      JSON.stringify({ ...slowDay, fingerprint: "f".repeat(16) }),
    );
    const second = await captureCli(() =>
      main([...QUICK, "--earlier-runs-from", "slow.json,other.json"])
    );
    assert.equal(second.code, 0, second.err);
    const two = parseReport(JSON.parse(await Deno.readTextFile(machinePath)));
    assert.deepEqual(two.stability!.earlierRuns!.map((r) => r.date), [
      "2026-01-02T08:00:00.000Z",
      one.provenance.date,
    ]);
    const sigma = two.stability!.betweenRunSigma!.js!;
    assert.ok(sigma > 0.15 && sigma < 0.5, `js between runs ${sigma}`);

    const before = await Deno.readTextFile(machinePath);
    const missing = await captureCli(() => main([...QUICK, "--earlier-runs-from", "nope.json"]));
    assert.equal(missing.code, 2);
    assert.match(missing.err, /^error: --earlier-runs-from: cannot use "nope\.json"/);
    assert.equal(await Deno.readTextFile(machinePath), before, "refused before measuring");
  });
});

Deno.test("a report records the GLIBC_TUNABLES it was calibrated with, and on Linux warns without huge-page malloc", async () => {
  const before = Deno.env.get("GLIBC_TUNABLES");
  const warned = (r: { provenance: { warnings: string[] } }) =>
    r.provenance.warnings.some((w) => w.startsWith("GLIBC_TUNABLES lacks"));
  try {
    await inTempDir(async () => {
      Deno.env.set("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1");
      assert.equal((await captureCli(() => main([...QUICK, "--out", "a.json"]))).code, 0);
      const tuned = parseReport(JSON.parse(await Deno.readTextFile("a.json")));
      assert.equal(tuned.provenance.glibcTunables, "glibc.malloc.hugetlb=1");
      assert.equal(warned(tuned), false);

      Deno.env.delete("GLIBC_TUNABLES");
      assert.equal((await captureCli(() => main([...QUICK, "--out", "b.json"]))).code, 0);
      const plain = parseReport(JSON.parse(await Deno.readTextFile("b.json")));
      assert.equal(plain.provenance.glibcTunables, null);
      assert.equal(warned(plain), Deno.build.os === "linux");
    });
  } finally {
    if (before === undefined) Deno.env.delete("GLIBC_TUNABLES");
    else Deno.env.set("GLIBC_TUNABLES", before);
  }
});

Deno.test("lossOnReplacing() names a lighter mode and the jobs a run leaves out of a complete report", () => {
  const report = syntheticReport();
  const every = new Set(report.measurements.map((m) => `${m.op}|${m.dtype}|${m.backend}`));
  assert.equal(lossOnReplacing(report, { mode: "default", jobs: every }), null);
  assert.equal(lossOnReplacing(report, { mode: "thorough", jobs: every }), null);
  assert.equal(
    lossOnReplacing(report, { mode: "quick", jobs: every }),
    "a default run's sizes and windows",
  );
  const noJs = new Set([...every].filter((j) => !j.endsWith("|js")));
  assert.match(
    lossOnReplacing(report, { mode: "default", jobs: noJs })!,
    /^\d+ jobs this run leaves out \(matmul f32 on js, add f32 on js, /,
  );
  const gone = new Set([...every].filter((j) => j !== "add|f32|js"));
  assert.equal(
    lossOnReplacing(report, { mode: "default", jobs: gone }),
    "1 job this run leaves out (add f32 on js)",
  );
  // An incomplete report is the run's to finish or replace.
  const partial = { ...report, provenance: { ...report.provenance, complete: false } };
  assert.equal(lossOnReplacing(partial, { mode: "quick", jobs: new Set() }), null);
});
