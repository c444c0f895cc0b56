/**
 * What the report pages plot, derived from a report: the op × dtype groups, the best variant's
 * time per size for every backend and residency, and each series' colour and name.
 *
 * @module
 */
import type { Backend, Dtype, Residency } from "../../kernels/types.ts";
import type { Report } from "../../core/schema.ts";

/**
 * One measured size of a series: the fastest variant there.
 *
 * @example
 * ```ts
 * import type { BestPoint } from "./_series.ts";
 * const p: BestPoint = {
 *   size: 64, ms: 0.2, variant: "default", gflops: 2.6, gbps: 0.5, relCi: 0.01,
 *   flops: 524288, bytes: 49152,
 * };
 * ```
 */
export interface BestPoint {
  readonly size: number;
  readonly ms: number;
  readonly variant: string;
  readonly gflops: number;
  readonly gbps: number;
  /** Half-width of the median's 95 % CI over the median. */
  readonly relCi: number;
  /** Work of one run. */
  readonly flops: number;
  readonly bytes: number;
}

/**
 * A backend and residency's best-variant curve for one op and dtype.
 *
 * @example
 * ```ts
 * import type { BestSeries } from "./_series.ts";
 * const s: BestSeries = { id: "js", backend: "js", residency: "end-to-end", points: [] };
 * ```
 */
export interface BestSeries {
  /** `backend`, or `backend-residency` for WebGPU and for device-resident CPU data. */
  readonly id: string;
  readonly backend: Backend;
  readonly residency: Residency;
  readonly points: readonly BestPoint[];
}

/**
 * An op and dtype the report measured successfully at least once.
 *
 * @example
 * ```ts
 * import type { OpGroup } from "./_series.ts";
 * const g: OpGroup = { op: "add", dtype: "f32", id: "add-f32", unit: "elements" };
 * ```
 */
export interface OpGroup {
  readonly op: string;
  readonly dtype: Dtype;
  /** `op-dtype`, the value of the plot's `data-plot` attribute. */
  readonly id: string;
  /** The size axis unit, from the crossovers or tuning rows; `"size"` when neither has it. */
  readonly unit: string;
}

const BACKEND_ORDER: readonly Backend[] = ["js", "wasm", "wasm-mt", "webgpu"];

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. */
const COLORS: Readonly<Record<string, string>> = {
  js: "#e69f00",
  wasm: "#56b4e9",
  "wasm-mt": "#009e73",
  "webgpu-end-to-end": "#d55e00",
  "webgpu-device-resident": "#0072b2",
};

/**
 * The series id of a backend and residency, as used in `data-series`.
 *
 * @param backend The backend.
 * @param residency Where the data lives.
 * @returns `"wasm"`, `"webgpu-end-to-end"`, `"webgpu-device-resident"`, …
 * @example
 * ```ts
 * import { seriesId } from "./_series.ts";
 * console.log(seriesId("webgpu", "device-resident")); // "webgpu-device-resident"
 * ```
 */
export function seriesId(backend: Backend, residency: Residency): string {
  return backend === "webgpu" || residency === "device-resident"
    ? `${backend}-${residency}`
    : backend;
}

/**
 * A series' human name: `"webgpu (device-resident)"`, `"wasm-mt"`.
 *
 * @param backend The backend.
 * @param residency Where the data lives.
 * @returns The legend text.
 * @example
 * ```ts
 * import { seriesLabel } from "./_series.ts";
 * console.log(seriesLabel("webgpu", "end-to-end")); // "webgpu (end-to-end)"
 * ```
 */
export function seriesLabel(backend: Backend, residency: Residency): string {
  return backend === "webgpu" || residency === "device-resident"
    ? `${backend} (${residency})`
    : backend;
}

/**
 * The colour of a series id; unknown ids get grey.
 *
 * @param id A {@linkcode seriesId}.
 * @returns A CSS colour.
 * @example
 * ```ts
 * import { seriesColor } from "./_series.ts";
 * console.log(seriesColor("js")); // "#e69f00"
 * ```
 */
export function seriesColor(id: string): string {
  return COLORS[id] ?? "#777777";
}

/**
 * The op × dtype groups with at least one successful measurement, in measurement order.
 *
 * @param report The report.
 * @returns The groups.
 * @example
 * ```ts ignore
 * import { opGroups } from "./_series.ts";
 * console.log(opGroups(report).map((g) => g.id)); // ["matmul-f32", "add-f32", ...]
 * ```
 */
