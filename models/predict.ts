/**
 * Point predictions from a calibration report: how long an op takes on a backend at a shape (with
 * an interval and where the number comes from), and which variant of a backend to run there.
 *
 * @example
 * ```ts ignore
 * import { loadReport } from "../reports/load.ts";
 * import { predictTime } from "./predict.ts";
 * const report = await loadReport("reports/latest.json");
 * const t = predictTime(report, { op: "add", shape: { n: 1 << 20 }, dtype: "f32", backend: "wasm" });
 * console.log(t.ms, t.interval, t.provenance);
 * ```
 *
 * @module
 */
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  type Dtype,
  formatShape,
  isOnAxis,
  type OpSpec,
  type Residency,
  type Shape,
  type Variant,
  variantFromId,
} from "../kernels/types.ts";
import type { CostFit, ProvenanceTag, Report, Tuning } from "../core/schema.ts";
import { normalQuantile } from "../core/numeric.ts";
import { correctionAt, DEFAULT_LEVEL } from "./_shape_model.ts";
import { localLooError, neighboursAt, type ResidualCurve } from "./_residuals.ts";
import { checkReach } from "./_bounds.ts";
import { learnedHalfWidth, pooledRuns, typicalRunDrift, withDrift } from "./_interval.ts";
import { slowestTransfer, typicalTransfer } from "./_transfers.ts";
import {
  type BackendSeries,
  indexReport,
  type OpTable,
  type Prediction,
  predictSeries,
  residualFeatures,
  tuningAt,
  variantRatioHalfWidth,
  variantsRankedOffAxis,
} from "./_index.ts";

/** Accuracy assumed for a log-log interpolation whose error cannot be cross-validated. */
const UNVALIDATED_FACTOR = 2;

/**
 * What to predict.
 *
 * @example
 * ```ts
 * import type { PredictRequest } from "./predict.ts";
 * const r: PredictRequest = {
 *   op: "matmul", shape: { m: 256, k: 256, n: 256 }, dtype: "f32", backend: "webgpu",
 *   residency: "device-resident",
 * };
 * ```
 */
export interface PredictRequest {
  /** Catalog op. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** Element type. */
  readonly dtype: Dtype;
  /** Backend to predict. */
  readonly backend: Backend;
  /** A variant id; the one tuned for this size (or the fastest fitted) when absent. */
  readonly variant?: string;
  /** `end-to-end` when absent; CPU backends are always end-to-end. */
  readonly residency?: Residency;
}

/**
 * A predicted time.
 *
 * @example
 * ```ts
 * import type { TimePrediction } from "./predict.ts";
 * function show(t: TimePrediction) { return `${t.ms} ms (${t.interval.join("–")}, ${t.provenance})`; }
 * ```
 */
export interface TimePrediction {
  /** Milliseconds per run. */
  readonly ms: number;
  /**
   * Where a new measurement of this case on this machine should lie, with probability `level`
   * (0.9): a band in ln time whose half-width combines what the model does not know here and the
   * machine's run-to-run drift (`stability.driftSigma` within the calibration, and
   * `stability.betweenRunSigma` between calibrations, assumed as {@linkcode ASSUMED_BETWEEN_RUN_SIGMA}
   * until the machine has three). The model part is, at a measured shape,
   * the median's own uncertainty; at any other shape the shape model's predictive spread scaled
   * by the multiplier that made its left-out shapes' errors hold the level; along the axis the
   * leave-one-out error of the measured sizes around it (at least the fit's mean held-out error,
   * up to 25 %); beyond the fitted range it compounds once per doubling of work. A WebGPU
   * end-to-end interval beyond the bytes its series measured also reaches the device-resident
   * time plus one sync plus the bytes at the report's upload rate.
   */
  readonly interval: readonly [number, number];
  /** The probability the interval is stated for. */
  readonly level: number;
  /**
   * The run-to-run drift the interval takes in, σ of ln time: the part of its width that moves
   * every prediction of the backend together (another run of the machine is faster or slower
   * throughout), where the rest is this shape's own.
   */
  readonly driftSigma: number;
  /** How the time was obtained. */
  readonly provenance: ProvenanceTag;
  /** The variant predicted. */
  readonly variant: string;
  /** What the number was derived from, for people. */
  readonly source: string;
}

/**
 * Predicts the time of one op on one backend.
 *
 * @param report A parsed report.
 * @param request Op, shape, dtype, backend, and optionally variant and residency.
 * @returns The time, its interval, provenance and source.
 * @throws {RangeError} when the op is unknown, the report has nothing on this backend or variant,
 * a dimension is not a positive safe integer, or the work is more than `MAX_EXTRAPOLATION` (1000)×
 * the largest the report measured or fitted.
 * @example
 * ```ts ignore
 * const t = predictTime(report, {
 *   op: "matmul", shape: { m: 300, k: 300, n: 300 }, dtype: "f32", backend: "wasm",
 * });
 * console.log(t.provenance); // "fitted"
 * ```
 */
