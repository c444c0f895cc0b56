import assert from "node:assert/strict";
import { load } from "npm:cheerio@1.2.0";
import { renderHtml } from "../reports/html/render.ts";
import { renderMarkdown } from "../reports/html/markdown.ts";
import { formatTick, logTicks } from "../reports/html/svg.ts";
import { main } from "../reports/report_cli.ts";
import type { Report } from "../reports/schema.ts";
import { captureCli } from "./_console.ts";
import { syntheticReport } from "./_fixtures.ts";

const OP_DTYPES = ["matmul-f32", "add-f32", "gemv-f32", "gemv-q4"];
const SERIES = ["js", "wasm", "wasm-mt", "webgpu-end-to-end", "webgpu-device-resident"];

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
    },
  };
}

Deno.test("renderHtml() draws one time plot and one rate plot per op × dtype", () => {
  const $ = load(renderHtml(syntheticReport()));
  const plots = $("svg[data-plot]").map((_, el) => $(el).attr("data-plot")).get();
  assert.deepEqual(plots, OP_DTYPES);
  const rooflines = $("svg[data-roofline]").map((_, el) => $(el).attr("data-roofline")).get();
  assert.deepEqual(rooflines, OP_DTYPES);
});

Deno.test("renderHtml() draws every backend and residency as a series with one point per size", () => {
  const $ = load(renderHtml(syntheticReport()));
  for (const id of OP_DTYPES) {
    const series = $(`svg[data-plot="${id}"] [data-series]`);
    assert.deepEqual(series.map((_, el) => $(el).attr("data-series")).get(), SERIES, id);
    for (const el of series.toArray()) {
      assert.equal($(el).find("path").length, 1);
      assert.ok($(el).find("circle").length >= 4, `${id} has a point per measured size`);
      assert.match($(el).find("path").attr("d") ?? "", /^M[\d.]+ [\d.]+( L[\d.]+ [\d.]+)+$/);
    }
  }
});

Deno.test("renderHtml() marks each crossover with a line, its CI band, and dashes extrapolated ones", () => {
  const report = syntheticReport();
  const $ = load(renderHtml(report));
  const matmul = $('svg[data-plot="matmul-f32"]');
  const expected = report.crossovers.filter((c) => c.op === "matmul" && c.size !== null);
  const markers = matmul.find("[data-marker]");
  assert.equal(markers.length, expected.length);
  for (const el of markers.toArray()) {
    assert.equal($(el).find("line").length, 1);
    assert.equal($(el).find("rect.band").length, 1, "the 95 % CI is shaded");
  }
  const extrapolated = expected.filter((c) => c.tag === "extrapolated");
  assert.ok(extrapolated.length > 0, "the fixture has an extrapolated crossover");
  assert.equal(
    matmul.find("[data-marker][data-extrapolated] line[stroke-dasharray]").length,
    extrapolated.length,
  );
  // A crossover that never happens has no size, hence no marker.
  const addMarkers = $('svg[data-plot="add-f32"] [data-marker]').map((_, el) =>
    $(el).attr("data-marker")
  ).get();
  assert.ok(!addMarkers.includes("add f32 cpu→webgpu end-to-end"));
});

Deno.test("renderHtml() draws the measured peaks as reference levels on the rate plots", () => {
  const $ = load(renderHtml(syntheticReport()));
  assert.deepEqual(
    $('svg[data-roofline="matmul-f32"] [data-level]').map((_, el) => $(el).attr("data-level"))
      .get(),
    ["peak-gflops-f32"],
  );
  assert.deepEqual(
    $('svg[data-roofline="add-f32"] [data-level]').map((_, el) => $(el).attr("data-level")).get(),
    ["peak-gbps-js", "peak-gbps-wasm", "peak-gbps-wasm-mt", "peak-gbps-webgpu"],
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

Deno.test("renderHtml() shows the tuning table as a heatmap with a colour per variant", () => {
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
  assert.equal(heat.next(".legend-list").find("li").length, 2);
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
  // A validation from before alongside timing has no sweep-only estimate; a newer one shows it.
  assert.deepEqual(row(1), ["llama-3.2-1b", "q4", "4.60", "4.00", "+15.0 %", "—"]);
  assert.deepEqual(row(2), ["tiny-16m", "f32", "19.0", "20.0", "-5.0 %", "15.0 (-25.0 %)"]);
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
  assert.doesNotMatch(md, /Changes since the baseline/);
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
    assert.match(logs[0]!, /^### gpucal calibration/);
    const messages = errors.join("\n");
    for (const flag of ["--format", "--report", "--baseline", "--bogus"]) {
      assert.ok(messages.includes(flag), flag);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
