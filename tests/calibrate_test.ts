import assert from "node:assert/strict";
import { calibrate } from "../calibrate/calibrate.ts";
import { main } from "../cli/calibrate.ts";
import { openRunner } from "../calibrate/runners/mod.ts";
import type { Runner } from "../calibrate/runner.ts";
import type { Backend } from "../kernels/types.ts";
import { parseReport } from "../reports/load.ts";
import { median } from "../core/stats.ts";
import type { Measurement } from "../core/schema.ts";
import { quickAddCalibration } from "./_quick_add.ts";

const cpuOnly = { quick: true, ops: ["add"], backends: ["js", "wasm"] as const };

Deno.test("calibrate() writes a valid report with fits and a js→wasm crossover", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = `${dir}/report.json`;
    const { report, path } = await calibrate({ ...cpuOnly, backends: [...cpuOnly.backends], out });
    assert.equal(path, out);
    const reread = parseReport(JSON.parse(await Deno.readTextFile(out)));
    assert.equal(reread.provenance.complete, true);
    assert.equal(reread.provenance.stopReason, "finished");
    assert.ok(report.measurements.some((m) => m.state === "ok" && m.backend === "wasm"));
    assert.ok(report.fits.some((f) => f.backend === "js" && f.op === "add"));
    const c = report.crossovers.find((x) => x.pair === "js→wasm" && x.op === "add");
    assert.ok(c, "a js→wasm crossover entry (a size or a reasoned null)");
    assert.ok(c.size !== null || (c.reason ?? "").length > 0);
    // Drift probes at the start and after the one op, on the calibrated backends only.
    const probes = reread.stability?.probes ?? [];
    assert.equal(probes.length, 2);
    assert.deepEqual(Object.keys(probes[0]!.ms).sort(), ["js", "wasm"]);
    assert.deepEqual(reread.stability?.driftSigma, {}, "too few probes for a drift");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an interrupted calibration keeps what it measured and --resume finishes it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = `${dir}/partial.json`;
    const stop = new AbortController();
    let seen = 0;
    const first = await calibrate({
      ...cpuOnly,
      backends: [...cpuOnly.backends],
      out,
      signal: stop.signal,
      onProgress: (e) => {
        if (e.kind === "measured" && ++seen === 3) stop.abort();
      },
    });
    const partial = parseReport(JSON.parse(await Deno.readTextFile(out)));
    assert.equal(partial.provenance.complete, false);
    assert.equal(partial.provenance.stopReason, "interrupted");
    assert.ok(partial.measurements.length >= 3);
    assert.equal(first.report.measurements.length, partial.measurements.length);

    const kept = new Set(
      partial.measurements.map((m) => `${m.seq}|${m.backend}|${m.size}|${m.variant}`),
    );
    const { report } = await calibrate({
      ...cpuOnly,
      backends: [...cpuOnly.backends],
      out,
      resume: partial,
      resumePath: out,
    });
    assert.equal(report.provenance.complete, true);
    assert.equal(report.provenance.resumedFrom, out);
    const times = (report.stability?.probes ?? []).map((p) => p.atS);
    assert.ok(times.length > (partial.stability?.probes.length ?? 0), "probes continue");
    assert.deepEqual(times, [...times].sort((a, b) => a - b), "on one clock");
    for (const key of kept) {
      assert.ok(
        report.measurements.some((m) => `${m.seq}|${m.backend}|${m.size}|${m.variant}` === key),
        `measurement ${key} was kept, not redone`,
      );
    }
    const keys = report.measurements.map((m) =>
      `${m.dtype}|${m.backend}|${m.variant}|${m.residency}|${JSON.stringify(m.shape)}`
    );
    assert.equal(new Set(keys).size, keys.length, "no measurement was taken twice");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("calibrate's command line refuses bad flags with exit code 2", async () => {
  const errors: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => errors.push(args.join(" "));
  try {
    assert.equal(await main(["--fast"]), 2);
    assert.equal(await main(["--backends", "cuda"]), 2);
    assert.equal(await main(["--budget", "soon"]), 2);
    assert.equal(await main(["--resume", "/nonexistent/report.json"]), 2);
    assert.equal(await main(["--passes", "0"]), 2);
  } finally {
    console.error = original;
  }
  assert.match(errors[0]!, /--fast/);
  assert.match(errors[1]!, /--backends: "cuda" is not one of/);
  assert.match(errors[2]!, /--budget must be a positive number, got "soon"/);
  assert.match(errors[3]!, /--resume/);
  assert.match(errors[4]!, /--passes must be an integer from 1 to 5, got "0"/);
});

/** The scripted wall time of one rep at full speed, in ms (a wasm add of 16 takes ~0.04 µs). */
const SCRIPTED_REP_MS = 0.001;

/**
 * The wasm runner, except that the cases prepared at n = `n` report made-up wall times: the
 * k-th preparation's batches take `SCRIPTED_REP_MS` a rep scaled by `factors[k]`'s first value in
 * one pair of timed batches and its second in the next, and so on (whichever batches are timed,
 * both factors are), as when the OS takes the core away for part of a window. The kernel still
 * runs; only its clock is scripted, so the host's own noise at a 40 ns kernel cannot decide the
 * outcome. Preparations beyond the list run as they are.
 */
function wasmWithWindows(n: number, factors: readonly (readonly [number, number])[]) {
  let prepares = 0;
  // Per scaled preparation, each timed batch's wall time per rep.
  const perRep: number[][] = [];
  const openCpuRunner = async (backend: Backend) => {
    const runner = await openRunner(backend);
    if (typeof runner === "string" || backend !== "wasm") return runner;
    return {
      ...runner,
      prepare: async (...args: Parameters<Runner["prepare"]>) => {
        const prepared = await runner.prepare(...args);
        if (args[1].n !== n) return prepared;
        const factor = factors[prepares++];
        if (factor === undefined) return prepared;
        const seen: number[] = [];
        perRep.push(seen);
        let calls = 0;
        return {
          ...prepared,
          time: async (reps: number) => {
            const t = await prepared.time(reps);
            const wobble = 1 + 0.005 * ((calls % 3) - 1);
            const wallMs = reps * SCRIPTED_REP_MS * wobble * factor[Math.floor(calls++ / 2) % 2]!;
            seen.push(wallMs / reps);
            return { ...t, wallMs };
          },
        };
      },
    };
  };
  return { openCpuRunner, perRep, prepares: () => prepares };
}

/** A quick calibration of `add` on js and wasm; the wasm measurements at n = `n`. */
async function wasmAddAt(
  n: number,
  openCpuRunner: (backend: Backend) => Promise<Runner | string>,
): Promise<Measurement[]> {
  const report = await quickAddCalibration({ openCpuRunner });
  return report.measurements.filter((m) => m.backend === "wasm" && m.size === n);
}

Deno.test("calibrate() repeats a CPU measurement taken through a stall and keeps the surer one", async () => {
  // The first window is 3× slow in every other pair of batches; the repeat (and a third window,
  // if one is taken) runs steadily at full speed.
  const { openCpuRunner, prepares } = wasmWithWindows(16, [[1, 3], [1, 1], [1, 1]]);
  const at = await wasmAddAt(16, openCpuRunner);
  assert.equal(at.length, 1, "the repeat replaced the stalled measurement");
  // A third time when the repeat's median disagrees with the stalled one's (see the next test).
  assert.ok(
    prepares() === 2 || prepares() === 3,
    `prepared once for the grid and once for the repeat, not ${prepares()} times`,
  );
  assert.ok(at[0]!.state === "ok" && at[0]!.wall.relCi <= 0.1, `relCi ${JSON.stringify(at[0])}`);
});

Deno.test("calibrate() takes a third window where a repeat disagrees with a stalled measurement, and keeps the middle one", async () => {
  // The first window runs 2.5–3.5× slow throughout (unsure, and slow); its repeat is back to speed
  // but noisier still (0.7–1.3×), so by spread alone the stalled one is the surer; the third
  // window is steady.
  const { openCpuRunner, perRep } = wasmWithWindows(16, [[2.5, 3.5], [0.7, 1.3], [1, 1]]);
  const at = await wasmAddAt(16, openCpuRunner);
  assert.equal(perRep.length, 3, "prepared for the grid, the repeat and a third window");
  assert.equal(at.length, 1);
  assert.ok(at[0]!.state === "ok");
  const steady = median(perRep[2]!);
  assert.ok(
    at[0]!.wall.median < 1.5 * steady && at[0]!.wall.median < median(perRep[0]!) / 1.5,
    `kept ${at[0]!.wall.median} ms; the stalled window ${median(perRep[0]!)}, steady ${steady}`,
  );
});

/** The median a progress line shows (`20.9 ns ±2.2 %`, `12.3 ms ±2.4 %`), in ms. */
function detailMs(detail: string): number {
  const [value, unit] = detail.split(" ");
  const perMs: Record<string, number> = { ns: 1e-6, "µs": 1e-3, ms: 1, s: 1e3, min: 6e4 };
  return Number(value) * perMs[unit!]!;
}

Deno.test("calibrate() with two passes pools a second window of every fitted point, and a third where they disagree", async () => {
  const dir = await Deno.makeTempDir();
  // A steady stand-in for wasm (right answers, 1 ns per element ± 1 %), except that once the
  // second pass begins, the first window of each size runs 2× slow: every pass-2 window disagrees
  // with pass 1, and a third window must decide.
  let secondPass = false;
  const windowsAfter = new Map<number, number>();
  const steadyWasm: Runner = {
    backend: "wasm",
    prepare: (op, shape, dtype, _variant, inputs) => {
      const n = shape.n!;
      if (secondPass) windowsAfter.set(n, (windowsAfter.get(n) ?? 0) + 1);
      const slow = secondPass && windowsAfter.get(n) === 1 ? 2 : 1;
      return Promise.resolve({
        compileMs: 0,
        output: () => Promise.resolve(Float32Array.from(op.reference(shape, dtype, inputs))),
        time: (reps: number) =>
          Promise.resolve({
            wallMs: reps * (0.001 + n * 1e-6) * slow * (0.99 + 0.02 * Math.random()),
          }),
        dispose: () => {},
      });
    },
    close: () => Promise.resolve(),
  };
  const openCpuRunner = (backend: Backend) =>
    backend === "wasm" ? Promise.resolve(steadyWasm) : openRunner(backend);
  const medianOf = new Map<string, number>();
  try {
    const { report } = await calibrate({
      quick: true,
      ops: ["add"],
      backends: ["js", "wasm"],
      passes: 2,
      out: `${dir}/report.json`,
      openCpuRunner,
      onProgress: (e) => {
        if (e.kind === "phase" && /pass 2 of 2/.test(e.phase)) secondPass = true;
        if (e.kind === "measured") medianOf.set(e.label, detailMs(e.detail));
      },
    });
    const wasm = report.measurements.flatMap((m) =>
      m.backend === "wasm" && m.state === "ok" ? [m] : []
    );
    assert.ok(wasm.length >= 3);
    for (const m of wasm) {
      assert.equal(windowsAfter.get(m.size), 2, `size ${m.size}: a second window and a third`);
      const first = medianOf.get(`add f32 wasm ${m.size}`)!;
      const two = medianOf.get(`add f32 wasm ${m.size} (2 windows)`)!;
      const three = medianOf.get(`add f32 wasm ${m.size} (3 windows)`)!;
      // Two windows, one 2× slow: the pooled median sits halfway. The third decides: the
      // median of three window medians is a normal window's.
      assert.ok(two > 1.4 * first, `${first} then ${two}`);
      assert.ok(three < 1.05 * first, `${first} then ${three}`);
      assert.ok(Math.abs(m.wall.median / three - 1) < 0.01, "the report keeps the pooled median");
    }
    assert.ok([...medianOf.keys()].some((l) => /^add f32 js \d+ \(2 windows\)$/.test(l)));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("calibrate's command line refuses --quick with --thorough with exit code 2", async () => {
  const errors: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => errors.push(args.join(" "));
  try {
    assert.equal(await main(["--quick", "--thorough"]), 2);
  } finally {
    console.error = original;
  }
  assert.match(errors[0]!, /--quick and --thorough exclude each other/);
});
