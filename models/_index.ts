/**
 * Private: a report re-arranged for fast look-ups. Every model in this folder asks the same
 * question — "how long does this op take on this backend at this shape, and how do we know?" — and
 * this index answers it in O(variants) without scanning the report.
 *
 * @module
 */
import { costMs } from "../core/costmodel.ts";
import { getOp } from "../kernels/catalog.ts";
import {
  type Backend,
  BACKENDS,
  CPU_BACKENDS,
  type Dtype,
  formatShape,
  FULL_TILES,
  implOf,
  isOnAxis,
  type OpSpec,
  type Residency,
  type Shape,
  type Variant,
  variantFromId,
} from "../kernels/types.ts";
import type { CostFit, ProvenanceTag, Report, Tuning } from "../core/schema.ts";
import {
  alignedMs,
  type AlignmentClass,
  alignmentClass,
  type AlignmentModel,
  type AlignmentOffset,
  fitAlignment,
  offsetAt,
  rowStridePower,
} from "./_alignment.ts";
import {
  firstSharedSize,
  imbalanceLn,
  type PackedRun,
  perCallWork,
  runsOnOneThread,
} from "./_imbalance.ts";
import {
  adapterThreads,
  dispatchSpanLn,
  threadContention,
  workgroupWorkOf,
} from "./_workgroups.ts";
import { amortizationLn, fitAmortization } from "./_amortization.ts";
import { fitTilePenalty, NO_TILE_COST, tileLn, type TileModel, type TilePoint } from "./_tiles.ts";
import {
  fitRowCost,
  launchMs,
  NO_ROW_COST,
  type RowCost,
  rowsMs,
  type SweepTime,
} from "./_row_cost.ts";
import { correctionAt, type ResidualCurve, residualCurve } from "./_residuals.ts";
import { STREAMED_FROM_BYTES } from "../core/operand_rotation.ts";
import {
  correctionAt as shapeCorrectionAt,
  correctionMean,
  DEFAULT_LEVEL,
  fitShapeModel,
  type ShapeModel,
  type ShapePoint,
} from "./_shape_model.ts";

/** Relative distance within which a measured shape counts as "this shape". */
export const MEASURED_TOLERANCE = 0.05;

/** A measured shape of one backend: the best median over the variants measured there. */
export interface MeasuredPoint {
  readonly size: number;
  readonly shape: Shape;
  /** The shape's dims in the op's order, for comparisons without keyed look-ups. */
  readonly dims: readonly number[];
  readonly flops: number;
  readonly bytes: number;
  readonly variant: string;
  readonly ms: number;
  readonly ciHalfWidth: number;
  /** Whether the shape belongs to the sweep (not one of calibrate's off-axis shapes). */
  readonly onAxis: boolean;
}

/** What is known about one variant of one backend. */
export interface VariantSeries {
  readonly variant: string;
  readonly fit: CostFit | null;
  /** The fit's coefficients, for evaluation without allocation. */
  readonly model: CompiledFit | null;
  /** Work range the fit covers, widened by {@linkcode MEASURED_TOLERANCE}. */
  readonly flopsRange: readonly [number, number];
  readonly bytesRange: readonly [number, number];
  /** Measured shapes of this variant, by size (on and off the sweep axis). */
  readonly points: readonly MeasuredPoint[];
  /** The on-axis ones, by size: what interpolation along the axis runs between. */
  readonly axisPoints: readonly MeasuredPoint[];
  /** How many of its points lie off the axis (calibrate's off-axis shapes). */
  readonly offAxisPoints: number;
  /** What the fit misses at its on-axis sizes, and how well interpolating that predicts. */
  readonly residuals: ResidualCurve | null;
  /**
   * What the fit and its on-axis correction still miss off the axis (a matmul with m = 1), learned
   * over the backend's measured shapes so a shape beside them is predicted with a calibrated
   * spread; null without a fit.
   */
  readonly shapeModel: ShapeModel | null;
  /**
   * How far each row-alignment class runs from the fit (see `_alignment.ts`); the residuals and
   * the shape model above are of measurements divided by their class's offset. Null when the op
   * streams no rows or the variant's classes do not differ.
   */
  readonly alignment: AlignmentModel | null;
  /**
   * How much of the partial tiles' idle share a run pays (`_tiles.ts`): 0 where none of its
   * measured sizes left tiles partly empty, so nothing says; null without a fit.
   */
  readonly tiles: TileModel | null;
  /**
   * How much of the idle arithmetic of invocation blocks a run pays where a dimension is under one
   * tile (`blockUtilisation` of the kernel; a decode's one row on 16-row blocks), fitted as
   * {@linkcode tiles} is from the measured shapes of the series' fitted variants that leave blocks
   * partly empty, one for all of them; null without a fit.
   */
  readonly blocks: TileModel | null;
  /**
   * What each row costs besides its elements and how many run at once (`_row_cost.ts`), measured
   * from the variant's shapes beside the axis; no cost where the backend's rows are not held by
   * the sweep or nothing says.
   */
  readonly rowCost: RowCost;
  /**
   * The shape model's prior off the axis: ln of the variant's rows' share of a per-call cost
   * against the fit's time at a shape (`_amortization.ts`), 0 where its code path has none;
   * null for a kernel that pays nothing per call, or a variant without a fit.
   */
  readonly amortized: Amortized | null;
}

/**
 * ln of a variant's time at a shape, of the flops and bytes given, against its fit's there, as
 * the rows' share of a per-call cost prices it.
 */
export type Amortized = (shape: Shape, flops: number, bytes: number) => number;

/** What is known about one backend for one (op, dtype, residency). */
export interface BackendSeries {
  readonly backend: Backend;
  /** Index of `backend` in {@linkcode BACKENDS}. */
  readonly slot: number;
  /** Residency of the data behind it (CPU backends are always end-to-end). */
  readonly residency: Residency;
  readonly variants: ReadonlyMap<string, VariantSeries>;
  /** Variants with a fit, for choosing the fastest when tuning says nothing. */
  readonly fitted: readonly VariantSeries[];
  /** Variants measured at {@linkcode MIN_RANKED_OFF_AXIS} off-axis shapes or more: the ones ranked off the axis. */
  readonly offAxisRanked: readonly VariantSeries[];
  /**
   * The largest axis size at which the variant search timed a variant besides the fitted ones
   * (0 without a search): how far up the axis its choice was measured.
   */
  readonly searchedUpTo: number;
  /** Best measured variant per shape, by size. */
  readonly best: readonly MeasuredPoint[];
  /** Tuning rows of this backend, by `sizeMin`. */
  readonly tuning: readonly Tuning[];
  /** The op's sweep-axis shape at a size. */
  readonly axisShape: (size: number) => Shape;
  /**
   * Whether the sweep's shapes are the op's axis shapes (every calibration's are): only then does
   * a query off that axis have proportions the sweep did not measure.
   */
  readonly sweptAxis: boolean;
  /** The row-alignment class of a shape, or null for an op that streams no rows. */
  readonly alignmentOf: ((shape: Shape) => AlignmentClass) | null;
  /**
   * Why no variant of the backend can run a shape at all (a buffer over the WebGPU adapter's
   * largest storage binding), else null; null for a backend without such a limit.
   */
  readonly tooLarge: ((shape: Shape) => string | null) | null;
  /**
   * The power of two a shape's rows are apart in bytes (`rowStridePower`), which the ratio
   * between two variants reads beside the dimensions; null where rows are not streamed.
   */
  readonly strideOf: ((shape: Shape) => number) | null;
  /**
   * For a CPU kernel with more than one code path (`codePath` of its wasm impl): the path a
   * shape runs on, by variant id, which the shape models read beside the dimensions; null for
   * the others.
   */
  readonly pathOf: ((shape: Shape, variant: string) => number) | null;
  /**
   * ln of how much longer a run lasts than an even share of its work over the threads, at a
   * shape and variant id: wasm-mt's busiest thread (`_imbalance.ts`), or on a CPU adapter a
   * WebGPU dispatch's largest workgroup (`_workgroups.ts`); null where the work shares evenly.
   */
  readonly imbalanceOf: ((shape: Shape, variant: string) => number) | null;
  /**
   * For a kernel that tiles its output: the share of its tiles' area a shape covers, by variant
   * id (`utilisation` of the WebGPU impl); null for the others.
   */
  readonly utilisationOf: ((shape: Shape, variant: string) => number) | null;
  /**
   * For a kernel that tiles its output: the share of its invocation blocks' arithmetic a shape
   * uses along dimensions under one tile, by variant id (`blockUtilisation` of the WebGPU impl);
   * null for the others.
   */
  readonly blockUtilisationOf: ((shape: Shape, variant: string) => number) | null;
  /**
   * For WebGPU, the rows the op's sweep holds fixed (softmax's 32), against which each variant's
   * `rowCost` prices other row counts; null otherwise.
   */
  readonly sweepRows: number | null;
  /**
   * For WebGPU end to end: the device-resident series and the report's round trip, whose sum
   * bounds a prediction from below (see {@linkcode predictSeries}); null otherwise.
   */
  readonly floor: { readonly kernel: BackendSeries; readonly syncMs: number } | null;
  /**
   * For wasm-mt: the one-thread wasm series of the same table, and whether a shape runs as one
   * chunk on one thread (`runsOnOneThread`), where a prediction is that series'; null otherwise.
   */
  readonly oneThread: {
    readonly series: BackendSeries;
    readonly at: (shape: Shape, variant: string) => boolean;
  } | null;
  /**
   * Whether a variant (by id) can run a shape: a WebGPU matmul with vector loads of B cannot run
   * n = 77, and a program runs another variant there.
   */
  readonly runs: (shape: Shape, variant: string) => boolean;
}

/** Everything about one (op, dtype, residency). */
export interface OpTable {
  readonly op: OpSpec;
  readonly dtype: Dtype;
  readonly residency: Residency;
  /** Backends with something to predict from, in {@linkcode BACKENDS} order. */
  readonly series: readonly BackendSeries[];
  /** Backends without, and why. */
  readonly skipped: Readonly<Partial<Record<Backend, string>>>;
}

/** One prediction of one backend. */
export interface Prediction {
  readonly ms: number;
  readonly variant: string;
  readonly provenance: ProvenanceTag;
  /** The measured point, or the fit, behind the number. */
  readonly point: MeasuredPoint | null;
  readonly fit: CostFit | null;
  /** The two measured points interpolated between when there is neither (else empty). */
  readonly bracket: readonly MeasuredPoint[];
  /** The fit's on-axis residuals (their leave-one-out error), when there is a fit. */
  readonly residuals: ResidualCurve | null;
  /** The shape model whose correction was applied to the fit's time, when there is one. */
  readonly shapeModel: ShapeModel | null;
  /** ln of the correction applied (0 without one). */
  readonly correction: number;
  /** The row-alignment offset applied to the fit's time, when the variant has one. */
  readonly alignment: AlignmentOffset | null;
  /** ln of the uneven share between wasm-mt's threads applied to the fit's time (absent: 0). */
  readonly imbalanceLn?: number;
  /** When the time was raised to the device-resident time plus one sync: those two, ms. */
  readonly raisedTo?: { readonly kernelMs: number; readonly syncMs: number };
  /** A wasm-mt run of one chunk, predicted by the one-thread series it runs as (`oneThread`). */
  readonly oneThread?: true;
  /**
   * A variant with no fit of its own, predicted as a fitted variant of its backend times the
   * ratio measured between them where both ran; null otherwise.
   */
  readonly viaVariant: VariantRatio | null;
}

