import assert from "node:assert/strict";
import { load } from "npm:cheerio@1.2.0";
import { renderHtml } from "../reports/html/render.ts";
import { renderMarkdown } from "../reports/html/markdown.ts";
import { usageMap } from "../reports/html/_map.ts";
import { formatTick, logTicks } from "../reports/html/svg.ts";
import { main } from "../reports/report_cli.ts";
import type { Report } from "../core/schema.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

const OP_DTYPES = ["matmul-f32", "add-f32", "gemv-f32", "gemv-q4"];
const SERIES = ["js", "wasm", "wasm-mt", "webgpu-end-to-end", "webgpu-device-resident"];

/** The points of an SVG path made of `M x y` and `L x y` commands. */
function parsePath(d: string): { x: number; y: number }[] {
  return [...d.matchAll(/[ML](-?[\d.]+) (-?[\d.]+)/g)].map((m) => ({
    x: Number(m[1]),
    y: Number(m[2]),
  }));
}

/** The height of a polyline at `x`, by linear interpolation between its points. */
function yAt(points: readonly { x: number; y: number }[], x: number): number {
  const i = points.findIndex((p) => p.x >= x);
  if (i <= 0) return points[Math.max(i, 0)]?.y ?? NaN;
  const a = points[i - 1]!, b = points[i]!;
  return a.y + ((x - a.x) / (b.x - a.x)) * (b.y - a.y);
}

function withLlm(report: Report): Report {
  return {
    ...report,
    llm: {
      validations: [{
        model: "llama-3.2-1b",
        quant: "q4",
        measuredTokensPerSec: 4,
        estimatedTokensPerSec: 4.6,
        error: 0.15,
      }, {
        model: "tiny-16m",
        quant: "f32",
        measuredTokensPerSec: 20,
        estimatedTokensPerSec: 19,
        error: -0.05,
        details: { sweepEstimate: { tokensPerSec: 15, error: -0.25, totalMs: 66.67 } },
      }],
      stepProbe: {
        model: "step-probe-8m",
        dispatches: 68,
        chainFactor: { value: 1.05, unit: "x", tag: "measured" },
        hostFixedMs: { value: 12, unit: "ms", tag: "fitted" },
        hostPerDispatchUs: { value: 5, unit: "us", tag: "fitted" },
      },
    },
  };
}

Deno.test("renderHtml() opens with the what-to-use-where map as its first figure", () => {
  const $ = load(renderHtml(syntheticReport()));
  assert.equal($("main > section").first().attr("id"), "map");
  const first = $("figure").first();
  assert.ok(first.is("[data-summary-map]"), "the first figure is the map");
  const rows = first.find("[data-map-row]").map((_, el) => $(el).attr("data-map-row")).get();
  assert.deepEqual([...new Set(rows)], OP_DTYPES, "a bar for every op × dtype, in order");
  assert.ok(
    $("#map").index() < $("#plots").index() && $("#plots").index() < $("#crossovers").index(),
  );
});

Deno.test("usageMap() bands cover each measured range and change on the report's crossover", () => {
  const report = syntheticReport();
  const rows = usageMap(report);
  for (const row of rows) {
    for (const [i, band] of row.bands.entries()) {
      assert.ok(band.from < band.to, `${row.group.id}: band ${i} is not empty`);
      if (i > 0) assert.equal(band.from, row.bands[i - 1]!.to, `${row.group.id}: no gap`);
    }
  }
  // Synthetic matmul: end-to-end the GPU pays an 11 ms sync and wins only from the crossover on.
  const e2e = rows.find((r) => r.group.id === "matmul-f32" && r.residency === "end-to-end")!;
  const gpu = e2e.bands[e2e.bands.length - 1]!;
  assert.deepEqual(gpu.backends, ["webgpu"]);
  const crossover = report.crossovers.find((c) =>
    c.op === "matmul" && c.pair === "cpu→webgpu" && c.residency === "end-to-end"
  )!;
  assert.equal(gpu.from, crossover.size);
  assert.ok(e2e.crossovers.includes(crossover));
  const resident = rows.find((r) =>
    r.group.id === "matmul-f32" && r.residency === "device-resident"
  );
  assert.ok(resident, "device-resident data gives another answer, so it has its own bar");
});

