import assert from "node:assert/strict";
import { normal } from "../core/numeric.ts";
import { type BackendCurve, findCrossovers } from "../calibrate/crossover.ts";
import { fitCostModel } from "../calibrate/fit.ts";
import {
  betweenRunSigma,
  driftSigma,
  earlierRunsOf,
  MAX_EARLIER_RUNS,
  medianProbeMs,
  repeatability,
  type RepeatedTime,
  summarizeStability,
} from "../calibrate/stability.ts";
import { geometricGrid } from "../calibrate/sweep.ts";
import { seededRng } from "../kernels/_random.ts";
import type { Backend } from "../kernels/types.ts";
import { compareReports } from "../reports/compare.ts";
import { type Crossover, CrossoverSchema, type Report, ReportSchema } from "../core/schema.ts";
import { syntheticReport } from "./_fixtures.ts";
import { MATMUL_WASM, movedGpuCrossover, slowedSeries } from "./_report_variants.ts";
import { addWork, synthesize, type Truth } from "./_synthetic_curves.ts";

Deno.test("driftSigma() recovers the log-normal spread of a long probe series within 15 %", () => {
  const rng = seededRng(11);
  const series = Array.from({ length: 400 }, () => 0.2 * Math.exp(0.1 * normal(rng)));
  const sigma = driftSigma(series)!;
  assert.ok(Math.abs(sigma / 0.1 - 1) < 0.15, `sigma ${sigma}`);
});

Deno.test("driftSigma() is zero for a steady backend and null with fewer than 3 probes", () => {
  assert.equal(driftSigma([0.5, 0.5, 0.5, 0.5]), 0);
  assert.equal(driftSigma([0.5, 0.7]), null);
});

Deno.test("driftSigma() is not moved by one stalled probe but sees a state lasting many", () => {
  const steady = [1, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1, 1.02, 0.98, 1.01, 0.99];
  const stalled = [...steady.slice(0, 11), 10];
  assert.ok(driftSigma(stalled)! < 2 * driftSigma(steady)!, "one stall is an outlier");
  // Half of the run on one core: the probe takes twice as long.
  const halved = steady.map((t, i) => (i % 2 === 0 ? 2 * t : t));
  assert.ok(driftSigma(halved)! > 0.3, `sigma ${driftSigma(halved)}`);
});

Deno.test("driftSigma() rejects a time that is not positive", () => {
  assert.throws(() => driftSigma([1, 0, 1]), RangeError);
  assert.throws(() => driftSigma([1, NaN, 1]), /Invalid probe time NaN/);
});

Deno.test("summarizeStability() gives a drift only to backends probed at least 3 times", () => {
  const s = summarizeStability([
    { atS: 0, ms: { wasm: 1, webgpu: 12 } },
    { atS: 5, ms: { wasm: 1.1, webgpu: 12 } },
    { atS: 9, ms: { wasm: 0.9 } },
  ]);
  assert.deepEqual(Object.keys(s.driftSigma), ["wasm"]);
  assert.ok(s.driftSigma.wasm! > 0.05 && s.driftSigma.wasm! < 0.2, `${s.driftSigma.wasm}`);
  assert.equal(s.probes.length, 3);
  const report = { ...syntheticReport(), stability: s };
  assert.equal(ReportSchema.safeParse(report).success, true);
});

Deno.test("summarizeStability() states how far the host itself moved, from the reference timed beside each probe", () => {
  // The backends slow down up to ×1.45 and back, and the host reference with them.
  const slow = [1, 1.1, 1.3, 1.45, 1.2, 0.95, 1.05];
  const s = summarizeStability(slow.map((f, i) => ({
    atS: 10 * i,
    ms: { wasm: 0.01 * f, js: 0.04 * f },
    hostMs: 4 * f,
  })));
  assert.ok(s.hostDriftSigma! > 0.1, `${s.hostDriftSigma}`);
  assert.equal(s.hostDriftSigma, s.driftSigma.wasm);
  assert.deepEqual(s.probes.map((p) => p.hostMs), slow.map((f) => 4 * f));
  assert.equal(ReportSchema.safeParse({ ...syntheticReport(), stability: s }).success, true);
  // Earlier reports have no host times: nothing is made up for them.
  const old = summarizeStability(slow.map((f, i) => ({ atS: 10 * i, ms: { wasm: 0.01 * f } })));
  assert.equal(old.hostDriftSigma, undefined);
  assert.ok(old.probes.every((p) => !("hostMs" in p)));
});

