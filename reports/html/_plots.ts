/**
 * The report page's figures, in reading order: the "what to use where" map (the answer), the
 * time plots per op (medians with their 95 % intervals and the fitted cost model through them,
 * crossovers marked), and the rooflines (attained GFLOP/s against arithmetic intensity under the
 * measured and datasheet ceilings).
 *
 * @module
 */
import { formatCount, formatNumber, formatPercent } from "../../core/format.ts";
import { predictMs } from "../../core/costmodel.ts";
import type { CostFit, Crossover, Report } from "../../core/schema.ts";
import type { SpecEntry } from "../specs_file.ts";
import { escapeHtml as esc } from "./_escape.ts";
import { usageMap } from "./_map.ts";
import { usageMapSvg } from "./_map_svg.ts";
import { type Roof, type Roofline, rooflines } from "./_roofline.ts";
import {
  type BestSeries,
  bestSeries,
  type OpGroup,
  opGroups,
  seriesColor,
  seriesId,
  seriesLabel,
  workOf,
} from "./_series.ts";
import { crossoverKey } from "./_shared.ts";
import { logLogPlot, type PlotLine, type PlotMarker, type PlotSeries } from "./svg.ts";

/** Points a fitted curve is drawn through: enough for a smooth bend on a 620 px axis. */
const CURVE_SAMPLES = 48;

/**
 * The map section: the page's first figure.
 *
 * @param report The report.
 * @returns The section.
 * @example
 * ```ts ignore
 * import { mapSection } from "./_plots.ts";
 * console.log(mapSection(report).includes("data-summary-map")); // true
 * ```
 */
export function mapSection(report: Report): string {
  const rows = usageMap(report);
  if (rows.length === 0) {
    return `<section id="map"><h2>What to use where</h2><p>No successful measurement in this report.</p></section>`;
  }
  const f16 = rows.some((r) => r.cpuInF32);
  return `<section id="map"><h2>What to use where</h2>
<figure class="wide" data-summary-map="">${
    usageMapSvg(rows)
  }<figcaption>The fastest backend along each op's measured sizes (each bar has its own logarithmic size axis; numbers below it are where the answer changes). Striped: a tie, the backends' 95 % intervals overlap and either will do. Brackets: the report's crossovers with their 95 % intervals. Faded: the only backend measured there. WebGPU's data either travels with each call (end-to-end, what a CPU caller pays) or stays on the GPU between kernels; one bar when both give the same answer.${
    f16
      ? " No CPU backend computes in f16: f16 rows set WebGPU against the CPU running the problem in f32."
      : ""
  }</figcaption></figure></section>`;
}

function shortPair(c: Crossover): string {
  return c.pair === "cpu→webgpu"
    ? `cpu→gpu ${c.residency === "device-resident" ? "resident" : "e2e"}`
    : c.pair;
}

function crossoverMarkers(
  report: Report,
  group: OpGroup,
  baseline: Report | undefined,
  moved: ReadonlySet<string>,
): PlotMarker[] {
  const own = report.crossovers.filter((c) =>
    c.op === group.op && c.dtype === group.dtype && c.size !== null
  );
  const markers: PlotMarker[] = own.map((c) => ({
    id: crossoverKey(c),
    x: c.size!,
    band: c.ci,
    label: `${shortPair(c)}${c.tag === "extrapolated" ? " (extrap.)" : ""}`,
    color: seriesColor(seriesId(c.to, c.residency)),
    dashed: c.tag === "extrapolated",
    title: `${c.pair} ${c.residency}: ${formatCount(c.size)} ${c.unit}${
      c.ci ? ` [${formatCount(c.ci[0])}, ${formatCount(c.ci[1])}]` : ""
    } (${c.tag})`,
  }));
  for (const c of baseline?.crossovers ?? []) {
    if (c.op !== group.op || c.dtype !== group.dtype || c.size === null) continue;
    if (!moved.has(crossoverKey(c))) continue;
    markers.push({
      id: `baseline ${crossoverKey(c)}`,
      x: c.size,
      band: null,
      label: `baseline ${shortPair(c)}`,
      color: "#999999",
      dashed: true,
      title: `baseline ${c.pair} ${c.residency}: ${formatCount(c.size)} ${c.unit}`,
    });
  }
  return markers;
}

