import assert from "node:assert/strict";
import { choosePriors } from "../bench/_adaptive_loop.ts";
import { syntheticReport } from "./_fixtures.ts";

Deno.test("bench:adaptive's prior for this machine is its report of the configuration the bench runs in", () => {
  const usual = syntheticReport();
  const oneThread = syntheticReport({ slug: `${usual.slug}-lp_num_threads-1` });
  oneThread.provenance.driverEnv = { LP_NUM_THREADS: "1" };
  oneThread.provenance.date = "2099-01-01T00:00:00.000Z";
  const newestFirst = [oneThread, usual];
  assert.equal(choosePriors(newestFirst, usual.fingerprint)[0].report.slug, usual.slug);
  assert.equal(
    choosePriors(newestFirst, usual.fingerprint, { LP_NUM_THREADS: "1" })[0].report.slug,
    oneThread.slug,
  );
  // Only another configuration of this machine: it is still this machine's report.
  assert.equal(choosePriors([oneThread], usual.fingerprint)[0].report.slug, oneThread.slug);
});