export function predictTime(report: Report, request: PredictRequest): TimePrediction {
  const residency = request.residency ?? "end-to-end";
  const table = tableOf(report, request.op, request.dtype, residency);
  const s = seriesOf(table, request.backend);
  const op = table.op;
  const shape = request.shape;
  const flops = op.flops(shape);
  const bytes = op.bytes(shape, request.dtype);
  checkReach(table, shape, flops, bytes, () => formatShape(op, shape));
  refuseTooLarge(s, shape);
  const p = predictSeries(
    s,
    op.dims,
    op.axis.size(shape),
    shape,
    flops,
    bytes,
    request.variant ?? null,
  );
  if (p === null) {
    throw new RangeError(
      request.variant !== undefined && !s.variants.has(request.variant)
        ? `Cannot predict variant "${request.variant}" of ${request.backend}: the report has ` +
          `${[...s.variants.keys()].map((v) => `"${v}"`).join(", ")}`
        : `Cannot predict ${request.op} on ${request.backend}: the report has no fit or ` +
          `measurement to predict from`,
    );
  }
  // One chunk of a matrix op on wasm-mt is a one-thread run: described as the series it is.
  const from = p.oneThread === true && s.oneThread !== null ? s.oneThread.series : s;
  const described = describe(table, from, p, shape, flops, bytes, driftOf(report, request, p.ms));
  const t = from === s ? described : {
    ...described,
    source: `one chunk, which one thread runs whole: ${described.source}`,
  };
  // End to end beyond the bytes the series measured, or beyond the sizes its fit saw, its parts
  // say more than its fit.
  const beyond = bytes > largestMeasuredBytes(s) || t.provenance === "extrapolated";
  return request.backend === "webgpu" && residency === "end-to-end" && beyond
    ? fromParts(report, request, t, bytes)
    : t;
}

/**
 * A WebGPU end-to-end prediction beyond the largest bytes its series measured or beyond the sizes
 * its fit saw, built from what such a run is made of where its own fit only extrapolates: the
 * device-resident time, one sync and the bytes at the median transfer rate of the report's own
 * end-to-end runs. A fit through squares up to 512³ put matmul 1 × 1536 × 6144 (37.8 MB) at its
 * kernel and sync alone, 26–31 ms against 37–42 measured in eight calibrations, the 38 MB upload
 * left out, and in others at 50 ms; a fit through three squares up to 512³ put 900³ at 99.7 ms
 * (±7 %), which took 73.2, its device-resident kernel 59.0.
 *
 * Its interval also reaches what the same parts give at the slowest rate measured. Large uploads
 * run at one of two speeds here, by the process's memory history rather than by size: writeBuffer
 * of 26 MiB took 13 or 110–150 ms in one process, and gemv f32 2580² end-to-end ran 24 ms in a
 * calibration and 115–148 ms in a fresh process. When the two measured routes to the time
 * disagree, the interval says so rather than trusting the one the sweep happened to see. Up to
 * the largest bytes the series measured end to end, its own measurements say which speed the
 * transfers ran at.
 */
function fromParts(
  report: Report,
  request: PredictRequest,
  t: TimePrediction,
  bytes: number,
): TimePrediction {
  const systemGBps = report.system.uploadGBps.value;
  const syncMs = report.system.dispatchRoundTripMs.value;
  if (!(systemGBps && systemGBps > 0 && syncMs !== null)) return t;
  let residentMs: number;
  try {
    residentMs = predictTime(report, { ...request, residency: "device-resident" }).ms;
  } catch {
    return t;
  }
  const parts = atTypicalTransfers(report, t, residentMs + syncMs, bytes);
  // The system figure times one buffer at whichever speed it got; the report's own end-to-end
  // runs may have met the slow speed elsewhere, and slower.
  const slowest = slowestTransfer(report);
  const uploadGBps = slowest !== null && slowest.gbps < systemGBps ? slowest.gbps : systemGBps;
  const rateSource = uploadGBps === systemGBps
    ? `the measured upload rate (${systemGBps.toPrecision(3)} GB/s)`
    : `the slowest transfer rate of the report's own end-to-end runs (${
      uploadGBps.toPrecision(3)
    } GB/s, ${slowest!.at}; the upload figure says ${systemGBps.toPrecision(3)})`;
  const viaTransfersMs = residentMs + syncMs + bytes / uploadGBps / 1e6;
  const [lo, hi] = parts.interval;
  if (viaTransfersMs >= lo && viaTransfersMs <= hi) return parts;
  return {
    ...parts,
    interval: [Math.min(lo, viaTransfersMs), Math.max(hi, viaTransfersMs)],
    source: `${parts.source}; the device-resident time, one sync and ${
      (bytes / 1e6).toPrecision(3)
    } MB at ${rateSource} give ${
      viaTransfersMs.toPrecision(3)
    } ms instead (large uploads ran at either speed on this machine): the interval reaches it`,
  };
}

