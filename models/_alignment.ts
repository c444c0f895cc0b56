/**
 * Private: how a row's alignment changes a kernel's speed. A kernel that streams a matrix in rows
 * (gemv's W) loads each row in 16-byte vectors when the row's bytes are a multiple of 16, in
 * 4-byte words when they are a multiple of 4, and byte by byte, across words, otherwise. On
 * lavapipe a q4 gemv with 1156 columns (578-byte rows) ran 2.2× slower than with 1152 or 1160,
 * and with 3000 columns (1500-byte rows, word-aligned) 1.33× slower than with 3008; q8 behaved
 * alike. A sweep's sizes mix the three (4, 20, 45, … 1149, 2580 are not vector-aligned; 512 and
 * 8192 are), so a curve drawn through them all sits between the paths and predicts neither: an
 * LLM's 768 × 2048 projection came out 2.6× slower than measured.
 *
 * This module learns, per variant, each alignment class's offset in ln time from the fit, the
 * most aligned class with enough points as the reference. The offset scales the part of the time
 * that streams rows, not the launch: it is learned only from points whose fitted time is mostly
 * that part, and applied to that part (a 4 × 4 gemv is its launch, aligned or not). The index
 * takes each measurement's class offset out before correcting the fit along the axis, and a
 * prediction puts it back for the shape's class. A class the report did not measure lies between
 * its neighbours. Where the report measured twins (one shape at a few column counts, one per
 * class), their differences are the offsets: a class's median residual also carries how its
 * sizes ran against the fit, which on lavapipe scatters as much as alignment moves.
 *
 * ```ts
 * import { alignmentClass, fitAlignment, offsetAt } from "./_alignment.ts";
 * const points = [512, 8192, 2048, 1149, 2580, 5793].map((cols) => ({
 *   alignment: alignmentClass(Math.ceil(cols / 2)),
 *   residual: cols % 32 === 0 ? 0 : Math.log(2.2),
 *   variableShare: 0.9,
 * }));
 * const model = fitAlignment(points)!;
 * console.log(Math.exp(offsetAt(model, alignmentClass(575)).ln).toFixed(1)); // "2.2"
 * ```
 *
 * @module
 */
import { median, robustSigma } from "../core/stats.ts";

/** A row's alignment: 0 across words, 1 whole 4-byte words, 2 whole 16-byte vectors. */
export type AlignmentClass = 0 | 1 | 2;

/** Fewest points of a class from which its offset is learned. */
const MIN_CLASS_POINTS = 2;
/** An offset smaller than this (±8 %) is noise, not a load path: taken as none. */
const MIN_OFFSET = 0.08;
/**
 * An offset is kept when it is this many standard errors from the reference class's: lavapipe's
 * points scatter ±40 %, and three unaligned sizes are all a default sweep has past the launch.
 */
const SIGNIFICANT_SES = 1;
/** Least share of a point's fitted time beyond the launch for it to teach an offset. */
const MIN_VARIABLE_SHARE = 2 / 3;

/**
 * A fitted time with the part beyond its fixed cost scaled by an alignment offset.
 *
 * @param fitMs The fit's time.
 * @param t0Ms The fit's fixed cost.
 * @param ln The offset, ln of the factor.
 * @returns t0 + (fit − t0) · e^ln.
 * @example
 * ```ts
 * import { alignedMs } from "./_alignment.ts";
 * console.log(alignedMs(1.04, 0.04, Math.log(2))); // 2.04
 * ```
 */
export function alignedMs(fitMs: number, t0Ms: number, ln: number): number {
  const fixed = Math.min(Math.max(t0Ms, 0), fitMs);
  return fixed + (fitMs - fixed) * Math.exp(ln);
}

/**
 * The alignment class of rows of `rowBytes` bytes.
 *
 * @param rowBytes Bytes of one row (a fraction counts as across words).
 * @param vectorBytes What a row's bytes must be a multiple of for the kernel's vector loads
 * (16 by default; 32 for a kernel that loads whole 32-byte groups).
 * @returns The class.
 * @example
 * ```ts
 * import { alignmentClass } from "./_alignment.ts";
 * console.log(alignmentClass(4096), alignmentClass(1500), alignmentClass(575)); // 2 1 0
 * console.log(alignmentClass(6000, 32)); // 1: whole words, not whole 32-byte groups
 * ```
 */