function fitOf(report: Report, group: OpGroup, s: BestSeries): CostFit | undefined {
  return report.fits.find((f) =>
    f.op === group.op && f.dtype === group.dtype && f.backend === s.backend &&
    f.residency === s.residency
  );
}

function fitTitle(fit: CostFit): string {
  const terms = [
    fit.gflops === null ? null : `flops / ${formatNumber(fit.gflops)} GFLOP/s`,
    fit.gbps === null ? null : `bytes / ${formatNumber(fit.gbps)} GB/s`,
  ].filter((t) => t !== null);
  const rate = terms.length === 2 ? ` + smooth max(${terms.join(", ")})` : ` + ${terms[0] ?? ""}`;
  const error = fit.cvMape === null ? "" : `; leave-one-out error ${formatPercent(fit.cvMape)}`;
  return `fitted: t = ${formatNumber(fit.t0Us)} µs${rate} (${fit.variant}${error})`;
}

/** The fitted cost model of a series, sampled over the sizes it was fitted on. */
function fittedCurve(
  fit: CostFit | undefined,
  work: ReturnType<typeof workOf>,
): PlotSeries["curve"] {
  if (fit === undefined) return undefined;
  const [lo, hi] = fit.sizeRange;
  if (!(lo > 0) || !(hi > lo)) return undefined;
  const points = Array.from({ length: CURVE_SAMPLES }, (_, i) => {
    const size = lo * (hi / lo) ** (i / (CURVE_SAMPLES - 1));
    const w = work(size);
    return w === null ? null : { x: size, y: predictMs(fit, w.flops, w.bytes) };
  }).filter((p) => p !== null);
  return { points, title: fitTitle(fit) };
}

function timeSeries(report: Report, group: OpGroup): PlotSeries[] {
  const work = workOf(report, group.op, group.dtype);
  return bestSeries(report, group.op, group.dtype).map((s) => {
    const label = seriesLabel(s.backend, s.residency);
    const curve = fittedCurve(fitOf(report, group, s), work);
    return {
      id: s.id,
      label,
      color: seriesColor(s.id),
      points: s.points.map((p) => ({
        x: p.size,
        y: p.ms,
        lo: p.ms * (1 - p.relCi),
        hi: p.ms * (1 + p.relCi),
        title: `${label} at ${formatCount(p.size)} ${group.unit}: ${formatNumber(p.ms)} ms ±${
          formatPercent(p.relCi)
        } (${p.variant})`,
      })),
      ...(curve ? { curve } : {}),
    };
  });
}

/**
 * The time plots: per op and dtype, the best variant's median per size and backend with its
 * 95 % interval, the fitted cost model through the points, and the crossovers.
 *
 * @param report The report.
 * @param baseline The baseline, whose moved crossovers are marked too.
 * @param moved Keys of the crossovers that moved since the baseline.
 * @returns The section.
 * @example
 * ```ts ignore
 * import { plotsSection } from "./_plots.ts";
 * console.log(plotsSection(report, undefined, new Set()).includes("data-plot")); // true
 * ```
 */
export function plotsSection(
  report: Report,
  baseline: Report | undefined,
  moved: ReadonlySet<string>,
): string {
  const groups = opGroups(report);
  if (groups.length === 0) return "";
  const figures = groups.map((g) => {
    const markers = crossoverMarkers(report, g, baseline, moved);
    const svg = logLogPlot({
      title: `${g.op} ${g.dtype}: time per run`,
      xLabel: g.unit,
      yLabel: "time per run (ms)",
      series: timeSeries(report, g),
      markers,
      attributes: { "data-plot": g.id },
    });
    return `<figure id="op-${esc(g.id)}">${svg}</figure>`;
  });
  return `<section id="plots"><h2>Time per run</h2>
<p class="sub">Dots: the fastest variant's median wall time per size, with its 95 % interval. Solid lines: the fitted cost model t = t0 + smooth max(flops / F, bytes / B) of the variant the fit kept, over the sizes it was fitted on (hover for its figures); a thin dashed line joins points that have no fit. Vertical lines: crossovers (shaded: 95 % CI; dashed: extrapolated beyond the measured sizes).</p>
<div class="plots">${figures.join("\n")}</div></section>`;
}

