/**
 * Log–log plots as self-contained SVG strings: decade ticks with labels, labelled axes with units,
 * points with error bars and fitted curves, vertical markers with shaded interval bands, reference
 * lines (a roofline's ceilings), and a legend naming each. No scripts and no external resources,
 * so a page embedding them renders offline.
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
 * One point of a series; `lo`–`hi` is its error bar, `label` a short text beside it and `title`
 * its hover tooltip.
 *
 * @example
 * ```ts
 * import type { PlotPoint } from "./svg.ts";
 * const p: PlotPoint = { x: 64, y: 0.2, lo: 0.19, hi: 0.21, title: "64: 0.2 ms ±5 %" };
 * ```
 */
export interface PlotPoint {
  readonly x: number;
  readonly y: number;
  /** Lower end of the error bar (e.g. the 95 % CI), drawn when both ends are given. */
  readonly lo?: number;
  /** Upper end of the error bar. */
  readonly hi?: number;
  /** A short text drawn beside the point, e.g. the op it stands for. */
  readonly label?: string;
  readonly title?: string;
}

/**
 * A series, drawn as a `<g data-series="id">`: its points (circles with error bars) and either
 * its fitted curve (a solid `<path data-fit>`) or, without one, a thin line joining the points.
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
  /** The fitted model through the points, sampled densely enough to look smooth. */
  readonly curve?: { readonly points: readonly PlotPoint[]; readonly title: string };
  /** Draw the points without any line (e.g. one point per op on a roofline). */
  readonly pointsOnly?: boolean;
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
 * A reference line over the whole x axis, such as a roofline's ceiling, drawn as
 * `<g data-line="id">` and named in the legend. It is straight in log–log space between the
 * axis ends and its `knots`, so `y` must be a power law on each piece (a roof is).
 *
 * @example
 * ```ts
 * import type { PlotLine } from "./svg.ts";
 * const roof: PlotLine = {
 *   id: "roof-wasm", label: "wasm: 20 GFLOP/s, 10 GB/s", color: "#56b4e9", dashed: false,
 *   y: (x) => Math.min(20, 10 * x), knots: [2],
 * };
 * ```
 */
export interface PlotLine {
  readonly id: string;
  readonly label: string;
  readonly color: string;
  readonly dashed: boolean;
  /** The line's height at `x`. */
  y(x: number): number;
  /** Where the line bends (e.g. a roof's ridge point). */
  readonly knots?: readonly number[];
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
  readonly lines?: readonly PlotLine[];
  /** Extra attributes of the root `<svg>`, e.g. `{ "data-plot": "matmul-f32" }`. */
  readonly attributes: Readonly<Record<string, string>>;
}

/** Plot geometry, px: the legend sits below the plot, in two columns. */
const W = 700;
const M = { left: 62, right: 16, top: 30, bottom: 46 } as const;
const PLOT_W = W - M.left - M.right;
const PLOT_H = 300;
const LEGEND_ROW = 17;
const LEGEND_COLUMNS = 2;

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

/** Where a plot's values land: the axes' domains and the scales from values to pixels. */
interface Frame {
  readonly x0: number;
  readonly x1: number;
  readonly y0: number;
  readonly y1: number;
  readonly sx: (v: number) => number;
  readonly sy: (v: number) => number;
  readonly bottom: number;
  readonly right: number;
  /** The id of the clip path that keeps lines inside the plot area. */
  readonly clipId: string;
}

function positive(v: number | undefined): v is number {
  return v !== undefined && v > 0 && Number.isFinite(v);
}

