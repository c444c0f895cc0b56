/**
 * Turns a calibration report into the {@linkcode DeviceRates} the LLM estimates read: matmul
 * throughput, gemv bandwidth per weight dtype, per-dispatch cost, the sync round trip and the host
 * link, each figure carrying its provenance and the measurement or fit it came from.
 *
 * The backend is WebGPU (device-resident figures) when the report has an adapter and WebGPU gemv
 * measurements; otherwise the CPU backend with the highest gemv bandwidth. On WebGPU the rates
 * also carry the report's per-op cost models (`kernelTime`), so a decode is estimated kernel by
 * kernel at each kernel's shape.
 *
 * @module
 */
import { type Backend, CPU_BACKENDS, type Dtype } from "../../kernels/types.ts";
import type { CostFit, Figure, Measurement, Report } from "../../core/schema.ts";
import { predictTime } from "../predict.ts";
import type { DeviceRates, KernelTimeModel, RateFigure } from "./estimate.ts";

/** Weight dtypes a gemv figure is looked up for. */
const GEMV_DTYPES = ["f32", "f16", "q8", "q4"] as const;

/**
 * A figure the report lacks: names the figure and the calibrate command that measures it.
 *
 * @example
 * ```ts
 * import { MissingCalibrationError } from "./rates.ts";
 * const e = new MissingCalibrationError("gemvGBps.q4", "deno task calibrate --ops gemv --dtypes q4");
 * console.log(e instanceof RangeError, e.command); // true "deno task calibrate --ops gemv --dtypes q4"
 * ```
 */
export class MissingCalibrationError extends RangeError {
  /** The figure's path in {@linkcode DeviceRates}. */
  readonly figure: string;
  /** The command that measures it. */
  readonly command: string;

  /**
   * @param figure The figure's path, e.g. `"gemvGBps.q4"`.
   * @param command The calibrate command that measures it.
   * @param why What is missing, when more than "not in the report".
   */
  constructor(figure: string, command: string, why = "is not in the report") {
    super(`Cannot build device rates: "${figure}" ${why}; run ${command}`);
    this.name = "MissingCalibrationError";
    this.figure = figure;
    this.command = command;
  }
}

/**
 * Options of {@linkcode ratesFromReport}.
 *
 * @example
 * ```ts
 * import type { RatesOptions } from "./rates.ts";
 * const o: RatesOptions = { require: ["q4"], memoryBytes: 16e9 };
 * ```
 */
export interface RatesOptions {
  /** Use this backend instead of choosing one. */
  readonly backend?: Backend;
  /** Gemv dtypes that must be measured (throws otherwise); others are null when absent. */
  readonly require?: readonly Dtype[];
  /** Memory the device gives the model, bytes; the host's memory from the report when absent. */
  readonly memoryBytes?: number;
  /** Device name; the adapter's description or the CPU backend when absent. */
  readonly name?: string;
}

/**
 * {@linkcode DeviceRates} plus where they came from.
 *
 * @example
 * ```ts
 * import type { ReportRates } from "./rates.ts";
 * const say = (r: ReportRates) => `${r.backend}: ${r.backendReason}`;
 * ```
 */
export interface ReportRates extends DeviceRates {
  /** The backend every figure describes. */
  readonly backend: Backend;
  /** Why that backend. */
  readonly backendReason: string;
  /** Where `memoryBytes` came from. */
  readonly memorySource: string;
  /** Variant id of the gemv behind each gemv figure, so a decode can run the same kernel. */
  readonly gemvVariants: Readonly<Partial<Record<Dtype, string>>>;
}

type Ok = Extract<Measurement, { state: "ok" }>;

function calibrateCommand(ops: string, dtype?: string, backend?: Backend): string {
  return `deno task calibrate --ops ${ops}${dtype ? ` --dtypes ${dtype}` : ""}${
    backend && backend !== "webgpu" ? ` --backends ${backend}` : ""
  }`;
}

function shapeText(m: Ok): string {
  return Object.entries(m.shape).map(([k, v]) => `${k}=${v}`).join(",");
}

/** Device-resident for WebGPU (the estimate charges transfers separately), end-to-end on the CPU. */
function onBackend(backend: Backend) {
  return (m: { backend: Backend; residency: string }) =>
    m.backend === backend && (backend !== "webgpu" || m.residency === "device-resident");
}

