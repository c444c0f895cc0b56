/**
 * Log–log line plots as self-contained SVG strings: decade ticks with labels, a legend, labelled
 * axes with units, vertical markers with shaded interval bands, and horizontal reference levels.
 * No scripts and no external resources, so a page embedding them renders offline.
 *
 * @example
 * ```ts
 * import { logLogPlot } from "./svg.ts";
 * const svg = logLogPlot({
 *   title: "matmul f32",
 *   xLabel: "n",
 *   yLabel: "time (ms)",
 *   attributes: { "data-plot": "matmul-f32" },
 *   series: [{ id: "wasm", label: "wasm", color: "#0072b2", points: [{ x: 16, y: 0.01 }, { x: 512, y: 40 }] }],
 * });
 * console.log(svg.startsWith("<svg")); // true
 * ```
 *
 * @module
 */
import { escapeHtml } from "./_escape.ts";

/**
 * One point of a series; `title` becomes its hover tooltip.
 *
 * @example
 * ```ts
 * import type { PlotPoint } from "./svg.ts";
 * const p: PlotPoint = { x: 64, y: 0.2, title: "64: 0.2 ms" };
 * ```
 */
export interface PlotPoint {
  readonly x: number;
  readonly y: number;
  readonly title?: string;
}

/**
 * A line of points, drawn as a `<g data-series="id">` holding a `<path>` and point markers.
 *
 * @example
 * ```ts
 * import type { PlotSeries } from "./svg.ts";
 * const s: PlotSeries = { id: "js", label: "js", color: "#e69f00", points: [] };
 * ```
 */
export interface PlotSeries {
  /** Value of the group's `data-series` attribute. */
  readonly id: string;
  /** Legend text. */
  readonly label: string;
  /** CSS colour of the line and markers. */
  readonly color: string;
  readonly points: readonly PlotPoint[];
  /** Draw the line dashed. */
  readonly dashed?: boolean;
}

/**
 * A vertical line at `x` with an optional shaded interval, drawn as `<g data-marker="id">`.
 *
 * @example
 * ```ts
 * import type { PlotMarker } from "./svg.ts";
 * const m: PlotMarker = { id: "cpu→webgpu", x: 200, band: [170, 230], label: "cpu→gpu", color: "#0072b2", dashed: false };
 * ```
 */
export interface PlotMarker {
  readonly id: string;
  readonly x: number;
  /** The interval to shade, e.g. a 95 % CI, or null. */
  readonly band: readonly [number, number] | null;
  readonly label: string;
  readonly color: string;
  /** Dashed line, e.g. for an extrapolated value. */
  readonly dashed: boolean;
  /** Hover tooltip. */
  readonly title?: string;
}

/**
 * A horizontal reference line at `y`, drawn as `<g data-level="id">`.
 *
 * @example
 * ```ts
 * import type { PlotLevel } from "./svg.ts";
 * const l: PlotLevel = { id: "peak-f32", y: 14, label: "peak 14 GFLOP/s", color: "#555" };
 * ```
 */
export interface PlotLevel {
  readonly id: string;
  readonly y: number;
  readonly label: string;
  readonly color: string;
}

/**
 * What {@linkcode logLogPlot} draws.
 *
 * @example
 * ```ts
 * import type { LogLogPlotSpec } from "./svg.ts";
 * const spec: LogLogPlotSpec = { title: "t", xLabel: "x", yLabel: "y", series: [], attributes: {} };
 * ```
 */
export interface LogLogPlotSpec {
  readonly title: string;
  /** x-axis label, with its unit. */
  readonly xLabel: string;
  /** y-axis label, with its unit. */
  readonly yLabel: string;
  readonly series: readonly PlotSeries[];
  readonly markers?: readonly PlotMarker[];
  readonly levels?: readonly PlotLevel[];
  /** Extra attributes of the root `<svg>`, e.g. `{ "data-plot": "matmul-f32" }`. */
  readonly attributes: Readonly<Record<string, string>>;
}

/** Plot geometry, px: the legend sits in the right margin. */
const W = 700;
const H = 380;
const M = { left: 62, right: 196, top: 30, bottom: 46 } as const;
const PLOT_W = W - M.left - M.right;
const PLOT_H = H - M.top - M.bottom;

