/**
 * "What to use where": for every op and dtype, which backend is fastest along the size axis, as
 * bands between the measured sizes. Where the fastest backends' 95 % intervals overlap, the band
 * is a tie and names them all; a band edge sits on the report's crossover where one falls
 * between the two sizes, else half-way (geometrically) between them.
 *
 * @module
 */
import { bestPerSize } from "../../calibrate/analyze.ts";
import { formatCount } from "../../core/format.ts";
import { type Backend, BACKENDS, type Dtype, type Residency } from "../../kernels/types.ts";
import type { Crossover, Report } from "../../core/schema.ts";
import { type OpGroup, opGroups } from "./_series.ts";

// In backend order, not CPU_BACKENDS order: tied backends are listed in this order.
const CPU_IN_BACKEND_ORDER: readonly Backend[] = BACKENDS.filter((b) => b !== "webgpu");

/**
 * A stretch of sizes with one fastest backend, or several tied.
 *
 * @example
 * ```ts
 * import type { UsageBand } from "./_map.ts";
 * const b: UsageBand = { from: 4, to: 61.5, backends: ["wasm"] };
 * ```
 */
export interface UsageBand {
  readonly from: number;
  readonly to: number;
  /** The fastest backend; several when their 95 % intervals overlap (a tie), in backend order. */
  readonly backends: readonly Backend[];
  /** Whether only this backend was measured at these sizes (the others' sweeps ended before). */
  readonly alone?: boolean;
}

/**
 * One bar of the map: an op and dtype at one residency of the WebGPU data.
 *
 * @example
 * ```ts
 * import type { UsageRow } from "./_map.ts";
 * const r: UsageRow = {
 *   group: { op: "add", dtype: "f32", id: "add-f32", unit: "elements" }, residency: "any",
 *   bands: [], crossovers: [], cpuInF32: false,
 * };
 * ```
 */
export interface UsageRow {
  readonly group: OpGroup;
  /** Where WebGPU's data lives; `any` when both residencies give the same bands. */
  readonly residency: Residency | "any";
  readonly bands: readonly UsageBand[];
  /** The report's crossovers inside the bar's sizes, with their intervals. */
  readonly crossovers: readonly Crossover[];
  /** Whether the CPU side is the problem in f32 (no CPU backend computes in f16). */
  readonly cpuInF32: boolean;
}

/** A backend's best-variant medians of one op and dtype, with their 95 % intervals. */
interface Curve {
  readonly backend: Backend;
  readonly points: readonly { size: number; ms: number; half: number }[];
}

/** A backend's time at one size: measured there, or interpolated log–log between neighbours. */
interface Estimate {
  readonly backend: Backend;
  readonly ms: number;
  readonly lo: number;
  readonly hi: number;
}

function curvesOf(
  report: Report,
  op: string,
  dtype: Dtype,
  residency: Residency,
): { curves: Curve[]; cpuInF32: boolean } {
  const curve = (d: Dtype, backend: Backend): Curve => ({
    backend,
    points: bestPerSize(report.measurements, op, d, backend, residency).map((m) => ({
      size: m.size,
      ms: m.wall.median,
      half: m.wall.ciHalfWidth,
    })),
  });
  let cpu = CPU_IN_BACKEND_ORDER.map((b) => curve(dtype, b)).filter((c) => c.points.length > 0);
  // As the crossovers do: no CPU backend computes in f16, so its alternative is the f32 problem.
  const cpuInF32 = cpu.length === 0 && dtype === "f16";
  if (cpuInF32) {
    cpu = CPU_IN_BACKEND_ORDER.map((b) => curve("f32", b)).filter((c) => c.points.length > 0);
  }
  const gpu = curve(dtype, "webgpu");
  return { curves: gpu.points.length > 0 ? [...cpu, gpu] : cpu, cpuInF32 };
}

function estimateAt(c: Curve, size: number): Estimate | null {
  const pts = c.points;
  const first = pts[0], last = pts[pts.length - 1];
  if (!first || !last || size < first.size || size > last.size) return null;
  const i = pts.findIndex((p) => p.size >= size);
  const b = pts[i]!;
  if (b.size === size || i === 0) {
    return { backend: c.backend, ms: b.ms, lo: b.ms - b.half, hi: b.ms + b.half };
  }
  const a = pts[i - 1]!;
  const t = Math.log(size / a.size) / Math.log(b.size / a.size);
  const ms = Math.exp(Math.log(a.ms) + t * Math.log(b.ms / a.ms));
  const rel = (1 - t) * (a.half / a.ms) + t * (b.half / b.ms);
  return { backend: c.backend, ms, lo: ms * (1 - rel), hi: ms * (1 + rel) };
}

