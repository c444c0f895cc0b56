/**
 * The report page's tables: crossovers, system figures and peaks, the tuning heatmap, the LLM
 * validation, the failed runs, the machine and run, and what moved since a baseline. They follow
 * the map and the plots: the reference behind the answer.
 *
 * @module
 */
import { formatCount, formatFigure, formatPercent, formatSeconds } from "../../core/format.ts";
import {
  describeEstimate,
  describeStepProbe,
  WEBGPU_NOT_CALIBRATED,
  webgpuCalibrated,
} from "../../calibrate/summary.ts";
import type { Comparison } from "../compare.ts";
import { formatSettings } from "../../calibrate/machine.ts";
import type { Crossover, Figure, Report, Tuning } from "../../core/schema.ts";
import { escapeHtml as esc } from "./_escape.ts";
import { type OpGroup, seriesId, seriesLabel } from "./_series.ts";
import { crossoverKey, movedRows, num, secondEstimateOf } from "./_shared.ts";
import { variantColors } from "./_variant_colors.ts";

function figureCell(f: Figure): string {
  return esc(formatFigure(f));
}

/** An HTML table; `header` is escaped, `rows` are finished `<tr>` markup. */
export function table(header: readonly string[], rows: readonly string[], cls = ""): string {
  return `<table${cls ? ` class="${cls}"` : ""}><thead><tr>${
    header.map((h) => `<th>${esc(h)}</th>`).join("")
  }</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

/** The status badge of a run: complete, or incomplete and why. */
export function statusBadge(report: Report): string {
  const p = report.provenance;
  return p.complete
    ? `<span class="status ok">complete</span>`
    : `<span class="status bad">incomplete: ${esc(p.stopReason)}</span>`;
}

function adapterCard(report: Report): string {
  const a = report.adapter;
  if (a === null) return `<p>No WebGPU adapter: CPU backends only.</p>`;
  return `<dl><dt>description</dt><dd>${esc(a.description || "(none)")}${
    webgpuCalibrated(report) ? "" : ` (${esc(WEBGPU_NOT_CALIBRATED)})`
  }</dd><dt>vendor</dt><dd>${esc(a.vendor || "(none)")}${
    a.architecture ? ` · ${esc(a.architecture)}` : ""
  }${a.device ? ` · ${esc(a.device)}` : ""}</dd><dt>backend</dt><dd>${esc(a.backend)} (${
    esc(a.backendSource)
  })${a.software ? " · software rasteriser" : ""}</dd><dt>features</dt><dd>${
    esc(a.features.join(", ") || "(none)")
  }</dd></dl>`;
}

/** The machine, adapter and provenance cards. */
export function machineSection(report: Report): string {
  const p = report.provenance;
  const m = report.machine;
  const ok = report.measurements.filter((x) => x.state === "ok").length;
  const failed = report.measurements.filter((x) => x.state === "failed").length;
  const unsupported = report.measurements.length - ok - failed;
  const settings = formatSettings(p.driverEnv);
  const commit = report.gpucal.commit === null
    ? "unknown commit"
    : report.gpucal.commit.slice(0, 12);
  return `<section id="machine"><h2>Machine and run</h2>
<div class="cards">
<div class="card"><h3>Machine</h3><dl><dt>CPU</dt><dd>${
    esc(m.cpuModel)
  }</dd><dt>cores</dt><dd>${m.cores}</dd><dt>memory</dt><dd>${
    num(m.memoryGiB)
  } GiB</dd><dt>OS</dt><dd>${esc(m.os)} ${esc(m.osRelease)} (${
    esc(m.arch)
  })</dd><dt>fingerprint</dt><dd><code>${
    esc(report.fingerprint)
  }</code></dd><dt>driver settings</dt><dd>${
    settings === null ? "none (the default configuration)" : `<code>${esc(settings)}</code>`
  }</dd></dl></div>
<div class="card"><h3>Adapter</h3>${adapterCard(report)}</div>
<div class="card"><h3>Provenance</h3><dl><dt>date</dt><dd>${esc(p.date)}</dd><dt>gpucal</dt><dd>${
    esc(report.gpucal.version)
  } (<code>${esc(commit)}</code>), Deno ${esc(p.denoVersion)}</dd><dt>duration</dt><dd>${
    formatSeconds(p.durationS)
  }${p.budgetS === null ? "" : ` of a ${formatSeconds(p.budgetS)} budget`}${
    p.quick ? " · quick run" : ""
  }${p.noisy ? " · noisy machine" : ""}</dd><dt>status</dt><dd>${statusBadge(report)} (${
    esc(p.stopReason)
  })</dd><dt>measurements</dt><dd>${ok} ok, ${failed} failed, ${unsupported} unsupported</dd><dt>command</dt><dd><code>${
    esc(p.command.join(" "))
  }</code></dd></dl></div>
</div></section>`;
}

export function baselineSection(comparison: Comparison, baseline: Report): string {
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

function crossoverRow(c: Crossover, moved: ReadonlySet<string>): string {
  const cls = moved.has(crossoverKey(c)) ? ` class="moved"` : "";
  return `<tr${cls}><td>${esc(c.op)}</td><td>${esc(c.dtype)}</td><td>${esc(c.pair)}</td><td>${
    esc(c.residency)
  }</td><td class="n">${esc(num(c.size))}</td><td class="n">${
    c.ci ? `${esc(num(c.ci[0]))} – ${esc(num(c.ci[1]))}` : ""
  }</td><td>${esc(c.unit)}</td><td>${
    c.size === null ? esc(c.reason ?? "no crossing") : esc(`${c.tag}, ${c.from} → ${c.to}`)
  }</td></tr>`;
}

/**
 * The crossover table: pairs that cross first, then, collapsed, the pairs that do not cross
 * within the measured sizes (on a software adapter most of them: WebGPU never wins).
 */
export function crossoverSection(report: Report, moved: ReadonlySet<string>): string {
  if (report.crossovers.length === 0) {
    return `<section id="crossovers"><h2>Crossovers</h2><p>No crossover in this report.</p></section>`;
  }
  const header = ["op", "dtype", "pair", "residency", "size", "95 % CI", "unit", "note"];
  const crossing = report.crossovers.filter((c) => c.size !== null);
  const none = report.crossovers.filter((c) => c.size === null);
  const noneOpen = none.some((c) => moved.has(crossoverKey(c))) ? " open" : "";
  return `<section id="crossovers"><h2>Crossovers</h2>
<p class="sub">The size from which the second backend is faster than the first (best variant of each).${
    moved.size > 0 ? " Rows marked on the left moved since the baseline." : ""
  }</p>
${
    crossing.length === 0
      ? "<p>No pair of backends crosses within the measured sizes.</p>"
      : table(header, crossing.map((c) => crossoverRow(c, moved)))
  }${
    none.length === 0
      ? ""
      : `<details${noneOpen}><summary>${none.length} pair${
        none.length === 1 ? "" : "s"
      } of backends do not cross within the measured sizes</summary>
${table(header, none.map((c) => crossoverRow(c, moved)))}</details>`
  }</section>`;
}

export function systemSection(report: Report): string {
  const s = report.system;
  const rows: [string, Figure][] = [
    ["sync round trip (submit + wait)", s.dispatchRoundTripMs],
    ...(s.readbackRoundTripMs
      ? [["round trip reading 4 bytes back", s.readbackRoundTripMs] as [string, Figure]]
      : []),
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
  return Number.isInteger(size) && size < 10_000 ? String(size) : formatCount(size);
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

function heatmap(
  report: Report,
  group: OpGroup,
  rows: readonly Tuning[],
  palette: ReadonlyMap<string, string>,
): string {
  const sizes = report.measurements.filter((m) =>
    m.state === "ok" && m.op === group.op && m.dtype === group.dtype
  ).map((m) => m.size);
  const cols = columns(sizes);
  const colors = new Map(rows.map((t) => [t.best.variant, palette.get(t.best.variant)!]));
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
<div class="scroll"><table class="heat" data-heatmap="${esc(group.id)}"><thead><tr><th>backend \\ ${
    esc(group.unit)
  }</th>${
    cols.map((size) => `<th class="n">${sizeLabel(size)}</th>`).join("")
  }</tr></thead><tbody>${body.join("")}</tbody></table></div>
<ul class="legend-list">${legend}</ul>`;
}