Deno.test("renderHtml() shows backends whose 95 % intervals overlap as a tie, not a winner", () => {
  const report = syntheticReport();
  // wasm-mt made as fast as wasm on add: the two cannot be told apart at any size.
  const wasm = new Map(
    report.measurements.filter((m) => m.op === "add" && m.backend === "wasm").map((
      m,
    ) => [m.size, m]),
  );
  const tied = {
    ...report,
    measurements: report.measurements.map((m) =>
      m.state === "ok" && m.op === "add" && m.backend === "wasm-mt" &&
        wasm.get(m.size)?.state === "ok"
        ? { ...m, wall: { ...(wasm.get(m.size) as typeof m).wall } }
        : m
    ),
  };
  const $ = load(renderHtml(tied));
  const bands = $('[data-map-row="add-f32"] [data-band]');
  const ties = bands.filter("[data-tie]").map((_, el) => $(el).attr("data-band")).get();
  assert.ok(ties.includes("wasm≈wasm-mt"), ties.join(", "));
  assert.ok(!bands.map((_, el) => $(el).attr("data-band")).get().includes("wasm-mt"));
  assert.match($('[data-map-row="add-f32"]').text(), /wasm ≈ wasm-mt/);
  assert.equal(
    $('[data-map-row="add-f32"] [data-tie] rect').attr("fill")?.startsWith("url(#tie-"),
    true,
  );
});

Deno.test("renderHtml() marks the report's crossovers and their intervals on the map", () => {
  const $ = load(renderHtml(syntheticReport()));
  const mark = $('[data-map-row="matmul-f32"] [data-crossover="matmul f32 cpu→webgpu end-to-end"]');
  assert.equal(mark.length, 1);
  assert.match(mark.find("title").text(), /95 % CI/);
});

Deno.test("renderHtml() draws every point with its 95 % error bar and the fitted cost model through them", () => {
  const report = syntheticReport();
  const $ = load(renderHtml(report));
  for (const id of OP_DTYPES) {
    const series = $(`svg[data-plot="${id}"] [data-series]`);
    assert.deepEqual(series.map((_, el) => $(el).attr("data-series")).get(), SERIES, id);
    for (const el of series.toArray()) {
      const points = $(el).find("circle").length;
      assert.ok(points >= 4, `${id} has a point per measured size`);
      assert.equal($(el).find(".errorbar").length, points, `${id}: an error bar per point`);
      assert.equal($(el).find("path[data-fit]").length, 1, `${id}: the fitted curve`);
    }
  }
  // The synthetic medians come from a cost model and its fit recovers it: the curve runs
  // through the points (within a few px on the log axes).
  const wasm = $('svg[data-plot="matmul-f32"] [data-series="wasm"]');
  const curve = parsePath(wasm.find("path[data-fit]").attr("d") ?? "");
  assert.ok(curve.length >= 20, "the curve is sampled densely");
  for (const c of wasm.find("circle").toArray()) {
    const x = Number($(c).attr("cx")), y = Number($(c).attr("cy"));
    assert.ok(Math.abs(yAt(curve, x) - y) < 4, `point at x=${x}: ${y} against ${yAt(curve, x)}`);
  }
});

Deno.test("renderHtml() draws a roofline per dtype: attained GFLOP/s against arithmetic intensity", () => {
  const $ = load(renderHtml(syntheticReport()));
  const rooflines = $("svg[data-roofline]");
  assert.deepEqual(rooflines.map((_, el) => $(el).attr("data-roofline")).get(), ["f32", "q4"]);
  const f32 = $('svg[data-roofline="f32"]');
  assert.equal(f32.attr("data-x"), "intensity");
  assert.equal(f32.find('[data-axis="x"]').text(), "arithmetic intensity (FLOP/byte) (log scale)");
  assert.equal(f32.find('[data-axis="y"]').text(), "attained GFLOP/s (log scale)");
  // An f32 add does 1 flop per 12 bytes moved, whatever its size.
  const add = f32.find('[data-series="wasm"] circle title').filter((_, el) =>
    $(el).text().startsWith("add f32")
  );
  assert.match(add.text(), / at 0\.0833 FLOP\/byte /);
  assert.equal(f32.find('[data-series="webgpu-device-resident"] .errorbar').length, 3);
});

