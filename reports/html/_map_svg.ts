/**
 * Draws the "what to use where" map ({@linkcode usageMap}) as one SVG: a bar per op, dtype and
 * residency along its own log size axis, coloured by the fastest backend, striped where backends
 * tie, with the report's crossovers and their 95 % intervals marked on the bar.
 *
 * @module
 */
import { formatCount } from "../../core/format.ts";
import type { Backend } from "../../kernels/types.ts";
import type { Crossover } from "../../core/schema.ts";
import { escapeHtml as esc } from "./_escape.ts";
import { bandLabel, type UsageBand, type UsageRow } from "./_map.ts";
import { seriesColor, seriesId, seriesLabel } from "./_series.ts";

const W = 1300;
const BAR_X = 250;
const BAR_W = W - BAR_X - 24;
const BAR_H = 20;
const ROW_H = 50;
const LEGEND_H = 34;
/** Band labels need about this many px per character to fit inside their band. */
const CHAR_PX = 6.4;
/** Width per character of an edge label (10 px text). */
const EDGE_CHAR_PX = 6;
/** Least gap between two edge labels, px; a label that would come closer is left to the tooltip. */
const LABEL_GAP_PX = 6;

function px(v: number): string {
  return Number(v.toFixed(1)).toString();
}

function colorOf(backend: Backend, row: UsageRow): string {
  const residency = row.residency === "any" ? "end-to-end" : row.residency;
  return seriesColor(seriesId(backend, backend === "webgpu" ? residency : "end-to-end"));
}

/** The fill of a band: its backend's colour, or stripes of each tied backend's colour. */
function fillOf(band: UsageBand, row: UsageRow, patterns: Map<string, string>): string {
  const colors = band.backends.map((b) => colorOf(b, row));
  if (colors.length === 1) return colors[0]!;
  const id = `tie-${colors.map((c) => c.slice(1)).join("-")}`;
  if (!patterns.has(id)) {
    const stripe = 5;
    patterns.set(
      id,
      `<pattern id="${id}" width="${
        stripe * colors.length
      }" height="10" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">${
        colors.map((c, i) => `<rect x="${i * stripe}" width="${stripe}" height="10" fill="${c}"/>`)
          .join("")
      }</pattern>`,
    );
  }
  return `url(#${id})`;
}

function residencyText(row: UsageRow): string {
  if (row.residency === "any") return "either WebGPU residency";
  return row.residency === "end-to-end" ? "WebGPU end-to-end" : "WebGPU data on the GPU";
}

function crossoverMark(c: Crossover, x: (v: number) => number, y: number): string {
  const at = px(x(c.size!));
  const [lo, hi] = c.ci ?? [c.size!, c.size!];
  const a = px(x(lo)), b = px(x(hi));
  const title = `${c.pair} ${c.residency}: ${c.to} from ${formatCount(c.size)} ${c.unit}${
    c.ci ? ` (95 % CI ${formatCount(lo)}–${formatCount(hi)})` : ""
  }, ${c.tag}`;
  return `<g class="map-crossover" data-crossover="${
    esc(`${c.op} ${c.dtype} ${c.pair} ${c.residency}`)
  }"><title>${esc(title)}</title><path d="M${a} ${
    y - 4
  } v-4 H${b} v4" fill="none"/><line x1="${at}" x2="${at}" y1="${y - 8}" y2="${y + BAR_H}"/></g>`;
}

/** Labels under the bar at its ends and band edges, leaving out any that would overprint. */
function edgeLabels(row: UsageRow, x: (v: number) => number, y: number): string {
  const edges = [row.bands[0]!.from, ...row.bands.map((b) => b.to)];
  const labels = edges.map((edge, i) => {
    const text = formatCount(edge);
    const width = text.length * EDGE_CHAR_PX;
    const at = x(edge);
    const anchor = i === 0 ? "start" : i === edges.length - 1 ? "end" : "middle";
    const left = anchor === "start" ? at : anchor === "end" ? at - width : at - width / 2;
    return { text, at, anchor, left, right: left + width };
  });
  const kept: typeof labels = [];
  for (const [i, label] of labels.entries()) {
    const previous = kept[kept.length - 1];
    if (previous === undefined || label.left >= previous.right + LABEL_GAP_PX) {
      kept.push(label);
    } else if (i === labels.length - 1) {
      // The bar's end is worth more than the edge just before it.
      kept.pop();
      kept.push(label);
    }
  }
  return kept.map((l) =>
    `<text class="edge" x="${px(l.at)}" y="${y}" text-anchor="${l.anchor}">${l.text}</text>`
  ).join("");
}