function okOf(report: Report, op: string, backend: Backend, dtype?: Dtype): Ok[] {
  const here = onBackend(backend);
  return report.measurements.filter((m): m is Ok =>
    m.state === "ok" && m.op === op && here(m) && (dtype === undefined || m.dtype === dtype)
  );
}

function fitsOf(report: Report, op: string, backend: Backend, dtype: Dtype): CostFit[] {
  const here = onBackend(backend);
  return report.fits.filter((f) => f.op === op && f.dtype === dtype && here(f));
}

/** A measured rate with the interval its timing's confidence interval gives. */
function measuredFigure(m: Ok, value: number, unit: string, why: string): RateFigure {
  const { median, ciHalfWidth } = m.wall;
  return {
    value,
    unit,
    tag: "measured",
    ci: [
      value * median / (median + ciHalfWidth),
      value * median / Math.max(median - ciHalfWidth, 1e-12),
    ],
    source: `measurement ${m.op} ${m.dtype} ${m.backend} ${m.residency} ${shapeText(m)} ` +
      `variant ${m.variant} (${why})`,
  };
}

function fitFigure(f: CostFit, value: number, unit: string, what: string): RateFigure {
  return {
    value,
    unit,
    tag: "fitted",
    source: `fit ${f.op} ${f.dtype} ${f.backend} ${f.residency} variant ${f.variant} ${what} ` +
      `(${f.points} points, sizes ${f.sizeRange[0]}–${f.sizeRange[1]})`,
  };
}

/**
 * The fixed cost of one real kernel on the device: the median launch overhead `t0` of the
 * report's device-resident WebGPU fits. The system figure `perDispatchUs` times a one-thread
 * kernel; a decode's kernels spread over many workgroups, and on a software adapter their fixed
 * cost is several times larger (measured ~200–550 µs against ~27 µs on lavapipe), so the fits,
 * not the trivial dispatch, say what each of a token's dispatches costs. Null without such fits.
 */
function kernelLaunchFigure(report: Report): RateFigure | null {
  const fits = report.fits
    .filter((f) => f.backend === "webgpu" && f.residency === "device-resident" && f.t0Us > 0)
    .sort((a, b) => a.t0Us - b.t0Us);
  if (fits.length === 0) return null;
  const median = fits[Math.floor(fits.length / 2)]!;
  return {
    ...fitFigure(median, median.t0Us, "us", "fixed cost t0"),
    source: `median fixed cost t0 of ${fits.length} device-resident webgpu fits (${
      fits.map((f) => `${f.op} ${f.dtype} ${Math.round(f.t0Us)} us`).join(", ")
    }); median: ${median.op} ${median.dtype} variant ${median.variant}`,
  };
}

/**
 * One launch on the WebGPU device, from the report's device-resident data: the measurement at
 * that shape, else the cost model of the variant tuned for that size (or the fastest fitted),
 * with its held-out interval and an `extrapolated` tag beyond the fitted sizes (see
 * `models/predict.ts`). Device-resident, because a decode's kernels run back to back in one
 * submit; the step's round trip is charged once, separately.
 */
function deviceKernelTime(report: Report): KernelTimeModel {
  return ({ op, shape, dtype }) => {
    const t = predictTime(report, {
      op,
      shape,
      dtype,
      backend: "webgpu",
      residency: "device-resident",
    });
    return {
      ms: t.ms,
      interval: t.interval,
      level: t.level,
      driftSigma: t.driftSigma,
      tag: t.provenance,
      variant: t.variant,
      source: t.source,
    };
  };
}

/**
 * Gemv bandwidth: the fastest variant at the largest working set measured (the most bytes a run
 * moved: a model's weights stream from memory, and on a CPU the smaller sweeps run from cache),
 * else the best fit's bandwidth.
 */
