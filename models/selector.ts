/**
 * `BackendSelector`: picks the fastest backend for an op at a shape from a calibration report —
 * the measured time where the report has this shape, the fitted cost model elsewhere — and says
 * why, with the provenance of the number behind the choice.
 *
 * @example
 * ```ts ignore
 * import { loadReport } from "../reports/load.ts";
 * import { BackendSelector } from "./selector.ts";
 * const selector = BackendSelector.fromReport(await loadReport("reports/latest.json"));
 * const pick = selector.select({ op: "matmul", shape: { m: 512, k: 512, n: 512 }, dtype: "f32" });
 * console.log(pick.backend, pick.reason);
 * ```
 *
 * @module
 */
import { getOp, OPS } from "../kernels/catalog.ts";
import {
  type Backend,
  BACKENDS,
  type Complexity,
  type Dtype,
  formatShape,
  type Residency,
  type Shape,
} from "../kernels/types.ts";
import type { Figure, ProvenanceTag, Report, Threshold } from "../core/schema.ts";
import { checkReach } from "./_bounds.ts";
import {
  indexReport,
  type OpTable,
  predictSeries,
  type ReportIndex,
  sizeForElements,
} from "./_index.ts";

/**
 * What to choose a backend for.
 *
 * @example
 * ```ts
 * import type { SelectRequest } from "./selector.ts";
 * const r: SelectRequest = { op: "add", shape: { n: 1 << 20 }, dtype: "f32" };
 * ```
 */
export interface SelectRequest {
  /** Op name from the catalog. */
  readonly op: string;
  /** Shape in the op's dims. */
  readonly shape: Shape;
  /** Element type; `f32` when absent. */
  readonly dtype?: Dtype;
  /**
   * Where the GPU's data lives; `end-to-end` when absent. CPU backends are always end-to-end, so
   * `device-resident` compares GPU kernels on resident data with CPU runs on host data.
   */
  readonly residency?: Residency;
}

/**
 * The decision of {@linkcode BackendSelector.select}.
 *
 * @example
 * ```ts
 * import type { Selection } from "./selector.ts";
 * function describe(s: Selection) { return `${s.backend} (${s.provenance}): ${s.reason}`; }
 * ```
 */
export interface Selection {
  /** The fastest backend. */
  readonly backend: Backend;
  /** Its variant (the tuned one for this size, or the one measured here). */
  readonly variant: string;
  /** Predicted ms per run of every backend the report covers. */
  readonly predictedMs: Readonly<Partial<Record<Backend, number>>>;
  /** Predicted `js` time over the chosen backend's; null when the report has no `js`. */
  readonly speedupVsScalar: number | null;
  /** Where the chosen backend's number comes from. */
  readonly provenance: ProvenanceTag;
  /** Backends left out, and why (no adapter, unsupported dtype, not calibrated). */
  readonly skipped: Readonly<Partial<Record<Backend, string>>>;
  /** One sentence, e.g. "wasm-mt: 3.1× faster than js at 512x512x512 (fitted)". */
  readonly reason: string;
}

/**
 * Options of {@linkcode BackendSelector.fromReport}.
 *
 * @example
 * ```ts
 * import type { SelectorOptions } from "./selector.ts";
 * const o: SelectorOptions = { borrowed: true };
 * ```
 */
export interface SelectorOptions {
  /** The report was measured on another machine: every provenance becomes `borrowed`. */
  readonly borrowed?: boolean;
}

/**
 * The seeds' complexity levels: ours, or their `low` / `medium` / `high`.
 *
 * @example
 * ```ts
 * import type { ComplexityLevel } from "./selector.ts";
 * const l: ComplexityLevel = "high"; // same as "matrix"
 * ```
 */
export type ComplexityLevel = Complexity | "low" | "medium" | "high";

/**
 * Options of the seed-style entry points.
 *
 * @example
 * ```ts
 * import type { SeedOptions } from "./selector.ts";
 * const o: SeedOptions = { dtype: "f16", residency: "device-resident" };
 * ```
 */
export interface SeedOptions {
  /** Element type; `f32` when absent. */
  readonly dtype?: Dtype;
  /** GPU residency; `end-to-end` when absent. */
  readonly residency?: Residency;
}

