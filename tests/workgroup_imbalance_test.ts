import assert from "node:assert/strict";
import { dispatchSpanLn, threadContention, workgroupWorkOf } from "../models/_workgroups.ts";
import { fitAll } from "../calibrate/analyze.ts";
import { getOp } from "../kernels/catalog.ts";
import { predictTime } from "../models/predict.ts";
import type { Measurement, Report } from "../core/schema.ts";
import type { Shape } from "../kernels/types.ts";
import { syntheticReport } from "./_fixtures.ts";

const gemv = getOp("gemv");
const sixteenRows = { tpr: 1, rpw: 16, rpi: 16, vec4: true };
const variant = "rpi=16,rpw=16,tpr=1,vec4=true";

Deno.test("a gemv's workgroups sum rpw × rpi rows each, the last one the rows left", () => {
  const rows = workgroupWorkOf("gemv")!;
  assert.deepEqual(rows({ rows: 512, cols: 300 }, sixteenRows), [256, 256]);
  assert.deepEqual(rows({ rows: 300, cols: 300 }, sixteenRows), [256, 44]);
  assert.deepEqual(rows({ rows: 6, cols: 64 }, { tpr: 32, rpw: 4, vec4: true }), [4, 2]);
  assert.equal(workgroupWorkOf("add"), null);
});

Deno.test("the workgroups priced are the ones the gemv kernel dispatches, for every variant", () => {
  const rows = workgroupWorkOf("gemv")!;
  const kernel = gemv.impls.webgpu!;
  for (const v of kernel.variants) {
    for (const n of [1, 100, 255, 256, 257, 300, 768, 5000]) {
      const shape = { rows: n, cols: 64 };
      const [x, y, z] = kernel.program(shape, "f32", v).workgroups;
      const work = rows(shape, v);
      assert.equal(work.length, x * (y ?? 1) * (z ?? 1), `${JSON.stringify(v)} at ${n} rows`);
      assert.equal(work.reduce((a, b) => a + b, 0), n);
    }
  }
});

Deno.test("a dispatch on a CPU adapter lasts as long as its largest workgroup or an even share", () => {
  assert.equal(dispatchSpanLn([256, 256, 256, 256], 2), 0);
  // Three on two threads: the even share, not two in turn on one thread.
  assert.equal(dispatchSpanLn([256, 256, 256], 2), 0);
  // One workgroup: one thread works, the other waits.
  assert.ok(Math.abs(dispatchSpanLn([256], 2) - Math.log(2)) < 1e-12);
  assert.ok(Math.abs(dispatchSpanLn([256, 44], 2) - Math.log(512 / 300)) < 1e-12);
  assert.equal(dispatchSpanLn([256, 44], 1), 0);
  assert.equal(dispatchSpanLn([], 2), 0);
});

/** How much faster one thread runs alone than each of two at once, in the synthetic host. */
const CONTENTION = 1.25;

/**
 * Device-resident f32 gemv on two CPU threads, `perGroup` rows a workgroup: as long as the even
 * share or the largest workgroup on one thread running alone, whichever is longer.
 */
function twoThreadMs(shape: Shape, perGroup = 256): number {
  const rows = shape.rows!;
  const busiest = Math.max(rows / 2, Math.min(rows, perGroup) / CONTENTION);
  return 0.03 + busiest * shape.cols! * 4 / 2e6; // 2 GB/s a thread, two at once
}

/** A variant of 64 rows a workgroup (4 × 16), timed by the variant search at two sizes only. */
const quarterRows = "rpi=4,rpw=16,tpr=1,vec4=true";

/** One host gemv f32 time on `backend` at 2048², from `template`. */
function hostGemv(
  template: Extract<Measurement, { state: "ok" }>,
  backend: "wasm" | "wasm-mt",
  ms: number,
): Measurement {
  const shape = { rows: 2048, cols: 2048 };
  const wall = { ...template.wall, median: ms, ciHalfWidth: 0.02 * ms, relCi: 0.02 };
  return {
    ...template,
    op: "gemv",
    dtype: "f32",
    backend,
    residency: "end-to-end",
    variant: "",
    shape,
    size: 2048,
    flops: gemv.flops(shape),
    bytes: gemv.bytes(shape, "f32"),
    wall,
  } as Measurement;
}

