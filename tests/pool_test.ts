import assert from "node:assert/strict";
import {
  disagreeingBackends,
  levelShifts,
  MAX_TYPICAL_DISAGREEMENT,
  poolMeasurements,
  poolRefusal,
} from "../calibrate/pool.ts";
import { parseReport } from "../reports/load.ts";
import type { Measurement } from "../core/schema.ts";
import type { Backend, Residency } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

/** An ok measurement of the synthetic report, at `median` ms (its statistics scaled to it). */
function okAt(median: number, changes: Partial<Measurement> = {}): Measurement {
  const m = syntheticReport().measurements.find((x) => x.state === "ok" && x.op === "add")!;
  assert.ok(m.state === "ok");
  const f = median / m.wall.median;
  return {
    ...m,
    wall: {
      ...m.wall,
      median,
      p10: m.wall.p10 * f,
      p90: m.wall.p90 * f,
      ciHalfWidth: median * 0.01,
      relCi: 0.01,
    },
    gflops: m.flops / (median * 1e6),
    gbps: m.bytes / (median * 1e6),
    ...changes,
  } as Measurement;
}

Deno.test("a case both runs measured takes the geometric mean of their medians, and says it pools two runs", () => {
  const { measurements, pooled } = poolMeasurements([okAt(2)], [okAt(0.5)]);
  assert.equal(pooled, 1);
  const m = measurements[0]!;
  assert.ok(m.state === "ok");
  assert.ok(Math.abs(m.wall.median - 1) < 1e-12);
  assert.equal(m.runs, 2);
  // The rates follow the pooled median; the window's statistics are scaled to it.
  assert.ok(Math.abs(m.gflops * m.wall.median * 1e6 / m.flops - 1) < 1e-9);
  assert.ok(Math.abs(m.gbps * m.wall.median * 1e6 / m.bytes - 1) < 1e-9);
  assert.ok(m.wall.p10 <= m.wall.median && m.wall.median <= m.wall.p90);
});

Deno.test("a pooled median is as unsure as the runs disagree, at least", () => {
  const m = poolMeasurements([okAt(2)], [okAt(0.5)]).measurements[0]!;
  assert.ok(m.state === "ok");
  // The runs sit ×2 either side: the half-width reaches halfway to each in ln time.
  assert.ok(Math.abs(m.wall.ciHalfWidth - Math.expm1(Math.log(2))) < 1e-9);
  assert.ok(Math.abs(m.wall.relCi - m.wall.ciHalfWidth / m.wall.median) < 1e-12);
  // Runs that agree keep the window's own half-width.
  const agreeing = poolMeasurements([okAt(1)], [okAt(1)]).measurements[0]!;
  assert.ok(agreeing.state === "ok" && Math.abs(agreeing.wall.relCi - 0.01) < 1e-12);
});

Deno.test("the newest run weighs at least a quarter, however many runs the earlier median pooled", () => {
  const after = (runs: number) => {
    const m = poolMeasurements([okAt(16)], [okAt(1, { runs })]).measurements[0]!;
    assert.ok(m.state === "ok");
    return { log2: Math.log2(m.wall.median), runs: m.runs };
  };
  // 16 against 1: weighed 1/3 against two runs, 1/4 against three or more.
  assert.ok(Math.abs(after(2).log2 - 4 / 3) < 1e-9);
  assert.equal(after(2).runs, 3);
  assert.ok(Math.abs(after(3).log2 - 1) < 1e-9);
  assert.ok(Math.abs(after(9).log2 - 1) < 1e-9);
  assert.equal(after(9).runs, 10);
});

Deno.test("cases only one run measured, and failed ones, stay as this run has them", () => {
  const mine = [okAt(1), okAt(1, { size: 999, shape: { n: 999 } })];
  const failed = {
    ...okAt(1, { size: 77, shape: { n: 77 } }),
    state: "failed",
    error: "wrong",
  } as unknown as Measurement;
  const { measurements, pooled } = poolMeasurements([...mine, failed], [okAt(4), failed]);
  assert.equal(pooled, 1);
  assert.deepEqual(measurements.slice(1), [mine[1], failed]);
});

