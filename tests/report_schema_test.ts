import assert from "node:assert/strict";
import config from "../deno.json" with { type: "json" };
import type { MeasureResult } from "../core/result.ts";
import { migrateReport, type Migration, parseReport, ReportError } from "../reports/load.ts";
import { type Measurement, type Report, reportJsonSchema, SCHEMA_VERSION } from "../core/schema.ts";
import { renderReportJsonSchema, SCHEMA_JSON_URL } from "../reports/write_schema.ts";
import { syntheticReport } from "./_fixtures.ts";

// Compile-time check: a report's measurement is the shape the calibrator produces.
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _measurementIsMeasureResult: Mutual<
  Measurement,
  MeasureResult & { size: number; seq: number }
> = true;

/** A deep copy through JSON, as a report arrives from disk or the network. */
function viaJson(report: Report): Record<string, unknown> {
  return JSON.parse(JSON.stringify(report));
}

/** The ReportError `parseReport` throws for `doc`, failing the test when it does not throw. */
function rejection(doc: unknown): ReportError {
  try {
    parseReport(doc);
  } catch (error) {
    assert.ok(error instanceof ReportError, `expected a ReportError, got ${error}`);
    return error;
  }
  assert.fail("parseReport() accepted an invalid report");
}

/** Applies `edit` to a JSON copy of the synthetic report and returns the rejection. */
// Edits deliberately break the types, so the document is untyped.
// deno-lint-ignore no-explicit-any
function rejectionAfter(edit: (doc: Record<string, any>) => void): ReportError {
  const doc = viaJson(syntheticReport());
  edit(doc);
  return rejection(doc);
}

Deno.test("syntheticReport() is a valid report after a JSON round trip", () => {
  const report = syntheticReport();
  const parsed = parseReport(viaJson(report));
  assert.deepEqual(parsed, report);
  assert.equal(parsed.schemaVersion, SCHEMA_VERSION);
  assert.ok(parsed.measurements.some((m) => m.state === "failed"));
  assert.ok(parsed.measurements.some((m) => m.state === "unsupported"));
  assert.equal(parsed.system.dispatchRoundTripMs.value, 11.2);
});

Deno.test("parseReport() accepts unknown keys inside an LLM validation's details", () => {
  const report = syntheticReport({
    llm: {
      validations: [{
        model: "llama-3.2-1b",
        quant: "q4",
        measuredTokensPerSec: 9.1,
        estimatedTokensPerSec: 9.8,
        error: 0.077,
        details: { layers: 16, perLayerMs: [1.2, 1.3], notes: { anything: "goes" } },
      }],
    },
  });
  assert.deepEqual(parseReport(viaJson(report)).llm, report.llm);
  assert.equal(parseReport(viaJson(syntheticReport({ llm: null }))).llm, null);
});

Deno.test("parseReport() names the path and the found value of a wrongly typed field", () => {
  const e = rejectionAfter((d) => d.provenance.durationS = "x");
  assert.equal(e.kind, "invalid");
  assert.equal(e.message, `Invalid report: "provenance.durationS" expected a number, got "x"`);
  assert.deepEqual(e.issues, [{
    path: "provenance.durationS",
    message: `expected a number, got "x"`,
  }]);
});

Deno.test("parseReport() names a missing field", () => {
  const e = rejectionAfter((d) => delete d.machine.cores);
  assert.match(e.message, /^Invalid report: "machine\.cores" is missing/);
});

Deno.test("parseReport() rejects unknown keys at the top level and in nested objects", () => {
  assert.equal(
    rejectionAfter((d) => d.extra = 1).message,
    `Invalid report: the report has unexpected key "extra"; remove it`,
  );
  assert.match(
    rejectionAfter((d) => d.machine.gpu = "x").message,
    /"machine" has unexpected key "gpu"/,
  );
  assert.match(
    rejectionAfter((d) => d.system.peakGflops.f64 = d.system.peakGflops.f32).message,
    /"system\.peakGflops" has unexpected key "f64"/,
  );
});

Deno.test("parseReport() lists the allowed values of a bad enum or union tag", () => {
  assert.match(
    rejectionAfter((d) => d.measurements[0].backend = "cuda").message,
    /"measurements\[0\]\.backend" expected one of "webgpu", "wasm", "wasm-mt", "js", got "cuda"/,
  );
  assert.match(
    rejectionAfter((d) => d.measurements[1].state = "maybe").message,
    /"measurements\[1\]\.state" expected one of "ok", "failed", "unsupported", got "maybe"/,
  );
});