/** How a variant without a fit was scaled from one with. */
export interface VariantRatio {
  /** The fitted variant predicted from. */
  readonly from: string;
  /**
   * This variant's time / the fitted variant's prediction: its geometric mean where it ran on the
   * axis (everywhere it ran when nowhere on it), moved to this shape by `shapeModel` when there
   * is one.
   */
  readonly ratio: number;
  /** The sizes it ran at. */
  readonly sizes: readonly number[];
  /**
   * The share of the predicted time a change of variant can move: the time beyond the launch
   * (or, end to end, the kernel's part beside the transfers and sync both variants share).
   * Absent: all of it.
   */
  readonly share?: number;
  /**
   * When it ran off the axis: how the ratio moves with the shape's proportions, whose mean at
   * this shape is in `ratio` and whose spread there bounds the interval; null otherwise.
   */
  readonly shapeModel?: ShapeModel | null;
  /** The shape as `shapeModel` reads it ({@linkcode ratioFeatures}). */
  readonly features?: readonly number[];
  /** Whether it ran on the axis at all (absent: yes). */
  readonly onAxis?: boolean;
  /**
   * Octaves from this shape to the nearest shape it ran at, in the dimension where they lie
   * farthest apart (absent: 0).
   */
  readonly octavesAway?: number;
}

const NONE: readonly MeasuredPoint[] = Object.freeze([]);

/** The index of a report. */
export interface ReportIndex {
  readonly report: Report;
  /** The table of an (op, dtype, residency), or null when the report has nothing on it. */
  table(op: string, dtype: Dtype, residency: Residency): OpTable | null;
}

const cache = new WeakMap<Report, ReportIndex>();

/**
 * The index of a report, built once per report object.
 *
 * @param report A parsed report.
 * @returns Its index.
 */
export function indexReport(report: Report): ReportIndex {
  let index = cache.get(report);
  if (index === undefined) {
    index = buildIndex(report);
    cache.set(report, index);
  }
  return index;
}

function buildIndex(report: Report): ReportIndex {
  const tables = new Map<string, Map<string, Map<string, OpTable | null>>>();
  const index: ReportIndex = {
    report,
    table(op, dtype, residency) {
      let byDtype = tables.get(op);
      if (byDtype === undefined) tables.set(op, byDtype = new Map());
      let byResidency = byDtype.get(dtype);
      if (byResidency === undefined) byDtype.set(dtype, byResidency = new Map());
      let table = byResidency.get(residency);
      if (table === undefined) {
        table = buildTable(index, op, dtype, residency);
        byResidency.set(residency, table);
      }
      return table;
    },
  };
  return index;
}

function knownOp(name: string): OpSpec | null {
  try {
    return getOp(name);
  } catch {
    return null;
  }
}

function buildTable(
  index: ReportIndex,
  opName: string,
  dtype: Dtype,
  residency: Residency,
): OpTable | null {
  const op = knownOp(opName);
  if (op === null) return null;
  const report = index.report;
  const series: BackendSeries[] = [];
  const skipped: Partial<Record<Backend, string>> = {};
  for (const backend of BACKENDS) {
    const res: Residency = CPU_BACKENDS.includes(backend) ? "end-to-end" : residency;
    const built = buildSeries(report, op, dtype, res, backend, {
      floor: floorOf(index, op, dtype, res, backend),
      oneThread: oneThreadOf(op, report.machine.cores, backend, series),
    });
    if (typeof built === "string") skipped[backend] = built;
    else series.push(built);
  }
  if (series.length === 0) return null;
  return { op, dtype, residency, series, skipped: Object.freeze(skipped) };
}

/**
 * A WebGPU end-to-end run does all a device-resident one does, then waits for it: its time is at
 * least the device-resident time plus one round trip. A default sweep stops an end-to-end series
 * that loses to the CPU once a point confirms its transfers (a matmul's at 25³), so its fit is
 * the round trip alone, and beyond it a 900³ matmul came out 67 ms, a quarter of its kernel's.
 */
function floorOf(
  index: ReportIndex,
  op: OpSpec,
  dtype: Dtype,
  residency: Residency,
  backend: Backend,
): BackendSeries["floor"] {
  const syncMs = index.report.system.dispatchRoundTripMs.value;
  if (backend !== "webgpu" || residency !== "end-to-end" || syncMs === null) return null;
  const kernel = index.table(op.name, dtype, "device-resident")?.series.find((s) =>
    s.backend === "webgpu"
  );
  return kernel === undefined ? null : { kernel, syncMs };
}

/**
 * wasm-mt's {@linkcode BackendSeries.oneThread}: the wasm series built before it, for a matrix op
 * on more than one thread; null for another backend, or without a wasm series.
 */
function oneThreadOf(
  op: OpSpec,
  threads: number,
  backend: Backend,
  built: readonly BackendSeries[],
): BackendSeries["oneThread"] {
  const series = built.find((s) => s.backend === "wasm");
  if (backend !== "wasm-mt" || series === undefined || op.dims.length === 1) return null;
  return { series, at: byVariantId((shape, v) => runsOnOneThread(op, shape, v, threads), false) };
}

function buildSeries(
  report: Report,
  op: OpSpec,
  dtype: Dtype,
  residency: Residency,
  backend: Backend,
  { floor, oneThread }: Pick<BackendSeries, "floor" | "oneThread">,
): BackendSeries | string {
  const same = (r: { op: string; dtype: Dtype; residency: Residency; backend: Backend }) =>
    r.op === op.name && r.dtype === dtype && r.residency === residency && r.backend === backend;
  const byVariant = new Map<string, MeasuredPoint[]>();
  const bestByShape = new Map<string, MeasuredPoint>();
  let why: string | null = null;
  for (const m of report.measurements) {
    if (!same(m)) continue;
    if (m.state !== "ok") {
      why ??= m.state === "unsupported" ? m.reason : `failed verification: ${m.error}`;
      continue;
    }
    const point: MeasuredPoint = {
      size: m.size,
      shape: m.shape,
      dims: op.dims.map((d) => m.shape[d] ?? NaN),
      flops: m.flops,
      bytes: m.bytes,
      variant: m.variant,
      ms: m.wall.median,
      ciHalfWidth: m.wall.ciHalfWidth,
      onAxis: m.offAxis !== true,
    };
    const list = byVariant.get(m.variant) ?? [];
    list.push(point);
    byVariant.set(m.variant, list);
    const key = op.dims.map((d) => m.shape[d]).join("x");
    const prev = bestByShape.get(key);
    if (prev === undefined || point.ms < prev.ms) bestByShape.set(key, point);
  }
  const fits = report.fits.filter(same);
  const tuning = report.tuning.filter(same).sort((a, b) => a.sizeMin - b.sizeMin);
  if (byVariant.size === 0 && fits.length === 0 && tuning.length === 0) {
    return why === null
      ? `no ${backend} ${residency} measurements of ${op.name} ${dtype} in the report`
      : `${backend} unavailable: ${why}`;
  }
  const names = new Set([...byVariant.keys(), ...fits.map((f) => f.variant)]);
  // WebGPU kernels load rows in words and 16-byte vectors, and their offsets held in every
  // report (q8 and q4 device-resident ×1.8–4.1 across words). The CPU backends' came out
  // ×0.7–1.3 either way: their cache regimes, which the sweep's sizes confound with alignment.
  const alignmentOf = op.rowBytes === undefined || backend !== "webgpu"
    ? null
    : (shape: Shape) => alignmentClass(op.rowBytes!(shape, dtype), op.rowVectorBytes?.(dtype));
  const strideOf = alignmentOf === null
    ? null
    : (shape: Shape) => rowStridePower(op.rowBytes!(shape, dtype));
  // Every op's: the shape model learns what its measured shapes (m = 1, 8, 64) leave over the
  // fit with their uneven shares in it (`shapePoints`), so it does not count the same rows twice,
  // and a switch between them (one block of rows on one thread) is not drawn across. A CPU
  // adapter's dispatch of few workgroups waits on its largest one alike.
  const imbalanceOf = backend === "wasm-mt"
    ? imbalanceFor(op, report.machine.cores, packingOf(report, op, dtype))
    : backend === "webgpu"
    ? workgroupImbalanceFor(op, report)
    : null;
  const utilisationOf = backend === "webgpu" ? utilisationFor(op) : null;
  const blockUtilisationOf = backend === "webgpu" ? blockUtilisationFor(op) : null;
  const sweepRows = backend === "webgpu" ? rowsHeldBySweep(op) : null;
  const pathOf = backend === "wasm" || backend === "wasm-mt" ? codePathFor(op) : null;
  const breaksOf = (f: CostFit) =>
    regimeBreaks(op, dtype, backend, residency, f.variant, report.machine.cores);
  // One penalty for the series' idle blocks: a variant without partly idle shapes of its own
  // (the sweep's other winners) shares the tuned one's, as the shape models share their shapes.
  const tiled = new Map(fits.map((f) => [
    f.variant,
    tilesOf(f, byVariant.get(f.variant) ?? [], utilisationOf, breaksOf(f)),
  ]));
  const blocks = blockUtilisationOf === null ? NO_TILE_COST : fitTilePenalty(
    fits.flatMap((f) =>
      blockPoints(f, tiled.get(f.variant)!, byVariant.get(f.variant) ?? [], {
        utilisationOf,
        blockUtilisationOf,
      })
    ),
  );
  const axis = new Map<string, AxisModel>();
  for (const f of fits) {
    axis.set(
      f.variant,
      axisModelOf(
        f,
        tiled.get(f.variant)!,
        byVariant.get(f.variant) ?? [],
        alignmentOf,
        imbalanceOf,
        utilisationOf,
        { of: blockUtilisationOf, model: blocks },
        breaksOf(f),
        sweepRows,
      ),
    );
  }
  const offAxis = [...byVariant.values()].flat().filter((p) => !p.onAxis);
  const amortized = new Map<string, Amortized>();
  for (const [variant, a] of axis) {
    const prior = amortizationFor(op, dtype, pathOf, a, variant, byVariant.get(variant) ?? []);
    if (prior !== null) amortized.set(variant, prior);
  }
  const variants = new Map<string, VariantSeries>();
  for (const variant of names) {
    const fit = fits.find((f) => f.variant === variant) ?? null;
    const points = (byVariant.get(variant) ?? []).sort(bySize);
    const own = axis.get(variant);
    variants.set(variant, {
      variant,
      fit,
      model: own?.model ?? null,
      points,
      axisPoints: points.filter((p) => p.onAxis),
      offAxisPoints: points.filter((p) => !p.onAxis).length,
      residuals: own?.residuals ?? null,
      alignment: own?.alignment ?? null,
      tiles: own?.tiles ?? null,
      blocks: own?.blocks ?? null,
      rowCost: own?.rowCost ?? NO_ROW_COST,
      amortized: amortized.get(variant) ?? null,
      shapeModel: own === undefined ? null : fitShapeModel(
        shapePoints(
          op,
          [...points, ...offAxis.filter((p) => p.variant !== variant)],
          axis,
          { pathOf, amortized },
        ),
        DEFAULT_LEVEL,
        "edge",
      ),
      ...workRanges(op, dtype, fit),
    });
  }
  return {
    backend,
    slot: BACKENDS.indexOf(backend),
    residency,
    variants,
    fitted: [...variants.values()].filter((v) => v.fit !== null),
    offAxisRanked: [...variants.values()].filter((v) => v.offAxisPoints >= MIN_RANKED_OFF_AXIS),
    searchedUpTo: Math.max(
      0,
      ...[...variants.values()].filter((v) => v.fit === null)
        .flatMap((v) => v.axisPoints.map((p) => p.size)),
    ),
    best: [...bestByShape.values()].sort(bySize),
    tuning,
    axisShape: op.axis.shape,
    sweptAxis: [...byVariant.values()].every((points) =>
      points.every((p) => !p.onAxis || isOnAxis(op, p.shape))
    ),
    alignmentOf,
    strideOf,
    tooLarge: backend === "webgpu" ? bindingLimit(op, dtype, report.adapter) : null,
    pathOf,
    imbalanceOf,
    utilisationOf,
    blockUtilisationOf,
    sweepRows,
    floor,
    oneThread,
    runs: runsFor(op, dtype, backend),
  };
}