/**
 * `t` moved, interval and all, to `kernelAndSyncMs` and `bytes` at the median transfer rate of
 * the report's own end-to-end runs; `t` as it is without enough measured transfers to have a
 * median.
 */
function atTypicalTransfers(
  report: Report,
  t: TimePrediction,
  kernelAndSyncMs: number,
  bytes: number,
): TimePrediction {
  const typical = typicalTransfer(report);
  if (typical === null) return t;
  const partsMs = kernelAndSyncMs + bytes / typical.gbps / 1e6;
  const factor = partsMs / t.ms;
  return {
    ...t,
    ms: partsMs,
    interval: [t.interval[0] * factor, t.interval[1] * factor],
    source: `${t.source}; beyond what its series measured, built from its parts instead: ` +
      `the device-resident time, one sync and ${
        (bytes / 1e6).toPrecision(3)
      } MB at the median transfer rate of the report's own end-to-end runs (${
        typical.gbps.toPrecision(3)
      } GB/s, ${typical.at}): ${partsMs.toPrecision(3)} ms`,
  };
}

/**
 * How far whole runs move between calibrations, σ of ln time per backend, assumed for a machine
 * whose report does not say (calibrated fewer than three times, so no `betweenRunSigma`): the
 * spread measured between 16 calibrations of a 2-vCPU AMD EPYC VM with lavapipe (the dataset's
 * `llvmpipe-vulkan-x86_64-1ec2aa7f`). Without it, a first calibration's intervals carried only the
 * drift within its own five minutes (4–5 %), and on `bench:regret`'s held-out set right after it
 * covered 80 % of the truths at the 90 % level (64 % device-resident). The interval's source says
 * when it is assumed; calibrating the machine three times replaces it with the machine's own.
 *
 * @example
 * ```ts
 * import { ASSUMED_BETWEEN_RUN_SIGMA } from "./predict.ts";
 * console.log(ASSUMED_BETWEEN_RUN_SIGMA.wasm); // 0.11
 * ```
 */
export const ASSUMED_BETWEEN_RUN_SIGMA: Readonly<Record<Backend, number>> = Object.freeze({
  webgpu: 0.17,
  wasm: 0.11,
  "wasm-mt": 0.14,
  js: 0.1,
});

/** A prediction's run-to-run drift, and whether its between-run part was assumed. */
interface Drift {
  readonly sigma: number;
  /** Its between-run part alone, σ of ln time. */
  readonly betweenSigma: number;
  readonly assumed: boolean;
}

/**
 * The run-to-run drift (σ of ln time) a prediction carries: the drift within a calibration (the
 * median over the runs the report pools, `typicalRunDrift`), and how far whole runs moved between
 * calibrations of this machine (`stability.betweenRunSigma`, or
 * {@linkcode ASSUMED_BETWEEN_RUN_SIGMA} when the report has none for the backend): a program
 * runs later than the calibration, and on this VM a host state ×1.2–1.5 slower for wasm-mt came
 * and went between runs while one run's probes stayed within 3 %. The report probes WebGPU on the
 * device, where lavapipe's speed moves by 2×; an end-to-end run is mostly synchronisation and
 * host copies, which move with the host (the wasm probe): each drift is weighted by its share of
 * the end-to-end time, the device's share read from the device-resident prediction of the same
 * shape. (Applied whole, the device's σ of 0.38 made every end-to-end interval ×3.5 wide.)
 */
function driftOf(report: Report, request: PredictRequest, ms: number): Drift {
  const stability = report.stability;
  const measured = (b: Backend) => stability?.betweenRunSigma?.[b];
  const between = (b: Backend) => measured(b) ?? ASSUMED_BETWEEN_RUN_SIGMA[b];
  const runs = pooledRuns(report);
  const sigma = (b: Backend) => Math.hypot(typicalRunDrift(stability, b, runs), between(b));
  const backend = request.backend;
  const assumed = measured(backend) === undefined;
  const alone = { sigma: sigma(backend), betweenSigma: between(backend), assumed };
  if (backend !== "webgpu" || (request.residency ?? "end-to-end") !== "end-to-end") return alone;
  let deviceMs: number;
  try {
    deviceMs = predictTime(report, { ...request, residency: "device-resident" }).ms;
  } catch {
    return alone;
  }
  const share = Math.min(1, Math.max(0, deviceMs / ms));
  return {
    sigma: Math.hypot(share * alone.sigma, (1 - share) * sigma("wasm")),
    betweenSigma: Math.hypot(share * alone.betweenSigma, (1 - share) * between("wasm")),
    assumed: assumed || measured("wasm") === undefined,
  };
}

/** The most bytes any measured point of the series moved; 0 with none. */
/** Throws why the backend cannot run `shape` at all (a buffer over the adapter's binding). */
function refuseTooLarge(s: BackendSeries, shape: Shape): void {
  const why = s.tooLarge?.(shape) ?? null;
  if (why !== null) throw new RangeError(why);
}