Deno.test("a variant whose axis the earlier runs swept and this run did not keeps their sizes, carried over once and marked", () => {
  const wg64 = (n: number, ms: number, changes: Partial<Measurement> = {}) =>
    okAt(ms, { variant: "wg=64", size: n, shape: { n }, runs: 3, ...changes });
  const wg256 = (n: number, ms: number) => okAt(ms, { variant: "wg=256", size: n, shape: { n } });
  // The earlier runs swept wg=64; this run's screen picked wg=256 and swept it alone.
  const earlier = [wg64(16, 1), wg64(4096, 4), wg64(65536, 40)];
  const mine = [wg256(16, 3), wg256(4096, 5), wg256(65536, 42), wg64(65536, 44)];
  const { measurements, pooled, carried } = poolMeasurements(mine, earlier);
  assert.equal(pooled, 1);
  assert.equal(carried, 2);
  assert.deepEqual(
    measurements.filter((m) => m.carriedOver).map((m) => [m.variant, m.size, m.runs]),
    [["wg=64", 16, 3], ["wg=64", 4096, 3]],
  );
  assert.equal(measurements.find((m) => m.variant === "wg=64" && m.size === 65536)?.runs, 4);
  // A variant this run swept keeps its own sizes: the earlier runs' other sizes of it stay out.
  const swept = poolMeasurements(mine, [...earlier, wg256(999, 4)]);
  assert.ok(!swept.measurements.some((m) => m.size === 999));
  // A case carried once is not carried again: a run must measure it for it to stay.
  const again = poolMeasurements(mine, measurements).measurements;
  assert.ok(!again.some((m) => m.variant === "wg=64" && m.size === 16));
  // A job this run did not measure (another op, or a residency) stays out.
  const otherJob = [wg64(16, 1, { residency: "device-resident" })];
  assert.equal(poolMeasurements(mine, otherJob).carried, 0);
  // Nor is anything carried for a backend whose runs disagree.
  const sizes = [16, 256, 4096, 65536];
  const before = sizes.map((n) => wg256(n, 1));
  const thrice = sizes.map((n) => wg256(n, 3));
  assert.equal(poolMeasurements(thrice, [...before, wg64(8, 1)]).carried, 0);
  assert.equal(poolMeasurements(before, [...before, wg64(8, 1)]).carried, 1);
});

Deno.test("a run pools only with a complete report of its machine and mode, measured by its code with its driver settings", () => {
  const earlier = syntheticReport();
  const commit = "1234567890abcdef1234567890abcdef12345678";
  const withCommit = { ...earlier, gpucal: { ...earlier.gpucal, commit } };
  const driverEnv = { DENO_WEBGPU_BACKEND: "vulkan" };
  const run = {
    fingerprint: earlier.fingerprint,
    mode: "default",
    denoVersion: earlier.provenance.denoVersion,
    measuresAsEarlier: true,
    driverEnv,
  };
  const finished = {
    ...withCommit,
    provenance: {
      ...withCommit.provenance,
      mode: "default" as const,
      complete: true,
      stopReason: "finished" as const,
      driverEnv,
    },
  };
  assert.equal(poolRefusal(finished, run), null);
  assert.match(poolRefusal(finished, { ...run, fingerprint: "other" })!, /another machine/);
  assert.match(poolRefusal(finished, { ...run, mode: "quick" })!, /another mode/);
  assert.match(
    poolRefusal(finished, { ...run, denoVersion: "9.9.9" })!,
    /it ran on Deno .*, this run on 9\.9\.9/,
  );
  assert.match(
    poolRefusal(finished, { ...run, measuresAsEarlier: false })!,
    /its gpucal commit \(1234567\) measured with other kernels or runners/,
  );
  assert.match(
    poolRefusal(finished, { ...run, measuresAsEarlier: null })!,
    /measured by this checkout's kernels and runners is unknown/,
  );
  assert.match(
    poolRefusal({ ...finished, provenance: { ...finished.provenance, complete: false } }, run)!,
    /not a complete, finished run/,
  );
  assert.match(
    poolRefusal(finished, { ...run, driverEnv: { ...driverEnv, LP_NUM_THREADS: "1" } })!,
    /other driver settings \(LP_NUM_THREADS "1" in this run, unset in it\)/,
  );
  // The backend the variable picks is the adapter's, which the fingerprint already names.
  assert.equal(poolRefusal(finished, { ...run, driverEnv: {} }), null);
  assert.match(
    poolRefusal(finished, { ...run, driverEnv: { MESA_VK_DEVICE_SELECT: "1002:73bf" } })!,
    /MESA_VK_DEVICE_SELECT "1002:73bf" in this run, unset in it/,
  );
  assert.match(poolRefusal(finished, { ...run, driverEnv: null })!, /driver settings are unknown/);
  // A report from before gpucal recorded settings counts as the default configuration.
  const unrecorded = { ...finished, provenance: { ...finished.provenance, driverEnv: undefined } };
  assert.equal(poolRefusal(unrecorded, run), null);
  assert.match(
    poolRefusal(unrecorded, { ...run, driverEnv: { ...driverEnv, LP_NUM_THREADS: "1" } })!,
    /does not record its driver settings \(LP_NUM_THREADS "1" in this run, unset in it\)/,
  );
});