/**
 * What {@linkcode BackendSelector.stats} reports: the choice, the predicted speedup and the
 * thresholds it was made with.
 *
 * @example
 * ```ts
 * import type { SelectionStats } from "./selector.ts";
 * function line(s: SelectionStats) { return `${s.backend} ~${s.estimatedSpeedup}×`; }
 * ```
 */
export interface SelectionStats {
  /** The backend chosen. */
  readonly backend: Backend;
  /** The complexity level the problem was taken as. */
  readonly complexity: Complexity;
  /** Elements as given. */
  readonly elements: number;
  /** The op the complexity level was calibrated with. */
  readonly op: string;
  /** `elements` on that op's size axis. */
  readonly size: number;
  /** Predicted speedup of the choice over scalar `js`; null without `js`. */
  readonly estimatedSpeedup: number | null;
  /** Predicted time per backend considered, ms. */
  readonly predictedMs: Readonly<Partial<Record<Backend, number>>>;
  /** The report's threshold row used, or null when the report has none for this level. */
  readonly thresholds: {
    readonly simdAbove: Figure;
    readonly gpuAbove: Figure;
    readonly unit: string;
  } | null;
  /** Where the deciding figures came from. */
  readonly provenance: ProvenanceTag;
  /** Why this backend, for people. */
  readonly reason: string;
}

const LEVELS: Readonly<Record<ComplexityLevel, Complexity>> = {
  elementwise: "elementwise",
  reduction: "reduction",
  matrix: "matrix",
  low: "elementwise",
  medium: "reduction",
  high: "matrix",
};

/**
 * A selection whose `reason` and `predictedMs` record are built on first read: formatting and
 * building costs more than choosing, and hot loops that only read `backend` should not pay for it.
 */
class LazySelection implements Selection {
  readonly backend: Backend;
  readonly variant: string;
  readonly speedupVsScalar: number | null;
  readonly provenance: ProvenanceTag;
  readonly skipped: Readonly<Partial<Record<Backend, string>>>;
  /** Predicted ms by {@linkcode BACKENDS} index, NaN where there is none. */
  readonly #ms: number[];
  #predictedMs: Partial<Record<Backend, number>> | null = null;
  #reason: string | null = null;
  readonly #describe: (s: Selection) => string;

  constructor(
    best: number,
    variant: string,
    ms: number[],
    provenance: ProvenanceTag,
    skipped: Readonly<Partial<Record<Backend, string>>>,
    describe: (s: Selection) => string,
  ) {
    this.backend = BACKENDS[best]!;
    this.variant = variant;
    this.#ms = ms;
    const js = ms[JS]!;
    this.speedupVsScalar = Number.isNaN(js) ? null : js / ms[best]!;
    this.provenance = provenance;
    this.skipped = skipped;
    this.#describe = describe;
  }

