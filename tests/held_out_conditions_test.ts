import assert from "node:assert/strict";
import { settingsUnlikeReport } from "../bench/_held_out_flags.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("a held-out bench warns when it runs with other driver settings than its report was calibrated with", () => {
  const report = syntheticReport();
  report.provenance.driverEnv = { DENO_WEBGPU_BACKEND: "vulkan" };
  assert.match(
    settingsUnlikeReport(report, { LP_NUM_THREADS: "1", HOME: "/root" })!,
    /other driver settings than the report was calibrated with \(LP_NUM_THREADS "1" in this bench, unset in the report\)/,
  );
  // Variables no driver reads do not count, nor the backend choice: the adapter's identity (its
  // fingerprint) tells backends apart, not the settings.
  assert.equal(settingsUnlikeReport(report, { HOME: "/root" }), null);
  assert.equal(settingsUnlikeReport(report, { DENO_WEBGPU_BACKEND: "gl" }), null);
  // A report from before settings were recorded was made in the default configuration.
  assert.equal(settingsUnlikeReport(syntheticReport(), {}), null);
  const oneThread = syntheticReport();
  oneThread.provenance.driverEnv = { LP_NUM_THREADS: "1" };
  assert.match(
    settingsUnlikeReport(oneThread, {})!,
    /LP_NUM_THREADS unset in this bench, "1" in the report/,
  );
});