Deno.test("renderHtml() names each ceiling's backend and figures in the roofline's legend", () => {
  const $ = load(renderHtml(syntheticReport()));
  const f32 = $('svg[data-roofline="f32"]');
  assert.deepEqual(
    f32.find("[data-line]").map((_, el) => $(el).attr("data-line")).get(),
    ["roof-js", "roof-wasm", "roof-wasm-mt", "roof-webgpu"],
  );
  const legend = f32.find(".legend text").map((_, el) => $(el).text()).get();
  assert.ok(
    legend.some((t) => /^webgpu \(device-resident\): 14\.\d GFLOP\/s, 18\.0 GB\/s$/.test(t)),
    legend.join(" | "),
  );
  assert.ok(
    legend.some((t) => /^wasm-mt: [\d.]+ GFLOP\/s, 11\.0 GB\/s$/.test(t)),
    legend.join(" | "),
  );
  assert.match($("#roofline .sub").text(), /no reports\/specs\.json/);
});

Deno.test("renderHtml() adds the adapter's datasheet ceilings when the specs file lists it", () => {
  const report = syntheticReport();
  const rtx = {
    ...report,
    adapter: { ...report.adapter!, description: "NVIDIA GeForce RTX 3080" },
  };
  const specs = {
    "GeForce RTX 3080": {
      fp32Tflops: 29.77,
      fp16Tflops: 29.77,
      memoryGBps: 760,
      source: "gpus.html",
    },
    "GeForce RTX 3080 Ti": {
      fp32Tflops: 34.1,
      fp16Tflops: 34.1,
      memoryGBps: 912,
      source: "gpus.html",
    },
  };
  const $ = load(renderHtml(rtx, { specs }));
  const sheet = $('svg[data-roofline="f32"] [data-line="roof-datasheet"]');
  assert.equal(sheet.length, 1);
  assert.equal(sheet.find("path").attr("stroke-dasharray"), "7 4");
  assert.equal(
    sheet.find("title").text(),
    "webgpu datasheet (GeForce RTX 3080): 29800 GFLOP/s, 760 GB/s",
  );
  const none = load(renderHtml(report, { specs }));
  assert.equal(none('[data-line="roof-datasheet"]').length, 0);
  assert.match(
    none("#roofline .sub").text(),
    /has no entry for “llvmpipe \(LLVM 19\.1\.7, 256 bits\)”/,
  );
});

Deno.test("renderHtml() has log ticks and labelled axes with units", () => {
  const $ = load(renderHtml(syntheticReport()));
  const svg = $('svg[data-plot="add-f32"]');
  const labels = svg.find(".axis text").map((_, el) => $(el).text()).get();
  assert.ok(labels.includes("1k") && labels.includes("1M"), labels.join(","));
  assert.ok(labels.includes("elements (log scale)"));
  assert.ok(labels.includes("time per run (ms) (log scale)"));
  assert.deepEqual(logTicks(10, 1000).major, [10, 20, 50, 100, 200, 500, 1000]);
  assert.deepEqual(logTicks(1, 1e6).major, [1, 10, 100, 1000, 10_000, 100_000, 1e6]);
  assert.deepEqual([formatTick(1e-3), formatTick(0.5), formatTick(200), formatTick(4e6)], [
    "1e-3",
    "0.5",
    "200",
    "4M",
  ]);
});

