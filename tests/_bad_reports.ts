/**
 * The corpus of bad reports behind issue 20: each a small edit of the synthetic report that the
 * schema accepts but no machine could have measured (an error naming the field), or that
 * contradicts the report's own measurements (a warning naming the field).
 *
 * @module
 */
import type { Report } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";

/**
 * One bad report and what loading it must say.
 *
 * @example
 * ```ts
 * import type { BadReport } from "./_bad_reports.ts";
 * const c: BadReport = { name: "nothing", edit: () => {}, outcome: "error", path: /^slug$/ };
 * ```
 */
export interface BadReport {
  /** What is wrong, as a test name fragment. */
  readonly name: string;
  /** Makes the synthetic report bad, in place. */
  readonly edit: (report: Report) => void;
  /** `error`: loading refuses it; `warning`: loading warns and returns it. */
  readonly outcome: "error" | "warning";
  /** The path the error or warning must name. */
  readonly path: RegExp;
}

function index<T>(rows: readonly T[], test: (row: T) => boolean, what: string): number {
  const i = rows.findIndex(test);
  if (i < 0) throw new RangeError(`The synthetic report has no ${what}`);
  return i;
}

const okRow = (r: Report, op: string, backend: string) =>
  index(r.measurements, (m) => m.state === "ok" && m.op === op && m.backend === backend, op);

/**
 * The add f32 end-to-end CPU→WebGPU crossover and threshold moved to 1000 elements, where the
 * synthetic report measured wasm orders of magnitude faster than WebGPU's ~11 ms: a selector then
 * sends every elementwise problem over 1000 elements to the GPU.
 *
 * @param report The synthetic report, edited in place.
 * @example
 * ```ts
 * import { editedGpuCrossover } from "./_bad_reports.ts";
 * import { syntheticReport } from "./_fixtures.ts";
 * const r = syntheticReport();
 * editedGpuCrossover(r);
 * ```
 */
export function editedGpuCrossover(report: Report): void {
  const r = report;
  const c = r.crossovers[
    index(
      r.crossovers,
      (c) => c.op === "add" && c.pair === "cpu→webgpu" && c.residency === "end-to-end",
      "add GPU crossover",
    )
  ]!;
  Object.assign(c, { size: 1000, ci: [900, 1100], from: "wasm", to: "webgpu", reason: null });
  const t = r.thresholds[
    index(r.thresholds, (t) => t.op === "add" && t.residency === "end-to-end", "add threshold")
  ]!;
  t.gpuAbove = { value: 1000, unit: "elements", tag: "measured", ci: [900, 1100] };
}

/**
 * Every bad report of the corpus.
 *
 * @example
 * ```ts
 * import { BAD_REPORTS } from "./_bad_reports.ts";
 * console.log(BAD_REPORTS.length > 20); // true
 * ```
 */