/**
 * A tick value as a short label: `1k`, `10M`, `0.5`, `1e-4`.
 *
 * @param v A positive number.
 * @returns The label.
 * @example
 * ```ts
 * import { formatTick } from "./svg.ts";
 * console.log(formatTick(4096), formatTick(1e6), formatTick(0.001)); // "4.1k 1M 1e-3"
 * ```
 */
export function formatTick(v: number): string {
  const si: readonly [number, string][] = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [scale, suffix] of si) {
    if (v >= scale) return `${round2(v / scale)}${suffix}`;
  }
  if (v >= 0.01) return `${round2(v)}`;
  const exp = Math.floor(Math.log10(v) + 1e-9);
  const mantissa = round2(v / 10 ** exp);
  return mantissa === 1 ? `1e${exp}` : `${mantissa}e${exp}`;
}

/** Two significant digits, without trailing zeros or an exponent for values in [0.01, 1000). */
function round2(v: number): number {
  return Number(v.toPrecision(2));
}

/**
 * Tick positions for a log axis over `[lo, hi]`: decades, plus 2× and 5× when the axis spans at
 * most two decades (so a short axis still has labelled ticks).
 *
 * @param lo Lower end, > 0.
 * @param hi Upper end, > lo.
 * @returns Labelled (`major`) and unlabelled (`minor`) tick values inside the range.
 * @example
 * ```ts
 * import { logTicks } from "./svg.ts";
 * console.log(logTicks(10, 1000).major); // [10, 20, 50, 100, 200, 500, 1000]
 * ```
 */
export function logTicks(lo: number, hi: number): { major: number[]; minor: number[] } {
  const first = Math.floor(Math.log10(lo) + 1e-9);
  const last = Math.ceil(Math.log10(hi) - 1e-9);
  const decades = last - first;
  const labelled = decades <= 2 ? [1, 2, 5] : [1];
  const step = Math.max(1, Math.ceil(decades / 10));
  const major: number[] = [];
  const minor: number[] = [];
  const inside = (v: number) => v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9);
  for (let e = first; e <= last; e++) {
    for (let m = 1; m <= 9; m++) {
      const v = Number((m * 10 ** e).toPrecision(12));
      if (!inside(v)) continue;
      if (labelled.includes(m) && (m !== 1 || (e - first) % step === 0)) major.push(v);
      else minor.push(v);
    }
  }
  return { major, minor };
}

/**
 * Where each vertical marker's label goes: right of its line at the top, else left of it, else
 * the same two half-way down, so labels of nearby crossovers do not overprint each other.
 */
function labelPlacer(): (x: number) => { x: number; y: number } {
  const placed: { x: number; lane: number }[] = [];
  const lanes = [M.top + 4, M.top + PLOT_H / 2];
  return (x) => {
    for (const [lane, y] of lanes.entries()) {
      for (const lx of [x + 4, x - 14]) {
        if (placed.every((p) => p.lane !== lane || Math.abs(p.x - lx) >= 12)) {
          placed.push({ x: lx, lane });
          return { x: lx, y };
        }
      }
    }
    return { x: x + 4, y: lanes[0]! };
  };
}

/** The decade-aligned domain covering every positive value, or [1, 10] when there is none. */
function domain(values: readonly number[]): [number, number] {
  const positive = values.filter((v) => v > 0 && Number.isFinite(v));
  if (positive.length === 0) return [1, 10];
  const lo = 10 ** Math.floor(Math.log10(Math.min(...positive)) + 1e-9);
  let hi = 10 ** Math.ceil(Math.log10(Math.max(...positive)) - 1e-9);
  if (hi <= lo) hi = lo * 10;
  return [lo, hi];
}

function scale(lo: number, hi: number, from: number, to: number): (v: number) => number {
  const a = Math.log10(lo);
  const span = Math.log10(hi) - a;
  return (v) => from + ((Math.log10(v) - a) / span) * (to - from);
}

function px(v: number): string {
  return Number(v.toFixed(1)).toString();
}