export function tuningSection(report: Report): string {
  const intro =
    `<p class="sub">Columns: the measured sizes. Colour: the fastest variant there, the same colour for the same variant in every table (legend below each). Text: how much slower the runner-up is (“only”: a single variant was timed). Hover a cell for times.</p>`;
  if (report.tuning.length === 0) {
    return `<section id="tuning"><h2>Tuning</h2><p>No variant search in this report${
      report.provenance.quick ? " (quick runs skip it)" : ""
    }.</p></section>`;
  }
  const palette = variantColors(report);
  const groups = new Map<string, { group: OpGroup; rows: Tuning[] }>();
  for (const t of report.tuning) {
    const id = `${t.op}-${t.dtype}`;
    const entry = groups.get(id) ??
      { group: { op: t.op, dtype: t.dtype, id, unit: t.unit || "size" }, rows: [] };
    groups.set(id, entry);
    entry.rows.push(t);
  }
  return `<section id="tuning"><h2>Tuning: best variant per size</h2>${intro}${
    [...groups.values()].map(({ group, rows }) => heatmap(report, group, rows, palette)).join("\n")
  }</section>`;
}

function signedPercent(x: number): string {
  return formatPercent(x, true);
}

export function llmSection(report: Report): string {
  const validations = report.llm?.validations ?? [];
  if (validations.length === 0) return "";
  const rows = validations.map((v) => {
    const second = secondEstimateOf(v);
    return `<tr><td>${esc(v.model)}</td><td>${esc(v.quant)}</td><td class="n">${
      esc(describeEstimate(v))
    }</td><td class="n">${num(v.measuredTokensPerSec)}</td><td class="n">${
      signedPercent(v.error)
    }</td><td class="n">${
      second ? `${num(second.tokensPerSec)} (${signedPercent(second.error)}, ${second.label})` : "—"
    }</td></tr>`;
  });
  return `<section id="llm"><h2>LLM decode: estimate against measurement</h2>
<p class="sub">Tokens per second estimated from measured kernel times, and measured on a synthetic decode; error = estimated / measured − 1. The estimate is the one a user gets: priced from the report's figures alone, with the range it states (90 %: its kernel predictions' intervals, the machine's drift counted once). The last column is a diagnostic: the same estimate priced from the kernels timed alongside the decode, so that both see the machine in the same seconds (in reports before this, the headline was that one and the last column the sweep's).</p>
${
    table([
      "model",
      "quant",
      "estimated tok/s",
      "measured tok/s",
      "error",
      "second estimate (error)",
    ], rows)
  }${stepProbeNote(report)}</section>`;
}

/** The step probe's sentence under the LLM table, with what the estimate does with it. */
function stepProbeNote(report: Report): string {
  const probe = report.llm?.stepProbe;
  if (!probe) return "";
  return `\n<p class="sub">${esc(describeStepProbe(probe))}. ${esc(STEP_PROBE_USE)}</p>`;
}

/** What the estimate does with the step probe's figures. */
const STEP_PROBE_USE = "The estimate multiplies its kernel terms by the first figure and takes " +
  "the line as each step's host part (see reports/README.md).";

export function failedSection(report: Report): string {
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
