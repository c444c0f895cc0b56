/**
 * Private to `bench:regret`: whether its truth was measured with the host in the state the
 * calibration saw. Both time the same probe case (the report's drift probe: `add` f32 n = 65536)
 * per backend; the ratio of their medians says how the host compares. On the 2-vCPU VM gpucal is
 * developed on, the whole host sometimes runs ×1.4 slower for minutes: a report calibrated in that
 * state predicted a truth measured outside it ×1.1–1.3 slow, and nothing in the bench's output
 * said why.
 *
 * @module
 */
import type { Backend } from "../kernels/types.ts";
import { BACKENDS } from "../kernels/types.ts";
import type { StabilityProbe } from "../core/schema.ts";
import { median } from "../core/stats.ts";

/** One backend's probe during the truth against the calibration's. */
export interface HostStateRow {
  readonly backend: Backend;
  /** Median of the calibration's probe times, ms. */
  readonly calibrationMs: number;
  /** Median of the probes taken beside the truth, ms. */
  readonly truthMs: number;
  /** truthMs / calibrationMs: above 1, the host ran slower during the truth. */
  readonly ratio: number;
  /** The report's drift σ of this backend (ln time), when it has one. */
  readonly driftSigma: number | null;
  /** Whether |ln ratio| is within two drift σ (or 10 % without one): the same conditions. */
  readonly same: boolean;
}

/**
 * Compares the probes taken beside the truth with the calibration's, per backend both have.
 *
 * @param calibration The report's `stability.probes` (its first one, taken cold, is skipped).
 * @param truth Probes taken by the bench, any number.
 * @param driftSigma The report's `stability.driftSigma`, when it has one.
 * @returns A row per backend, in {@linkcode BACKENDS} order.
 * @example
 * ```ts
 * import { compareHostState } from "./_host_state.ts";
 * const calibration = [{ atS: 4, ms: { js: 0.06 } }, { atS: 30, ms: { js: 0.04 } }, { atS: 60, ms: { js: 0.042 } }];
 * const rows = compareHostState(calibration, [{ atS: 0, ms: { js: 0.058 } }], { js: 0.05 });
 * console.log(rows[0]!.ratio.toFixed(2), rows[0]!.same); // "1.41" false
 * ```
 */
export function compareHostState(
  calibration: readonly StabilityProbe[],
  truth: readonly StabilityProbe[],
  driftSigma: Partial<Record<Backend, number>> = {},
): HostStateRow[] {
  const warm = calibration.length > 1 ? calibration.slice(1) : calibration;
  return BACKENDS.flatMap((backend) => {
    const before = times(warm, backend);
    const during = times(truth, backend);
    if (before.length === 0 || during.length === 0) return [];
    const calibrationMs = median(before);
    const truthMs = median(during);
    const ratio = truthMs / calibrationMs;
    const sigma = driftSigma[backend] ?? null;
    const allowed = sigma === null ? Math.log(1.1) : Math.max(2 * sigma, Math.log(1.05));
    return [{
      backend,
      calibrationMs,
      truthMs,
      ratio,
      driftSigma: sigma,
      same: Math.abs(Math.log(ratio)) <= allowed,
    }];
  });
}

function times(probes: readonly StabilityProbe[], backend: Backend): number[] {
  return probes.flatMap((p) => {
    const ms = p.ms[backend];
    return ms !== undefined && ms > 0 ? [ms] : [];
  });
}

/**
 * One line for people: each backend's ratio, and whether the truth saw the calibration's host.
 *
 * @param rows From {@linkcode compareHostState}.
 * @returns The line, or a note that the report has no probes to compare with.
 * @example
 * ```ts
 * import { hostStateLine } from "./_host_state.ts";
 * console.log(hostStateLine([])); // names what is missing
 * ```
 */
export function hostStateLine(rows: readonly HostStateRow[]): string {
  if (rows.length === 0) {
    return "host state: the report has no drift probes to compare the truth's host with";
  }
  const cells = rows.map((r) => `${r.backend} ×${r.ratio.toFixed(2)}${r.same ? "" : " (differs)"}`);
  const verdict = rows.every((r) => r.same)
    ? "within the report's drift: the same conditions"
    : "the truth ran in another host state than the calibration: its accuracy figures mix the two";
  return `host state (the report's probe beside the truth, against the calibration's): ${
    cells.join(", ")
  }; ${verdict}`;
}