/** The fastest backend at `size`, with every backend whose interval reaches the fastest one's. */
function fastestAt(
  curves: readonly Curve[],
  size: number,
): { backends: Backend[]; alone: boolean } {
  const here = curves.map((c) => estimateAt(c, size)).filter((e): e is Estimate => e !== null);
  if (here.length === 0) return { backends: [], alone: false };
  const best = here.reduce((a, b) => (b.ms < a.ms ? b : a));
  const tied = new Set(here.filter((e) => e.lo <= best.hi).map((e) => e.backend));
  return {
    backends: BACKENDS.filter((b) => tied.has(b)),
    alone: here.length < curves.length && here.length === 1,
  };
}

function rowCrossovers(report: Report, group: OpGroup, residency: Residency): Crossover[] {
  return report.crossovers.filter((c) =>
    c.op === group.op && c.dtype === group.dtype && c.size !== null &&
    (c.pair === "cpu→webgpu" ? c.residency === residency : c.residency === "end-to-end")
  );
}

/** Where a band ends between two measured sizes: on a crossover there, else half-way. */
function edgeBetween(a: number, b: number, crossovers: readonly Crossover[]): number {
  const inside = crossovers.filter((c) => c.size! >= a && c.size! <= b);
  const middle = Math.sqrt(a * b);
  if (inside.length === 0) return middle;
  return inside.reduce((p, c) =>
    Math.abs(Math.log(c.size! / middle)) < Math.abs(Math.log(p.size! / middle)) ? c : p
  ).size!;
}

function bandsOf(curves: readonly Curve[], crossovers: readonly Crossover[]): UsageBand[] {
  const sizes = [...new Set(curves.flatMap((c) => c.points.map((p) => p.size)))]
    .sort((a, b) => a - b);
  const bands: { from: number; to: number; backends: Backend[]; alone: boolean }[] = [];
  for (const [i, size] of sizes.entries()) {
    const { backends, alone } = fastestAt(curves, size);
    const last = bands[bands.length - 1];
    if (last && last.backends.join() === backends.join() && last.alone === alone) {
      last.to = size;
      continue;
    }
    const edge = last ? edgeBetween(sizes[i - 1]!, size, crossovers) : size;
    if (last) last.to = edge;
    bands.push({ from: edge, to: size, backends, alone });
  }
  return bands.filter((b) => b.backends.length > 0);
}

function sameBands(a: readonly UsageBand[], b: readonly UsageBand[]): boolean {
  return a.length === b.length && a.every((x, i) => {
    const y = b[i]!;
    return x.from === y.from && x.to === y.to && x.backends.join() === y.backends.join() &&
      x.alone === y.alone;
  });
}

/**
 * The map's rows: per op and dtype, the bands with WebGPU's data end-to-end (what a CPU caller
 * pays) and device-resident (a program chaining kernels on the GPU), merged into one row when
 * the two agree and WebGPU wins nowhere.
 *
 * @param report The report.
 * @returns The rows, in measurement order of the ops.
 * @example
 * ```ts ignore
 * import { usageMap } from "./_map.ts";
 * for (const row of usageMap(report)) console.log(row.group.id, row.bands.length);
 * ```
 */
export function usageMap(report: Report): UsageRow[] {
  return opGroups(report).flatMap((group): UsageRow[] => {
    const rowAt = (residency: Residency): UsageRow => {
      const { curves, cpuInF32 } = curvesOf(report, group.op, group.dtype, residency);
      const crossovers = rowCrossovers(report, group, residency);
      return { group, residency, bands: bandsOf(curves, crossovers), crossovers, cpuInF32 };
    };
    const e2e = rowAt("end-to-end");
    const resident = rowAt("device-resident");
    const rows = [e2e, resident];
    const gpuWins = rows.some((r) =>
      r.bands.some((b) => !b.alone && b.backends.includes("webgpu"))
    );
    if (!gpuWins && sameBands(e2e.bands, resident.bands)) {
      return [{
        ...e2e,
        residency: "any",
        crossovers: [...new Set([...e2e.crossovers, ...resident.crossovers])],
      }];
    }
    return rows.filter((r) => r.bands.length > 0);
  });
}

/**
 * A band's name: `wasm`, or `wasm ≈ wasm-mt` for a tie.
 *
 * @param band The band.
 * @returns The text.
 * @example
 * ```ts
 * import { bandLabel } from "./_map.ts";
 * console.log(bandLabel({ from: 1, to: 2, backends: ["wasm", "wasm-mt"] })); // "wasm ≈ wasm-mt"
 * ```
 */
export function bandLabel(band: UsageBand): string {
  return band.alone ? `${band.backends.join()} (only one measured)` : band.backends.join(" ≈ ");
}

/**
 * A row in words: `wasm 4–61.5, wasm-mt 61.5–2.05k`.
 *
 * @param row The row.
 * @returns The text.
 * @example
 * ```ts ignore
 * import { describeRow, usageMap } from "./_map.ts";
 * console.log(describeRow(usageMap(report)[0]!));
 * ```
 */
export function describeRow(row: UsageRow): string {
  return row.bands.map((b) => `${bandLabel(b)} ${formatCount(b.from)}–${formatCount(b.to)}`)
    .join(", ");
}
