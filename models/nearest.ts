/**
 * Borrowing a published report for a machine that has none: find the most similar machine in the
 * reports index, and mark everything taken from its report as `borrowed`, with a warning naming
 * how the machines differ.
 *
 * @example
 * ```ts ignore
 * import { borrowReport, nearestReport } from "./nearest.ts";
 * import { loadReport } from "../reports/load.ts";
 * const nearest = nearestReport(index, { machine: { cpuModel: "Apple M2", cores: 8 }, adapter: null });
 * if (nearest !== null) {
 *   const report = borrowReport(await loadReport(`reports/${nearest.entry.file}`), nearest.differences);
 * }
 * ```
 *
 * @module
 */
import type { IndexEntry, ReportIndex } from "../reports/index.ts";
import { describeSettingsDifference } from "../calibrate/machine.ts";
import type { Figure, Report } from "../core/schema.ts";

/**
 * What is known about the machine that needs a report: its CPU, and its WebGPU adapter if any.
 *
 * @example
 * ```ts
 * import type { MachineDescription } from "./nearest.ts";
 * const m: MachineDescription = {
 *   machine: { cpuModel: "AMD EPYC 7763 64-Core Processor", cores: 4 },
 *   adapter: { description: "llvmpipe (LLVM 19.1.7, 256 bits)", backend: "vulkan", vendor: "mesa", software: true },
 * };
 * ```
 */
export interface MachineDescription {
  /** The host CPU. */
  readonly machine: IndexEntry["machine"];
  /** The WebGPU adapter, or null without one. */
  readonly adapter: IndexEntry["adapter"];
  /**
   * The driver settings the machine runs with (`calibrate/machine.ts` `driverSettings`), e.g.
   * `{ LP_NUM_THREADS: "1" }`; none when absent.
   */
  readonly driverEnv?: Readonly<Record<string, string>>;
}

/**
 * The closest published report and how it differs.
 *
 * @example
 * ```ts
 * import type { NearestReport } from "./nearest.ts";
 * function exact(n: NearestReport) { return n.distance === 0; }
 * ```
 */
export interface NearestReport {
  /** The chosen report's index entry. */
  readonly entry: IndexEntry;
  /** 0 for an identical description; larger is less similar. */
  readonly distance: number;
  /** How the chosen report's machine differs from the one asked about, in words. */
  readonly differences: readonly string[];
}

/**
 * How much each mismatch costs. A software adapter measures the CPU rasteriser, so mixing it with
 * real GPUs is the worst mismatch; next the GPU itself, then its API, then the CPU.
 */
const WEIGHT = {
  adapterPresence: 20,
  software: 10,
  vendor: 4,
  description: 4,
  backend: 2,
  cpuModel: 3,
  coresPerDoubling: 1,
  driverSettings: 2,
  incomplete: 0.5,
} as const;

/** Lowercase word tokens without pure version numbers, so "LLVM 19.1.7" and "LLVM 20.1" match. */
function tokens(s: string): Set<string> {
  return new Set(
    s.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t.length > 0 && !/^\d+$/.test(t)),
  );
}

/** 1 - Jaccard similarity of the token sets; 0 for two empty strings. */
function textDistance(a: string, b: string): number {
  const ta = tokens(a);
  const tb = tokens(b);
  if (ta.size === 0 && tb.size === 0) return 0;
  let shared = 0;
  for (const t of ta) if (tb.has(t)) shared++;
  return 1 - shared / (ta.size + tb.size - shared);
}

function score(want: MachineDescription, entry: IndexEntry): NearestReport {
  const differences: string[] = [];
  let distance = 0;
  const a = want.adapter;
  const b = entry.adapter;
  if ((a === null) !== (b === null)) {
    distance += WEIGHT.adapterPresence;
    differences.push(
      a === null
        ? `the report has a WebGPU adapter ("${b!.description}"), this machine has none`
        : `the report has no WebGPU adapter, this machine has "${a.description}"`,
    );
  } else if (a !== null && b !== null) {
    if (a.software !== b.software) {
      distance += WEIGHT.software;
      differences.push(
        `the report's adapter is ${b.software ? "software" : "hardware"}, this machine's is ${
          a.software ? "software" : "hardware"
        }`,
      );
    }
    if (a.vendor.toLowerCase() !== b.vendor.toLowerCase()) {
      distance += WEIGHT.vendor;
      differences.push(`GPU vendor "${b.vendor}" instead of "${a.vendor}"`);
    }
    const d = textDistance(a.description, b.description);
    if (a.description !== b.description) {
      distance += WEIGHT.description * d;
      differences.push(`adapter "${b.description}" instead of "${a.description}"`);
    }
    if (a.backend !== b.backend) {
      distance += WEIGHT.backend;
      differences.push(`graphics API ${b.backend} instead of ${a.backend}`);
    }
  }
  if (want.machine.cpuModel !== entry.machine.cpuModel) {
    distance += WEIGHT.cpuModel * textDistance(want.machine.cpuModel, entry.machine.cpuModel);
    differences.push(`CPU "${entry.machine.cpuModel}" instead of "${want.machine.cpuModel}"`);
  }
  if (want.machine.cores !== entry.machine.cores) {
    distance += WEIGHT.coresPerDoubling *
      Math.min(2, Math.abs(Math.log2(entry.machine.cores / want.machine.cores)));
    differences.push(`${entry.machine.cores} cores instead of ${want.machine.cores}`);
  }
  const settings = describeSettingsDifference(entry.driverEnv, want.driverEnv, [
    "the report",
    "this machine",
  ]);
  if (settings !== null) {
    distance += WEIGHT.driverSettings;
    differences.push(`driver settings: ${settings}`);
  }
  if (!entry.complete) {
    distance += WEIGHT.incomplete;
    differences.push("the report is incomplete");
  }
  return { entry, distance, differences };
}