Deno.test("summarizeStability() states how far the memory moved while the compute held still", () => {
  // The 32 MiB sum swings ×1.9 while the probes and the compute reference stay within 2 %.
  const memory = [1, 1.4, 1.9, 1.2, 1.6, 1.0, 1.3];
  const s = summarizeStability(memory.map((f, i) => ({
    atS: 10 * i,
    ms: { wasm: 0.01 * (1 + 0.02 * (i % 2)) },
    hostMs: 4,
    hostStreamMs: 3.2 * f,
  })));
  assert.ok(s.memoryDriftSigma! > 0.2, `${s.memoryDriftSigma}`);
  assert.ok(s.driftSigma.wasm! < 0.03 && s.hostDriftSigma === 0);
  assert.deepEqual(s.probes.map((p) => p.hostStreamMs), memory.map((f) => 3.2 * f));
  assert.equal(ReportSchema.safeParse({ ...syntheticReport(), stability: s }).success, true);
  const old = summarizeStability(memory.map((_, i) => ({ atS: 10 * i, ms: { wasm: 0.01 } })));
  assert.equal(old.memoryDriftSigma, undefined, "nothing made up without memory times");
});

Deno.test("a report's host reference time must be a positive number", () => {
  const s = summarizeStability([{ atS: 0, ms: { wasm: 0.01 }, hostMs: 4 }]);
  const bad = { ...s, probes: [{ ...s.probes[0]!, hostMs: -1 }] };
  const parsed = ReportSchema.safeParse({ ...syntheticReport(), stability: bad });
  assert.equal(parsed.success, false);
  assert.match(JSON.stringify(parsed.error?.issues), /hostMs/);
});

/** Times of `cases` cases over `windows` windows, each case's base time times `factor`. */
function repeated(
  cases: number,
  windows: number,
  factor: (caseIndex: number, window: number) => number,
): RepeatedTime[] {
  return Array.from({ length: cases * windows }, (_, i) => {
    const c = Math.floor(i / windows), w = i % windows;
    return { case: `case ${c}`, window: w, ms: 0.05 * (c + 1) * factor(c, w) };
  });
}

Deno.test("repeatability() counts every time of a steady backend within ±5 % with σ 0", () => {
  const r = repeatability(repeated(4, 4, () => 1));
  assert.deepEqual(r, { cases: 4, times: 16, within5: 1, within10: 1, within15: 1, sigmaLn: 0 });
});

Deno.test("repeatability() puts a case's one fast window outside ±10 % (the js Maglev split)", () => {
  // One window at 0.047 ms, three at 0.111–0.118: the median is a slow time, the fast one is
  // 58 % below it.
  const r = repeatability(
    [0.047, 0.111, 0.115, 0.118].map((ms, window) => ({ case: "add", window, ms })),
  )!;
  assert.equal(r.within10, 0.75);
  assert.equal(r.within5, 0.75);
  assert.ok(r.sigmaLn > 0.01 && r.sigmaLn < 0.1, `σ ${r.sigmaLn}: the slow majority sets it`);
});

Deno.test("repeatability() recovers the log-normal spread of many cases within 20 %", () => {
  const rng = seededRng(5);
  const r = repeatability(repeated(60, 9, () => Math.exp(0.08 * normal(rng))))!;
  assert.ok(Math.abs(r.sigmaLn / 0.08 - 1) < 0.2, `σ ${r.sigmaLn}`);
  // ±10 % is about 1.2 σ here, so roughly three quarters of the times are within it.
  assert.ok(r.within10 > 0.65 && r.within10 < 0.9, `within10 ${r.within10}`);
  assert.ok(r.within5 < r.within10 && r.within10 < r.within15);
});

Deno.test("repeatability() scores each case against its own median, not the group's", () => {
  // Cases 10× apart, each steady: no spread at all.
  const r = repeatability(repeated(3, 3, (c) => 10 ** c))!;
  assert.equal(r.sigmaLn, 0);
  assert.equal(r.within5, 1);
});

Deno.test("repeatability() counts 1.05× the median as within ±5 % and 1.06× as outside", () => {
  const at = (ratio: number) =>
    repeatability([
      { case: "a", window: 0, ms: 1 },
      { case: "a", window: 1, ms: 1 },
      { case: "a", window: 2, ms: ratio },
    ])!.within5;
  assert.equal(at(1.05), 1);
  assert.equal(at(1.06), 2 / 3);
});

