/**
 * A calibration report as one self-contained HTML page: inline CSS and SVG, no scripts, nothing
 * fetched when viewed. Every string taken from the report is escaped (reports are untrusted).
 *
 * The page leads with the answer and keeps the reference for later: the "what to use where" map
 * (the first figure), the time plots, the rooflines, then the tables.
 *
 * Figures carry attributes for tools and tests: the map is `<figure data-summary-map>` with a
 * `<g data-map-row="op-dtype">` per bar and a `<g data-band>` per band (`data-tie` on ties); each
 * time plot is `<svg data-plot="op-dtype">`, each roofline `<svg data-roofline="dtype"
 * data-x="intensity">`; each series is a `<g data-series="backend[-residency]">` holding its
 * points' `.errorbar` paths and its fitted curve `<path data-fit>`; each crossover a
 * `<g data-marker>`, each ceiling a `<g data-line>`, and each tuning heatmap cell a
 * `<td data-cell>`.
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
import { formatSeconds } from "../../core/format.ts";
import { WEBGPU_NOT_CALIBRATED, webgpuCalibrated } from "../../calibrate/summary.ts";
import type { Report } from "../../core/schema.ts";
import { specForAdapter } from "../specs_file.ts";
import { escapeHtml as esc } from "./_escape.ts";
import { mapSection, plotsSection, rooflineSection, type RooflineSpecs } from "./_plots.ts";
import { comparisonFor, movedRows, type RenderOptions } from "./_shared.ts";
import {
  baselineSection,
  crossoverSection,
  failedSection,
  llmSection,
  machineSection,
  statusBadge,
  systemSection,
  tuningSection,
} from "./_tables.ts";

export type { RenderOptions } from "./_shared.ts";

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
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 12px; }
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: 0; background: #fff; border: 1px solid #e2e2e2; border-radius: 6px; padding: 6px; }
figcaption { font-size: 12px; color: #555; padding: 2px 6px 4px; }
svg { display: block; max-width: 100%; height: auto; font-size: 11px; font-family: inherit; }
svg .plot-title { font-size: 13px; font-weight: 600; }
svg .grid line { stroke: #e4e4e4; } svg .grid line.minor { stroke: #f3f3f3; }
svg .axis rect { stroke: #888; } svg .axis text { fill: #444; } svg .axis .label { fill: #222; font-size: 12px; }
svg .series path.fit { stroke-width: 2; } svg .series path.trace { stroke-width: 1; stroke-dasharray: 3 3; opacity: .7; }
svg .errorbar { stroke-width: 1.2; fill: none; } svg .marker .band { opacity: .13; } svg .legend .band { opacity: .13; }
svg .point-label { font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg .line path { stroke-width: 1.5; } svg .legend text { fill: #222; }
svg .marker line { stroke-width: 1.5; } svg .marker text { font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg line.line-key { stroke-width: 1.5; }
svg .map-row .row-name { font-size: 13px; font-weight: 600; fill: #1d1d1f; } svg .map-row .row-note { font-size: 10.5px; fill: #666; }
svg .map-row .edge { font-size: 10px; fill: #444; } svg .map-row .row-unit { font-size: 11px; font-weight: 400; fill: #777; }
svg .band-label { font-size: 11px; fill: #111; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-opacity: .8; }
svg .map-crossover path, svg .map-crossover line { stroke: #111; stroke-width: 1.5; } svg .separator { stroke: #e4e4e4; }
svg .map-legend text { font-size: 12px; fill: #222; }
.heat td.cell { text-align: center; min-width: 44px; font-variant-numeric: tabular-nums; white-space: nowrap; }
.heat td.empty { background: #f7f7f7; color: #bbb; }
.legend-list { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 6px 0 0; padding: 0; list-style: none; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; border: 1px solid #0002; }
.note { color: #666; font-size: 12px; }
code { font-size: 12px; background: #f0f0f0; padding: 0 3px; border-radius: 3px; }
footer { margin-top: 40px; color: #888; font-size: 12px; }
`;

function header(report: Report): string {
  const p = report.provenance;
  const m = report.machine;
  const a = report.adapter;
  const adapter = a === null
    ? "no GPU adapter"
    : `${esc(a.description)} via ${esc(a.backend)}${
      webgpuCalibrated(report) ? "" : ` (${esc(WEBGPU_NOT_CALIBRATED)})`
    }`;
  const warnings = p.warnings.length === 0
    ? ""
    : `<div class="warnings"><strong>Warnings</strong><ul>${
      p.warnings.map((w) => `<li>${esc(w)}</li>`).join("")
    }</ul></div>`;
  return `<header>
<h1>gpucal calibration: ${esc(report.slug)}</h1>
<p class="sub">${esc(m.cpuModel)} ×${m.cores} · ${adapter} · ${esc(p.date)} · ${
    formatSeconds(p.durationS)
  }${p.quick ? " (quick)" : ""} · gpucal ${esc(report.gpucal.version)}${
    report.gpucal.commit ? ` <code>${esc(report.gpucal.commit.slice(0, 12))}</code>` : ""
  } ${statusBadge(report)}</p>
${warnings}
</header>`;
}

function specsOf(report: Report, options: RenderOptions): RooflineSpecs {
  const file = options.specs ?? null;
  return {
    file,
    entry: file === null || report.adapter === null ? null : specForAdapter(file, report.adapter),
  };
}

/**
 * Renders a report as a self-contained HTML page. It opens with the answer: a header (machine,
 * adapter, run, warnings), then the "what to use where" map (per op, the fastest backend along
 * the sizes, ties shown as ties, crossovers with their intervals). Then per op × dtype a log–log
 * time plot (points with their 95 % intervals, the fitted cost model drawn through them,
 * crossovers as vertical lines), the rooflines (attained GFLOP/s against arithmetic intensity
 * under each backend's measured ceilings and the datasheet's), and the tables: crossovers, tuning
 * heatmap (one colour per variant across the page), system figures, the LLM validation, the
 * machine and run, the failed runs. With a baseline, what moved beyond noise is listed and
 * marked.
 *
 * @param report The report (untrusted strings are escaped).
 * @param options An optional baseline to compare with, and the vendor specs file's models.
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
    mapSection(report),
    comparison !== null && options.baseline ? baselineSection(comparison, options.baseline) : "",
    plotsSection(report, options.baseline, moved),
    rooflineSection(report, specsOf(report, options)),
    crossoverSection(report, moved),
    tuningSection(report),
    systemSection(report),
    llmSection(report),
    machineSection(report),
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