function largestMeasuredBytes(s: BackendSeries): number {
  let most = 0;
  for (const v of s.variants.values()) for (const p of v.points) most = Math.max(most, p.bytes);
  return most;
}

function tableOf(report: Report, op: string, dtype: Dtype, residency: Residency): OpTable {
  const table = indexReport(report).table(op, dtype, residency);
  if (table === null) {
    getOp(op);
    throw new RangeError(
      `Cannot predict ${op} ${dtype} ${residency}: the report has no measurement or fit of it; ` +
        `calibrate it first`,
    );
  }
  return table;
}

function seriesOf(table: OpTable, backend: Backend): BackendSeries {
  const s = table.series.find((x) => x.backend === backend);
  if (s === undefined) {
    throw new RangeError(
      `Cannot predict ${table.op.name} ${table.dtype} on "${backend}": ` +
        `${table.skipped[backend] ?? "not in the report"}`,
    );
  }
  return s;
}

/**
 * Most of a fit's mean held-out error that a residual-corrected prediction carries as a floor
 * (see `describe`).
 */
const FIT_FLOOR_CAP = 0.25;

/** z of the stated level's two-sided normal interval, for the terms that are not calibrated. */
const Z_LEVEL = normalQuantile(0.5 + DEFAULT_LEVEL / 2);