function gemvFigure(
  report: Report,
  backend: Backend,
  dtype: Dtype,
): { fig: RateFigure; variant: string } | null {
  const ok = okOf(report, "gemv", backend, dtype);
  if (ok.length > 0) {
    const best = largestWorkingSet(ok).reduce((a, b) => (b.gbps > a.gbps ? b : a));
    return {
      fig: measuredFigure(
        best,
        best.gbps,
        "GB/s",
        `fastest variant at the largest working set measured, ${
          (best.bytes / 1e6).toPrecision(3)
        } MB`,
      ),
      variant: best.variant,
    };
  }
  const fits = fitsOf(report, "gemv", backend, dtype).filter((f) => (f.gbps ?? 0) > 0);
  if (fits.length === 0) return null;
  const best = fits.reduce((a, b) => ((b.gbps ?? 0) > (a.gbps ?? 0) ? b : a));
  return { fig: fitFigure(best, best.gbps!, "GB/s", "bandwidth"), variant: best.variant };
}

/** Matmul throughput: the fastest measurement, else the best fit's compute rate, else the report's peak. */
function matmulFigure(report: Report, backend: Backend, dtype: Dtype): RateFigure | null {
  const ok = okOf(report, "matmul", backend, dtype);
  if (ok.length > 0) {
    const best = ok.reduce((a, b) => (b.gflops > a.gflops ? b : a));
    return measuredFigure(best, best.gflops, "GFLOP/s", "fastest measured");
  }
  const fits = fitsOf(report, "matmul", backend, dtype).filter((f) => (f.gflops ?? 0) > 0);
  if (fits.length > 0) {
    const best = fits.reduce((a, b) => ((b.gflops ?? 0) > (a.gflops ?? 0) ? b : a));
    return fitFigure(best, best.gflops!, "GFLOP/s", "compute rate");
  }
  const peak = report.system.peakGflops[dtype];
  // The report's peak is over every backend; only one measured on this backend describes it.
  if (peak && peak.value !== null && peak.source?.includes(` ${backend} `)) return peak;
  return null;
}

/**
 * The measurements of the largest working set among some: the most bytes moved, and every one
 * within 10 % of it (the variants of that shape).
 */
function largestWorkingSet<T extends { bytes: number }>(ok: readonly T[]): T[] {
  const most = Math.max(...ok.map((m) => m.bytes));
  return ok.filter((m) => m.bytes >= 0.9 * most);
}

function largestGemvRate(report: Report, backend: Backend): number {
  const ok = okOf(report, "gemv", backend);
  const f32 = ok.filter((m) => m.dtype === "f32");
  const series = f32.length > 0 ? f32 : ok;
  if (series.length === 0) return 0;
  return Math.max(...largestWorkingSet(series).map((m) => m.gbps));
}

function chooseBackend(report: Report, forced?: Backend): { backend: Backend; reason: string } {
  if (forced) return { backend: forced, reason: "asked for" };
  const gpuRate = report.adapter ? largestGemvRate(report, "webgpu") : 0;
  // Fastest first, so equal rates go to the faster backend.
  const ranked = [...CPU_BACKENDS].reverse().map((b) => ({ b, rate: largestGemvRate(report, b) }))
    .filter((r) => r.rate > 0)
    .sort((a, b) => b.rate - a.rate);
  const best = ranked[0];
  // Decode streams weights through gemv: the device that streams them fastest runs it. A
  // software adapter (llvmpipe) can lose to the CPU it runs on.
  if (gpuRate > 0 && (!best || gpuRate >= best.rate)) {
    return {
      backend: "webgpu",
      reason: `the report has a WebGPU adapter (${report.adapter!.description || "unnamed"}) ` +
        `whose device-resident gemv (${gpuRate.toPrecision(3)} GB/s) is the fastest measured`,
    };
  }
  if (gpuRate > 0 && best) {
    return {
      backend: best.b,
      reason: `${best.b} streams gemv weights faster (${
        best.rate.toPrecision(3)
      } GB/s) than the WebGPU adapter (${
        gpuRate.toPrecision(3)
      } GB/s) at the largest working set measured`,
    };
  }
  if (!best) {
    throw new MissingCalibrationError(
      "gemvGBps",
      calibrateCommand("gemv"),
      "has no gemv measurement on any backend",
    );
  }
  const why = report.adapter
    ? "the report has no WebGPU gemv measurement"
    : "the report has no WebGPU adapter";
  return {
    backend: best.b,
    reason: `${why}; ${best.b} is the fastest CPU backend at gemv (${
      ranked.map((r) => `${r.b} ${r.rate.toPrecision(3)} GB/s`).join(", ")
    } at the largest working set measured)`,
  };
}