Deno.test("renderHtml() shows the tuning table as a scrollable heatmap with a colour per variant", () => {
  const report = syntheticReport();
  const $ = load(renderHtml(report));
  const heat = $('table[data-heatmap="matmul-f32"]');
  assert.equal(heat.find("tbody tr").length, 2, "webgpu device-resident and wasm rows");
  const cells = heat.find("td[data-cell]");
  assert.ok(cells.length >= 2);
  const variants = new Set(cells.map((_, el) => $(el).attr("data-variant")).get());
  assert.deepEqual(
    variants,
    new Set(["tm=4,tn=4,vec4=true,wg=8x8", "fma=true,kc=256,mr=4,nc=512,nr=8"]),
  );
  const webgpu = heat.find('td[data-variant="tm=4,tn=4,vec4=true,wg=8x8"]').first();
  assert.match(webgpu.attr("style") ?? "", /background:#[0-9a-f]{6}/);
  assert.equal(webgpu.text(), `+${((24.8 / 19.3 - 1) * 100).toFixed(0)} %`);
  assert.equal($('table[data-heatmap="add-f32"] td[data-cell]').first().text(), "only");
  assert.ok(heat.parent().is(".scroll"), "a wide table scrolls instead of being cut");
  assert.equal(heat.parent().next(".legend-list").find("li").length, 2);
});

Deno.test("renderHtml() gives a variant the same colour in every tuning table", () => {
  const report = syntheticReport();
  const row = report.tuning[0]!;
  const shared = (op: string) => ({
    ...row,
    op,
    backend: "js" as const,
    residency: "end-to-end" as const,
    sizeMin: 1,
    sizeMax: 1e9,
    best: { variant: "default", ms: 1 },
    runnerUp: null,
  });
  const $ = load(
    renderHtml({ ...report, tuning: [...report.tuning, shared("matmul"), shared("add")] }),
  );
  const colour = (table: string, variant: string) =>
    $(`table[data-heatmap="${table}"] td[data-variant="${variant}"]`).first().attr("style");
  assert.ok(colour("matmul-f32", "default"));
  assert.equal(colour("matmul-f32", "default"), colour("add-f32", "default"));
  assert.notEqual(colour("add-f32", "default"), colour("add-f32", "ept=4,wg=256"));
  assert.notEqual(
    colour("matmul-f32", "default"),
    colour("matmul-f32", "tm=4,tn=4,vec4=true,wg=8x8"),
  );
});

Deno.test("renderHtml() shows the header, the LLM validation, and no script or remote resource", () => {
  const html = renderHtml(withLlm(syntheticReport()));
  const $ = load(html);
  const header = $("header").text();
  for (
    const text of [
      "AMD EPYC 7763",
      "llvmpipe (LLVM 19.1.7, 256 bits)",
      "vulkan",
      "2026-01-15",
      "0123456789ab",
      "complete",
      "Software adapter (llvmpipe)",
    ]
  ) {
    assert.ok(header.includes(text), text);
  }
  const row = (i: number) =>
    $(`#llm tbody tr:nth-child(${i}) td`).map((_, el) => $(el).text()).get();
  // A validation with one estimate shows none beside it; an older one with alongside timing shows
  // its sweep-only estimate, labelled.
  assert.deepEqual(row(1), ["llama-3.2-1b", "q4", "4.60", "4.00", "+15.0 %", "—"]);
  assert.deepEqual(row(2), [
    "tiny-16m",
    "f32",
    "19.0",
    "20.0",
    "-5.0 %",
    "15.0 (-25.0 %, from the sweep)",
  ]);
  assert.match(
    $("#llm").text(),
    /kernels chained ×1\.050 their time alone; host part of a step 12\.00 ms \+ 5\.0 µs a launch/,
  );
  assert.equal($("script").length, 0);
  assert.equal($("link, img, iframe, object").length, 0);
  assert.doesNotMatch(html, /(src|href)="https?:/);
});

Deno.test("renderHtml() says an incomplete run is incomplete and why", () => {
  const report = syntheticReport();
  const $ = load(
    renderHtml({
      ...report,
      provenance: { ...report.provenance, complete: false, stopReason: "budget" },
    }),
  );
  assert.equal($("header .status.bad").first().text(), "incomplete: budget");
});

Deno.test("renderHtml() escapes hostile strings from the report", () => {
  const report = syntheticReport();
  const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`;
  const html = renderHtml({
    ...report,
    adapter: { ...report.adapter!, description: hostile, vendor: `"><svg onload=alert(3)>` },
    machine: { ...report.machine, cpuModel: hostile },
    provenance: { ...report.provenance, warnings: [hostile] },
    tuning: report.tuning.map((t) => ({
      ...t,
      best: { ...t.best, variant: `x" onmouseover="alert(4)` },
    })),
    measurements: report.measurements.map((m) =>
      m.state === "failed" ? { ...m, error: hostile } : m
    ),
  });
  const $ = load(html);
  assert.equal($("script").length, 0);
  assert.equal($("img").length, 0);
  assert.equal($("[onerror], [onload], [onmouseover]").length, 0);
  assert.ok($("header").text().includes("<script>alert(1)</script>"), "shown as text");
  assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
});