export function opGroups(report: Report): OpGroup[] {
  const groups = new Map<string, OpGroup>();
  for (const m of report.measurements) {
    if (m.state !== "ok") continue;
    const id = `${m.op}-${m.dtype}`;
    if (groups.has(id)) continue;
    const unit = report.crossovers.find((c) => c.op === m.op && c.dtype === m.dtype)?.unit ??
      report.tuning.find((t) => t.op === m.op && t.dtype === m.dtype)?.unit ?? "size";
    groups.set(id, { op: m.op, dtype: m.dtype, id, unit: unit === "" ? "size" : unit });
  }
  return [...groups.values()];
}

/**
 * The best variant per size for every backend and residency of one op and dtype, CPU backends
 * first, then WebGPU end-to-end, then device-resident.
 *
 * @param report The report.
 * @param op The op name.
 * @param dtype The dtype.
 * @returns The series, each with points sorted by size.
 * @example
 * ```ts ignore
 * import { bestSeries } from "./_series.ts";
 * for (const s of bestSeries(report, "matmul", "f32")) console.log(s.id, s.points.length);
 * ```
 */
export function bestSeries(report: Report, op: string, dtype: Dtype): BestSeries[] {
  const bySeries = new Map<
    string,
    { backend: Backend; residency: Residency; best: Map<number, BestPoint> }
  >();
  for (const m of report.measurements) {
    if (m.state !== "ok" || m.op !== op || m.dtype !== dtype) continue;
    const id = seriesId(m.backend, m.residency);
    const entry = bySeries.get(id) ??
      { backend: m.backend, residency: m.residency, best: new Map<number, BestPoint>() };
    bySeries.set(id, entry);
    const prior = entry.best.get(m.size);
    if (prior === undefined || m.wall.median < prior.ms) {
      entry.best.set(m.size, {
        size: m.size,
        ms: m.wall.median,
        variant: m.variant,
        gflops: m.gflops,
        gbps: m.gbps,
        relCi: m.wall.relCi,
        flops: m.flops,
        bytes: m.bytes,
      });
    }
  }
  const rank = (s: { backend: Backend; residency: Residency }) =>
    BACKEND_ORDER.indexOf(s.backend) * 2 + (s.residency === "device-resident" ? 1 : 0);
  return [...bySeries.entries()]
    .map(([id, e]) => ({
      id,
      backend: e.backend,
      residency: e.residency,
      points: [...e.best.values()].sort((a, b) => a.size - b.size),
    }))
    .sort((a, b) => rank(a) - rank(b));
}

/**
 * The work of one run of an op at any size within its measured sizes: flops and bytes are power
 * laws of the size on each stretch between two measured sizes, so they are interpolated log–log.
 *
 * @param report The report.
 * @param op The op name.
 * @param dtype The dtype.
 * @returns The work at a size, or null outside the measured sizes.
 * @example
 * ```ts ignore
 * import { workOf } from "./_series.ts";
 * console.log(workOf(report, "matmul", "f32")(100)); // { flops: 2000000, bytes: 120000 }
 * ```
 */
export function workOf(
  report: Report,
  op: string,
  dtype: Dtype,
): (size: number) => { flops: number; bytes: number } | null {
  const bySize = new Map<number, { size: number; flops: number; bytes: number }>();
  for (const m of report.measurements) {
    if (m.state === "ok" && m.op === op && m.dtype === dtype && m.flops > 0 && m.bytes > 0) {
      bySize.set(m.size, { size: m.size, flops: m.flops, bytes: m.bytes });
    }
  }
  const points = [...bySize.values()].sort((a, b) => a.size - b.size);
  return (size) => {
    const i = points.findIndex((p) => p.size >= size * (1 - 1e-9));
    const b = points[i];
    if (b === undefined || (i === 0 && b.size > size * (1 + 1e-9))) return null;
    if (i === 0 || Math.abs(b.size - size) <= size * 1e-9) {
      return { flops: b.flops, bytes: b.bytes };
    }
    const a = points[i - 1]!;
    const t = Math.log(size / a.size) / Math.log(b.size / a.size);
    const lerp = (u: number, v: number) => Math.exp(Math.log(u) + t * Math.log(v / u));
    return { flops: lerp(a.flops, b.flops), bytes: lerp(a.bytes, b.bytes) };
  };
}