function rowSvg(row: UsageRow, top: number, first: boolean, patterns: Map<string, string>): string {
  const lo = row.bands[0]!.from, hi = row.bands[row.bands.length - 1]!.to;
  const span = Math.log(hi / lo) || 1;
  const x = (v: number) => BAR_X + (Math.log(Math.min(Math.max(v, lo), hi) / lo) / span) * BAR_W;
  const barY = top + 10;
  const bands = row.bands.map((b) => {
    const x0 = x(b.from), x1 = x(b.to);
    const label = bandLabel(b);
    const fits = x1 - x0 > label.length * CHAR_PX + 8;
    return `<g class="band" data-band="${esc(b.backends.join("≈"))}"${
      b.backends.length > 1 ? ' data-tie=""' : ""
    }${b.alone ? ' data-alone=""' : ""}><title>${
      esc(`${label}: ${formatCount(b.from)}–${formatCount(b.to)} ${row.group.unit}`)
    }</title><rect x="${px(x0)}" y="${barY}" width="${
      px(Math.max(x1 - x0, 1))
    }" height="${BAR_H}" fill="${fillOf(b, row, patterns)}"${
      b.alone ? ' fill-opacity="0.45"' : ""
    }/>${
      fits
        ? `<text class="band-label" x="${px((x0 + x1) / 2)}" y="${
          barY + 14
        }" text-anchor="middle">${esc(label)}</text>`
        : ""
    }</g>`;
  }).join("");
  const inside = row.crossovers.filter((c) => c.size! >= lo && c.size! <= hi);
  const name = first
    ? `<text class="row-name" x="0" y="${barY + 9}">${
      esc(`${row.group.op} ${row.group.dtype}`)
    }<tspan class="row-unit" dx="6">${esc(row.group.unit)}</tspan></text>`
    : "";
  const note = `${residencyText(row)}${row.cpuInF32 ? "; CPU in f32" : ""}`;
  const separator = first && top > LEGEND_H
    ? `<line class="separator" x1="0" x2="${W}" y1="${top - 3}" y2="${top - 3}"/>`
    : "";
  return `<g class="map-row" data-map-row="${esc(row.group.id)}" data-residency="${row.residency}">
<title>${
    esc(`${row.group.op} ${row.group.dtype}, ${residencyText(row)}`)
  }</title>${separator}${name}
<text class="row-note" x="0" y="${barY + 23}">${esc(note)}</text>
${bands}${inside.map((c) => crossoverMark(c, x, barY)).join("")}${
    edgeLabels(row, x, barY + BAR_H + 12)
  }</g>`;
}

function legend(rows: readonly UsageRow[]): string {
  const seen = new Map<string, string>();
  for (const row of rows) {
    for (const b of row.bands.flatMap((band) => band.backends)) {
      const residency = row.residency === "any" ? "end-to-end" : row.residency;
      const id = seriesId(b, b === "webgpu" ? residency : "end-to-end");
      seen.set(id, seriesLabel(b, b === "webgpu" ? residency : "end-to-end"));
    }
  }
  const keys = [...seen].map(([id, label]) => ({ color: seriesColor(id), label }));
  const entries = [
    ...keys.map((k) => ({ swatch: `fill="${k.color}"`, label: k.label })),
    { swatch: `fill="url(#legend-tie)"`, label: "tie: 95 % intervals overlap" },
  ];
  let at = 0;
  const parts = entries.map((e) => {
    const part = `<rect x="${at}" y="4" width="14" height="14" ${e.swatch}/><text x="${
      at + 19
    }" y="15">${esc(e.label)}</text>`;
    at += 19 + e.label.length * CHAR_PX + 18;
    return part;
  });
  parts.push(
    `<g class="map-crossover"><path d="M${at} 12 v-4 h22 v4" fill="none"/><line x1="${
      at + 11
    }" x2="${at + 11}" y1="8" y2="20"/></g><text x="${
      at + 28
    }" y="15">crossover and its 95 % CI</text>`,
  );
  return `<g class="map-legend">${parts.join("")}</g>`;
}

/**
 * The map as an SVG string, `<svg data-map>` with a `<g data-map-row="op-dtype">` per bar, a
 * `<g data-band>` per band (`data-tie` on ties) and a `<g data-crossover>` per crossover.
 *
 * @param rows The rows of {@linkcode usageMap}.
 * @returns The SVG.
 * @example
 * ```ts ignore
 * import { usageMap } from "./_map.ts";
 * import { usageMapSvg } from "./_map_svg.ts";
 * console.log(usageMapSvg(usageMap(report)).startsWith("<svg")); // true
 * ```
 */
export function usageMapSvg(rows: readonly UsageRow[]): string {
  const patterns = new Map<string, string>();
  patterns.set(
    "legend-tie",
    `<pattern id="legend-tie" width="10" height="10" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="10" fill="#56b4e9"/><rect x="5" width="5" height="10" fill="#009e73"/></pattern>`,
  );
  const body = rows.map((row, i) =>
    rowSvg(row, LEGEND_H + i * ROW_H, i === 0 || rows[i - 1]!.group.id !== row.group.id, patterns)
  );
  const height = LEGEND_H + rows.length * ROW_H;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" role="img" data-map="">
<title>What to use where: the fastest backend along each op's sizes</title>
<defs>${[...patterns.values()].join("")}</defs>
${legend(rows)}
${body.join("\n")}
</svg>`;
}