function roofLine(roof: Roof): PlotLine {
  const { gflops, gbps } = roof;
  const figures = [
    gflops === null ? null : `${formatNumber(gflops)} GFLOP/s`,
    gbps === null ? null : `${formatNumber(gbps)} GB/s`,
  ].filter((t) => t !== null).join(", ");
  return {
    id: roof.id,
    label: `${roof.label}: ${figures}`,
    color: seriesColor(roof.seriesId),
    dashed: roof.datasheet,
    y: (x) => Math.min(gflops ?? Infinity, gbps === null ? Infinity : x * gbps),
    knots: gflops !== null && gbps !== null ? [gflops / gbps] : [],
  };
}

function rooflinePlot(r: Roofline): string {
  return logLogPlot({
    title: `${r.dtype}: attained GFLOP/s against arithmetic intensity`,
    xLabel: "arithmetic intensity (FLOP/byte)",
    yLabel: "attained GFLOP/s",
    series: r.series.map((s) => {
      const label = seriesLabel(s.backend, s.residency);
      return {
        id: s.id,
        label,
        color: seriesColor(s.id),
        pointsOnly: true,
        points: s.points.map((p) => ({
          x: p.intensity,
          y: p.gflops,
          lo: p.lo,
          hi: p.hi,
          label: p.op,
          title: `${p.op} ${r.dtype} on ${label}: ${formatNumber(p.gflops)} GFLOP/s at ${
            formatNumber(p.intensity)
          } FLOP/byte (size ${formatCount(p.size)}, ${p.variant})`,
        })),
      };
    }),
    lines: r.roofs.map(roofLine),
    attributes: { "data-roofline": r.dtype, "data-x": "intensity" },
  });
}

function datasheetNote(report: Report, specs: RooflineSpecs): string {
  const adapter = report.adapter;
  if (adapter === null) return "";
  if (specs.file === null) {
    return " No datasheet peaks: there is no reports/specs.json (deno task specs:import makes it).";
  }
  return specs.entry === null
    ? ` No datasheet peaks: reports/specs.json has no entry for “${adapter.description}”.`
    : ` Dashed: the datasheet's peaks for ${specs.entry.model} (${specs.entry.source}).`;
}

/**
 * What the rooflines know of the vendor's figures: whether a specs file was read, and the
 * adapter's entry in it.
 *
 * @example
 * ```ts
 * import type { RooflineSpecs } from "./_plots.ts";
 * const s: RooflineSpecs = { file: null, entry: null };
 * ```
 */
export interface RooflineSpecs {
  readonly file: object | null;
  readonly entry: SpecEntry | null;
}

/**
 * The rooflines: per dtype, each op's best attained GFLOP/s per backend against its arithmetic
 * intensity, log–log, under each backend's measured ceilings (named in the legend) and the
 * adapter's datasheet ceilings when `reports/specs.json` lists it.
 *
 * @param report The report.
 * @param specs The specs file and the adapter's entry in it.
 * @returns The section.
 * @example
 * ```ts ignore
 * import { rooflineSection } from "./_plots.ts";
 * console.log(rooflineSection(report, { file: null, entry: null }).includes("data-roofline"));
 * ```
 */
export function rooflineSection(report: Report, specs: RooflineSpecs): string {
  const plots = rooflines(report, specs.entry);
  if (plots.length === 0) return "";
  return `<section id="roofline"><h2>Rooflines</h2>
<p class="sub">Each op's best attained rate on each backend (flops / median time, with its 95 % interval) against its arithmetic intensity, the flops per byte it must move; WebGPU device-resident, so the rate is the kernel's own. Lines: each backend's ceilings, min(peak compute, intensity × peak bandwidth), from its fastest matmul in that dtype and the report's peak bandwidth; a point far below its backend's roof has headroom.${
    datasheetNote(report, specs)
  }</p>
<div class="plots">${
    plots.map((r) => `<figure id="roofline-${esc(r.dtype)}">${rooflinePlot(r)}</figure>`).join(
      "\n",
    )
  }</div></section>`;
}
