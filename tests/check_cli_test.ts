import assert from "node:assert/strict";
import { main } from "../reports/check_cli.ts";
import type { Report } from "../core/schema.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";
import {
  jittered,
  MATMUL_WASM,
  movedGpuCrossover,
  probesWith,
  slowedBackends,
  slowedSeries,
} from "./_report_variants.ts";

/** Runs the CLI with console output captured. */
const run = (args: string[]) => captureCli(() => main(args));

/** Writes the reports into a temporary directory for the duration of `fn`. */
async function withReports(
  files: Record<string, Report | string>,
  fn: (path: (name: string) => string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpucal_check_" });
  try {
    for (const [name, content] of Object.entries(files)) {
      await Deno.writeTextFile(
        `${dir}/${name}`,
        typeof content === "string" ? content : JSON.stringify(content),
      );
    }
    await fn((name) => `${dir}/${name}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const BASE = syntheticReport();

Deno.test("check exits 1 when the GPU crossover moved 2x, and names it", async () => {
  await withReports({ a: BASE, b: movedGpuCrossover(2) }, async (p) => {
    const { code, out } = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(code, 1);
    assert.match(out, /REGRESSED/);
    assert.match(out, /matmul f32 cpu→webgpu end-to-end .* \+100\.0 % +threshold moved/);
  });
});

Deno.test("check exits 0 on identical reports", async () => {
  await withReports({ a: BASE, b: BASE }, async (p) => {
    const { code, out } = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(code, 0);
    assert.match(out, /Nothing moved beyond noise/);
  });
});

Deno.test("check exits 0 on a copy with small jitter", async () => {
  await withReports({ a: BASE, b: jittered(0.03) }, async (p) => {
    const { code } = await run(["--baseline", p("a"), "--current", p("b"), "--tolerance", "10%"]);
    assert.equal(code, 0);
  });
});

Deno.test("check exits 1 on the same jitter with a tolerance below it and no intervals", async () => {
  const noCi = jittered(0.03);
  for (const c of noCi.crossovers) c.ci = null;
  const base = syntheticReport();
  for (const c of base.crossovers) c.ci = null;
  await withReports({ a: base, b: noCi }, async (p) => {
    const { code } = await run(["--baseline", p("a"), "--current", p("b"), "--tolerance", "0.5%"]);
    assert.equal(code, 1);
  });
});

Deno.test("check exits 2 on a corrupted file and names the flag and the file", async () => {
  const text = JSON.stringify(BASE);
  await withReports({ a: BASE, b: text.slice(0, text.length / 2) }, async (p) => {
    const { code, err } = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(code, 2);
    assert.match(err, /--current: cannot use ".*\/b": .*not valid JSON/);
  });
});

Deno.test("check exits 2 on a report that fails validation", async () => {
  const bad = { ...BASE, fingerprint: "not-hex" };
  await withReports({ a: bad as unknown as Report, b: BASE }, async (p) => {
    const { code, err } = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(code, 2);
    assert.match(err, /--baseline: cannot use .*Invalid report: "fingerprint"/);
  });
});

Deno.test("check exits 2 on a different fingerprint unless --allow-different-machine", async () => {
  const other = syntheticReport({ fingerprint: "0000111122223333", slug: "other" });
  await withReports({ a: BASE, b: other }, async (p) => {
    const refused = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(refused.code, 2);
    assert.match(refused.err, /Different machines.*--allow-different-machine/);
    const allowed = await run([
      "--baseline",
      p("a"),
      "--current",
      p("b"),
      "--allow-different-machine",
    ]);
    assert.equal(allowed.code, 0);
  });
});

Deno.test("check exits 2 on bad flags, naming the flag", async () => {
  const cases: Array<[string[], RegExp]> = [
    [["--current", "x.json"], /--baseline PATH is required/],
    [["--baseline", "a", "--current", "b", "--tolerance", "10"], /--tolerance "10" is ambiguous/],
    [["--baseline", "a", "--current", "b", "--tolerance", "0%"], /--tolerance must be/],
    [["--baseline", "a", "--current", "b", "--format", "html"], /--format: "html" is not one/],
    [["--fast"], /--fast/],
  ];
  for (const [args, message] of cases) {
    const { code, err } = await run(args);
    assert.equal(code, 2, args.join(" "));
    assert.match(err, message);
  }
});

Deno.test("check --format markdown reads as a PR comment with the moved row", async () => {
  await withReports({ a: BASE, b: movedGpuCrossover(2) }, async (p) => {
    const { code, out } = await run([
      "--baseline",
      p("a"),
      "--current",
      p("b"),
      "--format",
      "markdown",
    ]);
    assert.equal(code, 1);
    assert.match(out, /^### ❌ gpucal calibration check$/m);
    assert.match(
      out,
      /^\| kind \| figure \| baseline \| current \| change \| verdict \| note \|$/m,
    );
    assert.match(
      out,
      /^\| crossover \| matmul f32 cpu→webgpu end-to-end \| 387 n \(M = K = N\) \| 774 n \(M = K = N\) \| \+100\.0 % \| threshold moved \|/m,
    );
    assert.match(out, /<details><summary>All compared figures<\/summary>/);
  });
  await withReports({ a: BASE, b: BASE }, async (p) => {
    const { out } = await run(["--baseline", p("a"), "--current", p("b"), "--format", "markdown"]);
    assert.match(out, /^### ✅ gpucal calibration check$/m);
  });
});

Deno.test("check --format json is parseable and carries the verdict", async () => {
  await withReports({ a: BASE, b: movedGpuCrossover(2) }, async (p) => {
    const { out } = await run(["--baseline", p("a"), "--current", p("b"), "--format", "json"]);
    const parsed = JSON.parse(out);
    assert.equal(parsed.regressed, true);
    assert.equal(parsed.comparable, true);
    assert.ok(Array.isArray(parsed.rows));
  });
});

Deno.test("check --help prints usage and exits 0", async () => {
  const { code, out } = await run(["--help"]);
  assert.equal(code, 0);
  assert.match(out, /Exit codes: 0 nothing regressed/);
});

Deno.test("check --format markdown lists a move excused by run-to-run drift, and why", async () => {
  const probes = Array.from({ length: 9 }, (_, i) => ({
    atS: 5 * i,
    ms: { wasm: 0.03 * Math.exp(0.15 * ((i % 3) - 1)) },
  }));
  const stability = {
    op: "add",
    dtype: "f32" as const,
    shape: { n: 65536 },
    residency: "end-to-end" as const,
    probes,
    driftSigma: { wasm: 0.2224 },
  };
  const current = {
    ...slowedSeries(syntheticReport(), MATMUL_WASM, 1.25),
    stability,
  };
  await withReports({ a: { ...BASE, stability }, b: current }, async (p) => {
    const { code, out } = await run([
      "--baseline",
      p("a"),
      "--current",
      p("b"),
      "--format",
      "markdown",
    ]);
    assert.equal(code, 0);
    assert.match(out, /moved more than the tolerance but within noise<\/summary>/);
    assert.match(
      out,
      /\| rate \| matmul f32 wasm end-to-end compute \| .* \| -20\.0 % \| within noise \| -20\.0 %: within run-to-run drift of wasm \(σ 22 %\); measured at 512 \|/,
    );
    assert.match(out, /with drift/);
  });
});

Deno.test("check exits 1 when every WebGPU median doubled, naming the backend", async () => {
  const stability = probesWith(0.1);
  const current = { ...slowedBackends(syntheticReport(), ["webgpu"], 2), stability };
  await withReports({ a: { ...BASE, stability }, b: current }, async (p) => {
    const { code, out } = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(code, 1);
    assert.match(out, /webgpu slower as a whole beyond noise/);
    assert.match(
      out,
      /^webgpu +\d+ +\+100\.0 % .* slower +\+100\.0 % time against wasm, js \(host/m,
    );
  });
});

Deno.test("check exits 1 when an op disappeared, and 0 when the current run skipped it with --ops", async () => {
  const without = (command: string[]) => {
    const r = syntheticReport();
    r.measurements = r.measurements.filter((m) => m.op !== "matmul");
    r.crossovers = r.crossovers.filter((c) => c.op !== "matmul");
    r.fits = r.fits.filter((f) => f.op !== "matmul");
    r.provenance.command = command;
    return r;
  };
  const lost = without(["deno", "task", "calibrate"]);
  const skipped = without(["deno", "task", "calibrate", "--ops", "add,gemv"]);
  await withReports({ a: BASE, b: lost, c: skipped }, async (p) => {
    const gone = await run(["--baseline", p("a"), "--current", p("b")]);
    assert.equal(gone.code, 1);
    assert.match(gone.out, /series +matmul f32 wasm end-to-end +6 sizes +0 sizes +regressed/);
    const ok = await run(["--baseline", p("a"), "--current", p("c")]);
    assert.equal(ok.code, 0);
    assert.match(ok.out, /skipped: the current run was made with --ops add,gemv/);
  });
});