  get predictedMs(): Readonly<Partial<Record<Backend, number>>> {
    if (this.#predictedMs === null) {
      const out: Partial<Record<Backend, number>> = {};
      for (let i = 0; i < BACKENDS.length; i++) {
        if (!Number.isNaN(this.#ms[i]!)) out[BACKENDS[i]!] = this.#ms[i]!;
      }
      this.#predictedMs = out;
    }
    return this.#predictedMs;
  }

  get reason(): string {
    return this.#reason ??= this.#describe(this);
  }

  toJSON(): Selection {
    return {
      backend: this.backend,
      variant: this.variant,
      predictedMs: this.predictedMs,
      speedupVsScalar: this.speedupVsScalar,
      provenance: this.provenance,
      skipped: this.skipped,
      reason: this.reason,
    };
  }
}

const JS = BACKENDS.indexOf("js");
const NO_PREDICTIONS: readonly number[] = BACKENDS.map(() => NaN);

/** "wasm-mt: 3.1× faster than js at 512x512x512 (fitted)". */
function comparison(s: Selection, where: string): string {
  let other: Backend | null = null;
  let otherMs = Infinity;
  for (const [b, ms] of Object.entries(s.predictedMs) as [Backend, number][]) {
    if (b !== s.backend && ms < otherMs) {
      other = b;
      otherMs = ms;
    }
  }
  if (other === null) {
    return `${s.backend}: the only backend calibrated for ${where} (${s.provenance})`;
  }
  const x = otherMs / s.predictedMs[s.backend]!;
  return x >= 1
    ? `${s.backend}: ${ratio(x)}× faster than ${other} at ${where} (${s.provenance})`
    : `${s.backend}: chosen by threshold at ${where} though ${other} is predicted ` +
      `${ratio(1 / x)}× faster (${s.provenance})`;
}

function ratio(x: number): string {
  return x >= 10 ? x.toFixed(0) : x.toFixed(x >= 1.1 ? 1 : 2);
}

/**
 * Chooses backends from a calibration report.
 *
 * Predictions, per backend: the report's measurement when it has this shape (every dimension
 * within ±5 %, the best variant measured there: `measured`); else the cost model of the variant
 * tuned for this size, `fitted` inside the sizes it was fitted on and `extrapolated` outside;
 * else log-log interpolation between measured sizes. Tables are built once per (op, dtype,
 * residency), so {@linkcode BackendSelector.select} costs one binary search and one cost-model
 * evaluation per backend.
 *
 * @example
 * ```ts ignore
 * import { loadReport } from "../reports/load.ts";
 * import { BackendSelector } from "./selector.ts";
 * const selector = BackendSelector.fromReport(await loadReport("reports/latest.json"));
 * console.log(selector.selectForMatmul(1024, 1024, 1024).reason);
 * ```
 */
export class BackendSelector {
  readonly #index: ReportIndex;
  readonly #borrowed: boolean;

  private constructor(index: ReportIndex, borrowed: boolean) {
    this.#index = index;
    this.#borrowed = borrowed;
  }

  /**
   * A selector over a parsed report.
   *
   * @param report The report (from `parseReport` / `loadReport`).
   * @param options `borrowed: true` when the report is from another machine.
   * @returns The selector.
   * @example
   * ```ts ignore
   * import { loadReport } from "../reports/load.ts";
   * import { BackendSelector } from "./selector.ts";
   * const selector = BackendSelector.fromReport(await loadReport("reports/latest.json"));
   * ```
   */
  static fromReport(report: Report, options: SelectorOptions = {}): BackendSelector {
    return new BackendSelector(indexReport(report), options.borrowed ?? false);
  }

  /** The report the selector decides from. */
  get report(): Report {
    return this.#index.report;
  }

  /**
   * The fastest backend for an op at a shape.
   *
   * @param request Op, shape, dtype (`f32`) and residency (`end-to-end`).
   * @returns The choice, every backend's predicted time, and why.
   * @throws {RangeError} when the op is unknown, the report has nothing on this op and dtype, a
   * dimension is not a positive safe integer, or the work is more than 1000× the largest the
   * report measured or fitted.
   * @example
   * ```ts ignore
   * const pick = selector.select({ op: "matmul", shape: { m: 512, k: 512, n: 512 } });
   * console.log(pick.backend, pick.predictedMs);
   * ```
   */
  select(request: SelectRequest): Selection {
    const dtype = request.dtype ?? "f32";
    const table = this.#table(request.op, dtype, request.residency ?? "end-to-end");
    const op = table.op;
    const shape = request.shape;
    return this.#choose(
      table,
      op.axis.size(shape),
      shape,
      op.flops(shape),
      op.bytes(shape, dtype),
      () => formatShape(op, shape),
      null,
    );
  }

  /**
   * The seeds' complexity routing, calibrated: the report's threshold row for the level decides
   * the tier — `webgpu` above `gpuAbove`, SIMD (`wasm` or `wasm-mt`, whichever is predicted
   * faster) above `simdAbove`, scalar `js` below — falling to the next tier a report lacks.
   * Without a threshold row, the cost models of the level's first calibrated op decide.
   *
   * @param level `elementwise` | `reduction` | `matrix`, or the seeds' `low` | `medium` | `high`.
   * @param elements Output elements (a matrix of 50 000 elements is about 224×224).
   * @param options Dtype and residency.
   * @returns The choice.
   * @throws {RangeError} on an unknown level or when the report covers no op of that level.
   * @example
   * ```ts ignore
   * console.log(selector.selectByComplexity("high", 50_000).backend);
   * ```
   */
  selectByComplexity(
    level: ComplexityLevel,
    elements: number,
    options: SeedOptions = {},
  ): Selection {
    return this.#byComplexity(level, elements, options).selection;
  }

  /**
   * The fastest backend for C[m×n] = A[m×k]·B[k×n] (the seeds' argument order).
   *
   * @param m Rows of A and C.
   * @param n Columns of B and C.
   * @param k The contraction length.
   * @param options Dtype and residency.
   * @returns The choice.
   * @throws {RangeError} when the report has no matmul for the dtype.
   * @example
   * ```ts ignore
   * console.log(selector.selectForMatmul(512, 512, 512).reason);
   * ```
   */
  selectForMatmul(m: number, n: number, k: number, options: SeedOptions = {}): Selection {
    return this.select({ op: "matmul", shape: { m, k, n }, ...options });
  }

  /**
   * The fastest backend for an elementwise vector op of `n` elements doing `opsPerElement`
   * flops each, reading two vectors and writing one. Uses the report's elementwise op with that
   * many flops per element (`add` for 1, `fma` for 2) when there is one; otherwise the cost model
   * of the closest such op, evaluated at the requested flops (never tagged `measured`).
   *
   * @param n Vector length.
   * @param opsPerElement Flops per element.
   * @param options Dtype and residency.
   * @returns The choice.
   * @throws {RangeError} when the report has no elementwise op for the dtype.
   * @example
   * ```ts ignore
   * console.log(selector.selectForVectorOp(1 << 20, 2).backend);
   * ```
   */
  selectForVectorOp(n: number, opsPerElement: number, options: SeedOptions = {}): Selection {
    if (!(opsPerElement >= 0) || !Number.isFinite(opsPerElement)) {
      throw new RangeError(
        `Cannot select a vector op with ${opsPerElement} ops per element: pass a finite count ≥ 0`,
      );
    }
    const dtype = options.dtype ?? "f32";
    const residency = options.residency ?? "end-to-end";
    let best: OpTable | null = null;
    let bestGap = Infinity;
    for (const op of OPS) {
      if (op.complexity !== "elementwise") continue;
      const table = this.#index.table(op.name, dtype, residency);
      if (table === null) continue;
      const gap = Math.abs(op.flops({ n: 1 }) - opsPerElement);
      if (gap < bestGap) {
        best = table;
        bestGap = gap;
      }
    }
    if (best === null) {
      throw new RangeError(
        `Cannot select a vector op: the report has no elementwise op for ${dtype} ${residency}; ` +
          `calibrate one (e.g. "add")`,
      );
    }
    const op = best.op;
    const shape = { n };
    if (bestGap === 0) return this.select({ op: op.name, shape, dtype, residency });
    return this.#choose(
      best,
      n,
      null,
      n * opsPerElement,
      op.bytes(shape, dtype),
      () => `${n} elements × ${opsPerElement} ops (${op.name} model)`,
      null,
    );
  }