function describe(
  table: OpTable,
  s: BackendSeries,
  p: Prediction,
  shape: Shape,
  flops: number,
  bytes: number,
  { sigma: drift, betweenSigma, assumed }: Drift,
): TimePrediction {
  const what = `${table.op.name} ${table.dtype} ${s.backend} ${p.variant} ${s.residency}`;
  const base = {
    ms: p.ms,
    provenance: p.provenance,
    variant: p.variant,
    level: DEFAULT_LEVEL,
    driftSigma: drift,
  };
  // Another run of this machine moves a whole backend by its measured drift: a prediction of a
  // later measurement carries that spread whatever the model knows.
  const driftHalf = Z_LEVEL * drift;
  const band = (halfWidth: number): [number, number] => {
    const h = Math.hypot(halfWidth, driftHalf);
    return [p.ms * Math.exp(-h), p.ms * Math.exp(h)];
  };
  // Parts learned from left-out points already hold the drift within the run (`_interval.ts`).
  const drifts = { z: Z_LEVEL, sigma: drift, betweenSigma };
  const driftNote = `, run-to-run drift ${(100 * drift).toFixed(0)} %` +
    (assumed ? " (between runs assumed: this machine has fewer than three calibrations)" : "");
  if (p.point !== null) {
    const relSd = p.point.ciHalfWidth / p.point.ms / 1.96;
    return {
      ...base,
      interval: band(Z_LEVEL * relSd),
      source: `measured ${what} at ${formatShape(table.op, p.point.shape)}${driftNote}`,
    };
  }
  if (p.fit !== null) {
    const f = p.fit;
    const lo = table.op.axis.shape(f.sizeRange[0]);
    const hi = table.op.axis.shape(f.sizeRange[1]);
    // With a shape model, the measured shapes it learned from carry the fit's error at their
    // work in their residuals, off the axis too (js matmul 8 × 1024 × 4096 beyond a sweep that
    // stopped at 256³): only work beyond every measured shape compounds it.
    const reach = p.shapeModel === null ? null : measuredWork(s.best);
    const doublings = p.provenance === "extrapolated"
      ? Math.max(
        beyond(
          flops,
          Math.min(table.op.flops(lo), reach?.flops[0] ?? Infinity),
          Math.max(table.op.flops(hi), reach?.flops[1] ?? 0),
        ),
        beyond(
          bytes,
          Math.min(table.op.bytes(lo, table.dtype), reach?.bytes[0] ?? Infinity),
          Math.max(table.op.bytes(hi, table.dtype), reach?.bytes[1] ?? 0),
        ),
      )
      : 0;
    const fitError = f.cvMaxError ?? f.cvMape ?? Math.expm1(2 * f.rmsLogError);
    const fitFloor = Math.min(floorError(f, p.residuals) ?? fitError, FIT_FLOOR_CAP);
    const localError = p.residuals === null ? null : localLooError(p.residuals, bytes, fitFloor);
    const corrected = localError !== null;
    // Corrected by its residuals, the prediction is the measured curve between measured sizes:
    // it is as good as interpolation is around this size (the leave-one-out errors near it, at
    // least their median), not as good as one formula over the whole range (a wasm-mt matmul fit
    // that missed the inline regime at 4³ held out at ×7, while interpolating near 512³ held to
    // 5 %). The fit's mean held-out error stays a floor, since neighbours can share an offset
    // that leaving one out cannot see, but only up to FIT_FLOOR_CAP: past it, the fit's form is
    // what fails, and the measured curve, not the fit, carries the prediction. Both shrink near
    // a measured size (see `localLooError`).
    const axisError = localError ?? fitError;
    // Off the axis, the shape model's spread at this shape, scaled so its left-out shapes held
    // the level; it grows to the whole spread of shape effects far from every measured shape.
    const model = p.shapeModel;
    // The shape model is the fitted variant's, also where another variant is priced through it.
    const fitOf = p.viaVariant?.from ?? p.variant;
    // Off the axis with no measured shape off it, the proportions' effect is unknown: a factor
    // of two either way, said so, rather than the square shapes' confidence.
    const unknownShape = model === null && s.sweptAxis && !isOnAxis(table.op, shape);
    const shapeHalf = model !== null
      ? model.multiplier * correctionAt(model, residualFeatures(s, table.op.dims, shape, fitOf)).sd
      : unknownShape
      ? Math.log(UNVALIDATED_FACTOR)
      : 0;
    // Beyond the measured range nothing was left out to calibrate against: the fit's held-out
    // error compounds once per doubling of work.
    const extrapolation = doublings * Math.log1p(axisError);
    const via = p.viaVariant;
    const variantHalf = via === null ? 0 : variantRatioHalfWidth(via, table.op.dims, shape);
    const alignHalf = p.alignment?.halfWidth ?? 0;
    const half = learnedHalfWidth({
      axis: Math.log1p(axisError),
      shape: shapeHalf,
      offAxisModel: model !== null && !isOnAxis(table.op, shape),
      variant: variantHalf,
      align: alignHalf,
      extrapolation,
    }, drifts);
    const interval: [number, number] = [p.ms * Math.exp(-half), p.ms * Math.exp(half)];
    // On the axis between two measured sizes, the truth may sit at either one's efficiency.
    const between = p.residuals === null || (model !== null && !isOnAxis(table.op, shape))
      ? null
      : neighboursAt(p.residuals, bytes);
    // Each side at its own efficiency, with the run-to-run drift beside it as in the band.
    const sides = between === null ? null : [
      p.ms * Math.exp(-withDrift(Math.max(0, -between[0]), drifts)),
      p.ms * Math.exp(withDrift(Math.max(0, between[1]), drifts)),
    ];
    const widened = sides !== null && (sides[0]! < interval[0] || sides[1]! > interval[1]);
    return {
      ...base,
      interval: sides === null
        ? interval
        : [Math.min(interval[0], sides[0]!), Math.max(interval[1], sides[1]!)],
      source: `cost model of ${what} fitted on ${f.points} sizes ${f.sizeRange[0]}–` +
        `${f.sizeRange[1]} ${table.op.axis.unit}` +
        (corrected ? ", corrected by its residuals between measured sizes" : "") +
        ` (held-out error ${(100 * axisError).toFixed(1)} %)` +
        (unknownShape
          ? `; no shape of these proportions was measured (interval ×${UNVALIDATED_FACTOR} ` +
            `either way for them; calibrate measures such shapes)`
          : "") +
        (model === null ? "" : `, ×${Math.exp(p.correction).toFixed(2)} for this shape's ` +
          `proportions (learned from ${model.n} measured shapes, spread ±${
            (100 * Math.expm1(shapeHalf)).toFixed(0)
          } %)`) +
        (p.alignment === null || p.alignment.ln === 0
          ? ""
          : `, ×${
            Math.exp(p.alignment.ln).toFixed(2)
          } for how its rows align to the kernel's word and vector loads (${
            p.alignment.fromTwins === true
              ? "as the report's twin shapes a few columns apart ran"
              : "as the report's sizes of that alignment ran against the fit"
          }${alignHalf > 0 ? `; not measured, so between the classes around it` : ""})`) +
        ((p.imbalanceLn ?? 0) > 0
          ? `, ×${
            Math.exp(p.imbalanceLn!).toFixed(2)
          } for how unevenly its parts share among the threads (${
            s.backend === "webgpu"
              ? "its largest workgroup on one of the adapter's threads"
              : "the busiest thread's work"
          } against an even share)`
          : "") +
        (doublings > 0 ? `, ${doublings.toFixed(1)} doublings beyond it` : "") +
        (widened
          ? `, reaching the efficiencies of the measured sizes on either side (×${
            Math.exp(between![0]).toFixed(2)
          } and ×${Math.exp(between![1]).toFixed(2)} its time)`
          : "") +
        (via === null
          ? ""
          : via.sizes.length === 0
          ? `; variant ${p.variant} has no end-to-end fit of its own: ${via.from}'s time with ` +
            `its device-resident kernel swapped for this variant's (×${via.ratio.toPrecision(3)})`
          : `; variant ${p.variant} has no fit of its own: ${via.from}'s ` +
            `×${via.ratio.toPrecision(3)}, ` +
            (via.shapeModel
              ? `its ratio at these proportions, learned where it ran on and off the axis`
              : `its ratio where it ran`) +
            ` (${via.sizes.join(", ")} ${table.op.axis.unit}), assumed to hold here (±${
              (100 * Math.expm1(variantHalf)).toFixed(0)
            } %)`) +
        (p.raisedTo === undefined
          ? ""
          : `; raised to the device-resident time (${
            p.raisedTo.kernelMs.toPrecision(3)
          } ms) plus one sync (${
            p.raisedTo.syncMs.toPrecision(3)
          } ms), which an end-to-end run includes`) +
        driftNote,
    };
  }
  const factor = UNVALIDATED_FACTOR;
  const sizes = p.bracket.map((b) => b.size).join(" and ");
  return {
    ...base,
    interval: band(Math.log(factor)),
    source: `log-log interpolation of ${what} between measured sizes ${sizes} ` +
      `${table.op.axis.unit} (no fit; accuracy unvalidated, interval ×${factor} either way)` +
      driftNote,
  };
}