export const BAD_REPORTS: readonly BadReport[] = [
  {
    name: "a zero median",
    edit: (r) => {
      const i = okRow(r, "add", "wasm");
      const m = r.measurements[i]!;
      if (m.state === "ok") r.measurements[i] = { ...m, wall: { ...m.wall, median: 0 } };
    },
    outcome: "error",
    path: /^measurements\[\d+\]\.wall\.median$/,
  },
  {
    name: "a negative system bandwidth",
    edit: (r) => {
      r.system.uploadGBps.value = -1.4;
    },
    outcome: "error",
    path: /^system\.uploadGBps\.value$/,
  },
  {
    name: "a zero peak rate",
    edit: (r) => {
      r.system.peakGflops.f32!.value = 0;
    },
    outcome: "error",
    path: /^system\.peakGflops\.f32\.value$/,
  },
  {
    name: "a negative fit t0Us",
    edit: (r) => {
      r.fits[0]!.t0Us = -1000;
    },
    outcome: "error",
    path: /^fits\[0\]\.t0Us$/,
  },
  {
    name: "a zero fitted bandwidth",
    edit: (r) => {
      const i = index(r.fits, (f) => f.gbps !== null, "fit with a bandwidth");
      r.fits[i]!.gbps = 0;
    },
    outcome: "error",
    path: /^fits\[\d+\]\.gbps$/,
  },
  {
    name: "a zero fitted compute rate",
    edit: (r) => {
      const i = index(r.fits, (f) => f.gflops !== null, "fit with a compute rate");
      r.fits[i]!.gflops = 0;
    },
    outcome: "error",
    path: /^fits\[\d+\]\.gflops$/,
  },
  {
    name: "a fit with neither rate nor a fixed time",
    edit: (r) => {
      Object.assign(r.fits[0]!, { gflops: null, gbps: null, t0Us: 0 });
    },
    outcome: "error",
    path: /^fits\[0\]$/,
  },
  {
    name: "an inverted fit size range",
    edit: (r) => {
      r.fits[0]!.sizeRange = [512, 16];
    },
    outcome: "error",
    path: /^fits\[0\]\.sizeRange$/,
  },
  {
    name: "an inverted crossover interval",
    edit: (r) => {
      const i = index(r.crossovers, (c) => c.ci !== null, "crossover with an interval");
      r.crossovers[i]!.ci = [1e9, -5];
    },
    outcome: "error",
    path: /^crossovers\[\d+\]\.ci$/,
  },
  {
    name: "an inverted drift interval",
    edit: (r) => {
      r.crossovers[0]!.driftCi = [50, 5];
    },
    outcome: "error",
    path: /^crossovers\[0\]\.driftCi$/,
  },
  {
    name: "an inverted figure interval",
    edit: (r) => {
      r.system.copyGBps.ci = [12, 3];
    },
    outcome: "error",
    path: /^system\.copyGBps\.ci$/,
  },
  {
    name: "a crossover between a backend and itself",
    edit: (r) => {
      const c = r.crossovers[0]!;
      c.to = c.from;
    },
    outcome: "error",
    path: /^crossovers\[0\]\.to$/,
  },
  {
    name: "a crossover whose backends are not its pair's",
    edit: (r) => {
      const i = index(r.crossovers, (c) => c.pair === "js→wasm", "js→wasm crossover");
      Object.assign(r.crossovers[i]!, { from: "js", to: "webgpu" });
    },
    outcome: "error",
    path: /^crossovers\[\d+\]\.pair$/,
  },
  {
    name: "an inverted tuning range",
    edit: (r) => {
      Object.assign(r.tuning[0]!, { sizeMin: 4096, sizeMax: 16 });
    },
    outcome: "error",
    path: /^tuning\[0\]\.sizeMin$/,
  },
  {
    name: "a tuning time of zero",
    edit: (r) => {
      r.tuning[0]!.best.ms = 0;
    },
    outcome: "error",
    path: /^tuning\[0\]\.best\.ms$/,
  },
  {
    name: "a negative threshold",
    edit: (r) => {
      r.thresholds[0]!.simdAbove.value = -3;
    },
    outcome: "error",
    path: /^thresholds\[0\]\.simdAbove\.value$/,
  },
  {
    name: "adapter null while WebGPU measurements remain",
    edit: (r) => {
      r.adapter = null;
    },
    outcome: "error",
    path: /^adapter$/,
  },
  {
    name: "an f16 WebGPU measurement on an adapter without shader-f16",
    edit: (r) => {
      const m = r.measurements;
      const gpu = m[okRow(r, "matmul", "webgpu")]!;
      m.push({ ...gpu, dtype: "f16", seq: m.length });
      r.adapter!.features.splice(r.adapter!.features.indexOf("shader-f16"), 1);
    },
    outcome: "error",
    path: /^adapter\.features$/,
  },
  {
    name: '"constructor" as a matmul dimension',
    edit: (r) => {
      const i = okRow(r, "matmul", "wasm");
      const m = r.measurements[i]!;
      r.measurements[i] = { ...m, shape: { ...m.shape, constructor: 7 } };
    },
    outcome: "error",
    path: /^measurements\[\d+\]\.shape\.constructor$/,
  },
  {
    name: "a matmul shape without k",
    edit: (r) => {
      const i = okRow(r, "matmul", "wasm");
      const m = r.measurements[i]!;
      const { m: rows, n } = m.shape;
      r.measurements[i] = { ...m, shape: { m: rows!, n: n! } };
    },
    outcome: "error",
    path: /^measurements\[\d+\]\.shape$/,
  },
  {
    name: "a dimension of 2^40",
    edit: (r) => {
      const m = r.measurements[okRow(r, "add", "js")]!;
      Object.assign(m, { shape: { n: 2 ** 40 }, size: 2 ** 40 });
    },
    outcome: "error",
    path: /^measurements\[\d+\]\.shape\.n$/,
  },
  {
    name: "a size its shape does not give",
    edit: (r) => {
      r.measurements[okRow(r, "add", "js")]!.size = 3;
    },
    outcome: "error",
    path: /^measurements\[\d+\]\.size$/,
  },
  {
    name: "a stability shape with a dimension its op lacks",
    edit: (r) => {
      r.stability = {
        op: "add",
        dtype: "f32",
        shape: { n: 65536, m: 2 },
        residency: "end-to-end",
        probes: [],
        driftSigma: {},
      };
    },
    outcome: "error",
    path: /^stability\.shape\.m$/,
  },
  {
    name: "a drift probe of zero ms",
    edit: (r) => {
      r.stability = {
        op: "add",
        dtype: "f32",
        shape: { n: 65536 },
        residency: "end-to-end",
        probes: [{ atS: 0, ms: { wasm: 0 } }],
        driftSigma: {},
      };
    },
    outcome: "error",
    path: /^stability\.probes\[0\]\.ms\.wasm$/,
  },
  {
    name: "an LLM validation that measured 0 tokens/s",
    edit: (r) => {
      r.llm = {
        validations: [{
          model: "tiny",
          quant: "f32",
          measuredTokensPerSec: 0,
          estimatedTokensPerSec: 30,
          error: 0.1,
        }],
      };
    },
    outcome: "error",
    path: /^llm\.validations\[0\]\.measuredTokensPerSec$/,
  },
  {
    name: "an unknown op",
    edit: (r) => {
      const m = r.measurements;
      m.push({ ...m[okRow(r, "add", "js")]!, op: "softplus", seq: m.length });
    },
    outcome: "warning",
    path: /^measurements\[\d+\]\.op$/,
  },
  {
    name: "a GPU crossover edited against the measurements",
    edit: (r) => {
      editedGpuCrossover(r);
      // The threshold alone is checked separately below.
      const t = r.thresholds.find((t) => t.op === "add" && t.residency === "end-to-end")!;
      t.gpuAbove = { value: null, unit: "elements", tag: "fitted", reason: "none" };
    },
    outcome: "warning",
    path: /^crossovers\[\d+\]$/,
  },
  {
    name: "a GPU threshold edited against the measurements",
    edit: (r) => {
      r.thresholds.find((t) => t.op === "add" && t.residency === "end-to-end")!.gpuAbove = {
        value: 1000,
        unit: "elements",
        tag: "measured",
      };
    },
    outcome: "warning",
    path: /^thresholds\[\d+\]\.gpuAbove$/,
  },
  {
    name: "a fit 10× off its own measurements",
    edit: (r) => {
      const i = index(
        r.fits,
        (f) => f.op === "matmul" && f.backend === "wasm" && f.gflops !== null,
        "matmul wasm fit",
      );
      const f = r.fits[i]!;
      f.gflops = f.gflops! * 10;
      if (f.gbps !== null) f.gbps *= 10;
      f.t0Us /= 10;
    },
    outcome: "warning",
    path: /^fits\[\d+\]$/,
  },
];

/**
 * A fresh synthetic report with one corpus edit applied.
 *
 * @param bad The corpus entry.
 * @returns The edited report.
 * @example
 * ```ts
 * import { BAD_REPORTS, badReport } from "./_bad_reports.ts";
 * console.log(badReport(BAD_REPORTS[0]!).slug.length > 0); // true
 * ```
 */
export function badReport(bad: BadReport): Report {
  const report = syntheticReport();
  bad.edit(report);
  return report;
}
