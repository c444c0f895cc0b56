import assert from "node:assert/strict";
import { load } from "npm:cheerio@1.2.0";
import { renderHtml } from "../reports/html/render.ts";
import { seriesColor } from "../reports/html/_series.ts";
import { syntheticReport } from "./_fixtures.ts";

/** Chromium is killed if one run takes longer than this (it takes seconds on 2 shared cores). */
const CHROMIUM_TIMEOUT_MS = 120_000;
const WINDOW = { width: 1400, height: 4000 };

/** `chromium` as the test task's `--allow-run=chromium` resolves it: the first one on PATH. */
function findChromium(): string | null {
  if (Deno.permissions.querySync({ name: "env", variable: "PATH" }).state !== "granted") {
    return null;
  }
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir === "") continue;
    try {
      if (Deno.statSync(`${dir}/chromium`).isFile) return `${dir}/chromium`;
    } catch {
      // Not in this PATH entry.
    }
  }
  return null;
}

const chromium = findChromium();
const canRun = chromium !== null &&
  Deno.permissions.querySync({ name: "run", command: "chromium" }).state === "granted";

async function runChromium(userDataDir: string, args: string[]): Promise<Deno.CommandOutput> {
  const output = await new Deno.Command("chromium", {
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      `--user-data-dir=${userDataDir}`,
      `--window-size=${WINDOW.width},${WINDOW.height}`,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    signal: AbortSignal.timeout(CHROMIUM_TIMEOUT_MS),
  }).output();
  if (!output.success) {
    throw new Error(
      `Chromium exited with ${output.code}: ${
        new TextDecoder().decode(output.stderr).slice(-2000)
      }`,
    );
  }
  return output;
}

/** Decodes an 8-bit RGB(A) non-interlaced PNG, the kind Chromium writes for screenshots. */
async function decodePng(
  bytes: Uint8Array,
): Promise<{ width: number; height: number; channels: number; pixels: Uint8Array }> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  assert.deepEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], "PNG signature");
  let width = 0, height = 0, channels = 0;
  const idat: Uint8Array<ArrayBuffer>[] = [];
  for (let at = 8; at < bytes.length;) {
    const length = view.getUint32(at);
    const type = new TextDecoder().decode(bytes.subarray(at + 4, at + 8));
    const data = bytes.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      assert.equal(data[8], 8, "8 bits per channel");
      assert.equal(data[12], 0, "not interlaced");
      channels = data[9] === 6 ? 4 : data[9] === 2 ? 3 : 0;
      assert.ok(channels > 0, `colour type ${data[9]} is RGB or RGBA`);
    } else if (type === "IDAT") {
      idat.push(data.slice());
    }
    at += 12 + length;
  }
  const inflated = new Uint8Array(
    await new Response(new Blob(idat).stream().pipeThrough(new DecompressionStream("deflate")))
      .arrayBuffer(),
  );
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = inflated[y * (stride + 1)]!;
    const row = inflated.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = pixels.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[i - channels]! : 0;
      const b = prev[i]!;
      const c = i >= channels ? prev[i - channels]! : 0;
      let predictor = 0;
      if (filter === 1) predictor = a;
      else if (filter === 2) predictor = b;
      else if (filter === 3) predictor = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[i] = (row[i]! + predictor) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

function countColor(png: { channels: number; pixels: Uint8Array }, hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < png.pixels.length; i += png.channels) {
    if (png.pixels[i] === r && png.pixels[i + 1] === g && png.pixels[i + 2] === b) n++;
  }
  return n;
}

Deno.test({
  name:
    `The HTML report renders in headless Chromium: map first, error bars, fitted curves, rooflines${
      canRun ? "" : " (skipped: no chromium on PATH, or no --allow-run=chromium)"
    }`,
  ignore: !canRun,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "gpucal-report-browser-" });
    try {
      const report = syntheticReport();
      const page = `${dir}/report.html`;
      await Deno.writeTextFile(page, renderHtml(report));
      const url = new URL(`file://${page}`).href;

      const dom = await runChromium(await Deno.makeTempDir({ dir }), ["--dump-dom", url]);
      const $ = load(new TextDecoder().decode(dom.stdout));
      // The answer first: the what-to-use-where map is the page's first figure.
      const first = $("figure").first();
      assert.ok(first.is("[data-summary-map]"), "the summary map is the first figure");
      assert.ok(first.find("[data-map-row] [data-band]").length >= 8, "the map's bands");
      const plots = $("svg[data-plot]");
      assert.equal(plots.length, 4, "one time plot per op × dtype");
      for (const el of plots.toArray()) {
        const id = $(el).attr("data-plot");
        assert.equal($(el).find("[data-series]").length, 5, id);
        assert.equal($(el).find("path[data-fit]").length, 5, `${id}: a fitted curve per series`);
        assert.equal(
          $(el).find("[data-series] .errorbar").length,
          $(el).find("[data-series] circle").length,
          `${id}: an error bar per point`,
        );
      }
      const rooflines = $("svg[data-roofline]");
      assert.deepEqual(rooflines.map((_, el) => $(el).attr("data-roofline")).get(), ["f32", "q4"]);
      for (const el of rooflines.toArray()) {
        assert.equal($(el).attr("data-x"), "intensity");
        assert.match($(el).find('[data-axis="x"]').text(), /^arithmetic intensity \(FLOP\/byte\)/);
        assert.ok($(el).find("[data-line]").length >= 4, "a ceiling per backend");
      }
      assert.ok($("[data-marker]").length >= 10, "crossover markers");
      assert.ok($("td[data-cell]").length > 0, "heatmap cells");

      // Removed with the page; GPUCAL_SCREENSHOT_DIR keeps a copy for a person to look at (a
      // copy kept after every run filled the temporary directory with one per test run).
      const png = `${dir}/report-synthetic.png`;
      await runChromium(await Deno.makeTempDir({ dir }), [`--screenshot=${png}`, url]);
      const bytes = await Deno.readFile(png);
      const image = await decodePng(bytes);
      assert.deepEqual([image.width, image.height], [WINDOW.width, WINDOW.height]);
      // The series colours are only used by the figures, so seeing each one means the SVG painted.
      for (const id of ["js", "wasm", "wasm-mt", "webgpu-end-to-end", "webgpu-device-resident"]) {
        assert.ok(countColor(image, seriesColor(id)) > 50, `${id} (${seriesColor(id)}) is painted`);
      }
      // The map's bands are solid blocks of those colours at the top of the page.
      const top = {
        ...image,
        pixels: image.pixels.subarray(0, 1000 * image.width * image.channels),
      };
      assert.ok(countColor(top, seriesColor("wasm")) > 2000, "the map's wasm bands are painted");
      const keep = Deno.env.get("GPUCAL_SCREENSHOT_DIR");
      if (keep !== undefined && keep !== "") {
        await Deno.mkdir(keep, { recursive: true });
        await Deno.copyFile(png, `${keep}/report-synthetic.png`);
        console.log(`Screenshot: ${keep}/report-synthetic.png`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