Deno.test("parseReport() enforces string, array and record bounds", () => {
  assert.match(
    rejectionAfter((d) => d.slug = "a".repeat(300)).message,
    /"slug" expected at most 128 characters, got 300/,
  );
  assert.match(
    rejectionAfter((d) => d.crossovers[0].others = new Array(65).fill(1)).message,
    /"crossovers\[0\]\.others" expected at most 64 items, got 65/,
  );
  assert.match(
    rejectionAfter((d) => {
      d.adapter.limits = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i]));
    }).message,
    /"adapter\.limits" expected at most 256 keys/,
  );
});

Deno.test("parseReport() rejects non-finite numbers handed to it directly", () => {
  const report = syntheticReport();
  const infinite = { ...report, fits: [{ ...report.fits[0]!, t0Us: Infinity }] };
  assert.match(rejection(infinite).message, /"fits\[0\]\.t0Us" expected a number, got Infinity/);
  const nan = { ...report, fits: [{ ...report.fits[0]!, t0Us: NaN }] };
  assert.match(rejection(nan).message, /"fits\[0\]\.t0Us" expected a number, got NaN/);
});

Deno.test("parseReport() checks formats: hashes, slugs, dates, integers and shapes", () => {
  assert.match(
    rejectionAfter((d) => d.fingerprint = "xyz").message,
    /"fingerprint" expected a string matching .*, got "xyz"/,
  );
  assert.match(rejectionAfter((d) => d.slug = "../etc").message, /"slug" expected a string/);
  assert.match(
    rejectionAfter((d) => d.provenance.date = "yesterday").message,
    /"provenance\.date" expected an ISO 8601 date-time/,
  );
  assert.match(
    rejectionAfter((d) => d.machine.cores = 2.5).message,
    /"machine\.cores" expected an integer, got 2\.5/,
  );
  assert.match(
    rejectionAfter((d) => d.measurements[0].shape = { m: 0 }).message,
    /"measurements\[0\]\.shape\.m" expected a number > 0, got 0/,
  );
});

Deno.test("parseReport() keeps every issue and summarises the first three", () => {
  const e = rejectionAfter((d) => {
    d.provenance = 3;
    d.machine = null;
    d.slug = 5;
    d.fits = {};
  });
  assert.equal(e.issues.length, 4);
  assert.match(e.message, /; and 1 more$/);
  assert.deepEqual(e.issues.map((i) => i.path), ["provenance", "machine", "slug", "fits"]);
});

Deno.test("parseReport() refuses a newer schemaVersion and says to upgrade", () => {
  const e = rejectionAfter((d) => d.schemaVersion = 3);
  assert.equal(e.kind, "version");
  assert.equal(
    e.message,
    `Cannot load report: "schemaVersion" is 3, this version of gpucal (${config.version}) reads 1; upgrade gpucal`,
  );
});

Deno.test("parseReport() refuses a schemaVersion it has no migration from", () => {
  const e = rejectionAfter((d) => d.schemaVersion = 0);
  assert.equal(e.kind, "version");
  assert.match(e.message, /"schemaVersion" is 0, .* reads 1; regenerate the report/);
});

Deno.test("parseReport() explains non-objects and a missing or malformed schemaVersion", () => {
  assert.match(rejection([]).message, /expected a JSON object, got an array/);
  assert.match(rejection(null).message, /expected a JSON object, got null/);
  assert.match(rejection("report").message, /expected a JSON object, got string/);
  assert.match(rejection({}).message, /"schemaVersion" is missing; check that this is a gpucal/);
  assert.match(rejection({ schemaVersion: "1" }).message, /"schemaVersion" is "1", expected a/);
});

Deno.test("migrateReport() applies migrations up to the current version and checks each step", () => {
  const steps = new Map<number, Migration>([[0, (d) => ({ ...d, schemaVersion: 1, b: 2 })]]);
  assert.deepEqual(migrateReport({ schemaVersion: 0 }, steps), { schemaVersion: 1, b: 2 });
  const e = (() => {
    try {
      migrateReport({ schemaVersion: 2 }, steps);
    } catch (error) {
      return error;
    }
  })();
  assert.ok(e instanceof ReportError);
  assert.match(e.message, /reads 0 to 1; upgrade gpucal/);
  const broken = new Map<number, Migration>([[0, (d) => ({ ...d })]]);
  assert.throws(() => migrateReport({ schemaVersion: 0 }, broken), RangeError);
});

Deno.test("reports/schema.json is up to date with core/schema.ts (run `deno task schema`)", async () => {
  const committed = await Deno.readTextFile(SCHEMA_JSON_URL);
  assert.equal(committed, renderReportJsonSchema());
});

Deno.test("reportJsonSchema() is a closed draft 2020-12 schema with an id and a title", () => {
  const schema = reportJsonSchema();
  assert.equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
  assert.equal(schema.$id, "urn:gpucal:report:v1");
  assert.equal(typeof schema.title, "string");
  assert.equal(schema.additionalProperties, false);
  const required = schema.required;
  assert.ok(Array.isArray(required) && required.includes("measurements"));
});
