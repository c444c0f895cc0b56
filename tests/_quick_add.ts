/**
 * A quick calibration of `add` on js and wasm into a temporary directory, for tests that drive
 * `calibrate()` end to end with a few options of their own.
 *
 * @module
 */
import { calibrate, type CalibrateOptions } from "../calibrate/calibrate.ts";
import type { Report } from "../core/schema.ts";

/**
 * Runs a quick js + wasm calibration of `add` with `options` on top, writing its report to a
 * temporary directory that is removed afterwards.
 *
 * @param options Options beside the quick add run's (runners, checkout, progress, pooling).
 * @returns The report.
 * @example
 * ```ts ignore
 * import { quickAddCalibration } from "./_quick_add.ts";
 * const report = await quickAddCalibration({});
 * console.log(report.provenance.complete); // true
 * ```
 */
export async function quickAddCalibration(
  options: Omit<CalibrateOptions, "quick" | "ops" | "backends" | "out">,
): Promise<Report> {
  const dir = await Deno.makeTempDir();
  try {
    const { report } = await calibrate({
      ...options,
      quick: true,
      ops: ["add"],
      backends: ["js", "wasm"],
      out: `${dir}/report.json`,
    });
    return report;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