/**
 * Why a shape cannot run on the report's WebGPU adapter whatever the kernel: a buffer it binds
 * is over the adapter's largest storage binding (`maxStorageBufferBindingSize`, or `maxBufferSize`
 * when smaller; the runner rounds each to whole 4-byte words). Lavapipe binds at most 128 MiB:
 * f32 gemv 8192 × 8192 (256 MiB of weights) is recorded unsupported there, and no prediction
 * may send it to the device. Null when the report records no such limit or the op cannot say.
 */
function bindingLimit(
  op: OpSpec,
  dtype: Dtype,
  adapter: Report["adapter"],
): BackendSeries["tooLarge"] {
  const limits = adapter?.limits ?? {};
  const largest = Math.min(
    limits["maxStorageBufferBindingSize"] ?? Infinity,
    limits["maxBufferSize"] ?? Infinity,
  );
  const largestOf = op.largestBufferBytes;
  if (!Number.isFinite(largest) || largestOf === undefined) return null;
  return (shape) => {
    const bytes = largestOf(shape, dtype);
    if (Math.ceil(bytes / 4) * 4 <= largest) return null;
    return `webgpu cannot run ${op.name} ${dtype} at ${formatShape(op, shape)}: one of its ` +
      `buffers takes ${mib(bytes)}, over the adapter's largest storage binding of ` +
      `${mib(largest)} (the report's adapter.limits); split the operand or use another backend`;
  };
}

