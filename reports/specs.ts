/**
 * Vendor peak figures from a saved GPU specification page (an HTML table such as Wikipedia's
 * GPU lists): model → peak FP32 and FP16 TFLOP/s and memory bandwidth, to set measured rates
 * against. Merged cells (`rowspan`, `colspan`), stacked headers and footnote markers (`[a]`,
 * `<sup>`) are handled; nothing in the page is executed.
 *
 * @example
 * ```ts
 * import { parseSpecTables } from "./specs.ts";
 * const html = `<table><tr><th>Model</th><th>FP32 (TFLOPS)</th></tr>
 *   <tr><td>GPU X</td><td>10.5<sup>[1]</sup></td></tr></table>`;
 * console.log(parseSpecTables(html, "saved.html")[0]); // { model: "GPU X", fp32Tflops: 10.5, ... }
 * ```
 *
 * @module
 */
// deno-lint-ignore no-import-prefix
import * as cheerio from "npm:cheerio@1.2.0";

/**
 * Peak figures of one GPU model, as its vendor states them.
 *
 * @example
 * ```ts
 * import type { GpuSpec } from "./specs.ts";
 * const s: GpuSpec = { model: "GPU X", fp32Tflops: 10, fp16Tflops: 20, memoryGBps: 448, source: "x.html" };
 * ```
 */
export interface GpuSpec {
  /** The model name as the table gives it, footnotes removed. */
  readonly model: string;
  /** Peak FP32 (single precision), TFLOP/s; null when the table has none. */
  readonly fp32Tflops: number | null;
  /** Peak FP16 (half precision), TFLOP/s; null when the table has none. */
  readonly fp16Tflops: number | null;
  /** Peak memory bandwidth, GB/s; null when the table has none. */
  readonly memoryGBps: number | null;
  /** Where the figures came from (the page's URL or file name). */
  readonly source: string;
}

/** cheerio's element type (domhandler's), which cheerio does not re-export by name. */
type HtmlElement = ReturnType<ReturnType<cheerio.CheerioAPI>["find"]> extends
  cheerio.Cheerio<infer E> ? E
  : never;

interface Cell {
  readonly text: string;
  readonly header: boolean;
}

type Metric = "fp32Tflops" | "fp16Tflops" | "memoryGBps";

interface Column {
  readonly metric: Metric;
  readonly index: number;
  /** Factor from the table's unit to the spec's (TFLOP/s or GB/s). */
  readonly scale: number;
}

/** The visible text of a cell, without footnote superscripts, `[a]`/`[12]` markers or spacing. */
function cellText($: cheerio.CheerioAPI, el: HtmlElement): string {
  const copy = $(el).clone();
  copy.find("sup, style, script, .reference, .sortkey, [style*='display:none']").remove();
  copy.find("br").replaceWith(" ");
  return copy.text().replace(/\[[^\]]{1,6}\]/g, "").replace(/\s+/g, " ").trim();
}

function span(value: string | undefined): number {
  const n = Number.parseInt(value ?? "1", 10);
  // Browsers clamp spans too; a huge span in a hostile page must not allocate a huge grid.
  return Number.isFinite(n) && n >= 1 ? Math.min(n, 1000) : 1;
}

/** The table as a rectangular grid: every merged cell copied into each slot it covers. */
function expandGrid($: cheerio.CheerioAPI, table: HtmlElement): Cell[][] {
  const grid: Cell[][] = [];
  // Only this table's own rows, not those of tables nested inside it.
  const rows = $(table).find("tr").filter((_, tr) => $(tr).closest("table").get(0) === table);
  rows.each((r, tr) => {
    grid[r] ??= [];
    let c = 0;
    $(tr).children("th, td").each((_, el) => {
      while (grid[r]![c] !== undefined) c++;
      const cell: Cell = { text: cellText($, el), header: el.tagName === "th" };
      const rowspan = Math.min(span($(el).attr("rowspan")), rows.length - r);
      const colspan = span($(el).attr("colspan"));
      for (let dr = 0; dr < rowspan; dr++) {
        const row = (grid[r + dr] ??= []);
        for (let dc = 0; dc < colspan; dc++) row[c + dc] = cell;
      }
      c += colspan;
    });
  });
  return grid;
}

/** The leading rows with no data cell are headers; a column's name is its stacked headers. */
function columnNames(grid: readonly Cell[][]): { names: string[]; firstData: number } {
  let firstData = 0;
  while (firstData < grid.length && grid[firstData]!.every((cell) => cell?.header ?? true)) {
    firstData++;
  }
  const width = Math.max(0, ...grid.map((row) => row.length));
  const names: string[] = [];
  for (let c = 0; c < width; c++) {
    const parts: string[] = [];
    for (let r = 0; r < firstData; r++) {
      const text = grid[r]![c]?.text ?? "";
      if (text !== "" && parts.at(-1) !== text) parts.push(text);
    }
    names.push(parts.join(" "));
  }
  return { names, firstData };
}