function attrs(record: Readonly<Record<string, string>>): string {
  return Object.entries(record).map(([k, v]) => ` ${k}="${escapeHtml(v)}"`).join("");
}

/**
 * Draws a log–log plot as an SVG string. Points with a non-positive coordinate cannot be placed
 * on a log axis and are left out; markers and levels widen the axes so they stay visible.
 *
 * @param spec Title, axis labels, series, markers, levels and root attributes.
 * @returns An `<svg>` element with `role="img"`, a `<title>`, and every string escaped.
 * @example
 * ```ts
 * import { logLogPlot } from "./svg.ts";
 * const svg = logLogPlot({
 *   title: "add f32", xLabel: "elements", yLabel: "time (ms)", attributes: {},
 *   series: [{ id: "js", label: "js", color: "#e69f00", points: [{ x: 1024, y: 0.002 }] }],
 * });
 * console.log(svg.includes('data-series="js"')); // true
 * ```
 */
export function logLogPlot(spec: LogLogPlotSpec): string {
  const markers = spec.markers ?? [];
  const levels = spec.levels ?? [];
  const valid = (p: PlotPoint) =>
    p.x > 0 && p.y > 0 && Number.isFinite(p.x) && Number.isFinite(p.y);
  const series = spec.series.map((s) => ({ ...s, points: s.points.filter(valid) }));
  const [x0, x1] = domain([
    ...series.flatMap((s) => s.points.map((p) => p.x)),
    ...markers.flatMap((m) => [m.x, ...(m.band ?? [])]),
  ]);
  const [y0, y1] = domain([
    ...series.flatMap((s) => s.points.map((p) => p.y)),
    ...levels.map((l) => l.y),
  ]);
  const sx = scale(x0, x1, M.left, M.left + PLOT_W);
  const sy = scale(y0, y1, M.top + PLOT_H, M.top);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img"${
      attrs(spec.attributes)
    }>`,
    `<title>${escapeHtml(spec.title)}</title>`,
    `<text class="plot-title" x="${M.left}" y="18">${escapeHtml(spec.title)}</text>`,
  );

  const xt = logTicks(x0, x1);
  const yt = logTicks(y0, y1);
  const bottom = M.top + PLOT_H;
  const right = M.left + PLOT_W;
  out.push(`<g class="grid">`);
  for (const v of xt.minor) {
    out.push(
      `<line class="minor" x1="${px(sx(v))}" x2="${px(sx(v))}" y1="${M.top}" y2="${bottom}"/>`,
    );
  }
  for (const v of yt.minor) {
    out.push(
      `<line class="minor" x1="${M.left}" x2="${right}" y1="${px(sy(v))}" y2="${px(sy(v))}"/>`,
    );
  }
  for (const v of xt.major) {
    out.push(`<line x1="${px(sx(v))}" x2="${px(sx(v))}" y1="${M.top}" y2="${bottom}"/>`);
  }
  for (const v of yt.major) {
    out.push(`<line x1="${M.left}" x2="${right}" y1="${px(sy(v))}" y2="${px(sy(v))}"/>`);
  }
  out.push(`</g>`);

  out.push(
    `<g class="axis"><rect x="${M.left}" y="${M.top}" width="${PLOT_W}" height="${PLOT_H}" fill="none"/>`,
  );
  for (const v of xt.major) {
    out.push(
      `<text x="${px(sx(v))}" y="${bottom + 15}" text-anchor="middle">${formatTick(v)}</text>`,
    );
  }
  for (const v of yt.major) {
    out.push(
      `<text x="${M.left - 5}" y="${px(sy(v) + 4)}" text-anchor="end">${formatTick(v)}</text>`,
    );
  }
  out.push(
    `<text class="label" x="${px(M.left + PLOT_W / 2)}" y="${H - 8}" text-anchor="middle">${
      escapeHtml(spec.xLabel)
    } (log scale)</text>`,
    `<text class="label" transform="translate(14 ${
      px(M.top + PLOT_H / 2)
    }) rotate(-90)" text-anchor="middle">${escapeHtml(spec.yLabel)} (log scale)</text>`,
    `</g>`,
  );

  const placeLabel = labelPlacer();
  for (const m of [...markers].sort((a, b) => a.x - b.x)) {
    const x = sx(m.x);
    const spot = placeLabel(x);
    const band = m.band
      ? (() => {
        const a = sx(Math.max(m.band[0], x0));
        const b = sx(Math.min(m.band[1], x1));
        return `<rect class="band" x="${px(a)}" y="${M.top}" width="${
          px(Math.max(b - a, 1))
        }" height="${PLOT_H}" fill="${escapeHtml(m.color)}"/>`;
      })()
      : "";
    out.push(
      `<g class="marker" data-marker="${escapeHtml(m.id)}"${
        m.dashed ? ' data-extrapolated=""' : ""
      }>`,
      m.title ? `<title>${escapeHtml(m.title)}</title>` : "",
      band,
      `<line x1="${px(x)}" x2="${px(x)}" y1="${M.top}" y2="${bottom}" stroke="${
        escapeHtml(m.color)
      }"${m.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
      `<text transform="translate(${px(spot.x)} ${px(spot.y)}) rotate(90)" fill="${
        escapeHtml(m.color)
      }">${escapeHtml(m.label)}</text>`,
      `</g>`,
    );
  }

  for (const l of levels) {
    const y = px(sy(l.y));
    out.push(
      `<g class="level" data-level="${escapeHtml(l.id)}">`,
      `<title>${escapeHtml(l.label)}</title>`,
      `<line x1="${M.left}" x2="${right}" y1="${y}" y2="${y}" stroke="${escapeHtml(l.color)}"/>`,
      `</g>`,
    );
  }

  for (const s of series) {
    const color = escapeHtml(s.color);
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    const d = sorted.map((p, i) => `${i === 0 ? "M" : "L"}${px(sx(p.x))} ${px(sy(p.y))}`).join(" ");
    out.push(
      `<g class="series" data-series="${escapeHtml(s.id)}">`,
      `<path d="${d}" stroke="${color}" fill="none"${s.dashed ? ' stroke-dasharray="5 3"' : ""}/>`,
      ...sorted.map((p) =>
        `<circle cx="${px(sx(p.x))}" cy="${px(sy(p.y))}" r="3" fill="${color}">${
          p.title ? `<title>${escapeHtml(p.title)}</title>` : ""
        }</circle>`
      ),
      `</g>`,
    );
  }

  out.push(`<g class="legend">`);
  const lx = right + 14;
  series.forEach((s, i) => {
    const y = M.top + 10 + i * 18;
    out.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${y}" y2="${y}" stroke="${escapeHtml(s.color)}"${
        s.dashed ? ' stroke-dasharray="5 3"' : ""
      }/>`,
      `<circle cx="${lx + 11}" cy="${y}" r="3" fill="${escapeHtml(s.color)}"/>`,
      `<text x="${lx + 28}" y="${y + 4}">${escapeHtml(s.label)}</text>`,
    );
  });
  levels.forEach((l, i) => {
    const y = M.top + 10 + (series.length + i) * 18 + 8;
    out.push(
      `<line class="level-key" x1="${lx}" x2="${lx + 22}" y1="${y}" y2="${y}" stroke="${
        escapeHtml(l.color)
      }"/>`,
      `<text x="${lx + 28}" y="${y + 4}">${escapeHtml(l.label)}</text>`,
    );
  });
  if (markers.length > 0) {
    const y = M.top + 10 + (series.length + levels.length) * 18 + 8;
    out.push(
      `<rect class="band" x="${lx}" y="${y - 6}" width="22" height="12" fill="#888"/>`,
      `<line x1="${lx + 11}" x2="${lx + 11}" y1="${y - 6}" y2="${y + 6}" stroke="#555"/>`,
      `<text x="${lx + 28}" y="${y + 4}">crossover, 95 % CI</text>`,
      `<line x1="${lx + 11}" x2="${lx + 11}" y1="${y + 12}" y2="${
        y + 24
      }" stroke="#555" stroke-dasharray="4 3"/>`,
      `<text x="${lx + 28}" y="${y + 22}">extrapolated</text>`,
    );
  }
  out.push(`</g>`, `</svg>`);
  return out.filter((s) => s !== "").join("\n");
}