/** Bytes as MiB for a message. */
function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(bytes < 2 ** 20 ? 3 : 0)} MiB`;
}

/**
 * Off-axis shapes a variant must have run to be ranked there: more than the two shapes a
 * calibration screens every variant at (`calibrate/off_axis_steps.ts`). A variant timed at those
 * two alone, with the screen's light stopping rule, says too little of the shapes between: one
 * wasm variant screened at m = 1 and m = 8 (as fast and ×0.72) was chosen for 4 × 2048 × 2048
 * and ran it ×2.2 slower than the winner.
 */
const MIN_RANKED_OFF_AXIS = 3;

/**
 * `f` of a shape and a variant's parameters, called by variant id: each id is parsed once; where
 * `f` throws (a variant this version of the kernels does not know, from another version's
 * report), `unknown`.
 */
function byVariantId<T>(
  f: (shape: Shape, variant: Variant) => T,
  unknown: T,
): (shape: Shape, variant: string) => T {
  const params = new Map<string, Variant>();
  return (shape, variant) => {
    let p = params.get(variant);
    if (p === undefined) params.set(variant, p = variantFromId(variant));
    try {
      return f(shape, p);
    } catch {
      return unknown;
    }
  };
}

/**
 * {@linkcode BackendSeries.runs} of `op` in `dtype` on `backend`: what the kernel's own
 * `unsupported` says; true for a variant it does not know (nothing says it cannot run).
 */
function runsFor(op: OpSpec, dtype: Dtype, backend: Backend): BackendSeries["runs"] {
  const impl = implOf(op, backend);
  return byVariantId((shape, v) => (impl?.unsupported?.(shape, dtype, v) ?? null) === null, true);
}

/**
 * {@linkcode imbalanceLn} of `op` on `threads` threads, by shape and variant id, with each
 * call's packing `perCall` units of the dimension its parts cut.
 */
function imbalanceFor(
  op: OpSpec,
  threads: number,
  perCall: number,
): (shape: Shape, variant: string) => number {
  return byVariantId((shape, v) => imbalanceLn(op, shape, v, threads, perCall), 0);
}

/**
 * On a CPU adapter ({@linkcode adapterThreads}), {@linkcode dispatchSpanLn} of `op`'s WebGPU
 * workgroups by shape and variant id, at the host's measured {@linkcode threadContention}; null
 * for a GPU, whose many cores the sweep's sizes fill alike, or an op whose workgroups share work
 * evenly.
 */
function workgroupImbalanceFor(op: OpSpec, report: Report): BackendSeries["imbalanceOf"] {
  const work = workgroupWorkOf(op.name);
  const threads = adapterThreads(report);
  if (work === null || threads === null) return null;
  const contention = threadContention(report);
  return byVariantId((shape, v) => dispatchSpanLn(work(shape, v), threads, contention), 0);
}

/**
 * For an op whose WebAssembly kernel packs per call: what one call's packing costs in rows
 * ({@linkcode perCallWork}), from the report's one-thread runs of its packing path beyond each
 * variant's fitted launch; 0 for another op or without such runs.
 */
function packingOf(report: Report, op: OpSpec, dtype: Dtype): number {
  const impl = op.impls.wasm;
  if (impl?.packsPerCall !== true || impl.partLength === undefined) return 0;
  const launches = new Map(
    report.fits.filter((f) =>
      f.op === op.name && f.dtype === dtype && f.backend === "wasm" && f.residency === "end-to-end"
    ).map((f) => [f.variant, f.t0Us / 1000]),
  );
  const runs: PackedRun[] = [];
  for (const m of report.measurements) {
    const t0 = launches.get(m.variant);
    if (
      m.op !== op.name || m.dtype !== dtype || m.backend !== "wasm" || m.state !== "ok" ||
      t0 === undefined
    ) continue;
    try {
      const variant = variantFromId(m.variant);
      if ((impl.codePath?.(m.shape, variant) ?? 0) > 0) continue;
      runs.push({
        ms: m.wall.median - t0,
        total: impl.partLength(m.shape, variant).total,
        flops: op.flops(m.shape),
      });
    } catch {
      // A variant id the kernel cannot read: not a run of its packing path.
    }
  }
  return perCallWork(runs);
}

/**
 * A fitted variant's {@linkcode Amortized} prior, from its own off-axis shapes
 * (`fitAmortization`): for an op whose WebAssembly kernel packs per call, on wasm and wasm-mt;
 * null for another, or where no code path's shapes ask for one.
 */
function amortizationFor(
  op: OpSpec,
  dtype: Dtype,
  pathOf: BackendSeries["pathOf"],
  a: AxisModel,
  variant: string,
  points: readonly MeasuredPoint[],
): Amortized | null {
  if (pathOf === null || op.impls.wasm?.packsPerCall !== true) return null;
  const rowsDim = op.dims[0]!;
  const sizeOf = axisSizeOfFlops(op);
  // The square of the shape's flops, and ln of the fit's time there against at the shape's bytes.
  const square = (flops: number, bytes: number) => {
    const rows = sizeOf(flops);
    const squareMs = compiledMs(a.model, flops, op.bytes(op.axis.shape(rows), dtype));
    return { rows, ln: Math.log(squareMs / compiledMs(a.model, flops, bytes)) };
  };
  const perCall = fitAmortization(
    points.filter((p) => !p.onAxis).map((p) => {
      const sq = square(p.flops, p.bytes);
      const withoutCurve = Math.log(p.ms / (a.aligned(p) * correctionAt(a.residuals, p.bytes)));
      return {
        path: pathOf(p.shape, variant),
        rows: p.shape[rowsDim] ?? 1,
        squareRows: sq.rows,
        residual: withoutCurve - sq.ln,
        withoutCurve,
      };
    }),
  );
  if (perCall.size === 0) return null;
  return (shape, flops, bytes) => {
    const c = perCall.get(pathOf(shape, variant));
    if (c === undefined) return 0;
    const sq = square(flops, bytes);
    return sq.ln + amortizationLn(shape[rowsDim] ?? 1, sq.rows, c);
  };
}

/**
 * The axis size (not rounded) whose shape does a given number of flops, for an op whose axis
 * flops grow as a power of the size (a square matmul's 2n³): the power read once, between two
 * sizes, then inverted at each call without building a shape.
 */
function axisSizeOfFlops(op: OpSpec): (flops: number) => number {
  const [lo, hi] = [64, 128];
  const atLo = op.flops(op.axis.shape(lo));
  const power = Math.log(op.flops(op.axis.shape(hi)) / atLo) / Math.log(hi / lo);
  return (flops) => lo * (flops / atLo) ** (1 / power);
}

/** The wasm impl's `codePath` of `op`, by shape and variant id; null when it has one path. */
function codePathFor(op: OpSpec): BackendSeries["pathOf"] {
  const codePath = op.impls.wasm?.codePath;
  return codePath === undefined ? null : byVariantId(codePath, 0);
}

/** The WebGPU impl's `utilisation` of `op`, by shape and variant id; null when it has none. */
function utilisationFor(op: OpSpec): BackendSeries["utilisationOf"] {
  const utilisation = op.impls.webgpu?.utilisation;
  return utilisation === undefined ? null : byVariantId(utilisation, 1);
}

/** The WebGPU impl's `blockUtilisation` of `op`, by shape and variant id; null without one. */
function blockUtilisationFor(op: OpSpec): BackendSeries["blockUtilisationOf"] {
  const blockUtilisation = op.impls.webgpu?.blockUtilisation;
  return blockUtilisation === undefined ? null : byVariantId(blockUtilisation, 1);
}

/**
 * Run sizes, bytes, where a series changes regime by how it was measured: CPU and device-resident
 * runs from {@linkcode STREAMED_FROM_BYTES} up stream their operands from memory, smaller ones read
 * them from the caches (`calibrate/runners/_cpu.ts`, `calibrate/runners/webgpu.ts`), so a
 * correction is never interpolated across it. (End to end, every run uploads its operands afresh.)
 */
const REGIME_BREAKS: readonly number[] = [STREAMED_FROM_BYTES];

/**
 * Where a fitted variant's series changes regime: {@linkcode REGIME_BREAKS} (none end to end on
 * WebGPU), and on `wasm-mt` a one-dimensional op's first size shared between threads
 * (`firstSharedSize` of `_imbalance.ts`): below it a run is one thread's.
 */
function regimeBreaks(
  op: OpSpec,
  dtype: Dtype,
  backend: Backend,
  residency: Residency,
  variant: string,
  threads: number,
): readonly number[] {
  if (backend === "webgpu" && residency === "end-to-end") return [];
  if (backend !== "wasm-mt") return REGIME_BREAKS;
  let shared: number | null = null;
  try {
    shared = firstSharedSize(op, variantFromId(variant), threads);
  } catch {
    // A variant id the kernel cannot read: no switch known.
  }
  if (shared === null) return REGIME_BREAKS;
  return [...REGIME_BREAKS, op.bytes(op.axis.shape(shared), dtype)].sort((a, b) => a - b);
}

/** A fit's tile model: its correction through sizes of whole tiles, and the penalty beside it. */
function tilesOf(
  f: CostFit,
  points: readonly MeasuredPoint[],
  utilisationOf: BackendSeries["utilisationOf"],
  breaks: readonly number[],
): TiledFit {
  const model = compileFit(f);
  const utilisation = (p: MeasuredPoint) => utilisationOf?.(p.shape, f.variant) ?? 1;
  // Partly empty tiles are priced beside the fit as its sizes of whole tiles correct it there.
  const onAxis = points.filter((p) => p.onAxis);
  const whole = residualCurve(
    onAxis.filter((p) => utilisation(p) >= FULL_TILES),
    (p) => compiledMs(model, p.flops, p.bytes),
    breaks,
  );
  const tiles = fitTilePenalty(onAxis.map((p) => ({
    ms: p.ms,
    fitMs: compiledMs(model, p.flops, p.bytes) * correctionAt(whole, p.bytes),
    t0: model.t0,
    utilisation: utilisation(p),
  })));
  return { model, whole, tiles };
}

/** A fit's coefficients and its tile model ({@linkcode tilesOf}). */
interface TiledFit {
  readonly model: CompiledFit;
  readonly whole: ResidualCurve;
  readonly tiles: TileModel;
}

/**
 * A fitted variant's points as the penalty of idle invocation blocks reads them: each with the
 * fit's time there, its tiles priced and corrected through whole tiles, and its blocks' share
 * (a few rows of a decode; the sweep's squares under one tile are mostly launch and say nothing).
 */
function blockPoints(
  f: CostFit,
  { model, whole, tiles }: TiledFit,
  points: readonly MeasuredPoint[],
  of: {
    utilisationOf: BackendSeries["utilisationOf"];
    blockUtilisationOf: NonNullable<BackendSeries["blockUtilisationOf"]>;
  },
): TilePoint[] {
  const { utilisationOf, blockUtilisationOf } = of;
  return points.map((p) => ({
    ms: p.ms,
    fitMs: alignedMs(
      compiledMs(model, p.flops, p.bytes),
      model.t0,
      tileLn(tiles, utilisationOf?.(p.shape, f.variant) ?? 1),
    ) * correctionAt(whole, p.bytes),
    t0: model.t0,
    utilisation: blockUtilisationOf(p.shape, f.variant),
  }));
}

/**
 * A fitted variant's axis model: its alignment offsets (when its op streams rows on a backend
 * that has them), then its residuals along the axis with each point's offset, and on wasm-mt
 * its threads' uneven share, taken out; its tiles' and its series' idle blocks' cost, priced.
 */
function axisModelOf(
  f: CostFit,
  { model, tiles }: TiledFit,
  points: readonly MeasuredPoint[],
  alignmentOf: BackendSeries["alignmentOf"],
  imbalanceOf: BackendSeries["imbalanceOf"],
  utilisationOf: BackendSeries["utilisationOf"],
  idleBlocks: { of: BackendSeries["blockUtilisationOf"]; model: TileModel },
  breaks: readonly number[],
  sweepRows: number | null,
): AxisModel {
  const utilisation = (p: MeasuredPoint) => utilisationOf?.(p.shape, f.variant) ?? 1;
  const blocks = idleBlocks.model;
  const blockUtilisation = (p: MeasuredPoint) => idleBlocks.of?.(p.shape, f.variant) ?? 1;
  const alignment = alignmentOf === null ? null : fitAlignment(points.map((p) => {
    const fitMs = compiledMs(model, p.flops, p.bytes);
    return {
      alignment: alignmentOf(p.shape),
      residual: Math.log((p.ms - model.t0) / (fitMs - model.t0)),
      variableShare: 1 - model.t0 / fitMs,
      dims: p.dims,
    };
  }));
  // The fit's time at a point with the point's alignment offset and uneven share in it, and
  // `extra` more ln beyond the launch.
  const alignedBy = (p: MeasuredPoint, extra: number) => {
    const fitMs = compiledMs(model, p.flops, p.bytes);
    const ln = (alignment === null ? 0 : offsetAt(alignment, alignmentOf!(p.shape)).ln) +
      (imbalanceOf?.(p.shape, f.variant) ?? 0) + tileLn(tiles, utilisation(p)) +
      tileLn(blocks, blockUtilisation(p)) + extra;
    return ln === 0 ? fitMs : alignedMs(fitMs, model.t0, ln);
  };
  // On the axis every row count is the sweep's, so the rows' cost is nothing there.
  const residuals = residualCurve(
    points.filter((p) => p.onAxis),
    (p) => alignedBy(p, 0),
    breaks,
  );
  // The fit's time at a point with its rows at `cost`.
  const withCost = (p: MeasuredPoint, cost: RowCost) =>
    withRows(sweepRows, cost, p.shape, {
      ms: alignedBy(p, 0),
      t0: model.t0,
      elementMs: elementMsOf(model, p.shape, p.flops, p.bytes),
    });
  const rowCost = sweepRows === null ? NO_ROW_COST : fitRowCost(
    points.filter((p) => !p.onAxis).map((p) => ({
      elements: elementsOf(p.shape),
      rows: p.shape.rows ?? 1,
      lnMs: Math.log(p.ms),
      modelMs: (cost: RowCost) => withCost(p, cost) * correctionAt(residuals, p.bytes),
    })),
    sweepRows,
  );
  const aligned = (p: MeasuredPoint) => withCost(p, rowCost);
  return { model, residuals, alignment, tiles, blocks, rowCost, aligned };
}

/**
 * The rows held fixed by `op`'s sweep (softmax's 32) when its shapes have rows and its WebGPU
 * kernel may pay per row; null for an op whose sweep moves its rows (gemv's squares) or has none.
 */
function rowsHeldBySweep(op: OpSpec): number | null {
  if (!op.dims.includes("rows")) return null;
  const first = op.axis.shape(op.axis.min).rows;
  return first !== undefined && first === op.axis.shape(op.axis.max).rows ? first : null;
}

/** The elements of a shape: the product of its dimensions. */
function elementsOf(shape: Shape): number {
  return Object.values(shape).reduce((product, d) => product * d, 1);
}

/** {@linkcode rowsMs} at a shape; the time in the sweep's rows when the sweep holds none. */
function withRows(
  sweepRows: number | null,
  cost: RowCost,
  shape: Shape,
  at: SweepTime,
): number {
  return sweepRows === null
    ? at.ms
    : rowsMs(elementsOf(shape), shape.rows ?? 1, sweepRows, cost, at);
}

/**
 * The launch alone in `ref`'s fixed cost ({@linkcode launchMs}): a variant without a fit shares
 * it, and its own rows' overhead, whatever it is, is in its time beyond it.
 */
function deviceLaunch(
  sweepRows: number,
  ref: VariantSeries,
  shape: Shape,
  flops: number,
  bytes: number,
): number {
  const model = ref.model!;
  return launchMs(sweepRows, ref.rowCost.overhead, {
    ms: compiledMs(model, flops, bytes),
    t0: model.t0,
    elementMs: elementMsOf(model, shape, flops, bytes),
  });
}

/** A fit's time per element beyond its fixed cost at a shape, ms. */
function elementMsOf(model: CompiledFit, shape: Shape, flops: number, bytes: number): number {
  return (compiledMs(model, flops, bytes) - model.t0) / elementsOf(shape);
}

/** A variant's on-axis prediction: its fit, corrected by its residuals along the axis. */
interface AxisModel {
  readonly model: CompiledFit;
  readonly residuals: ResidualCurve;
  readonly alignment: AlignmentModel | null;
  /** Its {@linkcode fitTilePenalty}. */
  readonly tiles: TileModel;
  /** Its series' {@linkcode fitTilePenalty} of partly idle invocation blocks. */
  readonly blocks: TileModel;
  /** Its rows' cost, {@linkcode VariantSeries.rowCost}. */
  readonly rowCost: RowCost;
  /** The fit's time at a point, with its row-alignment class's offset when there is a model. */
  readonly aligned: (p: MeasuredPoint) => number;
}

/**
 * Each point's ln residual against its own variant's on-axis prediction (zero, or nearly, on the
 * axis itself): what is left is the shape's effect. That effect on a kernel's efficiency (m = 1 on
 * a tiled matmul) is shared by the backend's variants, so another variant's off-axis shapes teach
 * this one's model too.
 */
function shapePoints(
  op: OpSpec,
  points: readonly MeasuredPoint[],
  axis: ReadonlyMap<string, AxisModel>,
  { pathOf, amortized }: {
    pathOf: BackendSeries["pathOf"];
    amortized: ReadonlyMap<string, Amortized>;
  },
): ShapePoint[] {
  const out: ShapePoint[] = [];
  for (const p of points) {
    const a = axis.get(p.variant);
    if (a === undefined) continue;
    const predicted = a.aligned(p) * correctionAt(a.residuals, p.bytes);
    const prior = p.onAxis ? 0 : amortized.get(p.variant)?.(p.shape, p.flops, p.bytes) ?? 0;
    const relSd = p.ciHalfWidth / p.ms / 1.96;
    out.push({
      features: withPath(shapeFeatures(op.dims, p.shape), pathOf, p.shape, p.variant),
      residual: Math.log(p.ms / predicted) - prior,
      noiseVar: relSd * relSd,
      anchor: p.onAxis,
    });
  }
  return out;
}

/**
 * The shape's dimensions in the op's order, as the shape model reads them.
 *
 * @param dims The op's dims.
 * @param shape The shape.
 */
export function shapeFeatures(dims: readonly string[], shape: Shape): number[] {
  return dims.map((d) => shape[d] ?? 1);
}

/**
 * How far apart, in ln units, the shape models put two code paths of a kernel (`pathOf`): at
 * the shortest length scale a model chooses (0.35) they are eleven deviations apart and share
 * nothing; at its longest (11.2) they count as neighbours, should the measured shapes say so.
 */
const PATH_GAP = 4;

/** `features` with, for a kernel with code paths, the path `variant` runs `shape` on. */
function withPath(
  features: number[],
  pathOf: BackendSeries["pathOf"],
  shape: Shape,
  variant: string,
): number[] {
  if (pathOf !== null) features.push(Math.exp(PATH_GAP * pathOf(shape, variant)));
  return features;
}

/**
 * The shape as a variant's shape model reads it: its dimensions and, for a kernel with code
 * paths, the one the variant runs it on (5 × 1024² unpacked, 6 × 1024² packed: ×2 apart in
 * time for a fifth more work).
 *
 * @param s The backend's series.
 * @param dims The op's dims.
 * @param shape The shape.
 * @param variant The variant's id.
 * @returns The features.
 * @example
 * ```ts
 * import { indexReport, residualFeatures } from "./_index.ts";
 * import { loadReport } from "../reports/load.ts";
 * const report = await loadReport("reports/llvmpipe-vulkan-x86_64-1f7ec986.json");
 * const s = indexReport(report).table("matmul", "f32", "end-to-end")!.series
 *   .find((x) => x.backend === "wasm")!;
 * const v = "fma=true,kc=256,mr=6,nc=512,nr=8";
 * console.log(residualFeatures(s, ["m", "k", "n"], { m: 5, k: 64, n: 64 }, v).length); // 4
 * ```
 */
export function residualFeatures(
  s: BackendSeries,
  dims: readonly string[],
  shape: Shape,
  variant: string,
): number[] {
  return withPath(shapeFeatures(dims, shape), s.pathOf, shape, variant);
}

/**
 * The shape as a ratio between two variants reads it: its dimensions, and where the backend
 * streams rows the power of two they are apart in bytes (`rowStridePower`), since two variants
 * that read rows side by side can swap places between strides a few columns apart. Not the code
 * paths: a ratio across paths has one or two measured shapes to learn from (wasm matmul's 4-row
 * tiles pack at m = 4 and 5 where the 6-row ones do not), and with the paths in it the ratio
 * models, trusting them, priced 5 × 1000 × 300 on wasm-mt 3.5× too slow.
 */
function ratioFeatures(s: BackendSeries, dims: readonly string[], shape: Shape): number[] {
  const features = shapeFeatures(dims, shape);
  if (s.strideOf !== null) features.push(s.strideOf(shape));
  return features;
}

function bySize(a: MeasuredPoint, b: MeasuredPoint): number {
  return a.size - b.size;
}

function workRanges(
  op: OpSpec,
  dtype: Dtype,
  fit: CostFit | null,
): { flopsRange: [number, number]; bytesRange: [number, number] } {
  if (fit === null) return { flopsRange: [0, -1], bytesRange: [0, -1] };
  const lo = op.axis.shape(fit.sizeRange[0]);
  const hi = op.axis.shape(fit.sizeRange[1]);
  const down = 1 - MEASURED_TOLERANCE;
  const up = 1 + MEASURED_TOLERANCE;
  return {
    flopsRange: [op.flops(lo) * down, op.flops(hi) * up],
    bytesRange: [op.bytes(lo, dtype) * down, op.bytes(hi, dtype) * up],
  };
}

/**
 * A fit reduced to its coefficients: fixed ms, ms per flop, ms per byte (0 for an absent term).
 * `select()` must stay under a microsecond, and `predictMs()` of `core/costmodel.ts` rebuilds log
 * parameters on every call; {@linkcode compiledMs} hands these to `costMs()` of
 * `core/costmodel.ts`, the one evaluator `predictMs()` calls too.
 */
export interface CompiledFit {
  readonly t0: number;
  readonly cf: number;
  readonly cb: number;
}

/**
 * The coefficients of a fit.
 *
 * @param fit A report fit.
 */
export function compileFit(fit: CostFit): CompiledFit {
  return {
    t0: fit.t0Us / 1000,
    cf: fit.gflops === null ? 0 : 1e-6 / fit.gflops,
    cb: fit.gbps === null ? 0 : 1e-6 / fit.gbps,
  };
}

/**
 * The cost model's time, ms, from compiled coefficients.
 *
 * @param c The coefficients.
 * @param flops Work.
 * @param bytes Work.
 */
export function compiledMs(c: CompiledFit, flops: number, bytes: number): number {
  return costMs(c.t0, c.cf, c.cb, flops, bytes);
}

/**
 * The measured point at (within ±5 % of every dimension of) a shape, the nearest when several
 * are (a 260³ matmul runs partly empty tiles that 256³ and 255³ do not), or null.
 *
 * @param points Points by size.
 * @param size The shape's size on the op's axis.
 * @param shape The shape.
 * @param dims The op's dims.
 */
export function measuredAt(
  points: readonly MeasuredPoint[],
  size: number,
  shape: Shape,
  dims: readonly string[],
): MeasuredPoint | null {
  let lo = 0;
  let hi = points.length;
  const min = size * (1 - MEASURED_TOLERANCE);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (points[mid]!.size < min) lo = mid + 1;
    else hi = mid;
  }
  const max = size * (1 + MEASURED_TOLERANCE);
  let nearest: MeasuredPoint | null = null;
  let nearestDistance = Infinity;
  for (let i = lo; i < points.length; i++) {
    const p = points[i]!;
    if (p.size > max) break;
    if (!sameShape(p, shape, dims)) continue;
    const distance = dims.reduce(
      (d, name, j) => d + Math.abs(Math.log(p.dims[j]! / shape[name]!)),
      0,
    );
    if (distance < nearestDistance) [nearest, nearestDistance] = [p, distance];
  }
  return nearest;
}

/**
 * Whether two shapes' rows load alike where the backend streams rows: the same alignment class
 * and the same power of two apart (`rowStridePower`); always true elsewhere.
 */
function sameRows(s: BackendSeries, a: Shape, b: Shape): boolean {
  if (s.alignmentOf === null || s.strideOf === null) return true;
  return s.alignmentOf(a) === s.alignmentOf(b) && s.strideOf(a) === s.strideOf(b);
}

function sameShape(point: MeasuredPoint, shape: Shape, dims: readonly string[]): boolean {
  for (let i = 0; i < dims.length; i++) {
    const x = point.dims[i]!;
    const y = shape[dims[i]!];
    if (y === undefined || !(Math.abs(x - y) <= MEASURED_TOLERANCE * Math.max(x, y))) return false;
  }
  return true;
}

/**
 * Whether some work lies inside a fit's (slightly widened) range.
 *
 * @param v The variant.
 * @param flops Work.
 * @param bytes Work.
 */
export function withinFit(v: VariantSeries, flops: number, bytes: number): boolean {
  return flops >= v.flopsRange[0] && flops <= v.flopsRange[1] &&
    bytes >= v.bytesRange[0] && bytes <= v.bytesRange[1];
}

/**
 * The tuning row whose size range holds `size`, else the nearest one in log space, else null.
 *
 * @param rows Rows by `sizeMin`.
 * @param size Size on the op axis.
 */
export function tuningAt(rows: readonly Tuning[], size: number): Tuning | null {
  let best: Tuning | null = null;
  let bestDistance = Infinity;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (size >= row.sizeMin && size <= row.sizeMax) return row;
    const edge = size < row.sizeMin ? row.sizeMin : row.sizeMax;
    const distance = Math.abs(Math.log(Math.max(size, 1) / Math.max(edge, 1)));
    if (distance < bestDistance) {
      best = row;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Predicts one backend at a shape: a measurement within ±5 % when there is one, else the tuned
 * (or fastest fitted) variant's fit, else log-log interpolation between measured sizes.
 *
 * @param s The backend's series.
 * @param dims The op's dims.
 * @param size Size on the op axis.
 * @param shape The shape, or null when the work is not a catalog shape (no measurement can match).
 * @param flops Work of the shape.
 * @param bytes Work of the shape.
 * @param variant A variant to predict, or null for the best known.
 * @returns The prediction, or null when the series cannot predict it.
 */
export function predictSeries(
  s: BackendSeries,
  dims: readonly string[],
  size: number,
  shape: Shape | null,
  flops: number,
  bytes: number,
  variant: string | null,
): Prediction | null {
  if (shape !== null && s.tooLarge !== null && s.tooLarge(shape) !== null) return null;
  const chosen = variant === null ? null : s.variants.get(variant);
  if (chosen === undefined) {
    // End to end, a variant only the device-resident sweep ran: this series' own time with the
    // kernel swapped.
    const own = s.floor?.kernel.variants.has(variant!)
      ? predictSeries(s, dims, size, shape, flops, bytes, null)
      : null;
    return own === null
      ? null
      : withKernelOf(s.floor!, own, variant!, { dims, size, shape, flops, bytes });
  }
  if (shape !== null) {
    const near = measuredAt(chosen === null ? s.best : chosen.points, size, shape, dims);
    // Without a variant asked, a measurement of one that cannot run this shape is not its time;
    // nor is one whose rows lie another way apart (3008 columns for 3072).
    const point = near !== null && (chosen !== null || s.runs(shape, near.variant)) &&
        sameRows(s, near.shape, shape)
      ? near
      : null;
    // A variant timed here alone is not the fastest here when the proportions rank another one
    // surely faster (lavapipe's 16 × 16 tiles, the only ones timed end to end at 1 × 1024²,
    // against 4 × 8 ones whose kernel runs m = 1 in two thirds of their time).
    const ranked = point === null || chosen !== null ? null : rankedElsewhere(s, point, {
      dims,
      size,
      shape,
      flops,
      bytes,
    });
    if (ranked !== null) return ranked;
    if (point !== null) {
      return {
        ms: point.ms,
        variant: point.variant,
        provenance: "measured",
        point,
        fit: null,
        bracket: NONE,
        residuals: null,
        shapeModel: null,
        correction: 0,
        alignment: null,
        viaVariant: null,
      };
    }
  }
  const at: Site = { dims, size, shape, flops, bytes };
  let p: Prediction | null = chosen === null
    ? rankedOffAxis(s, at)?.[0]?.p ?? viaDeviceRanking(s, at)
    : null;
  const v = p !== null ? null : chosen ?? tunedVariant(s, size) ?? fastestFitted(s, flops, bytes);
  if (v !== null && v.fit !== null) p = fitted(s, v, at);
  else if (v !== null) p = viaDeviceKernel(s, v, at) ?? scaledFromFitted(s, v, at);
  p ??= interpolate(v ?? largestSeries(s), size);
  if (p !== null && chosen === null && shape !== null && !s.runs(shape, p.variant)) {
    const runnable = fastestRunnable(s, dims, size, shape, flops, bytes);
    // End to end, where no variant of its own can run the shape, the device's one that can.
    const device = runnable === null && s.floor !== null
      ? predictSeries(s.floor.kernel, dims, size, shape, flops, bytes, null)
      : null;
    p = runnable ??
      (device !== null && device.variant !== p.variant
        ? withKernelOf(s.floor!, p, device.variant, at)
        : p);
  }
  if (p !== null && shape !== null && s.oneThread?.at(shape, p.variant) === true) {
    const one = s.oneThread.series;
    const alone = predictSeries(one, dims, size, shape, flops, bytes, p.variant);
    if (alone !== null) p = { ...alone, oneThread: true };
  }
  return p === null || s.floor === null ? p : atLeastKernelAndSync(s.floor, p, at);
}

/**
 * An end-to-end prediction of one variant turned into another's: the same transfers and sync,
 * the device-resident kernel time of `variant` in place of its own (a matmul at n = 611, which
 * the vector-load kernel the end-to-end sweep ran cannot run, runs the scalar-load one the
 * device-resident sweep measured). Null when the device cannot predict either.
 */
function withKernelOf(
  floor: NonNullable<BackendSeries["floor"]>,
  p: Prediction,
  variant: string,
  at: Site,
): Prediction | null {
  if (p.variant === variant) return p;
  const { dims, size, shape, flops, bytes } = at;
  const same = floor.kernel.variants.has(p.variant) ? p.variant : null;
  const theirs = predictSeries(floor.kernel, dims, size, shape, flops, bytes, variant);
  const mine = predictSeries(floor.kernel, dims, size, shape, flops, bytes, same);
  if (theirs === null || mine === null) return null;
  const ms = Math.max(p.ms - mine.ms, floor.syncMs) + theirs.ms;
  // The interval carries how far the swap moved the time, as for any variant without a fit, on
  // the kernel's part of it.
  return {
    ...p,
    ms,
    variant,
    viaVariant: { from: p.variant, ratio: ms / p.ms, sizes: [], share: theirs.ms / ms },
  };
}

/**
 * Off the axis, the variant the shape's proportions rank first (end to end, by the
 * device-resident ranking) where a measured point of another variant lies at the shape, when it
 * was not timed there itself and is predicted {@linkcode SWITCH_MARGIN} faster than that
 * measurement; null otherwise.
 */
function rankedElsewhere(s: BackendSeries, point: MeasuredPoint, at: Site): Prediction | null {
  const p = rankedOffAxis(s, at)?.[0]?.p ?? viaDeviceRanking(s, at);
  if (p === null || p.variant === point.variant || !s.runs(at.shape!, p.variant)) return null;
  // Timed here too, it ran slower than the point: the measurement outranks the model.
  const own = s.variants.get(p.variant)?.points ?? [];
  if (measuredAt(own, at.size, at.shape!, at.dims) !== null) return null;
  return p.ms < point.ms * (1 - SWITCH_MARGIN) ? p : null;
}

/**
 * End to end, off the axis, where no variant but the tuned one ran end to end there: the tuned
 * variant's time with the kernel the device-resident series ranks fastest at `at` in place of its
 * own ({@linkcode withKernelOf}). A calibration screens and runs the other variants off the axis
 * device-resident only: the transfers and the sync are the same whichever kernel runs. Null for
 * other backends, on the axis, or where the device keeps the tuned variant.
 */
function viaDeviceRanking(s: BackendSeries, at: Site): Prediction | null {
  if (s.floor === null) return null;
  const top = rankedOffAxis(s.floor.kernel, at)?.[0];
  const ref = tunedVariant(s, at.size) ?? fastestFitted(s, at.flops, at.bytes);
  if (top === undefined || ref === null || ref.fit === null) return null;
  if (top.v.variant === ref.variant) return null;
  return withKernelOf(s.floor, fitted(s, ref, at), top.v.variant, at);
}

/**
 * An end-to-end variant without a fit of its own whose kernel the device-resident sweep ran: a
 * fitted variant's end-to-end time with this one's kernel in place of that one's
 * ({@linkcode withKernelOf}). A ratio of the two end-to-end times, taken where the kernels ran
 * long (362³), priced the sync and transfers of a small matmul as the kernel: the scalar-load
 * kernel that odd widths run was predicted at 17.5 ms end to end for 23³, 77³ and 181³, which
 * took 12.2–13.4. Null for other backends or when either is missing.
 */
function viaDeviceKernel(s: BackendSeries, v: VariantSeries, at: Site): Prediction | null {
  if (s.floor === null || !s.floor.kernel.variants.has(v.variant)) return null;
  const ref = tunedVariant(s, at.size) ?? fastestFitted(s, at.flops, at.bytes);
  if (ref === null || ref === v || ref.fit === null) return null;
  return withKernelOf(s.floor, fitted(s, ref, at), v.variant, at);
}

/**
 * Half-width, in ln time, for carrying a variant's measured ratio to another shape, never under
 * ±25 % of the part of the time beyond the launch (end to end, of the kernel's part): where the
 * variant ran off the axis, the spread of its ratio model at this shape (near shapes it ran, what
 * it measured; far from them, how much its ratios varied); else as far as the ratio is from 1
 * (two variants that ran alike at one size tend to run alike elsewhere; a tiling twice as slow
 * at one size may be anything at another), and for a ratio measured only at other proportions
 * than the axis's a factor of two either way, and two more for every octave past the first that
 * lies between this shape and the nearest it ran at.
 *
 * @param via How the variant was scaled.
 * @param dims The op's dims.
 * @param shape The shape asked about.
 * @returns The half-width, ln.
 * @example
 * ```ts
 * import { variantRatioHalfWidth } from "./_index.ts";
 * const via = { from: "a", ratio: 2, sizes: [128] };
 * console.log(variantRatioHalfWidth(via, ["n"], { n: 256 }).toFixed(3)); // "0.693"
 * ```
 */
export function variantRatioHalfWidth(
  via: VariantRatio,
  dims: readonly string[],
  shape: Shape,
): number {
  // The floor is on the part of the time a variant moves; the launch, or end to end the
  // transfers and sync, are the same whichever variant runs.
  const floor = Math.log(1.25) * (via.share ?? 1);
  // A ratio measured at other proportions only (a 2 × 2-tile matmul timed at 1 × 1024² alone,
  // where small tiles keep up, then 251 ms at 611³ against 23 predicted) says as little of this
  // shape as a shape model that has none: a factor of two either way, and far from every shape
  // it ran at, a factor of two an octave (the plain loop timed at m = 1 alone ran m = 3 ×3.9
  // and m = 40 ×19 what its ratio there gave, 1.6 and 5.3 octaves away).
  const away = via.onAxis === false ? via.octavesAway ?? 0 : 0;
  const far = Math.log(2) * Math.max(0, away - 1) * (via.share ?? 1);
  const unknown = via.onAxis === false ? Math.log(2) * (via.share ?? 1) + far : 0;
  if (!via.shapeModel) return Math.max(Math.abs(Math.log(via.ratio)), floor, unknown);
  const spread = shapeCorrectionAt(via.shapeModel, via.features ?? shapeFeatures(dims, shape)).sd;
  return Math.max(via.shapeModel.multiplier * spread, floor, far);
}

/**
 * Octaves from `shape` to the nearest of `points`' shapes, each pair apart by its farthest
 * dimension; 0 without a shape.
 */
function octavesToNearest(
  points: readonly MeasuredPoint[],
  dims: readonly string[],
  shape: Shape | null,
): number {
  if (shape === null || points.length === 0) return 0;
  return Math.min(
    ...points.map((p) =>
      Math.max(...dims.map((d) => Math.abs(Math.log2((p.shape[d] ?? 1) / (shape[d] ?? 1)))))
    ),
  );
}

/**
 * The fastest predicted of the variants that can run `shape`, when the one a backend would pick
 * by size cannot (vector loads at an odd width), counting each at the slow end of what its ratio
 * allows: on lavapipe a 2 × 2-tile variant measured at 1 × 1024² alone, where small tiles keep up,
 * was ranked first for square matmuls at odd n and ran 611³ in 251 ms against 23 predicted (the
 * 16 × 8 tiles, measured at 128³, in 41); null when none of its variants can.
 */
function fastestRunnable(
  s: BackendSeries,
  dims: readonly string[],
  size: number,
  shape: Shape,
  flops: number,
  bytes: number,
): Prediction | null {
  let best: Prediction | null = null;
  let bestRank = [Infinity, Infinity];
  for (const [id, v] of s.variants) {
    if (!s.runs(shape, id)) continue;
    const p = predictSeries(s, dims, size, shape, flops, bytes, id);
    if (p === null) continue;
    // Ranked by how slow each may be: a variant priced through a ratio learned far from this
    // shape is as good as that ratio's spread allows, no better; and one timed neither on the
    // axis nor near this shape after every one that was.
    const bound = p.ms *
      Math.exp(p.viaVariant === null ? 0 : variantRatioHalfWidth(p.viaVariant, dims, shape));
    const rank = [knownNear(v, dims, shape) ? 0 : 1, bound];
    if (rank[0]! < bestRank[0]! || (rank[0] === bestRank[0] && rank[1]! < bestRank[1]!)) {
      best = p;
      bestRank = rank;
    }
  }
  return best;
}

/**
 * How far apart two shapes may lie, in every dimension, for a variant's time at one to speak for
 * its rate at the other: a factor of two. On lavapipe the plain-loop and 2 × 2-tile matmuls,
 * screened at 1 × 1024² alone, where every kernel waits on B, kept pace with 16 × 8 tiles there
 * (3.3 and 2.9 ms against 3.0) and at 1 × 3001 × 3000 (22.9 and 31.4 against 44.5), but ran
 * 3 × 999 × 1001 in 10.6 and 5.8 ms against 4.3, and 40 × 1111 × 900 in 125 and 48 against 8.2.
 */
const NEAR_FACTOR = 2;

/**
 * Whether a variant has a fit, a time on the axis, or a time at a shape within
 * {@linkcode NEAR_FACTOR} of `shape` in every dimension: what its rate at `shape` rests on.
 */
function knownNear(v: VariantSeries, dims: readonly string[], shape: Shape): boolean {
  if (v.fit !== null || v.axisPoints.length > 0) return true;
  return v.points.length > 0 && octavesToNearest(v.points, dims, shape) <= Math.log2(NEAR_FACTOR);
}

/** How many different shapes `points` hold. */
function distinctShapes(points: readonly MeasuredPoint[]): number {
  return new Set(points.map((p) => JSON.stringify(p.shape))).size;
}

/** `p`, raised to the device-resident time of its variant (else the best) plus one sync. */
function atLeastKernelAndSync(
  floor: NonNullable<BackendSeries["floor"]>,
  p: Prediction,
  at: Site,
): Prediction {
  const { dims, size, shape, flops, bytes } = at;
  const same = floor.kernel.variants.has(p.variant) ? p.variant : null;
  const kernel = predictSeries(floor.kernel, dims, size, shape, flops, bytes, same);
  if (kernel === null || p.ms >= kernel.ms + floor.syncMs) return p;
  return {
    ...p,
    ms: kernel.ms + floor.syncMs,
    raisedTo: { kernelMs: kernel.ms, syncMs: floor.syncMs },
  };
}

/** Where a prediction is asked for: the op's dimensions, the axis size, shape and work. */
interface Site {
  readonly dims: readonly string[];
  readonly size: number;
  readonly shape: Shape | null;
  readonly flops: number;
  readonly bytes: number;
}

/**
 * The fit of `v` at the shape, corrected by its residuals and its shape model; its rows priced
 * unless `rows` is false (the time in the sweep's rows, as a ratio to it is measured).
 */
function fitted(s: BackendSeries, v: VariantSeries, at: Site, rows = true): Prediction {
  const { dims, size, shape, flops, bytes } = at;
  const shapeModel = shape === null || onAxisShape(s, dims, size, shape) ? null : v.shapeModel;
  const correction = shapeModel === null
    ? 0
    : correctionMean(shapeModel, residualFeatures(s, dims, shape!, v.variant)) +
      (v.amortized?.(shape!, flops, bytes) ?? 0);
  const residuals = v.residuals;
  const alignment = v.alignment === null || shape === null || s.alignmentOf === null
    ? null
    : offsetAt(v.alignment, s.alignmentOf(shape));
  const fitMs = compiledMs(v.model!, flops, bytes);
  const imbalance = shape === null ? 0 : s.imbalanceOf?.(shape, v.variant) ?? 0;
  const tiles = shape === null
    ? 0
    : tileLn(v.tiles ?? NO_TILE_COST, s.utilisationOf?.(shape, v.variant) ?? 1) +
      tileLn(v.blocks ?? NO_TILE_COST, s.blockUtilisationOf?.(shape, v.variant) ?? 1);
  const t0 = v.model!.t0;
  const sweepMs = alignedMs(fitMs, t0, (alignment?.ln ?? 0) + imbalance + tiles);
  const rowsPriced = !rows || shape === null ? sweepMs : withRows(s.sweepRows, v.rowCost, shape, {
    ms: sweepMs,
    t0,
    elementMs: elementMsOf(v.model!, shape, flops, bytes),
  });
  return {
    ms: rowsPriced * (residuals === null ? 1 : correctionAt(residuals, bytes)) *
      Math.exp(correction),
    imbalanceLn: imbalance,
    variant: v.variant,
    provenance: withinFit(v, flops, bytes) ? "fitted" : "extrapolated",
    point: null,
    fit: v.fit,
    bracket: NONE,
    residuals: v.residuals,
    shapeModel,
    correction,
    alignment,
    viaVariant: null,
  };
}

/**
 * A variant without a fit (one the variant search tried at one or two sizes, and perhaps
 * calibrate's cheap off-axis shapes too): the backend's tuned or fastest fitted variant at the
 * shape, times the ratio between the two where this one ran. The ratio follows the shape's
 * proportions when this variant ran off the axis (a plain loop that ties a tiled one on squares
 * runs m = 1 in less than half its time); elsewhere its curve is assumed to run parallel to the
 * fitted one's, and the interval says so. Null when no fitted variant of the backend can be
 * compared with it.
 */
function scaledFromFitted(
  s: BackendSeries,
  v: VariantSeries,
  at: Site,
  refAt: Prediction | null = null,
): Prediction | null {
  const ref = tunedVariant(s, at.size) ?? fastestFitted(s, at.flops, at.bytes);
  if (ref === null || ref === v || v.points.length === 0) return null;
  const model = ratioModel(s, v, ref, at.dims);
  if (model === null) return null;
  const shapeModel = at.shape === null ? null : model.shapeModel;
  const base = refAt ?? fitted(s, ref, at);
  const t0 = Math.min(ref.model!.t0, base.ms);
  // Along the axis, from the sizes where the work set both times; off it, or on it without sizes
  // of work to go by, at these proportions. The launch is the fitted variant's, the rest scales
  // by the ratio, with its own tiles, not the fitted variant's, at this shape.
  const alongAxis = shapeModel === null && model.axis.length > 0;
  const rateLn = alongAxis ? ratioAlongAxis(model.axis, at.size) : model.meanLn;
  const tiles = at.shape === null ? 0 : tilesBetween(s, v, ref, at.shape);
  const correction = shapeModel === null
    ? 0
    : correctionMean(shapeModel, ratioFeatures(s, at.dims, at.shape!));
  let ms: number;
  if (s.sweepRows === null || at.shape === null) {
    ms = t0 + (base.ms - t0) * Math.exp(rateLn + tiles + correction);
  } else {
    // Its own rows priced on its own time in the sweep's rows, not the fitted variant's.
    const sweepMs = fitted(s, ref, at, false).ms;
    const own = Math.min(ref.model!.t0, sweepMs);
    ms = withRows(s.sweepRows, model.rowCost, at.shape, {
      ms: own + (sweepMs - own) * Math.exp(rateLn + tiles),
      t0: own,
      elementMs: elementMsOf(ref.model!, at.shape, at.flops, at.bytes) * Math.exp(rateLn),
      launch: deviceLaunch(s.sweepRows, ref, at.shape, at.flops, at.bytes),
    }) * Math.exp(correction);
  }
  const ratio = ms / base.ms;
  return {
    ...base,
    ms,
    variant: v.variant,
    viaVariant: {
      from: ref.variant,
      ratio,
      sizes: v.points.map((p) => p.size),
      shapeModel,
      ...(at.shape === null ? {} : { features: ratioFeatures(s, at.dims, at.shape) }),
      share: 1 - t0 / base.ms,
      onAxis: v.axisPoints.length > 0,
      octavesAway: octavesToNearest(v.points, at.dims, at.shape),
    },
  };
}

/** How a variant without a fit ran against a fitted one where it ran. */
interface RatioModel {
  /** Mean ln(time / the fitted variant's prediction) over its on-axis points (else all). */
  readonly meanLn: number;
  /**
   * Its on-axis sizes where the fitted variant's time is mostly work (at least
   * {@linkcode WORK_SHARE} beyond its launch), ascending, with ln of the ratio of the two times
   * beyond that launch (the mean where one ran twice); empty when it ran at none.
   */
  readonly axis: readonly AxisRatio[];
  /**
   * How that ln ratio moves with the shape's proportions about its mean, learned from its points
   * when some lie off the axis; null otherwise.
   */
  readonly shapeModel: ShapeModel | null;
  /**
   * What each of its rows costs besides its elements, and how many run at once (`_row_cost.ts`),
   * measured from its shapes off the sweep's rows against its ratio on the axis (how many run at
   * once is the fitted variant's, the device's): lavapipe's 256-invocation softmax workgroups pay
   * ~16 µs a row where the fitted 64-invocation ones pay ~5, so a ratio taken at the sweep's 32
   * rows put 1000 × 64 at a quarter of its time. The fitted variant's where nothing says (no shape
   * of it on the axis, or none off the sweep's rows).
   */
  readonly rowCost: RowCost;
}

/** Ratio models by variant, then by the fitted variant they compare with. */
const ratioModels = new WeakMap<VariantSeries, Map<string, RatioModel | null>>();

/** {@linkcode RatioModel} of `v` against `ref`, built on first use. */
function ratioModel(
  s: BackendSeries,
  v: VariantSeries,
  ref: VariantSeries,
  dims: readonly string[],
): RatioModel | null {
  let byRef = ratioModels.get(v);
  if (byRef === undefined) ratioModels.set(v, byRef = new Map());
  if (byRef.has(ref.variant)) return byRef.get(ref.variant)!;
  // The fitted variant's times in the sweep's rows: this one's rows are its own.
  const refMs = v.points.map((p) =>
    fitted(s, ref, { dims, size: p.size, shape: p.shape, flops: p.flops, bytes: p.bytes }, false)
      .ms
  );
  const t0 = ref.model!.t0;
  // Its own tiles' and blocks' share taken out where work sets the time, put back at the shape
  // predicted: a variant timed at m = 1 only has its ratio there from its rows as much as its rate.
  const tilesLn = v.points.map((p, i) =>
    worksBeyondLaunch(p.ms, refMs[i]!, t0) ? tilesBetween(s, v, ref, p.shape) : 0
  );
  const residuals = v.points.map((p, i) => workLn(p.ms, refMs[i]!, t0) - tilesLn[i]!);
  let model: RatioModel | null = null;
  if (residuals.every(Number.isFinite)) {
    // The prior is its ratio on the axis, where the variant search timed it (all its points when
    // none are on it): far from its off-axis shapes it runs parallel to the fitted variant.
    const onAxis = residuals.filter((_, i) => v.points[i]!.onAxis);
    const prior = onAxis.length > 0 ? onAxis : residuals;
    const meanLn = prior.reduce((a, b) => a + b, 0) / prior.length;
    // Its time at its i-th point with its rows at `cost`, before the shape's proportions.
    const rowsAt = (i: number, cost: RowCost) => {
      const p = v.points[i]!;
      const ms = t0 + Math.max(refMs[i]! - t0, 0) * Math.exp(meanLn + tilesLn[i]!);
      const sweepRows = s.sweepRows;
      if (sweepRows === null) return ms;
      return rowsMs(elementsOf(p.shape), p.shape.rows ?? 1, sweepRows, cost, {
        ms,
        t0,
        elementMs: elementMsOf(ref.model!, p.shape, p.flops, p.bytes) * Math.exp(meanLn),
        launch: deviceLaunch(sweepRows, ref, p.shape, p.flops, p.bytes),
      });
    };
    const rowCost = onAxis.length > 0 ? ownRowCost(s, v, ref, rowsAt) : ref.rowCost;
    const bySize = new Map<number, number[]>();
    v.points.forEach((p, i) => {
      if (!p.onAxis || !worksBeyondLaunch(p.ms, refMs[i]!, t0)) return;
      bySize.set(p.size, [...bySize.get(p.size) ?? [], residuals[i]!]);
    });
    const axis = [...bySize].sort((a, b) => a[0] - b[0])
      .map(([size, lns]) => ({ size, ln: lns.reduce((a, b) => a + b, 0) / lns.length }));
    // Two times of one shape say nothing of how the ratio moves with the shape.
    const shapeModel = v.offAxisPoints > 0 && distinctShapes(v.points) >= 2
      ? fitShapeModel(v.points.map((p, i) => {
        const relSd = p.ciHalfWidth / p.ms / 1.96;
        return {
          features: ratioFeatures(s, dims, p.shape),
          // Where rows are priced, what is left of the whole time; else of its work's ratio.
          residual: s.sweepRows === null
            ? residuals[i]! - meanLn
            : Math.log(p.ms / rowsAt(i, rowCost)),
          noiseVar: relSd * relSd,
        };
      }))
      : null;
    model = { meanLn, axis, shapeModel, rowCost };
  }
  byRef.set(ref.variant, model);
  return model;
}

/**
 * The row cost of `v`, a variant without a fit, that best explains its times off the sweep's
 * rows ({@linkcode fitRowCost}), `rowsAt(i, cost)` its modelled time at its i-th point; `ref`'s
 * own where the sweep holds no rows.
 */
function ownRowCost(
  s: BackendSeries,
  v: VariantSeries,
  ref: VariantSeries,
  rowsAt: (i: number, cost: RowCost) => number,
): RowCost {
  if (s.sweepRows === null) return ref.rowCost;
  return fitRowCost(
    v.points.flatMap((p, i) =>
      p.onAxis ? [] : [{
        elements: elementsOf(p.shape),
        rows: p.shape.rows ?? 1,
        lnMs: Math.log(p.ms),
        modelMs: (cost: RowCost) => rowsAt(i, cost),
      }]
    ),
    s.sweepRows,
    // Its few shapes price its rows; how many run at once is the device's, measured by the fit's.
    ref.rowCost.parallel,
  );
}

/**
 * ln of how much longer a variant's time is than the fitted variant's beyond their common launch
 * `t0` where the fitted one's is mostly work ({@linkcode WORK_SHARE}), else of the whole times:
 * lavapipe's scalar-load matmul tiles ran the work ×2 slower than the vector ones, and 23³, all
 * launch, about as fast.
 */
function workLn(ms: number, refMs: number, t0: number): number {
  return worksBeyondLaunch(ms, refMs, t0)
    ? Math.log((ms - t0) / (refMs - t0))
    : Math.log(ms / refMs);
}

/** Whether work, not the launch, sets both times ({@linkcode WORK_SHARE}). */
function worksBeyondLaunch(ms: number, refMs: number, t0: number): boolean {
  return refMs - t0 >= WORK_SHARE * refMs && ms > t0;
}

/**
 * ln of what `v`'s partly empty tiles and idle invocation blocks cost at a shape beyond what
 * `ref`'s do, at `ref`'s penalties (a variant without a fit has none of its own): at 77³
 * lavapipe's scalar-load twin's 64 × 64 tiles cover 36 % of their 128 × 128 outputs, the
 * vector-load 64 × 128 ones 60 %; at m = 1 a variant of 4-row blocks computes four rows where
 * one of 16-row blocks computes sixteen. And its uneven share of the threads beyond `ref`'s: a
 * gemv of 256 rows is one workgroup of 256 rows on one of lavapipe's threads, four of 64 on two.
 */
function tilesBetween(
  s: BackendSeries,
  v: VariantSeries,
  ref: VariantSeries,
  shape: Shape,
): number {
  const between = (of: ((shape: Shape, variant: string) => number) | null, model: TileModel) =>
    of === null ? 0 : tileLn(model, of(shape, v.variant)) - tileLn(model, of(shape, ref.variant));
  const imbalance = s.imbalanceOf === null
    ? 0
    : s.imbalanceOf(shape, v.variant) - s.imbalanceOf(shape, ref.variant);
  return between(s.utilisationOf, ref.tiles ?? NO_TILE_COST) +
    between(s.blockUtilisationOf, ref.blocks ?? NO_TILE_COST) + imbalance;
}

/** One on-axis size of a variant without a fit, and its ln ratio there beyond the launch. */
interface AxisRatio {
  readonly size: number;
  readonly ln: number;
}

/**
 * Least share of the fitted variant's time beyond its launch at a size for the ratio there to
 * count as the two variants' rates: where a launch carries both times their ratio is near 1
 * whatever the rates (lavapipe's 16 × 8 tiles with scalar loads ran 32³ in 1.28× the vector-load
 * ones' time and 127³–511³ in 1.6–2.2× theirs at 128³–512³, and 77³, 181³ and 611³ predicted from
 * the 32³ ratio came out 49–65 % fast).
 */
const WORK_SHARE = 2 / 3;

/**
 * A variant's ln ratio beyond the launch at an axis size: interpolated in ln(size) between the
 * sizes of `axis` and held beyond them.
 */
function ratioAlongAxis(axis: readonly AxisRatio[], size: number): number {
  const hi = axis.findIndex((p) => p.size >= size);
  if (hi === 0) return axis[0]!.ln;
  if (hi === -1) return axis.at(-1)!.ln;
  const [a, b] = [axis[hi - 1]!, axis[hi]!];
  const w = Math.log(size / a.size) / Math.log(b.size / a.size);
  return a.ln + w * (b.ln - a.ln);
}

/**
 * Off the axis, the backend's tuned variant and every variant that ran shapes off the axis of its
 * own, by predicted time at `at` (fastest first); null on the axis within reach of the variant
 * search ({@linkcode SEARCH_REACH}), or when no other variant ran off it. Which variant is fastest
 * changes with the proportions, and only a variant measured at such proportions can say so. A
 * variant screened at one shape only (see `calibrate/phases.ts`) says nothing about the others,
 * and another variant displaces the tuned one only when predicted {@linkcode SWITCH_MARGIN}
 * faster at {@linkcode SWITCH_SIGMAS} of its ratio's spread: a closer call is a coin flip that
 * would trade the tuned variant's own fit for a ratio.
 */
function rankedOffAxis(s: BackendSeries, at: Site): RankedVariant[] | null {
  const candidates = s.offAxisRanked;
  if (candidates.length === 0 || at.shape === null) return null;
  const searched = s.searchedUpTo === 0 || at.size <= SEARCH_REACH * s.searchedUpTo;
  if (searched && onAxisShape(s, at.dims, at.size, at.shape)) return null;
  const tuned = tunedVariant(s, at.size) ?? fastestFitted(s, at.flops, at.bytes);
  if (tuned === null || candidates.every((v) => v === tuned)) return null;
  const tunedAt = fitted(s, tuned, at);
  const ranked: (RankedVariant & { rank: number })[] = [];
  for (const v of candidates) {
    if (v === tuned) continue;
    const p = v.fit !== null ? fitted(s, v, at) : scaledFromFitted(s, v, at, tunedAt);
    if (p === null) continue;
    // A variant priced through its ratio displaces the tuned one only when the ratio's upper
    // side (part of a standard deviation of its shape model) is faster too; its spread is
    // computed only where its mean is (a Gaussian process's variance costs n² per shape).
    const bar = tunedAt.ms * (1 - SWITCH_MARGIN);
    const model = p.viaVariant?.shapeModel;
    const faster = p.ms < bar &&
      (!model ||
        p.ms *
              Math.exp(
                SWITCH_SIGMAS * shapeCorrectionAt(model, ratioFeatures(s, at.dims, at.shape)).sd,
              ) < bar);
    ranked.push({ v, p, rank: faster ? p.ms : Infinity });
  }
  if (ranked.length === 0) return null;
  ranked.push({ v: tuned, p: tunedAt, rank: tunedAt.ms });
  return ranked.sort((a, b) => a.rank - b.rank);
}

/** A variant with its prediction at a shape. */
interface RankedVariant {
  readonly v: VariantSeries;
  readonly p: Prediction;
}

/**
 * How much faster than the tuned variant another must be predicted off the axis to be chosen:
 * about one run-to-run spread of a case on a noisy VM (`deno task noise`: σ ln 0.02–0.07).
 */
const SWITCH_MARGIN = 0.05;

/**
 * How many standard deviations of its ratio's spread a variant's predicted time is raised by
 * before it is compared with the tuned one's. One kept the square search's gemv winner at large
 * gemvs where the variants summing 4 or 8 rows ran ×0.55–0.7 of it at every such shape measured;
 * none let a variant screened ×0.72 by noise run a wasm matmul ×2.2 slower. Re-scoring the saved
 * held-out measurements of four calibrations (`bench:tuning` and a second set of gemvs) gave
 * tuning regret 5.9 % and 19.0 % at one, 4.0 % and 15.0 % at a half, with `predictTime()` as
 * often within ±25 %.
 */
const SWITCH_SIGMAS = 0.5;

/**
 * How far up the axis, as a multiple of the largest size the variant search timed, its choice
 * stands on the axis: beyond, the axis is as unmeasured for the other variants as a shape off it,
 * and the variants ranked off the axis are ranked there too. Lavapipe's gemv search at 512² chose
 * the variant summing 16 rows per invocation, which ran 1536² and 4096² ×1.55–1.61 slower than
 * the ones summing 4 or 8, as it ran every large gemv off the axis.
 */
const SEARCH_REACH = 2;

/**
 * The variants of a backend at an off-axis shape, fastest first, when some variant besides the
 * tuned one ran shapes off the axis (see {@linkcode predictSeries}; end to end, the
 * device-resident series' ranking when only the tuned variant ran end to end there); null
 * otherwise.
 *
 * @param s The backend's series.
 * @param dims The op's dims.
 * @param size Size on the op axis.
 * @param shape The shape.
 * @param flops Work of the shape.
 * @param bytes Work of the shape.
 * @returns Variant ids, fastest first, or null.
 */
export function variantsRankedOffAxis(
  s: BackendSeries,
  dims: readonly string[],
  size: number,
  shape: Shape,
  flops: number,
  bytes: number,
): string[] | null {
  const at: Site = { dims, size, shape, flops, bytes };
  // End to end, the device-resident ranking where no other variant ran end to end off the axis.
  const ranked = rankedOffAxis(s, at) ??
    (s.floor === null ? null : rankedOffAxis(s.floor.kernel, at));
  return ranked?.map((r) => r.v.variant) ?? null;
}

/** Whether `shape` is its op's axis shape at `size` (the op comes from the series' table). */
function onAxisShape(
  s: BackendSeries,
  dims: readonly string[],
  size: number,
  shape: Shape,
): boolean {
  const axis = s.axisShape(size);
  for (let i = 0; i < dims.length; i++) if (axis[dims[i]!] !== shape[dims[i]!]) return false;
  return true;
}

function tunedVariant(s: BackendSeries, size: number): VariantSeries | null {
  if (s.tuning.length === 0) return null;
  const row = tuningAt(s.tuning, size);
  const v = row === null ? undefined : s.variants.get(row.best.variant);
  return v === undefined || v.fit === null ? null : v;
}

function fastestFitted(s: BackendSeries, flops: number, bytes: number): VariantSeries | null {
  let best: VariantSeries | null = null;
  let bestMs = Infinity;
  for (let i = 0; i < s.fitted.length; i++) {
    const v = s.fitted[i]!;
    const ms = compiledMs(v.model!, flops, bytes);
    if (ms < bestMs) {
      best = v;
      bestMs = ms;
    }
  }
  return best;
}

function largestSeries(s: BackendSeries): VariantSeries | null {
  let best: VariantSeries | null = null;
  for (const v of s.variants.values()) {
    if (best === null || v.axisPoints.length > best.axisPoints.length) best = v;
  }
  return best;
}

/**
 * Log-log interpolation of time against size between a variant's measured sizes; outside them,
 * the slope of the two nearest (tagged extrapolated).
 */
function interpolate(v: VariantSeries | null, size: number): Prediction | null {
  if (v === null || v.axisPoints.length === 0) return null;
  const pts = v.axisPoints;
  if (pts.length === 1) {
    const p = pts[0]!;
    return {
      ms: p.ms,
      variant: v.variant,
      provenance: "extrapolated",
      point: null,
      fit: null,
      bracket: [p],
      residuals: null,
      shapeModel: null,
      correction: 0,
      alignment: null,
      viaVariant: null,
    };
  }
  let i = 1;
  while (i < pts.length - 1 && pts[i]!.size < size) i++;
  const a = pts[i - 1]!;
  const b = pts[i]!;
  const slope = b.size === a.size ? 0 : Math.log(b.ms / a.ms) / Math.log(b.size / a.size);
  const ms = a.ms * Math.exp(slope * Math.log(size / a.size));
  const inside = size >= pts[0]!.size && size <= pts[pts.length - 1]!.size;
  return {
    ms,
    variant: v.variant,
    provenance: inside ? "fitted" : "extrapolated",
    point: null,
    fit: null,
    bracket: [a, b],
    residuals: null,
    shapeModel: null,
    correction: 0,
    alignment: null,
    viaVariant: null,
  };
}

/**
 * Elements of an op's output: the product of its dims except the contraction dim `k` (the
 * catalog's convention: `matmul` is m×k by k×n, elementwise ops have only `n`).
 *
 * @param op The op.
 * @param shape The shape.
 */
export function outputElements(op: OpSpec, shape: Shape): number {
  let product = 1;
  for (const d of op.dims) if (d !== "k") product *= shape[d] ?? 1;
  return product;
}

/**
 * The smallest axis size whose output has at least `elements` elements (bisection; the output
 * grows with the size on every catalog axis).
 *
 * @param op The op.
 * @param elements Output elements wanted.
 */
export function sizeForElements(op: OpSpec, elements: number): number {
  let lo = Math.max(1, op.axis.min);
  if (outputElements(op, op.axis.shape(lo)) >= elements) return lo;
  let hi = lo * 2;
  while (outputElements(op, op.axis.shape(hi)) < elements && hi < 2 ** 48) hi *= 2;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (outputElements(op, op.axis.shape(mid)) >= elements) hi = mid;
    else lo = mid;
  }
  return hi;
}