/**
 * The held-out error a prediction between measured sizes claims at least: the fit's, or, where the
 * series crosses a regime break of the measurements (a CPU or device-resident series' switch to
 * streamed operands, `core/operand_rotation.ts`), the corrected curve's own. One formula cannot follow that step (a
 * wasm dot fit held out at 85 % across it), while its residuals carry the prediction on each side
 * and their leave-one-out errors, taken within each side, say how well.
 */
function floorError(f: CostFit, residuals: ResidualCurve | null): number | null {
  const crosses = residuals !== null && residuals.x.length > 0 &&
    residuals.breaks.some((b) => b > residuals.x[0]! && b < residuals.x.at(-1)!);
  return crosses && residuals.looMape !== null ? residuals.looMape : f.cvMape;
}

/** The least and most flops and bytes of measured points; null with none. */
function measuredWork(
  points: readonly { readonly flops: number; readonly bytes: number }[],
): { flops: [number, number]; bytes: [number, number] } | null {
  if (points.length === 0) return null;
  const flops = points.map((p) => p.flops);
  const bytes = points.map((p) => p.bytes);
  return {
    flops: [Math.min(...flops), Math.max(...flops)],
    bytes: [Math.min(...bytes), Math.max(...bytes)],
  };
}

/** Doublings of `x` outside `[lo, hi]` (0 inside, or when the range is empty). */
function beyond(x: number, lo: number, hi: number): number {
  if (lo <= 0 || hi <= 0 || x <= 0) return 0;
  if (x < lo) return Math.log2(lo / x);
  if (x > hi) return Math.log2(x / hi);
  return 0;
}

/**
 * Parses a variant id (`"tile=4,vec4=true,wg=8x8"`) back into parameters; `"default"` is `{}`.
 *
 * @param id A variant id from a report.
 * @returns Its parameters: numbers and booleans where the text is one, strings otherwise.
 * @example
 * ```ts
 * import { variantParams } from "./predict.ts";
 * console.log(variantParams("tile=4,vec4=true,wg=8x8")); // { tile: 4, vec4: true, wg: "8x8" }
 * ```
 */
export function variantParams(id: string): Variant {
  return variantFromId(id);
}

/**
 * What to tune.
 *
 * @example
 * ```ts
 * import type { TuningRequest } from "./predict.ts";
 * const r: TuningRequest = { op: "matmul", shape: { m: 384, k: 384, n: 384 }, dtype: "f32" };
 * ```
 */
export interface TuningRequest {
  /** Catalog op. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** Element type. */
  readonly dtype: Dtype;
  /** The backend to tune; the fastest predicted when absent. */
  readonly backend?: Backend;
  /** `end-to-end` when absent. */
  readonly residency?: Residency;
}

/**
 * A variant with its predicted time.
 *
 * @example
 * ```ts
 * import type { VariantChoice } from "./predict.ts";
 * const v: VariantChoice = { variant: "tile=4", params: { tile: 4 }, predictedMs: 1.2 };
 * ```
 */
export interface VariantChoice {
  /** Variant id. */
  readonly variant: string;
  /** Its parameters. */
  readonly params: Variant;
  /** Its predicted time, ms. */
  readonly predictedMs: number;
}

/**
 * The recommendation of {@linkcode recommendTuning}.
 *
 * @example
 * ```ts
 * import type { TuningRecommendation } from "./predict.ts";
 * function params(t: TuningRecommendation) { return t.params; }
 * ```
 */
export interface TuningRecommendation extends VariantChoice {
  /** The backend tuned. */
  readonly backend: Backend;
  /** The second best variant, or null when there is one only. */
  readonly runnerUp: VariantChoice | null;
  /** `measured` inside a tuning bucket or at a measured shape, else how the times were obtained. */
  readonly provenance: ProvenanceTag;
  /** What the recommendation was derived from, for people. */
  readonly source: string;
}