function systemFigure(fig: Figure, path: string): RateFigure {
  if (fig.value === null) {
    throw new MissingCalibrationError(
      path,
      "deno task calibrate (WebGPU system figures are measured first)",
      `has no value (${fig.reason ?? "no reason given"})`,
    );
  }
  return fig;
}

/**
 * A step's synchronisation on WebGPU: the round trip that reads a result back (a decode step
 * reads its token), else, in a report calibrated before gpucal measured it, the one that only
 * waits for the GPU.
 */
function stepSyncFigure(report: Report): RateFigure {
  const read = report.system.readbackRoundTripMs;
  if (read?.value == null) {
    return systemFigure(report.system.dispatchRoundTripMs, "syncRoundTripMs");
  }
  return { ...read, source: `readbackRoundTripMs: ${read.source ?? "report"}` };
}

/**
 * The report's decode step probe as WebGPU rates: the chain factor, and the host's part of a
 * step when its slope is above zero (a zero slope, noise at this step's size, leaves the step's
 * round trip to `syncRoundTripMs`). Nothing without a probe or with its figures unmeasured.
 */
function stepProbeRates(report: Report): Pick<DeviceRates, "chainFactor" | "stepHost"> {
  const probe = report.llm?.stepProbe;
  if (!probe) return {};
  const cite = (f: Figure, path: string): RateFigure => ({
    ...f,
    source: `llm.stepProbe.${path}: ${f.source ?? "report"}; ${probe.model}`,
  });
  const { chainFactor, hostFixedMs, hostPerDispatchUs } = probe;
  return {
    ...(chainFactor.value !== null ? { chainFactor: cite(chainFactor, "chainFactor") } : {}),
    ...(hostFixedMs.value !== null && (hostPerDispatchUs.value ?? 0) > 0
      ? {
        stepHost: {
          fixedMs: cite(hostFixedMs, "hostFixedMs"),
          perDispatchUs: cite(hostPerDispatchUs, "hostPerDispatchUs"),
        },
      }
      : {}),
  };
}

/**
 * CPU backends have no device to sync with or copy to: a token's round trip is one call
 * returning, bounded by the cheapest complete call measured; the host link is the backend's own
 * memory bandwidth.
 */
function cpuSystem(report: Report, backend: Backend): Pick<
  DeviceRates,
  "perDispatchUs" | "syncRoundTripMs" | "hostLinkGBps"
> {
  const fits = report.fits.filter((f) => f.op === "gemv" && f.backend === backend && f.t0Us > 0);
  const launch = fits.reduce<CostFit | null>((a, b) => (!a || b.t0Us < a.t0Us ? b : a), null);
  if (!launch) {
    throw new MissingCalibrationError(
      "perDispatchUs",
      calibrateCommand("gemv", undefined, backend),
      `has no gemv fit on ${backend} to take the per-call cost from`,
    );
  }
  const ok = report.measurements.filter((m): m is Ok => m.state === "ok" && m.backend === backend);
  const cheapest = ok.reduce((a, b) => (b.wall.median < a.wall.median ? b : a));
  const peak = report.system.peakGbps[backend];
  if (!peak || peak.value === null) {
    throw new MissingCalibrationError("hostLinkGBps", calibrateCommand("gemv", undefined, backend));
  }
  const link: RateFigure = {
    ...peak,
    tag: "borrowed",
    source: `${backend} peak bandwidth (${peak.source ?? "report"}): on the CPU the host ` +
      `memory is the device memory`,
  };
  return {
    perDispatchUs: fitFigure(launch, launch.t0Us, "us", "fixed cost t0"),
    syncRoundTripMs: measuredFigure(
      cheapest,
      cheapest.wall.median,
      "ms",
      "the cheapest complete call measured, bounding one host round trip",
    ),
    hostLinkGBps: { upload: link, readback: link },
  };
}