/** The synthetic report with its f32 device-resident gemv measured at the sweep's sizes. */
function reportOnTwoThreads(software: boolean): Report {
  const report = syntheticReport();
  const isSeries = (m: Measurement) =>
    m.op === "gemv" && m.dtype === "f32" &&
    (m.backend === "webgpu" && m.residency === "device-resident" || m.backend.startsWith("wasm"));
  const template = report.measurements.find((m) =>
    m.op === "gemv" && m.backend === "webgpu" && m.state === "ok"
  )!;
  assert.ok(template.state === "ok");
  let seq = report.measurements.length;
  const timed = (n: number, i: number, v: string, perGroup: number): Measurement => {
    const shape = { rows: n, cols: n };
    const ms = twoThreadMs(shape, perGroup) * (1 + 0.02 * Math.sin(i * 7.1));
    const wall = { ...template.wall, median: ms, ciHalfWidth: 0.02 * ms, relCi: 0.02 };
    return {
      ...template,
      op: "gemv",
      dtype: "f32",
      residency: "device-resident",
      variant: v,
      shape,
      size: n,
      flops: gemv.flops(shape),
      bytes: gemv.bytes(shape, "f32"),
      wall,
      gpu: wall,
      seq: seq++,
    } as Measurement;
  };
  const sweep = [
    ...[4, 102, 512, 1024, 2048, 4096, 8192].map((n, i) => timed(n, i, variant, 256)),
    ...[512, 1024].map((n, i) => timed(n, i, quarterRows, 64)),
  ];
  // The host's two threads at once run a gemv ×2 / CONTENTION one thread's speed.
  const host = [hostGemv(template, "wasm", 2), hostGemv(template, "wasm-mt", CONTENTION)];
  const measurements = [...report.measurements.filter((m) => !isSeries(m)), ...sweep, ...host];
  return {
    ...report,
    adapter: { ...report.adapter!, software },
    measurements,
    fits: fitAll(measurements),
  };
}

Deno.test("one thread alone runs faster than each of all at once by what the host's gemvs measured", () => {
  assert.equal(threadContention(reportOnTwoThreads(true)), CONTENTION);
  // Without both host backends' gemvs, nothing says the threads slow each other.
  const report = syntheticReport();
  const noHost = report.measurements.filter((m) => m.backend !== "wasm-mt");
  assert.equal(threadContention({ ...report, measurements: noHost }), 1);
  assert.ok(Math.abs(dispatchSpanLn([256], 2, 1.25) - Math.log(1.6)) < 1e-12);
  assert.equal(dispatchSpanLn([256, 256], 2, 1.25), 0);
});

Deno.test("on a CPU adapter, predictTime() prices the idle thread of a gemv of one or one and a bit workgroups", () => {
  const at = (report: Report, shape: Shape) =>
    predictTime(report, {
      op: "gemv",
      shape,
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
      variant,
    });
  const cpu = reportOnTwoThreads(true);
  for (
    const shape of [{ rows: 200, cols: 700 }, { rows: 300, cols: 300 }, { rows: 700, cols: 700 }, {
      rows: 1500,
      cols: 1500,
    }]
  ) {
    const truth = twoThreadMs(shape);
    const t = at(cpu, shape);
    assert.ok(Math.abs(t.ms / truth - 1) < 0.15, `${shape.rows}: ${t.ms} vs ${truth}`);
  }
  // A GPU's many cores: no threads to share among, the sweep's even sizes priced as they ran.
  const gpu = at(reportOnTwoThreads(false), { rows: 300, cols: 300 });
  const onCpu = at(cpu, { rows: 300, cols: 300 });
  assert.ok(gpu.ms < 0.9 * onCpu.ms, `${gpu.ms} against ${onCpu.ms}`);
  assert.match(onCpu.source, /its largest workgroup on one of the adapter's threads/);
  assert.doesNotMatch(gpu.source, /workgroup/);
});

Deno.test("a variant priced from a fitted one's times carries its own workgroups' share, not the fitted one's", () => {
  const cpu = reportOnTwoThreads(true);
  const shape = { rows: 256, cols: 1024 };
  const at = (v: string) =>
    predictTime(cpu, {
      op: "gemv",
      shape,
      dtype: "f32",
      backend: "webgpu",
      residency: "device-resident",
      variant: v,
    });
  // 256 rows: one workgroup of the fitted variant, four of the other, which share evenly.
  const fitted = at(variant);
  const scaled = at(quarterRows);
  assert.ok(Math.abs(fitted.ms / twoThreadMs(shape, 256) - 1) < 0.15, `${fitted.ms}`);
  assert.ok(Math.abs(scaled.ms / twoThreadMs(shape, 64) - 1) < 0.15, `${scaled.ms}`);
});
