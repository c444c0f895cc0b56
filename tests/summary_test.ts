import assert from "node:assert/strict";
import { formatSummary } from "../calibrate/summary.ts";
import { summarizeStability } from "../calibrate/stability.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("formatSummary() says webgpu was not calibrated when the run left it out by choice", () => {
  const report = syntheticReport();
  const cpuOnly = {
    ...report,
    measurements: report.measurements.filter((m) => m.backend !== "webgpu"),
    provenance: {
      ...report.provenance,
      command: ["deno", "task", "calibrate", "--backends", "js,wasm"],
    },
  };
  const first = formatSummary(cpuOnly, "reports/x.json").split("\n")[0]!;
  assert.match(first, /adapter llvmpipe \(LLVM 19\.1\.7, 256 bits\) via vulkan \(software\)/);
  assert.match(first, /; webgpu not calibrated \(--backends\)$/);
  assert.doesNotMatch(first, /CPU-only/);
  assert.doesNotMatch(formatSummary(report, "reports/x.json"), /not calibrated/);
  assert.match(
    formatSummary({ ...cpuOnly, adapter: null }, "reports/x.json").split("\n")[0]!,
    /adapter none \(CPU-only\)$/,
  );
});

Deno.test("formatSummary() prints the run's duration in its unit and figures in three digits", () => {
  const text = formatSummary(syntheticReport(), "reports/x.json");
  assert.match(text.split("\n")[1]!, /^complete in 8\.54 min: /);
  assert.match(text, /sync round trip {2}11\.2 ms/);
  assert.doesNotMatch(text, /\d\.\d{4,}/, "no number longer than its precision");
});

/** A validation of tiny-16m int4: 44 tokens/s estimated, 40 measured. */
const validation = {
  model: "tiny-16m",
  quant: "int4" as const,
  measuredTokensPerSec: 40,
  estimatedTokensPerSec: 44,
  error: 0.1,
  details: { decodes: 5, decodeSpanS: 93 },
};

Deno.test("formatSummary() sets the report-only tokens/s beside the measured decode, with the decodes it pooled", () => {
  const report = syntheticReport();
  const text = formatSummary({ ...report, llm: { validations: [validation] } }, "r.json");
  assert.match(text, /LLM decode check \(tokens\/s estimated from this report alone/);
  assert.match(text, /tiny-16m +int4 +44\.0 +40\.0 +\+10\.0 % +5 over 93 s/);
  assert.doesNotMatch(formatSummary(report, "r.json"), /LLM decode check/, "none without one");
});

Deno.test("formatSummary() prints the range the estimate stated beside it, when the report has one", () => {
  const report = syntheticReport();
  const estimatedInterval = { level: 0.9, tokensPerSec: [31.5, 58] as [number, number] };
  const ranged = { ...validation, estimatedInterval };
  const text = formatSummary({ ...report, llm: { validations: [ranged] } }, "r.json");
  assert.match(text, /tiny-16m +int4 +44\.0 \(31\.5–58\.0 at 90 %\) +40\.0 +\+10\.0 %/);
  assert.match(text, /1 of 1 measured decodes fell inside the range their estimate stated/);
  const missed = { ...validation, measuredTokensPerSec: 60, estimatedInterval };
  const both = formatSummary({ ...report, llm: { validations: [ranged, missed] } }, "r.json");
  assert.match(both, /1 of 2 measured decodes fell inside/);
  assert.doesNotMatch(
    formatSummary({ ...report, llm: { validations: [validation] } }, "r.json"),
    /fell inside/,
    "nothing for a report without ranges",
  );
});

Deno.test("formatSummary() says what the decode step probe charges a step beyond its kernels", () => {
  const report = syntheticReport();
  const fig = (value: number, unit: string) => ({ value, unit, tag: "measured" as const });
  const stepProbe = {
    model: "step-probe-8m",
    dispatches: 68,
    chainFactor: fig(1.043, "x"),
    hostFixedMs: fig(11.9, "ms"),
    hostPerDispatchUs: fig(4.2, "us"),
  };
  const text = formatSummary(
    { ...report, llm: { validations: [validation], stepProbe } },
    "r.json",
  );
  assert.match(
    text,
    /kernels chained ×1\.043 their time alone; host part of a step 11\.90 ms \+ 4\.2 µs/,
  );
  const unmeasured = {
    ...stepProbe,
    chainFactor: { ...fig(0, "x"), value: null, reason: "no timestamps" },
  };
  assert.match(
    formatSummary(
      { ...report, llm: { validations: [validation], stepProbe: unmeasured } },
      "r.json",
    ),
    /Decode step probe: not measured \(no timestamps\)/,
  );
});

Deno.test("formatSummary() states each backend's drift over the run beside the host's own", () => {
  const report = syntheticReport();
  const stability = summarizeStability([1, 1.2, 1].map((f, i) => ({
    atS: 10 * i,
    ms: { wasm: 0.01 * f, webgpu: 0.1 },
    hostMs: 4,
  })));
  const text = formatSummary({ ...report, stability }, "reports/x.json");
  assert.match(text, /Drift \(σ of ln time of add f32 65536 per backend, 3 probes\):/);
  assert.match(text, /within this run {3}wasm \d+\.\d %, webgpu 0\.0 %/);
  assert.match(text, /the host alone {4}0\.0 % \(a loop with none of gpucal's code\)/);
  assert.doesNotMatch(formatSummary(report, "reports/x.json"), /Drift/);
});

Deno.test("formatSummary() names the driver settings of a configuration other than the machine's default", () => {
  const oneThread = syntheticReport();
  oneThread.provenance.driverEnv = { DENO_WEBGPU_BACKEND: "vulkan", LP_NUM_THREADS: "1" };
  const first = (report: ReturnType<typeof syntheticReport>) =>
    formatSummary(report, "reports/x.json").split("\n")[0]!;
  assert.match(first(oneThread), /, driver settings LP_NUM_THREADS=1$/);
  assert.doesNotMatch(first(syntheticReport()), /driver settings/);
});

Deno.test("formatSummary() counts the pooled measurements apart from the cases carried over from the earlier runs", () => {
  const report = syntheticReport();
  report.provenance.pooledWith = "2026-01-01T00:00:00.000Z";
  const ok = report.measurements.filter((m) => m.state === "ok");
  report.measurements = [
    { ...ok[0]!, runs: 3 },
    { ...ok[1]!, runs: 2, carriedOver: true },
    { ...ok[2]!, runs: 2, carriedOver: true },
    ...ok.slice(3),
  ];
  assert.match(
    formatSummary(report, "reports/x.json"),
    /1 measurement pooled with the report it replaced \(2026-01-01T00:00:00\.000Z\), up to 3 runs each: .*; 2 more of its cases carried over as they were: the sweeps of variants this run's screens passed over/,
  );
});