  /**
   * The fastest backend for an elementwise op of `n` elements (`add` unless `options.op`).
   *
   * @param n Elements.
   * @param options Dtype, residency and the op.
   * @returns The choice.
   * @throws {RangeError} when the report has no such op for the dtype.
   * @example
   * ```ts ignore
   * console.log(selector.selectForElementwise(1 << 24).backend);
   * ```
   */
  selectForElementwise(n: number, options: SeedOptions & { readonly op?: string } = {}): Selection {
    const { op = "add", ...rest } = options;
    return this.select({ op, shape: { n }, ...rest });
  }

  /**
   * The seeds' selection statistics: the choice of {@linkcode selectByComplexity}, its predicted
   * speedup over scalar, and the threshold row it used.
   *
   * @param level The complexity level.
   * @param elements Output elements.
   * @param options Dtype and residency.
   * @returns The statistics.
   * @throws {RangeError} as {@linkcode selectByComplexity}.
   * @example
   * ```ts ignore
   * const s = selector.stats("medium", 100_000);
   * console.log(s.backend, s.estimatedSpeedup, s.thresholds?.gpuAbove.value);
   * ```
   */
  stats(level: ComplexityLevel, elements: number, options: SeedOptions = {}): SelectionStats {
    const { selection, complexity, op, size, row, unit } = this.#byComplexity(
      level,
      elements,
      options,
    );
    return {
      backend: selection.backend,
      complexity,
      elements,
      op,
      size,
      estimatedSpeedup: selection.speedupVsScalar,
      predictedMs: selection.predictedMs,
      thresholds: row === null ? null : { simdAbove: row.simdAbove, gpuAbove: row.gpuAbove, unit },
      provenance: selection.provenance,
      reason: selection.reason,
    };
  }

  #byComplexity(level: ComplexityLevel, elements: number, options: SeedOptions): {
    selection: Selection;
    complexity: Complexity;
    op: string;
    size: number;
    row: Threshold | null;
    unit: string;
  } {
    const complexity = LEVELS[level];
    if (complexity === undefined) {
      throw new RangeError(
        `Unknown complexity level "${level}": use ${Object.keys(LEVELS).join(", ")}`,
      );
    }
    if (!(elements >= 0) || !Number.isFinite(elements)) {
      throw new RangeError(`Cannot select for ${elements} elements: pass a finite count ≥ 0`);
    }
    const dtype = options.dtype ?? "f32";
    const residency = options.residency ?? "end-to-end";
    const row =
      this.report.thresholds.find((t) =>
        t.complexity === complexity && t.dtype === dtype && t.residency === residency &&
        this.#index.table(t.op, dtype, residency) !== null
      ) ?? null;
    const table = row !== null
      ? this.#index.table(row.op, dtype, residency)
      : OPS.filter((o) => o.complexity === complexity)
        .map((o) => this.#index.table(o.name, dtype, residency))
        .find((t) => t !== null) ?? null;
    if (table === null) {
      throw new RangeError(
        `Cannot select for complexity "${level}": the report covers no ${complexity} op for ` +
          `${dtype} ${residency}; calibrate one`,
      );
    }
    const op = table.op;
    const size = sizeForElements(op, elements);
    const shape = op.axis.shape(size);
    const where = () => `${elements} elements (${op.name} ${formatShape(op, shape)})`;
    const flops = op.flops(shape);
    const bytes = op.bytes(shape, dtype);
    const allowed = row === null ? null : tierOf(row, size, table);
    const selection = this.#choose(table, size, shape, flops, bytes, where, allowed);
    return { selection, complexity, op: op.name, size, row, unit: op.axis.unit };
  }

  #table(op: string, dtype: Dtype, residency: Residency): OpTable {
    const table = this.#index.table(op, dtype, residency);
    if (table === null) {
      getOp(op);
      throw new RangeError(
        `Cannot select for ${op} ${dtype} ${residency}: the report has no measurement or fit of ` +
          `it; calibrate it or use a report that has`,
      );
    }
    return table;
  }

  #choose(
    table: OpTable,
    size: number,
    shape: Shape | null,
    flops: number,
    bytes: number,
    where: () => string,
    allowed: readonly Backend[] | null,
  ): Selection {
    checkReach(table, shape, flops, bytes, where);
    // A plain double array: allocating a typed array costs more than the whole choice.
    const ms = NO_PREDICTIONS.slice();
    let best = -1;
    let bestVariant = "";
    let bestProvenance: ProvenanceTag = "measured";
    const dims = table.op.dims;
    for (let i = 0; i < table.series.length; i++) {
      const s = table.series[i]!;
      const p = predictSeries(s, dims, size, shape, flops, bytes, null);
      if (p === null) continue;
      const slot = s.slot;
      ms[slot] = p.ms;
      if ((best < 0 || p.ms < ms[best]!) && (allowed === null || allowed.includes(s.backend))) {
        best = slot;
        bestVariant = p.variant;
        bestProvenance = p.provenance;
      }
    }
    if (best < 0) {
      throw new RangeError(
        `Cannot select for ${table.op.name} ${table.dtype} at ${where()}: no calibrated backend ` +
          `can predict it; calibrate this op`,
      );
    }
    return new LazySelection(
      best,
      bestVariant,
      ms,
      this.#borrowed ? "borrowed" : bestProvenance,
      table.skipped,
      (sel) => comparison(sel, where()),
    );
  }
}

/**
 * The backends a threshold row allows at a size: the highest tier the size clears that the table
 * has a backend for.
 */
function tierOf(row: Threshold, size: number, table: OpTable): readonly Backend[] {
  const has = (b: Backend) => table.series.some((s) => s.backend === b);
  const above = (f: Figure) => f.value !== null && size > f.value;
  const tiers: Backend[][] = [];
  if (above(row.gpuAbove)) tiers.push(["webgpu"]);
  if (above(row.simdAbove)) tiers.push(["wasm", "wasm-mt"]);
  tiers.push(["js"]);
  for (const tier of tiers) {
    const present = tier.filter(has);
    if (present.length > 0) return present;
  }
  return table.series.map((s) => s.backend);
}
