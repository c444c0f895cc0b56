/**
 * Loads one report URL at the default limits and prints, as one JSON line, how the load ended and
 * the peak resident memory of the process that loaded it: the memory test of
 * `report_fetch_test.ts` runs it in a subprocess, so the peak is the load's alone.
 *
 * Usage: deno run --allow-run=deno --allow-net=127.0.0.1 tests/_load_rss_child.ts URL
 *
 * @module
 */
import process from "node:process";
import { loadReport, ReportError } from "../reports/load.ts";

const [first, second] = Deno.args;
if (first === undefined) {
  console.error("usage: _load_rss_child.ts URL");
  Deno.exit(2);
}
if (first !== "--load") {
  // Linux carries a process's peak RSS over fork and exec, so a load started straight from a big
  // test runner would report the runner's size: it runs in a process started from this small one.
  const loader = new Deno.Command("deno", {
    args: ["run", "--allow-net=127.0.0.1", import.meta.filename!, "--load", first],
    stdout: "inherit",
    stderr: "inherit",
  });
  Deno.exit((await loader.output()).code);
}
let outcome: string;
try {
  await loadReport(second!, { timeoutMs: 60_000 });
  outcome = "loaded";
} catch (e) {
  outcome = e instanceof ReportError ? e.kind : `crashed: ${e}`;
}
// getrusage's ru_maxrss, in kB on Linux: the peak, not the current size.
console.log(JSON.stringify({ outcome, peakRssBytes: process.resourceUsage().maxRSS * 1024 }));