function frameOf(spec: LogLogPlotSpec, series: readonly PlotSeries[]): Frame {
  const markers = spec.markers ?? [];
  const points = series.flatMap((s) => [...s.points, ...(s.curve?.points ?? [])]);
  const [x0, x1] = domain([
    ...points.map((p) => p.x),
    ...markers.flatMap((m) => [m.x, ...(m.band ?? [])]),
  ]);
  // A ceiling must show; the rest of a reference line may leave the plot (it is clipped).
  const ceilings = (spec.lines ?? []).map((l) =>
    Math.max(...[x0, x1, ...(l.knots ?? []).filter((k) => k > x0 && k < x1)].map((x) => l.y(x)))
  );
  const [y0, y1] = domain([
    ...points.flatMap((p) => [p.y, ...[p.lo, p.hi].filter(positive)]),
    ...ceilings,
  ]);
  const key = Object.entries(spec.attributes).map(([k, v]) => `${k}-${v}`).join("-") ||
    spec.title;
  return {
    x0,
    x1,
    y0,
    y1,
    sx: scale(x0, x1, M.left, M.left + PLOT_W),
    sy: scale(y0, y1, M.top + PLOT_H, M.top),
    bottom: M.top + PLOT_H,
    right: M.left + PLOT_W,
    clipId: `clip-${key.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
  };
}

function drawAxes(f: Frame, spec: LogLogPlotSpec): string[] {
  const out: string[] = [
    `<clipPath id="${f.clipId}"><rect x="${M.left}" y="${M.top}" width="${PLOT_W}" height="${PLOT_H}"/></clipPath>`,
    `<g class="grid">`,
  ];
  const xt = logTicks(f.x0, f.x1);
  const yt = logTicks(f.y0, f.y1);
  const vertical = (v: number, cls: string) =>
    `<line${cls} x1="${px(f.sx(v))}" x2="${px(f.sx(v))}" y1="${M.top}" y2="${f.bottom}"/>`;
  const horizontal = (v: number, cls: string) =>
    `<line${cls} x1="${M.left}" x2="${f.right}" y1="${px(f.sy(v))}" y2="${px(f.sy(v))}"/>`;
  out.push(
    ...xt.minor.map((v) => vertical(v, ` class="minor"`)),
    ...yt.minor.map((v) => horizontal(v, ` class="minor"`)),
    ...xt.major.map((v) => vertical(v, "")),
    ...yt.major.map((v) => horizontal(v, "")),
    `</g>`,
    `<g class="axis"><rect x="${M.left}" y="${M.top}" width="${PLOT_W}" height="${PLOT_H}" fill="none"/>`,
    ...xt.major.map((v) =>
      `<text x="${px(f.sx(v))}" y="${f.bottom + 15}" text-anchor="middle">${formatTick(v)}</text>`
    ),
    ...yt.major.map((v) =>
      `<text x="${M.left - 5}" y="${px(f.sy(v) + 4)}" text-anchor="end">${formatTick(v)}</text>`
    ),
    `<text class="label" data-axis="x" x="${px(M.left + PLOT_W / 2)}" y="${
      f.bottom + 34
    }" text-anchor="middle">${escapeHtml(spec.xLabel)} (log scale)</text>`,
    `<text class="label" data-axis="y" transform="translate(14 ${
      px(M.top + PLOT_H / 2)
    }) rotate(-90)" text-anchor="middle">${escapeHtml(spec.yLabel)} (log scale)</text>`,
    `</g>`,
  );
  return out;
}

function drawMarkers(f: Frame, markers: readonly PlotMarker[]): string[] {
  const out: string[] = [];
  const placeLabel = labelPlacer();
  for (const m of [...markers].sort((a, b) => a.x - b.x)) {
    const x = f.sx(m.x);
    const spot = placeLabel(x);
    const color = escapeHtml(m.color);
    let band = "";
    if (m.band) {
      const a = f.sx(Math.max(m.band[0], f.x0));
      const b = f.sx(Math.min(m.band[1], f.x1));
      band = `<rect class="band" x="${px(a)}" y="${M.top}" width="${
        px(Math.max(b - a, 1))
      }" height="${PLOT_H}" fill="${color}"/>`;
    }
    out.push(
      `<g class="marker" data-marker="${escapeHtml(m.id)}"${
        m.dashed ? ' data-extrapolated=""' : ""
      }>`,
      m.title ? `<title>${escapeHtml(m.title)}</title>` : "",
      band,
      `<line x1="${px(x)}" x2="${px(x)}" y1="${M.top}" y2="${f.bottom}" stroke="${color}"${
        m.dashed ? ' stroke-dasharray="6 4"' : ""
      }/>`,
      `<text transform="translate(${px(spot.x)} ${px(spot.y)}) rotate(90)" fill="${color}">${
        escapeHtml(m.label)
      }</text>`,
      `</g>`,
    );
  }
  return out;
}

function pathOf(f: Frame, points: readonly { x: number; y: number }[]): string {
  return points.map((p, i) => `${i === 0 ? "M" : "L"}${px(f.sx(p.x))} ${px(f.sy(p.y))}`)
    .join(" ");
}