/**
 * Picks the published report whose machine is most like `machine`, scoring adapter presence,
 * software/hardware, vendor, adapter description and graphics API, then CPU model, core count and
 * driver settings (a report of the same machine with `LP_NUM_THREADS=1` is not its default one).
 * Ties go to the newer report.
 *
 * @param index The reports index (`reports/index.json`).
 * @param machine The machine that needs a report.
 * @returns The closest entry, its distance (0 = same description) and the differences in words;
 * null when the index is empty.
 * @example
 * ```ts
 * import { nearestReport } from "./nearest.ts";
 * const index = { generated: "2026-01-01T00:00:00.000Z", reports: [] };
 * console.log(nearestReport(index, { machine: { cpuModel: "x", cores: 2 }, adapter: null })); // null
 * ```
 */
export function nearestReport(
  index: ReportIndex,
  machine: MachineDescription,
): NearestReport | null {
  let best: NearestReport | null = null;
  for (const entry of index.reports) {
    const candidate = score(machine, entry);
    if (
      best === null || candidate.distance < best.distance ||
      (candidate.distance === best.distance && candidate.entry.date > best.entry.date)
    ) {
      best = candidate;
    }
  }
  return best;
}

function borrowFigure(f: Figure): Figure {
  return { ...f, tag: "borrowed" };
}

function borrowRecord<K extends string>(
  r: Partial<Record<K, Figure>>,
): Partial<Record<K, Figure>> {
  const out: Partial<Record<K, Figure>> = {};
  for (const [k, f] of Object.entries(r) as Array<[K, Figure | undefined]>) {
    if (f !== undefined) out[k] = borrowFigure(f);
  }
  return out;
}

/**
 * Marks a report from another machine as borrowed: every figure, crossover, tuning row and
 * threshold is re-tagged `borrowed`, and a warning naming the differences is added, so nothing
 * downstream presents these numbers as measured here. The input is not modified.
 *
 * @param report The other machine's report.
 * @param differences How that machine differs, e.g. `nearestReport(...).differences`.
 * @returns A new report with borrowed provenance.
 * @example
 * ```ts ignore
 * import { borrowReport } from "./nearest.ts";
 * const borrowed = borrowReport(report, ["8 cores instead of 4"]);
 * console.log(borrowed.crossovers.every((c) => c.tag === "borrowed")); // true
 * ```
 */
export function borrowReport(report: Report, differences: readonly string[]): Report {
  const s = report.system;
  const what = differences.length === 0
    ? "no known differences"
    : `differences: ${differences.join("; ")}`;
  return {
    ...report,
    provenance: {
      ...report.provenance,
      warnings: [
        ...report.provenance.warnings,
        `Borrowed from report "${report.slug}" of another machine (${what}): figures are estimates for this machine, not measurements`,
      ],
    },
    crossovers: report.crossovers.map((c) => ({ ...c, tag: "borrowed" })),
    tuning: report.tuning.map((t) => ({ ...t, tag: "borrowed" })),
    thresholds: report.thresholds.map((t) => ({
      ...t,
      simdAbove: borrowFigure(t.simdAbove),
      gpuAbove: borrowFigure(t.gpuAbove),
    })),
    system: {
      dispatchRoundTripMs: borrowFigure(s.dispatchRoundTripMs),
      perDispatchUs: borrowFigure(s.perDispatchUs),
      uploadGBps: borrowFigure(s.uploadGBps),
      readbackGBps: borrowFigure(s.readbackGBps),
      copyGBps: borrowFigure(s.copyGBps),
      compileMs: borrowFigure(s.compileMs),
      peakGflops: borrowRecord(s.peakGflops),
      peakGbps: borrowRecord(s.peakGbps),
    },
  };
}
