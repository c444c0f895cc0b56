/**
 * `deno task select`: which backend gpucal picks for one op and shape, from a report, and the
 * predicted time on every backend the report covers.
 *
 * @module
 */
import { listFlag, parseFlags, parseShape, UsageError } from "../core/cli_args.ts";
import { formatNumber, textTable } from "../core/format.ts";
import { getOp, OPS } from "../kernels/catalog.ts";
import { type Backend, DTYPES, type Shape } from "../kernels/types.ts";
import { loadReport } from "../reports/load.ts";
import { checkShape } from "./_bounds.ts";
import { predictTime } from "./predict.ts";
import { BackendSelector } from "./selector.ts";

const HELP = `Usage: deno task select --report R --op OP --shape AxBxC [options]

Prints the backend gpucal picks for one op and shape, the reason, and the predicted time per
backend with its interval and provenance (measured, fitted, extrapolated).

Options:
  --report PATH|URL   A calibration report (required)
  --op NAME           Op (required): ${OPS.map((o) => o.name).join(", ")}
  --shape AxBxC       Shape in the op's dimension order, e.g. 512x512x512 for matmul (m x k x n)
  --dtype DTYPE       ${DTYPES.join(", ")} (default f32)
  --residency WHERE   end-to-end (default) or device-resident
  --json              Print the decision as JSON
  -h, --help          Show this help`;

function shapeFlag(op: string, text: string): Shape {
  try {
    const spec = getOp(op);
    const shape = parseShape(spec, text);
    checkShape(spec, shape);
    return shape;
  } catch (e) {
    throw new UsageError(`--shape: ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * Runs the select command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0, or 2 for bad flags or an unusable report.
 * @example
 * ```ts ignore
 * import { main } from "./select_cli.ts";
 * await main(["--report", "reports/x.json", "--op", "add", "--shape", "1048576"]);
 * ```
 */
export async function main(args: string[]): Promise<number> {
  try {
    const { values } = parseFlags(args, {
      report: { type: "string" },
      op: { type: "string" },
      shape: { type: "string" },
      dtype: { type: "string" },
      residency: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    for (const flag of ["report", "op", "shape"] as const) {
      if (!values[flag]) throw new UsageError(`--${flag} is required`);
    }
    const [op] = listFlag("--op", values.op, OPS.map((o) => o.name))!;
    const [dtype] = listFlag("--dtype", values.dtype ?? "f32", DTYPES)!;
    const [residency] = listFlag(
      "--residency",
      values.residency ?? "end-to-end",
      [
        "end-to-end",
        "device-resident",
      ] as const,
    )!;
    const shape = shapeFlag(op!, values.shape!);
    let report;
    try {
      report = await loadReport(values.report!);
    } catch (e) {
      throw new UsageError(`--report: ${e instanceof Error ? e.message : e}`);
    }
    const choice = BackendSelector.fromReport(report).select({
      op: op!,
      shape,
      dtype: dtype!,
      residency: residency!,
    });
    const rows = (Object.keys(choice.predictedMs) as Backend[]).map((backend) => {
      const p = predictTime(report, {
        op: op!,
        shape,
        dtype: dtype!,
        backend,
        residency: residency!,
      });
      return { backend, ms: p.ms, interval: p.interval, provenance: p.provenance };
    });
    if (values.json) {
      console.log(JSON.stringify({ ...choice, predictions: rows }, null, 2));
      return 0;
    }
    console.log(`${choice.backend} (${choice.variant}): ${choice.reason}`);
    console.log(
      textTable(
        ["backend", "predicted ms", "interval", "provenance"],
        rows.map((r) => [
          r.backend === choice.backend ? `${r.backend} *` : r.backend,
          formatNumber(r.ms),
          `[${formatNumber(r.interval[0])}, ${formatNumber(r.interval[1])}]`,
          r.provenance,
        ]),
      ),
    );
    for (const [backend, why] of Object.entries(choice.skipped)) console.log(`${backend}: ${why}`);
    return 0;
  } catch (e) {
    if (e instanceof UsageError || e instanceof RangeError) {
      console.error(
        `error: ${e.message}\n\nUsage: deno task select --report R --op OP --shape S (see --help)`,
      );
      return 2;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