Deno.test("repeatability() leaves out cases measured in one window, and is null with none", () => {
  const r = repeatability([
    { case: "once", window: 0, ms: 5 },
    { case: "twice", window: 0, ms: 1 },
    { case: "twice", window: 1, ms: 1.02 },
  ]);
  assert.equal(r?.cases, 1);
  assert.equal(r?.times, 2);
  assert.equal(repeatability([{ case: "once", window: 0, ms: 5 }]), null);
  assert.equal(repeatability([]), null);
});

Deno.test("repeatability() rejects a non-positive time and two times of a case in one window", () => {
  assert.throws(
    () => repeatability([{ case: "a", window: 0, ms: 0 }]),
    /Invalid time 0 of case "a"/,
  );
  assert.throws(
    () =>
      repeatability([
        { case: "a", window: 1, ms: 1 },
        { case: "a", window: 1, ms: 2 },
      ]),
    /Case "a" has two times in window 1/,
  );
});

Deno.test("a report's stability section may carry repeatability groups", () => {
  const stats = repeatability(repeated(2, 4, (_, w) => 1 + 0.03 * w))!;
  const stability = {
    ...summarizeStability([]),
    repeatability: {
      windows: 4,
      gapS: 20,
      groups: [{ backend: "wasm" as const, residency: "end-to-end" as const, ...stats }],
    },
  };
  const report = { ...syntheticReport(), stability };
  assert.equal(ReportSchema.safeParse(report).success, true);
  const wrong = { ...stability, repeatability: { ...stability.repeatability, windows: 0 } };
  assert.equal(ReportSchema.safeParse({ ...syntheticReport(), stability: wrong }).success, false);
});

// wasm and wasm-mt on two cores: nearly parallel curves that cross near 70 000 elements, where a
// 10 % shift of wasm-mt alone moves the crossover by about 40 %.
const wasm: Truth = { t0Us: 5, gflops: null, gbps: 8 };
const wasmMt: Truth = { t0Us: 40, gflops: null, gbps: 12 };
const grid = geometricGrid(1024, 1 << 22);

function curve(backend: Backend, truth: Truth, seed: number, scale = 1): BackendCurve {
  const points = synthesize(
    grid,
    addWork,
    (n) => scale * (truth.t0Us / 1000 + 12 * n / (truth.gbps! * 1e6)),
    seededRng(seed),
  ).map(({ samples: _, ...p }) => ({ ...p, ci: [p.ms * 0.99, p.ms * 1.01] as const }));
  const fit = fitCostModel(points, {
    op: "add",
    dtype: "f32",
    backend,
    variant: "default",
    residency: "end-to-end",
  });
  return { backend, points, fit };
}

function wasmPair(mtScale: number, drift?: Partial<Record<Backend, number>>): Crossover {
  const found = findCrossovers({
    op: "add",
    dtype: "f32",
    residency: "end-to-end",
    unit: "elements",
    curves: [curve("wasm", wasm, 1), curve("wasm-mt", wasmMt, 2, mtScale)],
    work: addWork,
    ...(drift ? { drift } : {}),
  });
  const c = found.find((x) => x.pair === "wasm→wasm-mt");
  assert.ok(c?.size, `no wasm→wasm-mt crossover: ${JSON.stringify(found)}`);
  return c;
}

Deno.test("findCrossovers() with drift gives a driftCi wider than ci and containing it", () => {
  const c = wasmPair(1, { wasm: 0.1, "wasm-mt": 0.1 });
  assert.ok(c.ci && c.driftCi, JSON.stringify(c));
  assert.ok(c.driftCi[0] <= c.ci[0] && c.driftCi[1] >= c.ci[1], JSON.stringify(c));
  const logWidth = ([lo, hi]: readonly [number, number]) => Math.log(hi / lo);
  assert.ok(logWidth(c.driftCi) > 5 * logWidth(c.ci), JSON.stringify(c));
  assert.equal(CrossoverSchema.safeParse(c).success, true);
  assert.equal(wasmPair(1).driftCi, undefined, "no drift, no driftCi");
});

/** A synthetic report whose only crossover is the wasm→wasm-mt one given. */
function reportWith(c: Crossover, stability: Report["stability"] | null): Report {
  const report = syntheticReport();
  report.crossovers = [c];
  if (stability) report.stability = stability;
  return report;
}

