/**
 * `deno task check`: compares a fresh calibration report with a baseline and fails when a
 * crossover threshold moved or a rate regressed beyond noise, for CI.
 *
 * @module
 */
import { parseFlags, UsageError, usageFailure } from "../core/cli_args.ts";
import { compareReports } from "./compare.ts";
import { COMPARISON_FORMATS, type ComparisonFormat, formatComparison } from "./compare_format.ts";
import { summariseIssues } from "./_issues.ts";
import { checkConsistency, loadReport, type ReportIssue } from "./load.ts";
import type { Report } from "../core/schema.ts";

const USAGE =
  "Usage: deno task check --baseline A.json --current B.json [--tolerance 10%] [--format text|markdown|json] [--allow-different-machine]";

const HELP = `${USAGE}

Compares a calibration report with a baseline report of the same machine: crossover thresholds,
the best variant's GFLOP/s and GB/s, the system figures and peaks, each backend as a whole, and
which series (op, dtype, backend, residency) the current report lost. A figure moved beyond
noise when it changed by more than the tolerance AND its two 95 % intervals do not overlap
(without intervals, the tolerance alone decides). Rates and host-bound system figures are judged
against the other backends' common change over the same runs, so a host that was slower all run
is not a regression; absolute values are shown. A report calibrated with drift probes (its "stability"
section) widens its intervals by each backend's measured run-to-run drift, so a move that a
second run of the same machine would also show is reported as "within run-to-run drift of
<backend>", not flagged. Each backend is also judged as a whole: the median change of its
figures (device-resident WebGPU by its GPU timestamps) against backends that use as many cores
(wasm and js one; wasm-mt and a software adapter all), with a 99 % interval that allows for its
drift; the figures that carry a verdict are named. A crossover moving either way is a regression
(programs decide with it), unless it moved within a near-tie of its two backends ("either;
within x %"), between two measured sizes at a cost or ratio change within noise, or with a
within-noise level shift of one backend's whole curve; a rate
falling or a time rising is a regression (a rate measured at one size only when a second size of
its series is slower too: one measurement can stray); a series or figure that disappeared is a regression
unless the current run's command skipped it (--ops, --dtypes, --backends).

Options:
  --baseline PATH            The reference report (required)
  --current PATH             The report to check (required)
  --tolerance X              Relative change that counts, as a percentage (10%) or a
                             fraction (0.1); default 10%
  --format F                 text (default), markdown (for a PR comment) or json
  --allow-different-machine  Compare reports whose machine fingerprints differ
  -h, --help                 Show this help

Exit codes: 0 nothing regressed, 1 a regression beyond noise, 2 unusable input (bad flags, an
invalid or unreadable report, a report whose crossovers, thresholds or fits contradict its own
measurements, different schema versions, different machines without --allow-different-machine).`;

/**
 * Reads `--tolerance`: a percentage (`10%`) or a fraction up to 1 (`0.1`).
 *
 * @param value The raw value, or undefined when absent.
 * @returns The fraction, or undefined when absent.
 * @throws {UsageError} When it is not positive, or a bare number above 1 (ambiguous).
 * @example
 * ```ts
 * import { toleranceFlag } from "./check_cli.ts";
 * console.log(toleranceFlag("15%")); // 0.15
 * ```
 */
export function toleranceFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const pct = value.trim().endsWith("%");
  const n = Number(pct ? value.trim().slice(0, -1) : value);
  if (!Number.isFinite(n) || n <= 0) {
    throw new UsageError(
      `--tolerance must be a positive percentage or fraction (10% or 0.1), got "${value}"`,
    );
  }
  if (!pct && n > 1) {
    throw new UsageError(
      `--tolerance "${value}" is ambiguous: write ${value}% for a percentage or a fraction up to 1`,
    );
  }
  return pct ? n / 100 : n;
}

function formatFlag(value: string | undefined): ComparisonFormat {
  if (value === undefined) return "text";
  const format = COMPARISON_FORMATS.find((f) => f === value);
  if (format === undefined) {
    throw new UsageError(`--format: "${value}" is not one of ${COMPARISON_FORMATS.join(", ")}`);
  }
  return format;
}

async function load(flag: string, path: string | undefined): Promise<Report> {
  if (path === undefined) throw new UsageError(`${flag} PATH is required`);
  const warnings: ReportIssue[] = [];
  let report: Report;
  try {
    report = await loadReport(path, { onWarning: (w) => warnings.push(w) });
  } catch (e) {
    throw new UsageError(`${flag}: cannot use "${path}": ${e instanceof Error ? e.message : e}`);
  }
  // A baseline contradicting its own measurements is no ground to judge a regression on. A
  // current report that does is judged all the same (its medians carry the comparison), and the
  // contradiction fails the check as a regression of its own (see `main`).
  const findings = checkConsistency(report);
  if (findings.length > 0 && flag === "--baseline") {
    throw new UsageError(
      `${flag}: "${path}" contradicts its own measurements: ${summariseIssues(findings, 1)}`,
    );
  }
  for (const w of warnings) {
    console.warn(`Warning: ${flag} "${path}": ${w.path === "" ? "" : `"${w.path}" `}${w.message}`);
  }
  return report;
}

/**
 * Runs the check command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 nothing regressed, 1 a regression beyond noise, 2 unusable input.
 * @example
 * ```ts ignore
 * import { main } from "./check_cli.ts";
 * Deno.exit(await main(["--baseline", "reports/a.json", "--current", "current.json"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  try {
    const { values } = parseFlags(args, {
      baseline: { type: "string" },
      current: { type: "string" },
      tolerance: { type: "string" },
      format: { type: "string" },
      "allow-different-machine": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    const tolerance = toleranceFlag(values.tolerance);
    const format = formatFlag(values.format);
    const baseline = await load("--baseline", values.baseline);
    const current = await load("--current", values.current);
    const comparison = compareReports(baseline, current, {
      ...(tolerance !== undefined ? { tolerance } : {}),
      allowDifferentMachine: values["allow-different-machine"] ?? false,
    });
    console.log(
      formatComparison(comparison, format, {
        baseline: values.baseline!,
        current: values.current!,
      }),
    );
    if (!comparison.comparable) {
      const hint = baseline.fingerprint !== current.fingerprint
        ? "; pass --allow-different-machine to compare them anyway"
        : "";
      console.error(`error: ${comparison.reasons.join("; ")}${hint}`);
      return 2;
    }
    const contradictions = checkConsistency(current);
    if (contradictions.length > 0) {
      console.error(
        `error: --current "${values.current}" contradicts its own measurements: ${
          summariseIssues(contradictions, 3)
        }`,
      );
      return 1;
    }
    return comparison.regressed ? 1 : 0;
  } catch (e) {
    return usageFailure(e, USAGE);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
