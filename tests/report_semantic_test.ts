import assert from "node:assert/strict";
import {
  checkConsistency,
  loadReport,
  parseReport,
  ReportError,
  type ReportIssue,
} from "../reports/load.ts";
import { BackendSelector } from "../models/selector.ts";
import { buildIndex } from "../reports/index.ts";
import { BAD_REPORTS, badReport, editedGpuCrossover } from "./_bad_reports.ts";
import { datasetReportPaths, syntheticReport } from "./_fixtures.ts";

/** Parses `doc`, returning the warnings it gave; rethrows what it throws. */
function parseWarnings(doc: unknown): ReportIssue[] {
  const warnings: ReportIssue[] = [];
  parseReport(doc, { onWarning: (w) => warnings.push(w) });
  return warnings;
}

/** The ReportError `fn` throws, checked for kind. */
function invalidOf(fn: () => unknown): ReportError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ReportError, `expected a ReportError, got ${e}`);
    assert.equal(e.kind, "invalid", e.message);
    return e;
  }
  assert.fail("expected a ReportError");
}

for (const bad of BAD_REPORTS) {
  if (bad.outcome === "error") {
    Deno.test(`parseReport() refuses ${bad.name}, naming the field`, () => {
      const e = invalidOf(() => parseReport(badReport(bad)));
      assert.ok(
        e.issues.some((i) => bad.path.test(i.path)),
        `no issue at ${bad.path}: ${JSON.stringify(e.issues)}`,
      );
      assert.match(e.message, /^Invalid report: "/);
    });
  } else {
    Deno.test(`parseReport() accepts ${bad.name} with a warning naming the field`, () => {
      const warnings = parseWarnings(badReport(bad));
      assert.ok(
        warnings.some((w) => bad.path.test(w.path)),
        `no warning at ${bad.path}: ${JSON.stringify(warnings)}`,
      );
    });
  }
}

Deno.test("parseReport() gives the synthetic report no error and no warning", () => {
  assert.deepEqual(parseWarnings(syntheticReport()), []);
});

Deno.test("the committed reports load without an error or a warning", async () => {
  const files = datasetReportPaths();
  assert.ok(files.length >= 2, `found ${files.join(", ")}`);
  for (const file of files) {
    const warnings: ReportIssue[] = [];
    const report = await loadReport(file, { onWarning: (w) => warnings.push(w) });
    assert.deepEqual(warnings, [], file);
    assert.deepEqual(checkConsistency(report), [], file);
  }
});

Deno.test("checkConsistency() names the edited crossover and what the measurements say", () => {
  const report = syntheticReport();
  editedGpuCrossover(report);
  const findings = checkConsistency(report);
  const crossover = findings.find((f) => /^crossovers\[\d+\]$/.test(f.path));
  assert.ok(crossover, JSON.stringify(findings));
  assert.match(
    crossover.message,
    /^\(add f32 cpu→webgpu end-to-end\) says the CPU is faster below 1000 elements and webgpu above, but at \d+ the report measured (wasm|wasm-mt|js) [\d.e+]+× faster than webgpu/,
  );
  assert.ok(findings.some((f) => f.path.startsWith("thresholds[")), "the threshold too");
});

Deno.test("checkConsistency() flags a fit that misses its measurements by more than 2× and by more than it says", () => {
  const fitFindings = (edit: (f: { gbps: number | null; rmsLogError: number }) => void) => {
    const report = syntheticReport();
    const i = report.fits.findIndex((f) => f.gbps !== null && f.gflops === null);
    const fit = structuredClone(report.fits[i]!);
    edit(fit);
    report.fits[i] = fit;
    return checkConsistency(report).filter((f) => f.path === `fits[${i}]`);
  };
  assert.deepEqual(fitFindings(() => {}), []);
  // Three times the bandwidth claimed, a 2 % fit: a contradiction.
  const [finding] = fitFindings((f) => {
    f.gbps! *= 3;
    f.rmsLogError = 0.02;
  });
  assert.match(finding?.message ?? "", /faster than the report measured it/);
  // The same miss owned up to (a one-bandwidth fit across cache regimes): none.
  assert.deepEqual(
    fitFindings((f) => {
      f.gbps! *= 3;
      f.rmsLogError = 0.9;
    }),
    [],
  );
});

Deno.test("a self-contradicting report loads with its sha256 pin but warns before a selector is fooled", async () => {
  const report = syntheticReport();
  editedGpuCrossover(report);
  const text = JSON.stringify(report);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const pin = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/r.json`, text);
    const warnings: ReportIssue[] = [];
    const loaded = await loadReport(`${dir}/r.json`, {
      sha256: pin,
      onWarning: (w) => warnings.push(w),
    });
    assert.ok(warnings.some((w) => /^crossovers\[/.test(w.path)), JSON.stringify(warnings));
    // What the warning is about: the threshold sends 2000 elements to the GPU against the data.
    const pick = BackendSelector.fromReport(loaded).selectByComplexity("elementwise", 2000);
    assert.equal(pick.backend, "webgpu");
    assert.match(pick.reason, /though (wasm|wasm-mt|js) is predicted/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadReport() refuses a duplicate key, naming where it is", async () => {
  const text = JSON.stringify(syntheticReport()).replace(
    '"slug":',
    '"slug":"shadowed","slug":',
  );
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/dup.json`, text);
    const e = await loadReport(`${dir}/dup.json`).then(
      () => assert.fail("loaded"),
      (e: unknown) => e,
    );
    assert.ok(e instanceof ReportError && e.kind === "invalid", String(e));
    assert.equal(e.issues[0]?.path, "slug");
    assert.match(e.message, /"slug" appears twice in the same object; keep one/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a duplicate key deep inside a measurement is named by its full path", async () => {
  const report = syntheticReport();
  const text = JSON.stringify(report).replace('"median":', '"median":1,"median":');
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/dup.json`, text);
    const e = await loadReport(`${dir}/dup.json`).catch((e: unknown) => e);
    assert.ok(e instanceof ReportError);
    assert.equal(e.issues[0]?.path, "measurements[0].wall.median");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function withDetails(details: Record<string, unknown>): Record<string, unknown> {
  return {
    ...syntheticReport(),
    llm: {
      validations: [{
        model: "tiny",
        quant: "f32",
        measuredTokensPerSec: 30,
        estimatedTokensPerSec: 31,
        error: 0.03,
        details,
      }],
    },
  };
}

Deno.test("2,000 levels of nesting in LLM details are a ReportError, from a file or an object", async () => {
  const doc = withDetails({ deep: nested(2000) });
  const e = invalidOf(() => parseReport(doc));
  assert.match(e.issues[0]!.path, /^llm\.validations\[0\]\.details\.deep(\[0\])+$/);
  assert.match(e.message, /nested more than 32 levels deep/);
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/deep.json`, JSON.stringify(doc));
    const fromFile = await loadReport(`${dir}/deep.json`).catch((e: unknown) => e);
    assert.ok(fromFile instanceof ReportError && fromFile.kind === "invalid", String(fromFile));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("LLM details are bounded in size and string length before the schema sees them", () => {
  const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, nested(1)]));
  const manyValues = withDetails(
    Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, Array(120).fill(0)])),
  );
  assert.match(invalidOf(() => parseReport(manyValues)).message, /holds more than 10000 values/);
  const long = withDetails({ note: "x".repeat(5000), many });
  assert.equal(
    invalidOf(() => parseReport(long)).issues[0]?.path,
    "llm.validations[0].details.note",
  );
});

Deno.test("parseReport() turns a cyclic object into a ReportError, not a stack overflow", () => {
  const doc: Record<string, unknown> = syntheticReport();
  doc["machine"] = { ...doc["machine"] as object };
  (doc["machine"] as Record<string, unknown>)["self"] = doc["machine"];
  invalidOf(() => parseReport(doc));
});

Deno.test("buildIndex() refuses a report with a duplicate key, naming the file and the key", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const text = JSON.stringify(syntheticReport()).replace('"slug":', '"slug":"x","slug":');
    await Deno.writeTextFile(`${dir}/dup.json`, text);
    const e = await buildIndex(dir).catch((e: unknown) => e);
    assert.ok(e instanceof ReportError && e.kind === "invalid", String(e));
    assert.match(e.message, /^Cannot index ".*dup\.json": Invalid report: "slug" appears twice/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
