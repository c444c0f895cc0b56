/**
 * A calibration report as one self-contained HTML page: inline CSS and SVG, no scripts, nothing
 * fetched when viewed. Every string taken from the report is escaped (reports are untrusted).
 *
 * Plots carry attributes for tools and tests: each time plot is `<svg data-plot="op-dtype">`, each
 * rate plot `<svg data-roofline="op-dtype">`, each series a `<g data-series="backend[-residency]">`,
 * each crossover a `<g data-marker>`, each peak line a `<g data-level>`, and each tuning heatmap
 * cell a `<td data-cell>`.
 *
 * @example
 * ```ts ignore
 * import { renderHtml } from "./render.ts";
 * import { loadReport } from "../load.ts";
 * await Deno.writeTextFile("report.html", renderHtml(await loadReport("reports/x.json")));
 * ```
 *
 * @module
 */
import { formatFigure } from "../../calibrate/summary.ts";
import { compareReports, type Comparison, type ComparisonRow } from "../compare.ts";
import type { Crossover, Figure, LlmValidation, Report, Tuning } from "../schema.ts";
import { escapeHtml as esc } from "./_escape.ts";
import {
  type BestSeries,
  bestSeries,
  type OpGroup,
  opGroups,
  seriesColor,
  seriesId,
  seriesLabel,
} from "./_series.ts";
import { formatTick, logLogPlot, type PlotLevel, type PlotMarker, type PlotSeries } from "./svg.ts";

/**
 * Options of {@linkcode renderHtml} and `renderMarkdown`.
 *
 * @example
 * ```ts ignore
 * import type { RenderOptions } from "./render.ts";
 * const o: RenderOptions = { baseline: publishedReport };
 * ```
 */
export interface RenderOptions {
  /** An earlier report to compare with; what moved beyond noise is highlighted. */
  readonly baseline?: Report;
}

/**
 * A number in three significant digits, exponent form when very large or small.
 *
 * @param x The number, or null.
 * @returns The text; `"—"` for null.
 * @example
 * ```ts
 * import { num } from "./render.ts";
 * console.log(num(1234567), num(0.5), num(null)); // "1.23e+6 0.500 —"
 * ```
 */
export function num(x: number | null): string {
  if (x === null) return "—";
  if (x === 0) return "0";
  const a = Math.abs(x);
  return a >= 1e5 || a < 1e-2 ? x.toExponential(2) : x.toPrecision(3);
}

/**
 * Compares the report with a baseline for rendering: reports of other machines are compared
 * too (the page says so), since a reader asked for the comparison.
 *
 * @param report The current report.
 * @param baseline The baseline, if any.
 * @returns The comparison, or null without a baseline.
 * @example
 * ```ts ignore
 * import { comparisonFor } from "./render.ts";
 * console.log(comparisonFor(report, undefined)); // null
 * ```
 */
export function comparisonFor(report: Report, baseline: Report | undefined): Comparison | null {
  return baseline === undefined
    ? null
    : compareReports(baseline, report, { allowDifferentMachine: true });
}

/**
 * The comparison rows worth a reader's attention: beyond noise, or present on one side only.
 *
 * @param comparison A comparison.
 * @returns The rows.
 * @example
 * ```ts ignore
 * import { movedRows } from "./render.ts";
 * console.log(movedRows(comparison).length);
 * ```
 */
export function movedRows(comparison: Comparison): ComparisonRow[] {
  return comparison.rows.filter((r) =>
    r.beyondNoise || (r.baseline === null) !== (r.current === null)
  );
}

/**
 * The key {@linkcode compareReports} gives a crossover.
 *
 * @param c A crossover.
 * @returns `"op dtype pair residency"`.
 * @example
 * ```ts ignore
 * import { crossoverKey } from "./render.ts";
 * console.log(crossoverKey(report.crossovers[0]!)); // "matmul f32 js→wasm end-to-end"
 * ```
 */
export function crossoverKey(c: Crossover): string {
  return `${c.op} ${c.dtype} ${c.pair} ${c.residency}`;
}