const probesOf = (sigma: number) =>
  summarizeStability(
    Array.from({ length: 9 }, (_, i) => ({
      atS: 5 * i,
      ms: { wasm: 0.03, "wasm-mt": 0.025 * Math.exp(sigma * ((i % 3) - 1)) },
    })),
  );

Deno.test("compareReports() does not flag a crossover moved by a drift-sized shift of one backend", () => {
  const stability = probesOf(0.1);
  const sigma = stability.driftSigma;
  const base = wasmPair(1, sigma), moved = wasmPair(1.1, sigma);
  const change = moved.size! / base.size! - 1;
  assert.ok(change > 0.2, `the shift should move it well past the tolerance: ${change}`);
  assert.ok(moved.ci![0] > base.ci![1], "within-run intervals alone are apart");
  const row = compareReports(reportWith(base, stability), reportWith(moved, stability)).rows
    .find((r) => r.key === "add f32 wasm→wasm-mt end-to-end");
  assert.ok(row);
  assert.equal(row.regressed, false, row.note);
  assert.match(row.note, /within run-to-run drift of wasm-mt \(σ 1\d %\)/);
  assert.deepEqual(row.drift, { backend: "wasm-mt", sigma: sigma["wasm-mt"] });
});

Deno.test("compareReports() without stability data still flags the same drift-sized move", () => {
  const strip = ({ driftCi: _, driftOutOfRange: __, ...c }: Crossover) => c;
  const base = strip(wasmPair(1, probesOf(0.1).driftSigma));
  const moved = strip(wasmPair(1.1, probesOf(0.1).driftSigma));
  const row = compareReports(reportWith(base, null), reportWith(moved, null)).rows
    .find((r) => r.key === "add f32 wasm→wasm-mt end-to-end");
  assert.equal(row?.regressed, true);
  assert.match(row.note, /threshold moved up \(95 % intervals do not overlap\)/);
  assert.equal(row.drift, null);
});

Deno.test("compareReports() still flags a 2x GPU crossover move when the drift is small", () => {
  const stability = summarizeStability(
    Array.from({ length: 9 }, (_, i) => ({
      atS: 5 * i,
      ms: { webgpu: 12 * (1 + 0.02 * ((i % 3) - 1)), "wasm-mt": 0.03 * (1 + 0.02 * (i % 2)) },
    })),
  );
  const base = { ...syntheticReport(), stability };
  const current = { ...movedGpuCrossover(2), stability };
  // The bootstrap with a 2 % drift widens each interval by a few per cent at most.
  for (const r of [base, current]) {
    for (const c of r.crossovers) {
      if (c.ci) c.driftCi = [c.ci[0] * 0.95, c.ci[1] * 1.05];
    }
  }
  const result = compareReports(base, current);
  assert.equal(result.regressed, true);
  const row = result.rows.find((r) => r.key === "matmul f32 cpu→webgpu end-to-end");
  assert.equal(row?.regressed, true);
  assert.match(
    row.note,
    /threshold moved up \(95 % intervals with run-to-run drift do not overlap\)/,
  );
});

Deno.test("compareReports() widens a rate's interval by its backend's drift", () => {
  const stability = summarizeStability(
    Array.from({ length: 9 }, (_, i) => ({
      atS: 5 * i,
      ms: { wasm: 0.03 * Math.exp(0.15 * ((i % 3) - 1)) },
    })),
  );
  const current = {
    ...slowedSeries(syntheticReport(), MATMUL_WASM, 1.25),
    stability,
  };
  const key = "matmul f32 wasm end-to-end compute";
  const plain = compareReports(syntheticReport(), { ...current, stability: undefined! });
  const row = compareReports({ ...syntheticReport(), stability }, current).rows
    .find((r) => r.key === key);
  assert.equal(plain.rows.find((r) => r.key === key)?.regressed, true, "no drift: regression");
  assert.equal(row?.regressed, false, JSON.stringify(row));
  const percent = Math.round(stability.driftSigma.wasm! * 100);
  assert.equal(
    row.note,
    `-20.0 %: within run-to-run drift of wasm (σ ${percent} %); measured at 512`,
  );
  assert.ok(row.currentDriftCi && row.currentCi);
  assert.ok(row.currentDriftCi[0] < row.currentCi[0] && row.currentDriftCi[1] > row.currentCi[1]);
});

