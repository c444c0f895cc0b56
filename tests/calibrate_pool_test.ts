import assert from "node:assert/strict";
import { fitAll } from "../calibrate/analyze.ts";
import type { ProgressEvent } from "../calibrate/progress.ts";
import type { Report } from "../core/schema.ts";
import { quickAddCalibration } from "./_quick_add.ts";
import { scaledStats } from "../calibrate/pool.ts";
import type { Runner } from "../calibrate/runner.ts";
import { openRunner } from "../calibrate/runners/mod.ts";
import type { Backend } from "../kernels/types.ts";

const COMMIT = "c0ffee0000000000000000000000000000000000";

/**
 * The CPU runners with a scripted clock: a rep of `add` over n elements takes (1 + n / 1000) µs,
 * ±0.5 %. The kernels still run (and are verified); only their times are made up, so two runs
 * agree whatever the host does meanwhile, and pooling them is decided by the test alone.
 */
async function scriptedCpuRunner(backend: Backend): Promise<Runner | string> {
  const runner = await openRunner(backend);
  if (typeof runner === "string") return runner;
  return {
    ...runner,
    prepare: async (...args: Parameters<Runner["prepare"]>) => {
      const prepared = await runner.prepare(...args);
      const repMs = 0.001 * (1 + (args[1].n ?? 0) / 1000);
      let calls = 0;
      return {
        ...prepared,
        time: async (reps: number) => {
          const t = await prepared.time(reps);
          return { ...t, wallMs: reps * repMs * (1 + 0.005 * ((calls++ % 3) - 1)) };
        },
      };
    },
  };
}

/**
 * A quick js + wasm calibration of `add` (its clock scripted) from a checkout at `COMMIT` whose measuring code is
 * `COMMIT`'s unless `measuresAs` says otherwise, and its progress lines.
 */
async function quickRun(
  options: { poolWith?: Report; measuresAs?: boolean | null } = {},
): Promise<{ report: Report; phases: string[] }> {
  const phases: string[] = [];
  const same = options.measuresAs === undefined ? true : options.measuresAs;
  const report = await quickAddCalibration({
    checkout: { commit: COMMIT, measuresAs: () => Promise.resolve(same) },
    openCpuRunner: scriptedCpuRunner,
    ...(options.poolWith ? { poolWith: options.poolWith } : {}),
    onProgress: (e: ProgressEvent) => {
      if (e.kind === "phase") phases.push(e.phase);
    },
  });
  return { report, phases };
}

Deno.test("a finished run pools its measurements with the report it replaces when the same code measured it", async () => {
  const first = await quickRun();
  assert.ok(first.report.measurements.every((m) => m.runs === undefined));
  const second = await quickRun({ poolWith: first.report });
  assert.ok(
    second.phases.some((p) => /pools its measurements with the report it replaces/.test(p)),
  );
  assert.equal(second.report.provenance.pooledWith, first.report.provenance.date);
  const pooled = second.report.measurements.filter((m) => m.runs === 2);
  assert.ok(pooled.length > 0, "cases both runs measured pool two runs");
  // The fits are made from the pooled medians the report holds.
  assert.deepEqual(second.report.fits, fitAll(second.report.measurements));
});

Deno.test("a run keeps its own measurements beside a report measured by other kernels or runners, or with other driver settings, and says why", async () => {
  const first = await quickRun();
  const p = first.report.provenance;
  const oneThread = {
    ...first.report,
    provenance: { ...p, driverEnv: { ...p.driverEnv, LP_NUM_THREADS: "1" } },
  };
  for (
    const [options, why] of [
      [
        { measuresAs: false },
        /its gpucal commit \(c0ffee0\) measured with other kernels or runners/,
      ],
      [
        { measuresAs: null },
        /whether it was measured by this checkout's kernels and runners is unknown/,
      ],
      [{ poolWith: oneThread }, /other driver settings \(LP_NUM_THREADS unset in this run, "1"/],
    ] as const
  ) {
    const next = await quickRun({ poolWith: first.report, ...options });
    assert.ok(next.phases.some((p) => /keeps its own measurements/.test(p) && why.test(p)));
    assert.equal(next.report.provenance.pooledWith, undefined);
    assert.ok(next.report.measurements.every((m) => m.runs === undefined));
  }
});

Deno.test("a backend whose two runs disagree beyond one machine state keeps this run's times, and the report says so", async () => {
  const first = await quickRun();
  // The earlier run's js, four times as slow: the machine changed since; its wasm is as it was.
  const slowerJs: Report = {
    ...first.report,
    measurements: first.report.measurements.map((m) =>
      m.state === "ok" && m.backend === "js"
        ? { ...m, wall: scaledStats(m.wall, 4), gflops: m.gflops / 4, gbps: m.gbps / 4 }
        : m
    ),
  };
  const { report } = await quickRun({ poolWith: slowerJs });
  const ok = report.measurements.filter((m) => m.state === "ok");
  assert.ok(ok.filter((m) => m.backend === "js").every((m) => m.runs === undefined));
  const warned = (backend: string) =>
    report.provenance.warnings.some((w) =>
      w.startsWith(`${backend} keeps this run's own measurements: they sit typically ×4`)
    );
  assert.ok(warned("js"));
  assert.ok(!warned("wasm"));
  assert.ok(ok.filter((m) => m.backend === "wasm").every((m) => m.runs === 2), "wasm pools");
});