export function alignmentClass(rowBytes: number, vectorBytes = 16): AlignmentClass {
  if (!Number.isInteger(rowBytes) || rowBytes % 4 !== 0) return 0;
  return rowBytes % vectorBytes === 0 ? 2 : 1;
}

/**
 * Largest power of two a row stride is counted in: a 4 KiB page, and the span over which an
 * L1 cache's sets repeat on common CPUs.
 */
export const MAX_STRIDE_POWER = 4096;

/**
 * The largest power of two, up to {@linkcode MAX_STRIDE_POWER}, that divides a row's bytes: how
 * alike the addresses of a kernel's rows read side by side are. Rows a multiple of 1–4 KiB apart
 * fall into the same few cache sets; on lavapipe (2-vCPU Intel Xeon, one process, device-resident
 * f32 gemv, 1024 rows) the variant summing 16 rows per invocation ran rows of 3072 and 4096
 * columns (12 and 16 KiB, stride 4096) ×1.40–1.73 slower than the one summing 4, and 2992–4064
 * columns of smaller strides ×0.82–1.15 its time; the one summing 8 did the opposite (×0.97–1.06
 * at stride 4096, ×1.08–1.58 at 32–256). Their ratios are not smooth in the column count, so the
 * ratio models read this beside the shape's dimensions.
 *
 * @param rowBytes Bytes of one row (a fraction counts as 1).
 * @returns A power of two from 1 to {@linkcode MAX_STRIDE_POWER}.
 * @example
 * ```ts
 * import { rowStridePower } from "./_alignment.ts";
 * console.log(rowStridePower(12000), rowStridePower(12288), rowStridePower(577.5)); // 32 4096 1
 * ```
 */
export function rowStridePower(rowBytes: number): number {
  if (!Number.isInteger(rowBytes) || rowBytes <= 0) return 1;
  let power = 1;
  while (power < MAX_STRIDE_POWER && rowBytes % (power * 2) === 0) power *= 2;
  return power;
}

/** A measured point as the alignment model needs it. */
export interface AlignedResidual {
  readonly alignment: AlignmentClass;
  /** ln(measured / fit) of the time beyond the fit's fixed cost: ln((ms − t0) / (fit − t0)). */
  readonly residual: number;
  /** Share of the fitted time beyond the fixed cost, (fit − t0) / fit. */
  readonly variableShare: number;
  /**
   * The shape's dimensions, when known: points whose dimensions are all within
   * {@linkcode TWIN_TOLERANCE} of each other are twins (1024 × 3000 and 1024 × 3008), and their
   * difference is their classes' offset with everything else held.
   */
  readonly dims?: readonly number[];
}

/** Relative difference within which two shapes' dimensions count as the same shape's. */
export const TWIN_TOLERANCE = 0.01;

/** Per class (index 0–2), offset in ln time from the reference class; null where not measured. */
export interface AlignmentModel {
  readonly offsets: readonly (number | null)[];
  /** Each measured class's spread of residuals about its offset (robust σ of ln time). */
  readonly spreads: readonly (number | null)[];
  /** Per class, whether its offset came from twins (see `AlignedResidual.dims`). */
  readonly twinned?: readonly boolean[];
}

/** An alignment offset at a class: ln of the factor, and the half-width it adds to intervals. */
export interface AlignmentOffset {
  readonly ln: number;
  readonly halfWidth: number;
  /** True when the class's own offset was measured as the difference of twins. */
  readonly fromTwins?: boolean;
}

/**
 * Learns the classes' offsets from a variant's residuals against its fit.
 *
 * @param points Residuals of one variant's measured shapes (non-finite ones skipped).
 * @returns The model, or null when fewer than two classes have enough points, or when no class
 * differs from the reference by more than noise (8 %, and one standard error of the medians).
 * A class with a vector-aligned twin (`AlignedResidual.dims`) takes its offset from the twins,
 * measured against the vector-aligned class, however few its points.
 * @example
 * ```ts
 * import { fitAlignment } from "./_alignment.ts";
 * console.log(fitAlignment([{ alignment: 2, residual: 0, variableShare: 1 }])); // null
 * ```
 */