Deno.test("renderHtml() with a baseline highlights what moved beyond noise", () => {
  const baseline = syntheticReport();
  const current = syntheticReport({
    crossovers: baseline.crossovers.map((c) =>
      c.op === "matmul" && c.pair === "cpu→webgpu" && c.residency === "end-to-end"
        ? { ...c, size: c.size! * 2, ci: [c.size! * 1.8, c.size! * 2.2] as [number, number] }
        : c
    ),
  });
  const $ = load(renderHtml(current, { baseline }));
  const moved = $("#baseline tr[data-moved]").map((_, el) => $(el).attr("data-moved")).get();
  assert.deepEqual(moved, ["matmul f32 cpu→webgpu end-to-end"]);
  assert.ok($("#baseline tr[data-moved]").hasClass("regressed"));
  assert.equal($("#crossovers tr.moved").length, 1);
  assert.equal(
    $('svg[data-plot="matmul-f32"] [data-marker="baseline matmul f32 cpu→webgpu end-to-end"]')
      .length,
    1,
  );
  const unchanged = load(renderHtml(baseline, { baseline }));
  assert.equal(unchanged("#baseline tr[data-moved]").length, 0);
  assert.match(unchanged("#baseline").text(), /Nothing moved beyond noise/);
});

Deno.test("renderMarkdown() summarises crossovers, peaks, system figures and the LLM validation", () => {
  const md = renderMarkdown(withLlm(syntheticReport()));
  assert.match(md, /^### gpucal calibration: llvmpipe-vulkan-x86_64-3f9a1c0d/);
  assert.match(
    md,
    /\| matmul \| f32 \| cpu→webgpu \| end-to-end \| 387 \| 329 – 445 \| n \(M = K = N\) \| measured \|/,
  );
  assert.match(
    md,
    /\| add \| f32 \| cpu→webgpu \| end-to-end \| — \| {2}\| elements \| webgpu never wins/,
  );
  assert.match(md, /\| peak compute f32 \| 14\.0 GFLOP\/s \[13\.3, 14\.7\] \(measured\) \|/);
  assert.match(md, /\| sync round trip \| 11\.2 ms/);
  assert.match(md, /\| llama-3\.2-1b \| q4 \| 4\.60 \| 4\.00 \| \+15\.0 % \|/);
  assert.match(md, /\nDecode step probe \(step-probe-8m\): kernels chained ×1\.050/);
  assert.doesNotMatch(md, /Changes since the baseline/);
});

Deno.test("renderMarkdown() leads with what to use where and prints durations in their unit", () => {
  const md = renderMarkdown(syntheticReport());
  assert.ok(md.indexOf("#### What to use where") < md.indexOf("#### Crossovers"));
  assert.match(
    md,
    /\| matmul \| f32 \| end-to-end \| wasm 16–62\.8, wasm-mt 62\.8–387, webgpu 387–512 n \(M = K = N\) \|/,
  );
  assert.match(md, /, 8\.54 min, complete;/, "512.4 s");
});

Deno.test("renderMarkdown() keeps hostile strings from breaking tables or injecting HTML", () => {
  const report = syntheticReport();
  const md = renderMarkdown({
    ...report,
    adapter: { ...report.adapter!, description: "<script>x</script> | evil\nrow" },
  });
  assert.ok(!md.includes("<script>"));
  assert.ok(md.includes("&lt;script&gt;x&lt;/script&gt; \\| evil row"));
});

Deno.test("renderMarkdown() with a baseline lists what moved", () => {
  const baseline = syntheticReport();
  const current = syntheticReport({
    system: {
      ...baseline.system,
      uploadGBps: { ...baseline.system.uploadGBps, value: 0.9, ci: [0.85, 0.95] },
    },
  });
  const md = renderMarkdown(current, { baseline });
  assert.match(md, /#### Changes since the baseline/);
  assert.match(md, /\| ❌ \| upload \| 1\.90 GB\/s \| 0\.900 GB\/s \| -52\.6 % \|/);
});

Deno.test("report CLI reads the datasheet peaks of --specs (specs:import's file)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const report = syntheticReport();
    const reportPath = `${dir}/r.json`;
    await Deno.writeTextFile(
      reportPath,
      JSON.stringify({
        ...report,
        adapter: { ...report.adapter!, description: "AMD Radeon RX 7900 XTX" },
      }),
    );
    const specsPath = `${dir}/specs.json`;
    await Deno.writeTextFile(
      specsPath,
      JSON.stringify({
        generated: "2026-01-01T00:00:00.000Z",
        specs: {
          "Radeon RX 7900 XTX": {
            fp32Tflops: 61.4,
            fp16Tflops: 122.8,
            memoryGBps: 960,
            source: "s",
          },
        },
      }),
    );
    const run = await captureCli(() =>
      main(["--report", reportPath, "--specs", specsPath, "--out", `${dir}/r.html`])
    );
    assert.equal(run.code, 0, run.err);
    const $ = load(await Deno.readTextFile(`${dir}/r.html`));
    assert.equal(
      $('svg[data-roofline="f32"] [data-line="roof-datasheet"] title').text(),
      "webgpu datasheet (Radeon RX 7900 XTX): 61400 GFLOP/s, 960 GB/s",
    );
    const missing = await captureCli(() =>
      main(["--report", reportPath, "--specs", `${dir}/none.json`, "--out", `${dir}/r.html`])
    );
    assert.equal(missing.code, 2);
    assert.match(missing.err, /--specs: ".*none\.json" does not exist/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("report CLI writes HTML to --out and exits 2 naming the flag on bad input", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const reportPath = `${dir}/r.json`;
    await Deno.writeTextFile(reportPath, JSON.stringify(syntheticReport()));
    const runs: [string[], number][] = [
      [["--report", reportPath, "--out", `${dir}/r.html`], 0],
      [["--report", reportPath, "--format", "markdown"], 0],
      [["--report", reportPath, "--format", "pdf"], 2],
      [["--report", `${dir}/missing.json`], 2],
      [["--report", reportPath, "--baseline", `${dir}/missing.json`], 2],
      [["--out", `${dir}/x.html`], 2],
      [["--bogus"], 2],
      [["--help"], 0],
    ];
    const logs: string[] = [];
    const errors: string[] = [];
    for (const [args, code] of runs) {
      const run = await captureCli(() => main(args));
      assert.equal(run.code, code, args.join(" "));
      if (run.out) logs.push(run.out);
      if (run.err) errors.push(run.err);
    }
    const html = await Deno.readTextFile(`${dir}/r.html`);
    assert.equal(load(html)("svg[data-plot]").length, 4);
    assert.equal(load(html)("[data-line=roof-datasheet]").length, 0, "no specs file given");
    assert.match(logs[0]!, /^### gpucal calibration/);
    const messages = errors.join("\n");
    for (const flag of ["--format", "--report", "--baseline", "--bogus"]) {
      assert.ok(messages.includes(flag), flag);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("renderHtml() names the driver settings of a configuration other than the machine's default", () => {
  const cardOf = (report: Report) => load(renderHtml(report))("#machine .card").first().text();
  const oneThread = syntheticReport();
  oneThread.provenance.driverEnv = { DENO_WEBGPU_BACKEND: "vulkan", LP_NUM_THREADS: "1" };
  assert.match(cardOf(oneThread), /driver settingsLP_NUM_THREADS=1/);
  assert.match(cardOf(syntheticReport()), /driver settingsnone \(the default configuration\)/);
});
