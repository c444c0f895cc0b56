/**
 * Whether a report agrees with itself: its stored crossovers, thresholds and fits against its own
 * measurements. A crossover edited (or corrupted) to a size its measurements contradict makes
 * every selector deciding with it wrong by orders of magnitude, and a matching SHA-256 pin says
 * only that the file is the one published, not that it is right.
 *
 * @module
 */
import { predictMs } from "../core/costmodel.ts";
import { OPS } from "../kernels/catalog.ts";
import {
  type Backend,
  CPU_BACKENDS,
  type Dtype,
  type OpSpec,
  type Residency,
} from "../kernels/types.ts";
import type { ReportIssue } from "./error.ts";
import type { CostFit, Crossover, Measurement, Report, Threshold } from "../core/schema.ts";

/**
 * How much faster the backend a boundary says is slower must be measured, at a size clearly on
 * its side, before the boundary contradicts the measurements. Run-to-run noise moves a point by
 * tens of percent on a shared machine, never by half again.
 */
export const CONTRADICTION_FACTOR = 1.5;

/**
 * How far (median over its sizes) a fit may be off its own measurements before it contradicts them,
 * unless its own `rmsLogError` owns up to more: a one-bandwidth fit of a CPU series that runs
 * from L1, from the caches and from memory (wasm dot f32 at 74, 30 and 13 GB/s) misses each
 * regime by ~2× and says so; the models correct it between measured sizes.
 */
export const FIT_MISS_FACTOR = 2;
/** A fit stating its rmsLogError as r contradicts its measurements only past this many times r. */
const STATED_MISS_MARGIN = 1.5;

/** Relative distance within which a measured size counts as one a fit covers. */
const SIZE_TOLERANCE = 0.05;

/** The best measured time of one side of a boundary at one size, and which backend gave it. */
interface Time {
  readonly ms: number;
  readonly backend: Backend;
}

/** Best median per size, per `op|dtype|backend|residency`. */
type TimeTable = ReadonlyMap<string, ReadonlyMap<number, Time>>;

/** A side of a boundary: one backend, the best CPU backend, or the best SIMD one. */
type Side = Backend | "cpu" | "simd";

const SIDES: Readonly<Record<"cpu" | "simd", readonly Backend[]>> = {
  cpu: CPU_BACKENDS,
  simd: ["wasm", "wasm-mt"],
};

const OPS_BY_NAME: ReadonlyMap<string, OpSpec> = new Map(OPS.map((o) => [o.name, o]));

function num(x: number): string {
  return Number.isInteger(x) && Math.abs(x) < 1e6 ? String(x) : x.toPrecision(3);
}

function key(op: string, dtype: string, backend: string, residency: string): string {
  return `${op}|${dtype}|${backend}|${residency}`;
}

function timeTable(measurements: readonly Measurement[]): TimeTable {
  const table = new Map<string, Map<number, Time>>();
  for (const m of measurements) {
    // Off-axis shapes share sizes with the sweep's but not its proportions: the stored tables
    // describe the sweep.
    if (m.state !== "ok" || m.offAxis) continue;
    const k = key(m.op, m.dtype, m.backend, m.residency);
    let bySize = table.get(k);
    if (bySize === undefined) table.set(k, bySize = new Map());
    const prev = bySize.get(m.size);
    if (prev === undefined || m.wall.median < prev.ms) {
      bySize.set(m.size, { ms: m.wall.median, backend: m.backend });
    }
  }
  return table;
}

/** The times of one side per size: CPU backends are end-to-end; f16 CPU work runs in f32. */
function sideTimes(
  table: TimeTable,
  op: string,
  dtype: Dtype,
  residency: Residency,
  side: Side,
): Map<number, Time> {
  if (side === "webgpu") return new Map(table.get(key(op, dtype, side, residency)) ?? []);
  const backends = side === "cpu" || side === "simd" ? SIDES[side] : [side];
  const cpuDtype = dtype === "f16" &&
      !backends.some((b) => table.has(key(op, "f16", b, "end-to-end")))
    ? "f32"
    : dtype;
  const out = new Map<number, Time>();
  for (const b of backends) {
    for (const [size, t] of table.get(key(op, cpuDtype, b, "end-to-end")) ?? []) {
      const prev = out.get(size);
      if (prev === undefined || t.ms < prev.ms) out.set(size, t);
    }
  }
  return out;
}