/** Ok measurements of `add` on `backend` in `residency`, one per median, at sizes 1, 2, 3… */
function series(backend: Backend, residency: Residency, medians: number[]): Measurement[] {
  return medians.map((t, i) =>
    okAt(t, { backend, residency, size: i + 1, shape: { n: i + 1 } } as Partial<Measurement>)
  );
}

Deno.test("earlier runs are brought to this run's level before pooling: the pool averages cases, not host states", () => {
  // This run found the host ×1.3 slower throughout, and each case scatters run to run besides.
  const earlierMs = [1, 2, 4, 8, 16];
  const scatter = [1.1, 1 / 1.1, 1, 1.05, 1 / 1.05];
  const mine = series("wasm", "end-to-end", earlierMs.map((t, i) => 1.3 * t * scatter[i]!));
  const other = okAt(
    5,
    {
      backend: "wasm",
      residency: "end-to-end",
      variant: "unroll=1",
      size: 99,
      shape: { n: 99 },
    } as Partial<Measurement>,
  );
  const earlier = [...series("wasm", "end-to-end", earlierMs), other];
  assert.ok(Math.abs(levelShifts(mine, earlier).get("wasm|end-to-end")! - Math.log(1.3)) < 1e-12);
  const { measurements, carried } = poolMeasurements(mine, earlier);
  measurements.slice(0, 5).forEach((m, i) => {
    assert.ok(m.state === "ok");
    const expected = 1.3 * earlierMs[i]! * Math.sqrt(scatter[i]!);
    assert.ok(Math.abs(m.wall.median / expected - 1) < 1e-9, `case ${i}: ${m.wall.median}`);
  });
  // What only the earlier runs measured comes over at this run's level too.
  assert.equal(carried, 1);
  const came = measurements.at(-1)!;
  assert.ok(came.state === "ok" && Math.abs(came.wall.median - 6.5) < 1e-9);
  // Three shared cases say too little of a level: the medians pool as they are.
  assert.equal(levelShifts(mine.slice(0, 3), earlier).size, 0);
});

Deno.test("a backend whose runs sit typically further apart than one machine state's keeps this run's times", () => {
  // Run to run, cases scatter ×1.2 either way (and one ×3): one state of the machine.
  const scatter = [1.2, 1 / 1.2, 1.1, 3, 1 / 1.15, 1.05];
  const ones = scatter.map(() => 1);
  // On one lavapipe thread, small dispatches ran twice as fast and large ones three times slower.
  const oneThread = [0.5, 0.5, 0.6, 2, 3, 3.1];
  const mine = [
    ...series("wasm", "end-to-end", scatter),
    ...series("webgpu", "end-to-end", ones.map((x) => 12 * x)),
    ...series("webgpu", "device-resident", oneThread),
  ];
  const earlier = [
    ...series("wasm", "end-to-end", ones),
    ...series("webgpu", "end-to-end", ones.map((x) => 12 * x)),
    ...series("webgpu", "device-resident", ones),
  ];
  const apart = disagreeingBackends(mine, earlier);
  // The readback hides the device's change end to end; device-resident shows it.
  assert.deepEqual(apart.map((d) => [d.backend, d.residency, d.cases]), [
    ["webgpu", "device-resident", 6],
  ]);
  assert.ok(apart[0]!.typicalFactor > MAX_TYPICAL_DISAGREEMENT);
  const { measurements, pooled } = poolMeasurements(mine, earlier);
  assert.equal(pooled, 6, "wasm pools; webgpu keeps its own in both residencies");
  assert.deepEqual(measurements.filter((m) => m.backend === "webgpu"), mine.slice(6));
});

Deno.test("disagreement is judged on four shared cases or more", () => {
  const twice = [2, 2, 2];
  assert.deepEqual(
    disagreeingBackends(
      series("js", "end-to-end", twice),
      series("js", "end-to-end", [1, 1, 1]),
    ),
    [],
  );
  assert.equal(
    disagreeingBackends(
      series("js", "end-to-end", [...twice, 2]),
      series("js", "end-to-end", [1, 1, 1, 1]),
    )
      .length,
    1,
  );
});

Deno.test("a pooled report is a valid report: its measurements say how many runs they pool, its provenance which report", () => {
  const report = syntheticReport();
  const { measurements } = poolMeasurements(report.measurements, report.measurements);
  const pooled = parseReport({
    ...report,
    measurements,
    provenance: { ...report.provenance, pooledWith: "2026-11-27T10:00:00.000Z" },
  });
  assert.ok(pooled.measurements.some((m) => m.runs === 2));
  assert.equal(pooled.provenance.pooledWith, "2026-11-27T10:00:00.000Z");
  assert.throws(() =>
    parseReport({ ...report, measurements: [{ ...report.measurements[0]!, runs: 1 }] })
  );
});