function drawLines(f: Frame, lines: readonly PlotLine[]): string[] {
  return lines.flatMap((l) => {
    const xs = [f.x0, ...(l.knots ?? []).filter((k) => k > f.x0 && k < f.x1), f.x1];
    const points = xs.map((x) => ({ x, y: l.y(x) })).filter((p) => positive(p.y));
    return [
      `<g class="line" data-line="${escapeHtml(l.id)}">`,
      `<title>${escapeHtml(l.label)}</title>`,
      `<path d="${pathOf(f, points)}" stroke="${escapeHtml(l.color)}" fill="none"${
        l.dashed ? ' stroke-dasharray="7 4"' : ""
      } clip-path="url(#${f.clipId})"/>`,
      `</g>`,
    ];
  });
}

function errorBar(f: Frame, p: PlotPoint, color: string): string {
  if (!positive(p.lo) || !positive(p.hi)) return "";
  const x = px(f.sx(p.x));
  const lo = px(f.sy(Math.max(p.lo, f.y0)));
  const hi = px(f.sy(Math.min(p.hi, f.y1)));
  const cap = (y: string) => `M${px(f.sx(p.x) - 3)} ${y} h6`;
  return `<path class="errorbar" d="M${x} ${lo} V${hi} ${cap(lo)} ${cap(hi)}" stroke="${color}"/>`;
}

function drawSeries(f: Frame, series: readonly PlotSeries[]): string[] {
  return series.flatMap((s) => {
    const color = escapeHtml(s.color);
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    const line = s.curve && s.curve.points.length > 1
      ? `<path class="fit" data-fit="" d="${
        pathOf(f, s.curve.points)
      }" stroke="${color}" fill="none" clip-path="url(#${f.clipId})"><title>${
        escapeHtml(s.curve.title)
      }</title></path>`
      : s.pointsOnly || sorted.length < 2
      ? ""
      : `<path class="trace" d="${pathOf(f, sorted)}" stroke="${color}" fill="none"/>`;
    return [
      `<g class="series" data-series="${escapeHtml(s.id)}">`,
      line,
      ...sorted.map((p) => errorBar(f, p, color)),
      ...sorted.map((p) =>
        `<circle cx="${px(f.sx(p.x))}" cy="${px(f.sy(p.y))}" r="3" fill="${color}">${
          p.title ? `<title>${escapeHtml(p.title)}</title>` : ""
        }</circle>`
      ),
      `</g>`,
    ];
  });
}

/** A rectangle in px, for keeping point labels apart. */
interface Box {
  readonly x0: number;
  readonly y0: number;
  readonly x1: number;
  readonly y1: number;
}

const LABEL_CHAR_PX = 5.6;
const LABEL_HEIGHT_PX = 10;
/** Where a point's label may go, relative to the point, in order of preference. */
const LABEL_SPOTS: readonly (readonly [number, number, "start" | "end"])[] = [
  [6, -3, "start"],
  [6, 10, "start"],
  [-6, -3, "end"],
  [-6, 10, "end"],
  [6, -13, "start"],
  [6, 20, "start"],
  [-6, -13, "end"],
  [-6, 20, "end"],
];