/** A claim that `below` is faster under a size and `above` over it (up to `next`). */
interface Boundary {
  readonly path: string;
  readonly what: string;
  readonly op: string;
  readonly dtype: Dtype;
  readonly residency: Residency;
  readonly below: Side;
  readonly above: Side;
  readonly size: number;
  readonly unit: string;
  /** Sizes under this are clearly below the boundary (its interval's low end). */
  readonly low: number;
  /** Sizes over this are clearly above it (its interval's high end). */
  readonly high: number;
  /** The next crossing, past which `below` may win again. */
  readonly next: number;
}

function boundaryFinding(b: Boundary, table: TimeTable): ReportIssue | null {
  const below = sideTimes(table, b.op, b.dtype, b.residency, b.below);
  const above = sideTimes(table, b.op, b.dtype, b.residency, b.above);
  let worst: { size: number; fast: Time; slow: Time } | null = null;
  for (const [size, tBelow] of below) {
    const tAbove = above.get(size);
    if (tAbove === undefined) continue;
    const wrongSide = size < b.low
      ? { fast: tAbove, slow: tBelow }
      : size > b.high && size < b.next
      ? { fast: tBelow, slow: tAbove }
      : null;
    if (wrongSide === null || wrongSide.fast.ms * CONTRADICTION_FACTOR >= wrongSide.slow.ms) {
      continue;
    }
    if (worst === null || wrongSide.slow.ms / wrongSide.fast.ms > worst.slow.ms / worst.fast.ms) {
      worst = { size, ...wrongSide };
    }
  }
  if (worst === null) return null;
  const ratio = worst.slow.ms / worst.fast.ms;
  const name = (s: Side) => s === "cpu" ? "the CPU" : s === "simd" ? "SIMD" : s;
  return {
    path: b.path,
    message: `(${b.what}) says ${name(b.below)} is faster below ${num(b.size)} ${b.unit} and ` +
      `${name(b.above)} above, but at ${num(worst.size)} the report measured ` +
      `${worst.fast.backend} ${num(ratio)}× faster than ${worst.slow.backend} ` +
      `(${num(worst.fast.ms)} ms against ${
        num(worst.slow.ms)
      } ms); it contradicts the measurements`,
  };
}

function sideOf(backend: Backend, pair: Crossover["pair"]): Side {
  return pair === "cpu→webgpu" && backend !== "webgpu" ? "cpu" : backend;
}

function crossoverBoundary(c: Crossover, path: string): Boundary | null {
  if (c.size === null || !OPS_BY_NAME.has(c.op)) return null;
  const lows = [c.size, c.ci?.[0] ?? c.size, c.driftCi?.[0] ?? c.size];
  const highs = [c.size, c.ci?.[1] ?? c.size, c.driftCi?.[1] ?? c.size];
  return {
    path,
    what: `${c.op} ${c.dtype} ${c.pair} ${c.residency}`,
    op: c.op,
    dtype: c.dtype,
    residency: c.residency,
    below: sideOf(c.from, c.pair),
    above: sideOf(c.to, c.pair),
    size: c.size,
    unit: c.unit,
    low: Math.min(...lows),
    high: Math.max(...highs),
    next: Math.min(Infinity, ...c.others.filter((x) => x > c.size!)),
  };
}

/** The crossover a threshold figure is taken from (`calibrate/analyze.ts`), if the report has it. */
function sourceOf(
  t: Threshold,
  which: "simdAbove" | "gpuAbove",
  crossovers: readonly Crossover[],
): Crossover | undefined {
  const pair = which === "simdAbove" ? "js→wasm" : "cpu→webgpu";
  const residency = which === "simdAbove" ? "end-to-end" : t.residency;
  return crossovers.find((c) =>
    c.op === t.op && c.dtype === t.dtype && c.pair === pair && c.residency === residency
  );
}

/**
 * A threshold row against the measurements: `selectByComplexity` sends every size above it to the
 * faster tier, so it is held to the same test as a crossover; the crossover it is taken from, if
 * the report has it, says where the curves cross again.
 */