/**
 * Builds an LLM estimate's device rates from a calibration report. Gemv figures are the fastest
 * variant at the largest size measured (device-resident on WebGPU), matmul the fastest
 * measurement, dispatch, sync and host link the report's system figures (WebGPU) or the
 * backend's own call cost and bandwidth (CPU); on WebGPU, the chain factor and a step's host
 * part from the report's decode step probe (`llm.stepProbe`) when it has one.
 *
 * @param report The calibration report.
 * @param opts Backend, required gemv dtypes, device memory, name.
 * @returns The rates, each figure with its tag and source, and the backend chosen and why.
 * @throws {MissingCalibrationError} naming the calibrate command when the report has no gemv, no
 *   f32 matmul, no system figures, or no gemv of a required dtype.
 * @example
 * ```ts ignore
 * import { loadReport } from "../../reports/load.ts";
 * import { ratesFromReport } from "./rates.ts";
 * const rates = ratesFromReport(await loadReport("reports/my-machine.json"), { require: ["q4"] });
 * console.log(rates.backend, rates.gemvGBps.q4?.value, rates.gemvGBps.q4?.source);
 * ```
 */
export function ratesFromReport(report: Report, opts: RatesOptions = {}): ReportRates {
  const { backend, reason } = chooseBackend(report, opts.backend);
  const gemvGBps: Partial<Record<Dtype, RateFigure>> = {};
  const gemvVariants: Partial<Record<Dtype, string>> = {};
  for (const dtype of GEMV_DTYPES) {
    const found = gemvFigure(report, backend, dtype);
    if (found) {
      gemvGBps[dtype] = found.fig;
      gemvVariants[dtype] = found.variant;
    } else {
      gemvGBps[dtype] = {
        value: null,
        unit: "GB/s",
        tag: "measured",
        reason: `No ${dtype} gemv on ${backend} in the report: run ${
          calibrateCommand("gemv", dtype, backend)
        }`,
      };
    }
  }
  for (const dtype of opts.require ?? []) {
    if (gemvGBps[dtype]?.value === null || !gemvGBps[dtype]) {
      throw new MissingCalibrationError(
        `gemvGBps.${dtype}`,
        calibrateCommand("gemv", dtype, backend),
        `has no ${backend} measurement`,
      );
    }
  }
  const matmulF32 = matmulFigure(report, backend, "f32");
  if (!matmulF32) {
    throw new MissingCalibrationError(
      "matmulGflops.f32",
      calibrateCommand("matmul", "f32", backend),
      `has no ${backend} measurement`,
    );
  }
  const matmulF16 = matmulFigure(report, backend, "f16");
  const system = backend === "webgpu"
    ? {
      perDispatchUs: kernelLaunchFigure(report) ??
        systemFigure(report.system.perDispatchUs, "perDispatchUs"),
      syncRoundTripMs: stepSyncFigure(report),
      ...(report.system.encodePerDispatchUs
        ? { encodePerDispatchUs: report.system.encodePerDispatchUs }
        : {}),
      hostLinkGBps: {
        upload: systemFigure(report.system.uploadGBps, "hostLinkGBps.upload"),
        readback: systemFigure(report.system.readbackGBps, "hostLinkGBps.readback"),
      },
      ...stepProbeRates(report),
    }
    : cpuSystem(report, backend);
  const kernelTime = backend === "webgpu" ? { kernelTime: deviceKernelTime(report) } : {};
  const memoryBytes = opts.memoryBytes ?? report.machine.memoryGiB * 2 ** 30;
  if (!(memoryBytes > 0)) {
    throw new RangeError(
      `Cannot size the device: the report records ${report.machine.memoryGiB} GiB of memory; ` +
        `pass memoryBytes`,
    );
  }
  const software = report.adapter?.software ?? false;
  const memorySource = opts.memoryBytes !== undefined
    ? "given"
    : backend !== "webgpu" || software
    ? `host memory from the report (${report.machine.memoryGiB} GiB), which this backend uses`
    : `host memory from the report (${report.machine.memoryGiB} GiB): the report does not ` +
      `record a discrete GPU's memory, pass memoryBytes`;
  return {
    name: opts.name ??
      (backend === "webgpu" ? report.adapter?.description || report.slug : `${backend} (CPU)`),
    memoryBytes,
    matmulGflops: { f32: matmulF32, ...(matmulF16 ? { f16: matmulF16 } : {}) },
    gemvGBps,
    ...system,
    ...kernelTime,
    backend,
    backendReason: reason,
    memorySource,
    gemvVariants,
  };
}