const CSS = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
main { max-width: 1360px; margin: 0 auto; padding: 20px 24px 60px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: #555; margin: 0 0 14px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid #e2e2e2; border-radius: 6px; padding: 10px 14px; }
.card h3 { margin: 0 0 6px; font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #666; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
dt { color: #666; } dd { margin: 0; overflow-wrap: anywhere; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600; font-size: 12px; }
.status.ok { background: #e3f4e8; color: #17632f; } .status.bad { background: #fde8e4; color: #9c2a12; }
.warnings { background: #fff8e1; border: 1px solid #f0d98a; border-radius: 6px; padding: 8px 14px; margin-top: 12px; }
.warnings ul { margin: 4px 0; padding-left: 20px; }
table { border-collapse: collapse; background: #fff; font-size: 13px; }
th, td { border: 1px solid #e2e2e2; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.regressed td { background: #fde8e4; } tr.improved td { background: #e3f4e8; }
tr.moved td:first-child { box-shadow: inset 4px 0 #d55e00; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(640px, 1fr)); gap: 12px; }
figure { margin: 0; background: #fff; border: 1px solid #e2e2e2; border-radius: 6px; padding: 6px; }
figcaption { font-size: 12px; color: #555; padding: 2px 6px 4px; }
svg { display: block; max-width: 100%; height: auto; font-size: 11px; font-family: inherit; }
svg .plot-title { font-size: 13px; font-weight: 600; }
svg .grid line { stroke: #e4e4e4; } svg .grid line.minor { stroke: #f3f3f3; }
svg .axis rect { stroke: #888; } svg .axis text { fill: #444; } svg .axis .label { fill: #222; font-size: 12px; }
svg .series path { stroke-width: 2; } svg .band { opacity: .13; }
svg .marker line { stroke-width: 1.5; } svg .marker text { font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg .level line, svg line.level-key { stroke-dasharray: 2 3; stroke-width: 1.5; } svg .legend text { fill: #222; }
.heat td.cell { text-align: center; min-width: 44px; font-variant-numeric: tabular-nums; }
.heat td.empty { background: #f7f7f7; color: #bbb; }
.legend-list { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 6px 0 0; padding: 0; list-style: none; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; border: 1px solid #0002; }
.note { color: #666; font-size: 12px; }
code { font-size: 12px; background: #f0f0f0; padding: 0 3px; border-radius: 3px; }
footer { margin-top: 40px; color: #888; font-size: 12px; }
`;

function figureCell(f: Figure): string {
  return esc(formatFigure(f));
}

function table(header: readonly string[], rows: readonly string[], cls = ""): string {
  return `<table${cls ? ` class="${cls}"` : ""}><thead><tr>${
    header.map((h) => `<th>${esc(h)}</th>`).join("")
  }</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function header(report: Report): string {
  const p = report.provenance;
  const m = report.machine;
  const a = report.adapter;
  const ok = report.measurements.filter((x) => x.state === "ok").length;
  const failed = report.measurements.filter((x) => x.state === "failed").length;
  const unsupported = report.measurements.length - ok - failed;
  const status = p.complete
    ? `<span class="status ok">complete</span>`
    : `<span class="status bad">incomplete: ${esc(p.stopReason)}</span>`;
  const commit = report.gpucal.commit === null
    ? "unknown commit"
    : report.gpucal.commit.slice(0, 12);
  const adapter = a === null
    ? `<p>No WebGPU adapter: CPU backends only.</p>`
    : `<dl><dt>description</dt><dd>${esc(a.description || "(none)")}</dd><dt>vendor</dt><dd>${
      esc(a.vendor || "(none)")
    }${a.architecture ? ` · ${esc(a.architecture)}` : ""}${
      a.device ? ` · ${esc(a.device)}` : ""
    }</dd><dt>backend</dt><dd>${esc(a.backend)} (${esc(a.backendSource)})${
      a.software ? " · software rasteriser" : ""
    }</dd><dt>features</dt><dd>${esc(a.features.join(", ") || "(none)")}</dd></dl>`;
  const warnings = p.warnings.length === 0
    ? ""
    : `<div class="warnings"><strong>Warnings</strong><ul>${
      p.warnings.map((w) => `<li>${esc(w)}</li>`).join("")
    }</ul></div>`;
  return `<header>
<h1>gpucal calibration: ${esc(report.slug)}</h1>
<p class="sub">${esc(m.cpuModel)} ×${m.cores} · ${
    a === null ? "no GPU adapter" : `${esc(a.description)} via ${esc(a.backend)}`
  } · ${esc(p.date)} ${status}</p>
<div class="cards">
<div class="card"><h3>Machine</h3><dl><dt>CPU</dt><dd>${
    esc(m.cpuModel)
  }</dd><dt>cores</dt><dd>${m.cores}</dd><dt>memory</dt><dd>${
    num(m.memoryGiB)
  } GiB</dd><dt>OS</dt><dd>${esc(m.os)} ${esc(m.osRelease)} (${
    esc(m.arch)
  })</dd><dt>fingerprint</dt><dd><code>${esc(report.fingerprint)}</code></dd></dl></div>
<div class="card"><h3>Adapter</h3>${adapter}</div>
<div class="card"><h3>Provenance</h3><dl><dt>date</dt><dd>${esc(p.date)}</dd><dt>gpucal</dt><dd>${
    esc(report.gpucal.version)
  } (<code>${esc(commit)}</code>), Deno ${esc(p.denoVersion)}</dd><dt>duration</dt><dd>${
    num(p.durationS)
  } s${p.budgetS === null ? "" : ` of a ${num(p.budgetS)} s budget`}${
    p.quick ? " · quick run" : ""
  }${p.noisy ? " · noisy machine" : ""}</dd><dt>status</dt><dd>${status} (${
    esc(p.stopReason)
  })</dd><dt>measurements</dt><dd>${ok} ok, ${failed} failed, ${unsupported} unsupported</dd><dt>command</dt><dd><code>${
    esc(p.command.join(" "))
  }</code></dd></dl></div>
</div>
${warnings}
</header>`;
}

function baselineSection(comparison: Comparison, baseline: Report): string {
  const rows = movedRows(comparison);
  const reasons = comparison.reasons.length === 0
    ? ""
    : `<ul>${comparison.reasons.map((r) => `<li>${esc(r)}</li>`).join("")}</ul>`;
  const body = !comparison.comparable
    ? `<p>Not comparable.</p>`
    : rows.length === 0
    ? `<p>Nothing moved beyond noise in ${comparison.rows.length} compared figures (tolerance ${
      (comparison.tolerance * 100).toFixed(0)
    } %).</p>`
    : `<p>${rows.length} of ${comparison.rows.length} figures moved beyond noise or appear on one side only (tolerance ${
      (comparison.tolerance * 100).toFixed(0)
    } %). Red: regression (a crossover moving either way counts); green: improvement.</p>` +
      table(
        ["kind", "figure", "baseline", "current", "change", "note"],
        rows.map((r) =>
          `<tr data-moved="${esc(r.key)}" class="${
            r.regressed ? "regressed" : r.beyondNoise ? "improved" : ""
          }"><td>${esc(r.kind)}</td><td>${esc(r.key)}</td><td class="n">${esc(num(r.baseline))} ${
            esc(r.unit)
          }</td><td class="n">${esc(num(r.current))} ${esc(r.unit)}</td><td class="n">${
            r.change === null ? "" : `${r.change >= 0 ? "+" : ""}${(r.change * 100).toFixed(1)} %`
          }</td><td>${esc(r.note)}</td></tr>`
        ),
      );
  return `<section id="baseline"><h2>Changes since the baseline</h2>
<p class="sub">Baseline <code>${esc(baseline.slug)}</code> from ${
    esc(baseline.provenance.date)
  }.</p>${reasons}${body}</section>`;
}

function crossoverSection(report: Report, moved: ReadonlySet<string>): string {
  if (report.crossovers.length === 0) {
    return `<section id="crossovers"><h2>Crossovers</h2><p>No crossover in this report.</p></section>`;
  }
  const rows = report.crossovers.map((c) => {
    const cls = moved.has(crossoverKey(c)) ? ` class="moved"` : "";
    return `<tr${cls}><td>${esc(c.op)}</td><td>${esc(c.dtype)}</td><td>${esc(c.pair)}</td><td>${
      esc(c.residency)
    }</td><td class="n">${esc(num(c.size))}</td><td class="n">${
      c.ci ? `${esc(num(c.ci[0]))} – ${esc(num(c.ci[1]))}` : ""
    }</td><td>${esc(c.unit)}</td><td>${
      c.size === null ? esc(c.reason ?? "no crossing") : esc(`${c.tag}, ${c.from} → ${c.to}`)
    }</td></tr>`;
  });
  return `<section id="crossovers"><h2>Crossovers</h2>
<p class="sub">The size from which the second backend is faster than the first (best variant of each).${
    moved.size > 0 ? " Rows marked on the left moved since the baseline." : ""
  }</p>
${table(["op", "dtype", "pair", "residency", "size", "95 % CI", "unit", "note"], rows)}</section>`;
}

function shortPair(c: Crossover): string {
  const pair = c.pair === "cpu→webgpu" ? "cpu→gpu" : c.pair;
  return c.pair === "cpu→webgpu"
    ? `${pair} ${c.residency === "device-resident" ? "resident" : "e2e"}`
    : pair;
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
    title: `${c.pair} ${c.residency}: ${num(c.size)} ${c.unit}${
      c.ci ? ` [${num(c.ci[0])}, ${num(c.ci[1])}]` : ""
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
      title: `baseline ${c.pair} ${c.residency}: ${num(c.size)} ${c.unit}`,
    });
  }
  return markers;
}

function timeSeries(series: readonly BestSeries[], unit: string): PlotSeries[] {
  return series.map((s) => ({
    id: s.id,
    label: seriesLabel(s.backend, s.residency),
    color: seriesColor(s.id),
    points: s.points.map((p) => ({
      x: p.size,
      y: p.ms,
      title: `${seriesLabel(s.backend, s.residency)} at ${num(p.size)} ${unit}: ${num(p.ms)} ms ±${
        (p.relCi * 100).toFixed(1)
      } % (${p.variant})`,
    })),
  }));
}

function rateSeries(series: readonly BestSeries[], compute: boolean, unit: string): PlotSeries[] {
  const rateUnit = compute ? "GFLOP/s" : "GB/s";
  return series.map((s) => ({
    id: s.id,
    label: seriesLabel(s.backend, s.residency),
    color: seriesColor(s.id),
    points: s.points.map((p) => {
      const y = compute ? p.gflops : p.gbps;
      return {
        x: p.size,
        y,
        title: `${seriesLabel(s.backend, s.residency)} at ${num(p.size)} ${unit}: ${
          num(y)
        } ${rateUnit} (${p.variant})`,
      };
    }),
  }));
}

function ceilings(report: Report, group: OpGroup, compute: boolean): PlotLevel[] {
  if (compute) {
    const f = report.system.peakGflops[group.dtype];
    return f?.value == null ? [] : [{
      id: `peak-gflops-${group.dtype}`,
      y: f.value,
      label: `peak ${group.dtype} ${num(f.value)} GFLOP/s`,
      color: "#444444",
    }];
  }
  return Object.entries(report.system.peakGbps).flatMap(([backend, f]) =>
    f?.value == null ? [] : [{
      id: `peak-gbps-${backend}`,
      y: f.value,
      label: `${backend} peak ${num(f.value)} GB/s`,
      color: seriesColor(backend === "webgpu" ? "webgpu-device-resident" : backend),
    }]
  );
}

function isComputeOp(op: string): boolean {
  return op === "matmul";
}

function plotsSection(
  report: Report,
  baseline: Report | undefined,
  moved: ReadonlySet<string>,
): string {
  const groups = opGroups(report);
  if (groups.length === 0) {
    return `<section id="plots"><h2>Time and rate per op</h2><p>No successful measurement in this report.</p></section>`;
  }
  const parts = groups.map((g) => {
    const series = bestSeries(report, g.op, g.dtype);
    const compute = isComputeOp(g.op);
    const markers = crossoverMarkers(report, g, baseline, moved);
    const time = logLogPlot({
      title: `${g.op} ${g.dtype}: time per run`,
      xLabel: g.unit,
      yLabel: "time per run (ms)",
      series: timeSeries(series, g.unit),
      markers,
      attributes: { "data-plot": g.id },
    });
    const markerNote = markers.length > 0
      ? "Vertical lines: crossovers (shaded: 95 % CI; dashed: extrapolated beyond the measured sizes)."
      : "No crossover within reach of the measured sizes: see the crossover table for why.";
    const rate = logLogPlot({
      title: `${g.op} ${g.dtype}: effective ${compute ? "GFLOP/s" : "GB/s"} against peaks`,
      xLabel: g.unit,
      yLabel: compute ? "effective GFLOP/s" : "effective GB/s",
      series: rateSeries(series, compute, g.unit),
      levels: ceilings(report, g, compute),
      attributes: { "data-roofline": g.id },
    });
    return `<h3 id="op-${esc(g.id)}">${esc(g.op)} ${esc(g.dtype)}</h3>
<div class="plots"><figure>${time}<figcaption>Best variant per size, median wall time. ${markerNote}</figcaption></figure>
<figure>${rate}<figcaption>Effective ${
      compute ? "compute rate (flops / time)" : "bandwidth (bytes moved / time)"
    } of the same points; horizontal lines: the measured ${
      compute ? "peak compute" : "peak bandwidth per backend"
    }.</figcaption></figure></div>`;
  });
  return `<section id="plots"><h2>Time and rate per op</h2>${parts.join("\n")}</section>`;
}

function systemSection(report: Report): string {
  const s = report.system;
  const rows: [string, Figure][] = [
    ["sync round trip (submit + wait)", s.dispatchRoundTripMs],
    ["per dispatch in one submit", s.perDispatchUs],
    ...(s.encodePerDispatchUs
      ? [["host recording of one dispatch", s.encodePerDispatchUs] as [string, Figure]]
      : []),
    ["upload", s.uploadGBps],
    ["readback", s.readbackGBps],
    ["device copy", s.copyGBps],
    ["pipeline compile", s.compileMs],
    ...Object.entries(s.peakGflops).map(([d, f]) => [`peak compute ${d}`, f!] as [string, Figure]),
    ...Object.entries(s.peakGbps).map(([b, f]) => [`peak bandwidth ${b}`, f!] as [string, Figure]),
  ];
  return `<section id="system"><h2>System figures and peaks</h2>${
    table(
      ["figure", "value [95 % CI] (provenance)", "source"],
      rows.map(([name, f]) =>
        `<tr><td>${esc(name)}</td><td>${figureCell(f)}</td><td class="note">${
          esc(f.source ?? "")
        }</td></tr>`
      ),
    )
  }</section>`;
}

/** Pastel colours, dark text stays readable on each. */
const VARIANT_COLORS = [
  "#a6cee3",
  "#b2df8a",
  "#fdbf6f",
  "#cab2d6",
  "#fb9a99",
  "#ffff99",
  "#8dd3c7",
  "#bebada",
  "#fccde5",
  "#d9d9d9",
  "#ccebc5",
  "#ffed6f",
];

/** Most heatmap columns; more measured sizes are thinned evenly so the table stays readable. */
const MAX_COLUMNS = 24;

/** The measured sizes of an op and dtype, thinned to at most {@linkcode MAX_COLUMNS}. */
function columns(sizes: readonly number[]): number[] {
  const distinct = [...new Set(sizes.filter((s) => s > 0))].sort((a, b) => a - b);
  if (distinct.length <= MAX_COLUMNS) return distinct;
  const step = (distinct.length - 1) / (MAX_COLUMNS - 1);
  return Array.from({ length: MAX_COLUMNS }, (_, i) => distinct[Math.round(i * step)]!);
}

function sizeLabel(size: number): string {
  return Number.isInteger(size) && size < 10_000 ? String(size) : formatTick(size);
}

/** The tuning row covering `size`; when ranges overlap, the one centred nearest to it. */
function rowAt(rows: readonly Tuning[], size: number): Tuning | null {
  let pick: Tuning | null = null;
  let distance = Infinity;
  for (const t of rows) {
    if (size < t.sizeMin || size > t.sizeMax) continue;
    const d = Math.abs(Math.log(size) - Math.log(Math.max(t.sizeMin, 1e-12) * t.sizeMax) / 2);
    if (d < distance) {
      distance = d;
      pick = t;
    }
  }
  return pick;
}

function heatmap(report: Report, group: OpGroup, rows: readonly Tuning[]): string {
  const sizes = report.measurements.filter((m) =>
    m.state === "ok" && m.op === group.op && m.dtype === group.dtype
  ).map((m) => m.size);
  const cols = columns(sizes);
  const colors = new Map<string, string>();
  for (const t of rows) {
    if (!colors.has(t.best.variant)) {
      colors.set(t.best.variant, VARIANT_COLORS[colors.size % VARIANT_COLORS.length]!);
    }
  }
  const keys = [...new Set(rows.map((t) => seriesId(t.backend, t.residency)))];
  const body = keys.map((key) => {
    const mine = rows.filter((t) => seriesId(t.backend, t.residency) === key);
    const first = mine[0]!;
    const cells = cols.map((size) => {
      const pick = rowAt(mine, size);
      if (pick === null) return `<td class="cell empty">·</td>`;
      const margin = pick.runnerUp === null ? null : pick.runnerUp.ms / pick.best.ms - 1;
      const title = `${pick.best.variant}: ${num(pick.best.ms)} ms${
        pick.runnerUp ? `; runner-up ${pick.runnerUp.variant}: ${num(pick.runnerUp.ms)} ms` : ""
      } (sizes ${num(pick.sizeMin)}–${num(pick.sizeMax)} ${pick.unit}, ${pick.tag})`;
      return `<td class="cell" data-cell="" data-variant="${
        esc(pick.best.variant)
      }" style="background:${colors.get(pick.best.variant)}" title="${esc(title)}">${
        margin === null ? "only" : `+${(margin * 100).toFixed(0)} %`
      }</td>`;
    }).join("");
    return `<tr><th>${esc(seriesLabel(first.backend, first.residency))}</th>${cells}</tr>`;
  });
  const legend = [...colors].map(([variant, color]) =>
    `<li><span class="swatch" style="background:${color}"></span><code>${esc(variant)}</code></li>`
  ).join("");
  return `<h3>${esc(group.op)} ${esc(group.dtype)}</h3>
<table class="heat" data-heatmap="${esc(group.id)}"><thead><tr><th>backend \\ ${
    esc(group.unit)
  }</th>${
    cols.map((size) => `<th class="n">${sizeLabel(size)}</th>`).join("")
  }</tr></thead><tbody>${body.join("")}</tbody></table>
<ul class="legend-list">${legend}</ul>`;
}

function tuningSection(report: Report): string {
  const intro =
    `<p class="sub">Columns: the measured sizes. Colour: the fastest variant there (legend below each table). Text: how much slower the runner-up is (“only”: a single variant was timed). Hover a cell for times.</p>`;
  if (report.tuning.length === 0) {
    return `<section id="tuning"><h2>Tuning</h2><p>No variant search in this report${
      report.provenance.quick ? " (quick runs skip it)" : ""
    }.</p></section>`;
  }
  const groups = new Map<string, { group: OpGroup; rows: Tuning[] }>();
  for (const t of report.tuning) {
    const id = `${t.op}-${t.dtype}`;
    const entry = groups.get(id) ??
      { group: { op: t.op, dtype: t.dtype, id, unit: t.unit || "size" }, rows: [] };
    groups.set(id, entry);
    entry.rows.push(t);
  }
  return `<section id="tuning"><h2>Tuning: best variant per size</h2>${intro}${
    [...groups.values()].map(({ group, rows }) => heatmap(report, group, rows)).join("\n")
  }</section>`;
}

/**
 * The estimate a validation made from the sweep's figures alone, when it also timed the kernels
 * alongside the decode (`details.sweepEstimate`); null for older reports or malformed details.
 *
 * @param v One of `report.llm.validations`.
 * @returns Its sweep-only tokens/s and error, or null.
 * @example
 * ```ts
 * import { sweepEstimateOf } from "./render.ts";
 * const v = { model: "m", quant: "f32", measuredTokensPerSec: 10, estimatedTokensPerSec: 9.5, error: -0.05,
 *   details: { sweepEstimate: { tokensPerSec: 7, error: -0.3 } } };
 * console.log(sweepEstimateOf(v)); // { tokensPerSec: 7, error: -0.3 }
 * ```
 */
export function sweepEstimateOf(
  v: LlmValidation,
): { tokensPerSec: number; error: number } | null {
  const s = v.details?.sweepEstimate;
  if (typeof s !== "object" || s === null || Array.isArray(s)) return null;
  const { tokensPerSec, error } = s as Record<string, unknown>;
  return typeof tokensPerSec === "number" && typeof error === "number"
    ? { tokensPerSec, error }
    : null;
}

function signedPercent(x: number): string {
  return `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} %`;
}

function llmSection(report: Report): string {
  const validations = report.llm?.validations ?? [];
  if (validations.length === 0) return "";
  const rows = validations.map((v) => {
    const sweep = sweepEstimateOf(v);
    return `<tr><td>${esc(v.model)}</td><td>${esc(v.quant)}</td><td class="n">${
      num(v.estimatedTokensPerSec)
    }</td><td class="n">${num(v.measuredTokensPerSec)}</td><td class="n">${
      signedPercent(v.error)
    }</td><td class="n">${
      sweep ? `${num(sweep.tokensPerSec)} (${signedPercent(sweep.error)})` : "—"
    }</td></tr>`;
  });
  return `<section id="llm"><h2>LLM decode: estimate against measurement</h2>
<p class="sub">Tokens per second estimated from measured kernel times, and measured on a synthetic decode; error = estimated / measured − 1. The estimate prices the kernels it was timed alongside the decode, so both see the machine in the same state; the last column prices them from the sweep's figures, taken earlier, and so adds the machine's drift.</p>
${
    table([
      "model",
      "quant",
      "estimated tok/s",
      "measured tok/s",
      "error",
      "from the sweep (error)",
    ], rows)
  }</section>`;
}

function failedSection(report: Report): string {
  const failed = report.measurements.filter((m) => m.state === "failed");
  if (failed.length === 0) return "";
  const rows = failed.slice(0, 200).map((m) =>
    `<tr><td>${esc(m.op)}</td><td>${esc(m.dtype)}</td><td>${esc(m.backend)}</td><td><code>${
      esc(m.variant)
    }</code></td><td class="n">${Number.isInteger(m.size) ? m.size : num(m.size)}</td><td>${
      esc(m.error)
    }</td></tr>`
  );
  return `<section id="failed"><h2>Failed measurements</h2>
<details><summary>${failed.length} kernel run${
    failed.length === 1 ? "" : "s"
  } gave a wrong answer or errored, and were not timed</summary>
${table(["op", "dtype", "backend", "variant", "size", "error"], rows)}</details></section>`;
}

/**
 * Renders a report as a self-contained HTML page: header (machine, adapter, provenance, status,
 * warnings), the crossover table, per op × dtype a log–log time plot (best variant per size and
 * backend, crossovers as vertical lines with shaded 95 % CI, dashed when extrapolated) and a
 * rate plot against the measured peaks, the system figures, the tuning heatmap, the LLM
 * validation table and the failed runs. With a baseline, what moved beyond noise is listed and
 * marked.
 *
 * @param report The report (untrusted strings are escaped).
 * @param options An optional baseline to compare with.
 * @returns The HTML document.
 * @example
 * ```ts ignore
 * import { renderHtml } from "./render.ts";
 * const html = renderHtml(report, { baseline });
 * console.log(html.startsWith("<!doctype html>")); // true
 * ```
 */
export function renderHtml(report: Report, options: RenderOptions = {}): string {
  const comparison = comparisonFor(report, options.baseline);
  const moved = new Set(
    comparison === null
      ? []
      : movedRows(comparison).filter((r) => r.kind === "crossover").map((r) => r.key),
  );
  const sections = [
    header(report),
    comparison !== null && options.baseline ? baselineSection(comparison, options.baseline) : "",
    crossoverSection(report, moved),
    plotsSection(report, options.baseline, moved),
    systemSection(report),
    tuningSection(report),
    llmSection(report),
    failedSection(report),
  ].filter((s) => s !== "");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>gpucal report: ${esc(report.slug)}</title>
<style>${CSS}</style>
</head>
<body><main>
${sections.join("\n")}
<footer>Generated by gpucal ${
    esc(report.gpucal.version)
  } from a schema version ${report.schemaVersion} report. Self-contained: no scripts, nothing fetched.</footer>
</main></body>
</html>
`;
}