function thresholdFindings(
  t: Threshold,
  i: number,
  crossovers: readonly Crossover[],
  table: TimeTable,
): ReportIssue[] {
  const op = OPS_BY_NAME.get(t.op);
  if (op === undefined) return [];
  const out: ReportIssue[] = [];
  for (const which of ["simdAbove", "gpuAbove"] as const) {
    const { value, ci } = t[which];
    if (value === null) continue;
    const others = sourceOf(t, which, crossovers)?.others ?? [];
    const finding = boundaryFinding({
      path: `thresholds[${i}].${which}`,
      what: `${t.op} ${t.dtype} ${which} ${t.residency}`,
      op: t.op,
      dtype: t.dtype,
      residency: which === "simdAbove" ? "end-to-end" : t.residency,
      below: which === "simdAbove" ? "js" : "cpu",
      above: which === "simdAbove" ? "simd" : "webgpu",
      size: value,
      unit: op.axis.unit,
      low: Math.min(value, ci?.[0] ?? value),
      high: Math.max(value, ci?.[1] ?? value),
      next: Math.min(Infinity, ...others.filter((x) => x > value)),
    }, table);
    if (finding !== null) out.push(finding);
  }
  return out;
}

function fitFinding(
  f: CostFit,
  path: string,
  points: readonly Measurement[] | undefined,
): ReportIssue | null {
  if (points === undefined || !OPS_BY_NAME.has(f.op)) return null;
  const [lo, hi] = f.sizeRange;
  const errors: number[] = [];
  for (const m of points) {
    if (m.state !== "ok" || m.variant !== f.variant) continue;
    if (m.size < lo * (1 - SIZE_TOLERANCE) || m.size > hi * (1 + SIZE_TOLERANCE)) continue;
    errors.push(Math.log(predictMs(f, m.flops, m.bytes) / m.wall.median));
  }
  if (errors.length < 2) return null;
  errors.sort((a, b) => Math.abs(a) - Math.abs(b));
  const middle = errors[Math.floor((errors.length - 1) / 2)]!;
  const allowed = Math.max(Math.log(FIT_MISS_FACTOR), STATED_MISS_MARGIN * f.rmsLogError);
  if (!(Math.abs(middle) > allowed)) return null;
  const what = `${f.op} ${f.dtype} ${f.backend} ${f.variant} ${f.residency}`;
  return {
    path,
    message:
      `(${what}) predicts ${num(Math.exp(Math.abs(middle)))}× ${
        middle > 0 ? "slower" : "faster"
      } than the report measured it (median over ${errors.length} sizes; its rmsLogError says ` +
      `${num(f.rmsLogError)}); it contradicts the measurements`,
  };
}

/**
 * Checks a report against itself: every crossover against the measurements on either side of it
 * (a size clearly below its interval where the backend it says is slower was measured
 * {@linkcode CONTRADICTION_FACTOR}× faster, or likewise above it up to its next crossing), every
 * threshold row likewise, and every fit against the measurements it covers (off by more than
 * {@linkcode FIT_MISS_FACTOR}× at the median size).
 *
 * @param report A valid report.
 * @returns One finding per contradicting crossover, threshold figure or fit, naming its field;
 * empty when the report agrees with itself.
 * @example
 * ```ts
 * import { checkConsistency } from "./_consistency.ts";
 * import { loadReport } from "./load.ts";
 * const report = await loadReport("reports/example.json").catch(() => null);
 * if (report !== null) for (const f of checkConsistency(report)) console.log(f.path, f.message);
 * ```
 */
export function checkConsistency(report: Report): ReportIssue[] {
  const table = timeTable(report.measurements);
  const findings: ReportIssue[] = [];
  report.crossovers.forEach((c, i) => {
    const boundary = crossoverBoundary(c, `crossovers[${i}]`);
    const finding = boundary === null ? null : boundaryFinding(boundary, table);
    if (finding !== null) findings.push(finding);
  });
  report.thresholds.forEach((t, i) => {
    findings.push(...thresholdFindings(t, i, report.crossovers, table));
  });
  const series = new Map<string, Measurement[]>();
  for (const m of report.measurements) {
    if (m.offAxis) continue;
    const k = key(m.op, m.dtype, m.backend, m.residency);
    const list = series.get(k);
    if (list === undefined) series.set(k, [m]);
    else list.push(m);
  }
  report.fits.forEach((f, i) => {
    const finding = fitFinding(
      f,
      `fits[${i}]`,
      series.get(key(f.op, f.dtype, f.backend, f.residency)),
    );
    if (finding !== null) findings.push(finding);
  });
  return findings;
}
