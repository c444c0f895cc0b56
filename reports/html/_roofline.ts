/**
 * Rooflines from a report: per dtype, every op's best attained GFLOP/s on every backend against
 * its arithmetic intensity (FLOP per byte moved), under each backend's measured ceilings (peak
 * compute from its fastest matmul, peak bandwidth from the report's system figures) and, where
 * `reports/specs.json` lists the adapter, the datasheet's.
 *
 * @module
 */
import { peakRates } from "../../calibrate/analyze.ts";
import type { Backend, Dtype, Residency } from "../../kernels/types.ts";
import type { Report } from "../../core/schema.ts";
import type { SpecEntry } from "../specs_file.ts";
import { bestSeries, opGroups, seriesId, seriesLabel } from "./_series.ts";

/**
 * One op on one backend: its best attained rate and the intensity it was attained at.
 *
 * @example
 * ```ts
 * import type { RooflinePoint } from "./_roofline.ts";
 * const p: RooflinePoint = { op: "add", intensity: 1 / 12, gflops: 1.2, lo: 1.1, hi: 1.3, size: 1e6, variant: "default" };
 * ```
 */
export interface RooflinePoint {
  readonly op: string;
  /** FLOP per byte moved. */
  readonly intensity: number;
  readonly gflops: number;
  /** The rate's 95 % interval, from the median time's. */
  readonly lo: number;
  readonly hi: number;
  readonly size: number;
  readonly variant: string;
}

/**
 * A ceiling: `min(gflops, intensity × gbps)`, either term missing when unknown.
 *
 * @example
 * ```ts
 * import type { Roof } from "./_roofline.ts";
 * const r: Roof = { id: "roof-wasm", seriesId: "wasm", label: "wasm", gflops: 20, gbps: 30, datasheet: false };
 * ```
 */
export interface Roof {
  readonly id: string;
  /** The series whose colour it takes. */
  readonly seriesId: string;
  readonly label: string;
  readonly gflops: number | null;
  readonly gbps: number | null;
  /** From the vendor's datasheet (`reports/specs.json`), not measured. */
  readonly datasheet: boolean;
}

/**
 * A roofline plot's data: one dtype's points per backend series, and the ceilings.
 *
 * @example
 * ```ts
 * import type { Roofline } from "./_roofline.ts";
 * const r: Roofline = { dtype: "f32", series: [], roofs: [] };
 * ```
 */
export interface Roofline {
  readonly dtype: Dtype;
  readonly series: readonly {
    readonly id: string;
    readonly backend: Backend;
    readonly residency: Residency;
    readonly points: readonly RooflinePoint[];
  }[];
  readonly roofs: readonly Roof[];
}

function bestAttained(report: Report, op: string, dtype: Dtype) {
  // WebGPU end-to-end rates are mostly the synchronisation: the kernel's own rate is resident.
  return bestSeries(report, op, dtype)
    .filter((s) => s.backend !== "webgpu" || s.residency === "device-resident")
    .flatMap((s) => {
      const usable = s.points.filter((p) => p.gflops > 0 && p.bytes > 0);
      if (usable.length === 0) return [];
      const best = usable.reduce((a, b) => (b.gflops > a.gflops ? b : a));
      const point: RooflinePoint = {
        op,
        intensity: best.flops / best.bytes,
        gflops: best.gflops,
        lo: best.gflops / (1 + best.relCi),
        hi: best.relCi < 1 ? best.gflops / (1 - best.relCi) : best.gflops * 10,
        size: best.size,
        variant: best.variant,
      };
      return [{ id: s.id, backend: s.backend, residency: s.residency, point }];
    });
}

function measuredRoof(
  report: Report,
  dtype: Dtype,
  backend: Backend,
  residency: Residency,
): Roof {
  const own = report.measurements.filter((m) =>
    m.backend === backend && (backend !== "webgpu" || m.residency === "device-resident")
  );
  const gflops = peakRates(own, []).peakGflops[dtype]?.value ?? null;
  const gbps = report.system.peakGbps[backend]?.value ?? null;
  return {
    id: `roof-${backend}`,
    seriesId: seriesId(backend, residency),
    label: seriesLabel(backend, residency),
    gflops,
    gbps,
    datasheet: false,
  };
}

function datasheetRoof(spec: SpecEntry, dtype: Dtype): Roof | null {
  const tflops = dtype === "f32" ? spec.fp32Tflops : dtype === "f16" ? spec.fp16Tflops : null;
  const gflops = tflops === null ? null : tflops * 1000;
  if (gflops === null && spec.memoryGBps === null) return null;
  return {
    id: "roof-datasheet",
    seriesId: "webgpu-device-resident",
    label: `webgpu datasheet (${spec.model})`,
    gflops,
    gbps: spec.memoryGBps,
    datasheet: true,
  };
}

/**
 * The rooflines of a report, one per dtype measured, in the order the ops were measured.
 *
 * @param report The report.
 * @param spec The adapter's datasheet entry from `reports/specs.json`, if any.
 * @returns The rooflines.
 * @example
 * ```ts ignore
 * import { rooflines } from "./_roofline.ts";
 * for (const r of rooflines(report, null)) console.log(r.dtype, r.roofs.map((x) => x.label));
 * ```
 */
export function rooflines(report: Report, spec: SpecEntry | null): Roofline[] {
  const dtypes = [...new Set(opGroups(report).map((g) => g.dtype))];
  return dtypes.map((dtype) => {
    const byId = new Map<
      string,
      { id: string; backend: Backend; residency: Residency; points: RooflinePoint[] }
    >();
    for (const group of opGroups(report).filter((g) => g.dtype === dtype)) {
      for (const { id, backend, residency, point } of bestAttained(report, group.op, dtype)) {
        const entry = byId.get(id) ?? { id, backend, residency, points: [] };
        byId.set(id, entry);
        entry.points.push(point);
      }
    }
    const series = [...byId.values()];
    const roofs = series.map((s) => measuredRoof(report, dtype, s.backend, s.residency))
      .filter((r) => r.gflops !== null || r.gbps !== null);
    const sheet = spec === null ? null : datasheetRoof(spec, dtype);
    return { dtype, series, roofs: sheet ? [...roofs, sheet] : roofs };
  });
}