/**
 * The best variant (and the runner-up) of a backend at a shape.
 *
 * It recommends the variant {@linkcode predictTime} without one runs (as `select()` and
 * `planGraph()` do): one question, one answer. Where that is the tuning bucket's best (the bucket
 * holding this size, else the nearest in log space, tagged `extrapolated`), the bucket names the
 * runner-up; their times come from the variant's measurement at this shape or its cost model, else
 * from log-log interpolation between the buckets where the variant was timed. Where it is another
 * (the fastest variant timed at this shape; off the sweep's axis, one the shape's proportions rank
 * surely faster, a plain loop against a tiled one at m = 1; the one that can run a shape the
 * bucket's best cannot, vector loads at an odd width; the fitted one where the bucket's best has
 * no fit), the source says which, and the runner-up is the fastest predicted other variant that
 * can run the shape. A backend without tuning rows or predictions ranks its variants by predicted
 * time.
 *
 * @param report A parsed report.
 * @param request Op, shape, dtype, and optionally backend and residency.
 * @returns The recommendation.
 * @throws {RangeError} when the report has nothing on this op, dtype or backend.
 * @example
 * ```ts ignore
 * const t = recommendTuning(report, {
 *   op: "matmul", shape: { m: 384, k: 384, n: 384 }, dtype: "f32", backend: "webgpu",
 *   residency: "device-resident",
 * });
 * console.log(t.variant, t.params, t.runnerUp?.variant);
 * ```
 */
export function recommendTuning(report: Report, request: TuningRequest): TuningRecommendation {
  const residency = request.residency ?? "end-to-end";
  const table = tableOf(report, request.op, request.dtype, residency);
  const op = table.op;
  const shape = request.shape;
  const size = op.axis.size(shape);
  const flops = op.flops(shape);
  const bytes = op.bytes(shape, request.dtype);
  checkReach(table, shape, flops, bytes, () => formatShape(op, shape));
  const predict = (s: BackendSeries, variant: string | null) =>
    predictSeries(s, op.dims, size, shape, flops, bytes, variant);
  const s = request.backend !== undefined
    ? seriesOf(table, request.backend)
    : fastestSeries(table, (x) => predict(x, null)?.ms ?? Infinity);
  const at = formatShape(op, shape);
  refuseTooLarge(s, shape);
  const row = tuningAt(s.tuning, size);
  // Off the axis, variants measured at shapes of their own there outrank a square size's tuning.
  const offAxis = variantsRankedOffAxis(s, op.dims, size, shape, flops, bytes);
  // The variant predictTime(), select() and planGraph() run here: one answer to one question.
  const runs = predict(s, null);
  if (row !== null && (runs === null || runs.variant === row.best.variant)) {
    return fromTuning(s, row, size, at, (v) => predict(s, v));
  }
  if (runs !== null) {
    return beside(s, runs, row, [...(offAxis ?? []), row?.best.variant, row?.runnerUp?.variant], {
      op,
      shape,
      at,
      predict: (v) => predict(s, v),
    });
  }
  // Off the axis the ranking is the models' (a variant displaces the tuned one only when surely
  // faster); without one, by predicted time.
  const predicted = (offAxis ?? [...s.variants.keys()])
    .map((v) => predict(s, v))
    .filter((p): p is Prediction => p !== null);
  const ranked = offAxis !== null ? predicted : predicted.sort((a, b) => a.ms - b.ms);
  const best = ranked[0];
  if (best === undefined) {
    throw new RangeError(
      `Cannot recommend a variant of ${s.backend} for ${op.name} at ${at}: the report has no ` +
        `fit or measurement of it`,
    );
  }
  const second = ranked[1];
  return {
    backend: s.backend,
    ...choice(best.variant, best.ms),
    runnerUp: second === undefined ? null : choice(second.variant, second.ms),
    provenance: best.provenance,
    source: offAxis !== null
      ? `${ranked.length} variants of ${s.backend} measured at shapes of these proportions ` +
        `(off the tuning sweep's axis), ranked by predicted time at ${at}`
      : `no tuning sweep of ${s.backend}; ${ranked.length} variant(s) ranked by predicted ` +
        `time at ${at}`,
  };
}

/**
 * The recommendation where the variant a prediction runs is not the tuning bucket's best: the
 * fastest variant timed at this shape, one the shape's proportions rank first, one that can run a
 * shape the bucket's best cannot (vector loads at an odd width), or the variant with a fit of its
 * own where the bucket's best has none. The runner-up is the fastest predicted of `others` (else
 * of every variant, end to end also those only the device-resident sweep ran) that is another
 * variant and runs the shape.
 */