Deno.test("summarizeStability() states the run's repeatability over its probes as windows", () => {
  const s = summarizeStability([
    { atS: 0, ms: { wasm: 1, webgpu: 0.1 } },
    { atS: 10, ms: { wasm: 1.02, webgpu: 0.2 } },
    { atS: 20, ms: { wasm: 0.99, webgpu: 0.1 } },
    { atS: 30, ms: { wasm: 1.3 } },
  ]);
  assert.equal(s.repeatability?.windows, 4);
  assert.equal(s.repeatability?.gapS, 10);
  const wasm = s.repeatability!.groups.find((g) => g.backend === "wasm")!;
  assert.equal(wasm.residency, "end-to-end");
  assert.equal(wasm.within10, 0.75, "three of four probes within ±10 % of their median");
  const webgpu = s.repeatability!.groups.find((g) => g.backend === "webgpu")!;
  assert.equal(webgpu.residency, "device-resident");
  assert.ok(Math.abs(webgpu.within10 - 2 / 3) < 1e-9, "the 2× probe is the one outside");
  assert.equal(ReportSchema.safeParse({ ...syntheticReport(), stability: s }).success, true);
  assert.equal(summarizeStability(s.probes.slice(0, 2)).repeatability, undefined);
});

/** A run's probes: `n` probes of wasm and js around the given medians (±1 %). */
function probesAround(medians: { wasm: number; js: number }, n = 5) {
  return Array.from({ length: n }, (_, i) => {
    const wobble = 1 + 0.01 * ((i % 3) - 1);
    return { atS: 10 * i, ms: { wasm: medians.wasm * wobble, js: medians.js * wobble } };
  });
}

Deno.test("medianProbeMs() leaves out a backend whose probes read 0 ms", () => {
  const probes = [0, 0, 0.01].map((ms, i) => ({ atS: i, ms: { wasm: ms, js: 0.04 } }));
  assert.deepEqual(medianProbeMs(probes), { js: 0.04 });
});

Deno.test("betweenRunSigma() is the spread of ln(median) between consecutive runs, from 3 runs on", () => {
  const runs = [{ wasm: 1, js: 4 }, { wasm: 1.2, js: 4 }, { wasm: 1 / 1.2, js: 4 }];
  const sigma = betweenRunSigma(runs);
  // Steps of ln 1.2 and 2 ln 1.2: √((1 + 4) ln²1.2 / 4).
  const expected = Math.sqrt(5 / 4) * Math.log(1.2);
  assert.ok(Math.abs(sigma.wasm! - expected) < 1e-4, `wasm ${sigma.wasm}`);
  assert.equal(sigma.js, 0);
  assert.deepEqual(betweenRunSigma(runs.slice(0, 2)), {});
  assert.deepEqual(betweenRunSigma([{ wasm: 1 }, { js: 2 }, { wasm: 3 }]), {});
});

Deno.test("betweenRunSigma() counts a level that changed once as one step, and runs that alternate in full", () => {
  // Twelve runs at one level, then three 25 % faster (the probe measured otherwise from then on).
  const stepped = [...Array(12).fill(1), ...Array(3).fill(0.8)].map((wasm) => ({ wasm }));
  const step = betweenRunSigma(stepped).wasm!;
  assert.ok(Math.abs(step - Math.log(1.25) / Math.sqrt(28)) < 1e-4, `step ${step}`);
  // The same fifteen levels alternating: every run moves from the one before.
  const alternating = stepped.map((_, i) => ({ wasm: i % 2 === 0 ? 1 : 0.8 }));
  assert.ok(betweenRunSigma(alternating).wasm! > 3 * step);
});