function overlaps(a: Box, b: Box): boolean {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/**
 * Point labels, each at the first spot around its point that overlaps no other label and no
 * point; a label with no free spot is left to the point's tooltip.
 */
function drawPointLabels(f: Frame, series: readonly PlotSeries[]): string[] {
  const taken: Box[] = series.flatMap((s) =>
    s.points.map((p) => {
      const x = f.sx(p.x), y = f.sy(p.y);
      return { x0: x - 3, y0: y - 3, x1: x + 3, y1: y + 3 };
    })
  );
  const out: string[] = [];
  for (const s of series) {
    for (const p of s.points) {
      if (!p.label) continue;
      const x = f.sx(p.x), y = f.sy(p.y);
      const width = p.label.length * LABEL_CHAR_PX;
      const spot = LABEL_SPOTS.map(([dx, dy, anchor]) => {
        const x0 = anchor === "start" ? x + dx : x + dx - width;
        const box = { x0, y0: y + dy - LABEL_HEIGHT_PX + 2, x1: x0 + width, y1: y + dy + 2 };
        return { dx, dy, anchor, box };
      }).find(({ box }) =>
        box.x0 >= M.left && box.x1 <= f.right && box.y0 >= M.top && box.y1 <= f.bottom &&
        taken.every((t) => !overlaps(t, box))
      );
      if (spot === undefined) continue;
      taken.push(spot.box);
      out.push(
        `<text class="point-label" x="${px(x + spot.dx)}" y="${
          px(y + spot.dy)
        }" text-anchor="${spot.anchor}" fill="${escapeHtml(s.color)}">${
          escapeHtml(p.label)
        }</text>`,
      );
    }
  }
  return out.length === 0 ? [] : [`<g class="point-labels">`, ...out, `</g>`];
}

/** One legend entry: its key (a few SVG elements at `x`, `y`) and its text. */
interface LegendEntry {
  readonly key: (x: number, y: number) => string;
  readonly text: string;
}

function legendEntries(spec: LogLogPlotSpec, series: readonly PlotSeries[]): LegendEntry[] {
  const entries: LegendEntry[] = series.map((s) => {
    const color = escapeHtml(s.color);
    return {
      key: (x, y) =>
        `${
          s.pointsOnly
            ? ""
            : `<line x1="${x}" x2="${x + 22}" y1="${y}" y2="${y}" stroke="${color}"/>`
        }<circle cx="${x + 11}" cy="${y}" r="3" fill="${color}"/>`,
      text: s.label,
    };
  });
  for (const l of spec.lines ?? []) {
    entries.push({
      key: (x, y) =>
        `<line class="line-key" x1="${x}" x2="${x + 22}" y1="${y}" y2="${y}" stroke="${
          escapeHtml(l.color)
        }"${l.dashed ? ' stroke-dasharray="7 4"' : ""}/>`,
      text: l.label,
    });
  }
  const markers = spec.markers ?? [];
  if (markers.length > 0) {
    entries.push({
      key: (x, y) =>
        `<rect class="band" x="${x}" y="${y - 6}" width="22" height="12" fill="#888"/><line x1="${
          x + 11
        }" x2="${x + 11}" y1="${y - 6}" y2="${y + 6}" stroke="#555"/>`,
      text: "crossover, 95 % CI",
    });
  }
  if (markers.some((m) => m.dashed)) {
    entries.push({
      key: (x, y) =>
        `<line x1="${x + 11}" x2="${x + 11}" y1="${y - 6}" y2="${
          y + 6
        }" stroke="#555" stroke-dasharray="4 3"/>`,
      text: "extrapolated crossover (or the baseline's)",
    });
  }
  return entries;
}

function drawLegend(entries: readonly LegendEntry[], top: number): string[] {
  const width = PLOT_W / LEGEND_COLUMNS;
  return [
    `<g class="legend">`,
    ...entries.map((e, i) => {
      const x = M.left + (i % LEGEND_COLUMNS) * width;
      const y = top + Math.floor(i / LEGEND_COLUMNS) * LEGEND_ROW;
      return `${e.key(x, y)}<text x="${x + 28}" y="${y + 4}">${escapeHtml(e.text)}</text>`;
    }),
    `</g>`,
  ];
}

/**
 * Draws a log–log plot as an SVG string: series as points with error bars and a fitted curve (or
 * a thin line joining the points), vertical markers with shaded intervals, reference lines, and
 * a legend below the plot naming every series and line. Points with a non-positive coordinate
 * cannot be placed on a log axis and are left out; markers and the lines' ceilings widen the
 * axes so they stay visible.
 *
 * @param spec Title, axis labels, series, markers, lines and root attributes.
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
  const valid = (p: PlotPoint) => positive(p.x) && positive(p.y);
  const series = spec.series.map((s) => ({
    ...s,
    points: s.points.filter(valid),
    ...(s.curve ? { curve: { ...s.curve, points: s.curve.points.filter(valid) } } : {}),
  }));
  const frame = frameOf(spec, series);
  const entries = legendEntries(spec, series);
  const legendTop = frame.bottom + M.bottom + 4;
  const height = legendTop + Math.ceil(entries.length / LEGEND_COLUMNS) * LEGEND_ROW;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" role="img"${
      attrs(spec.attributes)
    }>`,
    `<title>${escapeHtml(spec.title)}</title>`,
    `<text class="plot-title" x="${M.left}" y="18">${escapeHtml(spec.title)}</text>`,
    ...drawAxes(frame, spec),
    ...drawMarkers(frame, spec.markers ?? []),
    ...drawLines(frame, spec.lines ?? []),
    ...drawSeries(frame, series),
    ...drawPointLabels(frame, series),
    ...drawLegend(entries, legendTop),
    `</svg>`,
  ].filter((s) => s !== "").join("\n");
}