function beside(
  s: BackendSeries,
  runs: Prediction,
  row: Tuning | null,
  others: readonly (string | undefined)[],
  { op, shape, at, predict }: {
    op: OpSpec;
    shape: Shape;
    at: string;
    predict: (variant: string) => Prediction | null;
  },
): TuningRecommendation {
  const other = (v: string | undefined): v is string =>
    v !== undefined && v !== runs.variant && s.runs(shape, v);
  const fastestOf = (vs: readonly (string | undefined)[]) =>
    vs.filter(other).map(predict).filter((p): p is Prediction => p !== null)
      .sort((a, b) => a.ms - b.ms)[0];
  // End to end, also the variants only the device-resident sweep ran, with their kernel swapped in.
  const every = [...s.variants.keys(), ...(s.floor?.kernel.variants.keys() ?? [])];
  const second = fastestOf(others) ?? fastestOf(every);
  return {
    backend: s.backend,
    ...choice(runs.variant, runs.ms),
    runnerUp: second === undefined ? null : choice(second.variant, second.ms),
    provenance: runs.provenance,
    source: `${whyItRuns(s, runs, row, op, shape, at)}; predictTime(), select() and planGraph() ` +
      `run the same variant`,
  };
}

/** Why `runs` and not the tuning bucket's best runs at the shape, for people. */
function whyItRuns(
  s: BackendSeries,
  runs: Prediction,
  row: Tuning | null,
  op: OpSpec,
  shape: Shape,
  at: string,
): string {
  if (runs.point !== null) {
    return `the fastest of the variants timed at ${formatShape(op, runs.point.shape)}`;
  }
  const tuned = row?.best.variant;
  if (tuned !== undefined && !s.runs(shape, tuned)) {
    return `the tuning bucket's best (${tuned}) cannot run ${at}; of those that can, the fastest ` +
      `predicted`;
  }
  if (tuned !== undefined && s.variants.get(tuned)?.fit === null) {
    return `the tuning bucket's best (${tuned}) has no fit of its own; the fastest variant ` +
      `fitted over the sweep`;
  }
  return `ranked first by its predicted time at ${at}, off the tuning sweep's axis, among the ` +
    `variants measured at shapes of these proportions`;
}

function fastestSeries(table: OpTable, ms: (s: BackendSeries) => number): BackendSeries {
  let best = table.series[0]!;
  let bestMs = ms(best);
  for (const s of table.series) {
    const t = ms(s);
    if (t < bestMs) {
      best = s;
      bestMs = t;
    }
  }
  return best;
}

function choice(variant: string, predictedMs: number): VariantChoice {
  return { variant, params: variantParams(variant), predictedMs };
}

function fromTuning(
  s: BackendSeries,
  row: Tuning,
  size: number,
  at: string,
  predict: (variant: string) => Prediction | null,
): TuningRecommendation {
  const inside = size >= row.sizeMin && size <= row.sizeMax;
  const direct = s.variants.has(row.best.variant) ? predict(row.best.variant) : null;
  const bestMs = direct?.ms ?? acrossBuckets(s.tuning, row.best.variant, size) ?? row.best.ms;
  let runnerUp: VariantChoice | null = null;
  if (row.runnerUp !== null) {
    const v = row.runnerUp.variant;
    const ms = (s.variants.has(v) ? predict(v)?.ms : undefined) ??
      bestMs * row.runnerUp.ms / row.best.ms;
    runnerUp = choice(v, ms);
  }
  const provenance: ProvenanceTag = !inside
    ? "extrapolated"
    : direct?.provenance === "extrapolated"
    ? "extrapolated"
    : row.tag;
  return {
    backend: s.backend,
    ...choice(row.best.variant, bestMs),
    runnerUp,
    provenance,
    source: `tuning sweep of ${s.backend} over ${row.sizeMin}–${row.sizeMax} ${row.unit}` +
      (inside ? "" : ` (nearest bucket to ${size})`) + `; times at ${at} from ` +
      (direct === null ? "the tuning buckets" : `the ${direct.provenance} ${direct.variant} data`),
  };
}

/**
 * The time of a variant at a size from the tuning buckets that timed it, log-log interpolated
 * between bucket mid-points (geometric); the nearest bucket's time outside them.
 */
function acrossBuckets(rows: readonly Tuning[], variant: string, size: number): number | null {
  const pts: Array<{ size: number; ms: number }> = [];
  for (const r of rows) {
    const mid = Math.sqrt(Math.max(r.sizeMin, 1) * Math.max(r.sizeMax, 1));
    if (r.best.variant === variant) pts.push({ size: mid, ms: r.best.ms });
    else if (r.runnerUp?.variant === variant) pts.push({ size: mid, ms: r.runnerUp.ms });
  }
  if (pts.length === 0) return null;
  pts.sort((a, b) => a.size - b.size);
  if (pts.length === 1 || size <= pts[0]!.size) return pts[0]!.ms;
  if (size >= pts[pts.length - 1]!.size) return pts[pts.length - 1]!.ms;
  let i = 1;
  while (pts[i]!.size < size) i++;
  const a = pts[i - 1]!;
  const b = pts[i]!;
  const t = Math.log(size / a.size) / Math.log(b.size / a.size);
  return a.ms * (b.ms / a.ms) ** t;
}