Deno.test("earlierRunsOf() carries the replaced report's runs and its own, for this machine and configuration only", () => {
  const first = {
    ...syntheticReport(),
    stability: summarizeStability(probesAround({ wasm: 0.01, js: 0.04 })),
  };
  const carried = earlierRunsOf([first], first.fingerprint);
  assert.deepEqual(carried, [{
    date: first.provenance.date,
    medianMs: medianProbeMs(first.stability.probes),
    driftSigma: first.stability.driftSigma,
  }]);
  assert.deepEqual(earlierRunsOf([first], "ffffffffffffffff"), [], "another machine's report");
  assert.deepEqual(earlierRunsOf([], first.fingerprint), []);
  // Another configuration of this machine moves by its setting, not by the host.
  assert.deepEqual(earlierRunsOf([first], first.fingerprint, { LP_NUM_THREADS: "1" }), []);
  const oneThread = {
    ...first,
    provenance: { ...first.provenance, driverEnv: { LP_NUM_THREADS: "1" } },
  };
  assert.deepEqual(earlierRunsOf([oneThread], first.fingerprint), []);
  assert.deepEqual(earlierRunsOf([oneThread], first.fingerprint, { LP_NUM_THREADS: "1" }), carried);
  // A second run replaces the first, a third the second: the third sees both.
  const second = {
    ...first,
    provenance: { ...first.provenance, date: "2026-01-16T10:30:00.000Z" },
    stability: summarizeStability(probesAround({ wasm: 0.012, js: 0.04 }), carried),
  };
  const third = earlierRunsOf([second], second.fingerprint);
  assert.deepEqual(third.map((r) => r.date), [first.provenance.date, "2026-01-16T10:30:00.000Z"]);
  const stability = summarizeStability(probesAround({ wasm: 0.01 / 1.2, js: 0.04 }), third);
  // Steps of ln 1.2 and 2 ln 1.2 between the three runs.
  const expected = Math.sqrt(5 / 4) * Math.log(1.2);
  assert.ok(Math.abs(stability.betweenRunSigma!.wasm! - expected) < 0.02);
  assert.ok(stability.betweenRunSigma!.js! < 0.01);
  assert.equal(ReportSchema.safeParse({ ...second, stability }).success, true);
});

Deno.test("earlierRunsOf() merges several reports of this machine by date, each run once", () => {
  const at = (day: number, wasm: number) => ({
    ...syntheticReport(),
    provenance: { ...syntheticReport().provenance, date: `2026-01-${day}T10:00:00.000Z` },
    stability: summarizeStability(probesAround({ wasm, js: 0.04 })),
  });
  const a = at(10, 0.010), b = at(12, 0.012);
  const c = {
    ...at(14, 0.011),
    stability: summarizeStability(
      probesAround({ wasm: 0.011, js: 0.04 }),
      earlierRunsOf([a], a.fingerprint),
    ),
  };
  const runs = earlierRunsOf([c, b, a], a.fingerprint);
  assert.deepEqual(runs.map((r) => r.date.slice(8, 10)), ["10", "12", "14"]);
  assert.ok(Math.abs(runs[1]!.medianMs.wasm! - 0.012) < 1e-12);
});

Deno.test("earlierRunsOf() keeps the latest runs, and a report needs no earlier runs", () => {
  const many = Array.from({ length: MAX_EARLIER_RUNS + 5 }, (_, i) => ({
    date: new Date(Date.UTC(2025, 0, 1 + i)).toISOString(),
    medianMs: { wasm: 0.01 },
  }));
  const report = {
    ...syntheticReport(),
    stability: { ...summarizeStability(probesAround({ wasm: 0.01, js: 0.04 })), earlierRuns: many },
  };
  const carried = earlierRunsOf([report], report.fingerprint);
  assert.equal(carried.length, MAX_EARLIER_RUNS);
  assert.equal(carried.at(-1)!.date, report.provenance.date);
  assert.equal(carried[0]!.date, many[6]!.date);
  const fresh = summarizeStability(probesAround({ wasm: 0.01, js: 0.04 }));
  assert.equal("earlierRuns" in fresh || "betweenRunSigma" in fresh, false);
});

Deno.test("a report's earlier runs are validated: dates, positive times, known backends", () => {
  const stability = summarizeStability(probesAround({ wasm: 0.01, js: 0.04 }), [
    { date: "2026-01-14T10:30:00.000Z", medianMs: { wasm: 0.011 } },
  ]);
  const report = { ...syntheticReport(), stability };
  assert.equal(ReportSchema.safeParse(report).success, true);
  for (
    const bad of [
      { date: "yesterday", medianMs: { wasm: 0.011 } },
      { date: "2026-01-14T10:30:00.000Z", medianMs: { wasm: 0 } },
      { date: "2026-01-14T10:30:00.000Z", medianMs: { cuda: 0.011 } },
    ]
  ) {
    const wrong = { ...report, stability: { ...stability, earlierRuns: [bad] } };
    assert.equal(ReportSchema.safeParse(wrong).success, false, JSON.stringify(bad));
  }
});