export function fitAlignment(points: readonly AlignedResidual[]): AlignmentModel | null {
  const teaching = points.filter((p) =>
    Number.isFinite(p.residual) && p.variableShare >= MIN_VARIABLE_SHARE
  );
  const byClass: number[][] = [[], [], []];
  for (const p of teaching) byClass[p.alignment]!.push(p.residual);
  const twins = twinOffsets(teaching);
  const centers = byClass.map((r) => r.length >= MIN_CLASS_POINTS ? median(r) : null);
  const reference = twins.some((t) => t !== null) ? 2 : [2, 1, 0].find((c) => centers[c] !== null);
  if (reference === undefined) return null;
  const known = (c: number) => c === reference || twins[c] !== null || centers[c] !== null;
  if ([0, 1, 2].filter(known).length < 2) return null;
  const spreads = byClass.map((r, c) => {
    if (twins[c] !== null) return twins[c]!.spread;
    return centers[c] === null ? null : robustSigma(r, centers[c]!);
  });
  // Standard error of a class's median (≈ 1.25 σ / √n), for telling an offset from noise.
  const se = (c: number) => 1.25 * spreads[c]! / Math.sqrt(byClass[c]!.length);
  const offsets = [0, 1, 2].map((c) => {
    if (c === reference) return 0;
    const twin = twins[c] ?? null;
    // Twins hold everything but the rows' alignment: their difference is the offset, where a
    // class's median residual also carries how sizes and proportions ran against the fit.
    if (twin !== null) return Math.abs(twin.ln) < MIN_OFFSET ? 0 : twin.ln;
    const center = centers[c] ?? null;
    if (center === null || centers[reference] === null) return null;
    const offset = center - centers[reference]!;
    const noise = SIGNIFICANT_SES * Math.hypot(se(c), se(reference));
    return Math.abs(offset) < Math.max(MIN_OFFSET, noise) ? 0 : offset;
  });
  if (offsets.every((o) => o === null || o === 0)) return null;
  return { offsets, spreads, twinned: twins.map((t) => t !== null) };
}

/**
 * Per class, the median ln difference of its points from their vector-aligned twins (shapes a
 * few columns apart, see `AlignedResidual.dims`), and the spread of those differences; null for
 * a class with no twin.
 */
function twinOffsets(
  points: readonly AlignedResidual[],
): ({ ln: number; spread: number } | null)[] {
  const differences: number[][] = [[], [], []];
  const aligned = points.filter((p) => p.alignment === 2 && p.dims !== undefined);
  for (const p of points) {
    if (p.alignment === 2 || p.dims === undefined) continue;
    const twin = aligned.find((a) => isTwin(a.dims!, p.dims!));
    if (twin !== undefined) differences[p.alignment]!.push(p.residual - twin.residual);
  }
  return differences.map((d) => {
    if (d.length === 0) return null;
    const ln = median(d);
    return { ln, spread: robustSigma(d, ln) };
  });
}

function isTwin(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length &&
    a.every((x, i) => Math.abs(x - b[i]!) <= TWIN_TOLERANCE * Math.max(x, b[i]!));
}

/**
 * The offset at a class: its own where measured, else midway between the nearest measured
 * classes on either side (half their gap added to the interval), else the one measured side's.
 *
 * @param model A fitted model.
 * @param alignment The shape's class.
 * @returns ln of the factor and its interval half-width.
 * @example
 * ```ts
 * import { offsetAt } from "./_alignment.ts";
 * const model = { offsets: [0.8, null, 0], spreads: [0.1, null, 0.05] } as const;
 * console.log(offsetAt(model, 1)); // { ln: 0.4, halfWidth: 0.4 }
 * ```
 */
export function offsetAt(model: AlignmentModel, alignment: AlignmentClass): AlignmentOffset {
  const own = model.offsets[alignment] ?? null;
  if (own !== null) {
    return model.twinned?.[alignment] === true
      ? { ln: own, halfWidth: 0, fromTwins: true }
      : { ln: own, halfWidth: 0 };
  }
  let below: number | null = null;
  for (let c = alignment - 1; c >= 0 && below === null; c--) below = model.offsets[c] ?? null;
  let above: number | null = null;
  for (let c = alignment + 1; c <= 2 && above === null; c++) above = model.offsets[c] ?? null;
  if (below !== null && above !== null) {
    return { ln: (below + above) / 2, halfWidth: Math.abs(below - above) / 2 };
  }
  const side = below ?? above ?? 0;
  return { ln: side, halfWidth: Math.abs(side) / 2 };
}