function flopsScale(name: string): number | null {
  if (/pflop/i.test(name)) return 1000;
  if (/tflop/i.test(name)) return 1;
  if (/gflop/i.test(name)) return 1e-3;
  return null;
}

function metricColumns(names: readonly string[]): Column[] {
  const columns: Column[] = [];
  let flopsFamily: number | null = null;
  names.forEach((name, index) => {
    const lower = name.toLowerCase();
    const scale = flopsScale(name);
    if (scale !== null) flopsFamily = scale;
    const inFlops = scale ??
      (/precision|fp(16|32)|float|half|single/.test(lower) ? flopsFamily : null);
    if (/bandwidth/.test(lower)) {
      const bw = /tb\/s/.test(lower) ? 1000 : /mb\/s/.test(lower) ? 1e-3 : 1;
      columns.push({ metric: "memoryGBps", index, scale: bw });
    } else if (/\b(single|fp32|float32|f32)\b/.test(lower)) {
      columns.push({ metric: "fp32Tflops", index, scale: inFlops ?? 1 });
    } else if (/\b(half|fp16|float16|f16)\b/.test(lower) && !/bf16|bfloat/.test(lower)) {
      columns.push({ metric: "fp16Tflops", index, scale: inFlops ?? 1 });
    }
  });
  // One column per metric: the first, which in vendor tables is the base (non-boost, dense) rate.
  return columns.filter((col, i) => columns.findIndex((o) => o.metric === col.metric) === i);
}

function modelColumn(names: readonly string[]): number {
  const i = names.findIndex((n) => /\b(model|name|gpu|card|product)\b/i.test(n));
  return i === -1 ? 0 : i;
}

/** The first number of a cell (`1,008`, `82.58 (165.2)`, `~15`), or null for `N/A`, `—`, `?`. */
function firstNumber(text: string): number | null {
  const match = /\d[\d,]*(?:\.\d+)?|\.\d+/.exec(text.replace(/(\d)\s(?=\d{3}\b)/g, "$1"));
  if (match === null) return null;
  const n = Number(match[0].replaceAll(",", ""));
  return Number.isFinite(n) ? n : null;
}

/**
 * Reads every GPU specification table of an HTML page: any table with a model column and at
 * least one of peak FP32, peak FP16 or memory bandwidth. Columns are recognised by their
 * (stacked) header text, units by GFLOPS / TFLOPS / PFLOPS and GB/s / TB/s; rows repeating a
 * model fill in only what earlier rows lacked.
 *
 * @param html The page's HTML.
 * @param source Where it came from, recorded in every spec.
 * @returns One spec per model, in page order.
 * @example
 * ```ts
 * import { parseSpecTables } from "./specs.ts";
 * const html = `<table><tr><th>GPU</th><th>Bandwidth (GB/s)</th></tr><tr><td>Y</td><td>1,008</td></tr></table>`;
 * console.log(parseSpecTables(html, "page.html")[0]?.memoryGBps); // 1008
 * ```
 */
export function parseSpecTables(html: string, source: string): GpuSpec[] {
  const $ = cheerio.load(html);
  const byModel = new Map<string, GpuSpec>();
  $("table").each((_, table) => {
    const grid = expandGrid($, table);
    const { names, firstData } = columnNames(grid);
    const columns = metricColumns(names);
    if (firstData === 0 || columns.length === 0) return;
    const modelAt = modelColumn(names);
    for (const row of grid.slice(firstData)) {
      const model = row[modelAt]?.text ?? "";
      if (model === "" || firstNumber(model) !== null && !/[a-z]/i.test(model)) continue;
      const values: Record<Metric, number | null> = {
        fp32Tflops: null,
        fp16Tflops: null,
        memoryGBps: null,
      };
      for (const col of columns) {
        const n = firstNumber(row[col.index]?.text ?? "");
        if (n !== null) values[col.metric] = n * col.scale;
      }
      if (Object.values(values).every((v) => v === null)) continue;
      const prior = byModel.get(model);
      byModel.set(model, {
        model,
        fp32Tflops: prior?.fp32Tflops ?? values.fp32Tflops,
        fp16Tflops: prior?.fp16Tflops ?? values.fp16Tflops,
        memoryGBps: prior?.memoryGBps ?? values.memoryGBps,
        source,
      });
    }
  });
  return [...byModel.values()];
}
