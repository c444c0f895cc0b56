import assert from "node:assert/strict";
import {
  bendPoints,
  cacheEdgePoints,
  CHEAP_STEP_RUN_MS,
  rateStepMidpoints,
  streamingMidpoints,
  threadWakePoints,
} from "../calibrate/bends.ts";
import { planFor } from "../calibrate/plan.ts";
import { getOp, OPS } from "../kernels/catalog.ts";
import type { Measurement } from "../core/schema.ts";

const add = getOp("add");

interface At {
  size: number;
  ms: number;
  backend?: string;
  residency?: string;
  variant?: string;
  state?: string;
  relCi?: number;
}

/** A measurement with just what bendPoints reads. */
function at(
  {
    size,
    ms,
    backend = "wasm",
    residency = "end-to-end",
    variant = "unroll=4",
    state,
    relCi = 0.02,
  }: At,
) {
  return {
    op: "add",
    dtype: "f32",
    backend,
    residency,
    variant,
    state: state ?? "ok",
    size,
    wall: { median: ms, relCi },
  } as unknown as Measurement;
}

/** A power law t = 1e-3 · size^0.9 over a ×4 grid. */
const smooth = [100, 400, 1600, 6400, 25600].map((size) => at({ size, ms: 1e-3 * size ** 0.9 }));

Deno.test("a curve straight in log-log space asks for no extra sizes", () => {
  assert.deepEqual(bendPoints(smooth, add, "f32"), []);
});

Deno.test("a point off its neighbours' line asks for the midpoints on both sides of it", () => {
  // 1600 ran 3× slower than the smooth curve: a bend between 400 and 6400.
  const bent = smooth.map((m) =>
    m.size === 1600 ? at({ size: 1600, ms: 3 * 1e-3 * 1600 ** 0.9 }) : m
  );
  const points = bendPoints(bent, add, "f32");
  // 800 and 3200 split the two segments around 1600. Seen from 1600's neighbours, their own
  // lines pass through the moved point and bend less: one series gets its worst bend's two sides.
  assert.deepEqual(points.map((p) => p.size).sort((a, b) => a - b), [800, 3200]);
  assert.ok(points.every((p) => p.backend === "wasm" && p.variant === "unroll=4"));
  // Worst bend first: the point that moved is 3× off its neighbours' line.
  assert.ok(Math.abs(points[0]!.miss - 2) < 1e-9, `first miss ${points[0]!.miss}`);
  for (let i = 1; i < points.length; i++) assert.ok(points[i - 1]!.miss >= points[i]!.miss);
});

Deno.test("extra sizes are capped, never repeat a measured size, and never split close neighbours", () => {
  const bent = smooth.map((m) =>
    m.size === 1600 ? at({ size: 1600, ms: 3 * 1e-3 * 1600 ** 0.9 }) : m
  );
  assert.equal(bendPoints(bent, add, "f32", { max: 1 }).length, 1);
  const withMidpoint = [...bent, at({ size: 3200, ms: 1e-3 * 3200 ** 0.9 })];
  assert.ok(!bendPoints(withMidpoint, add, "f32").some((p) => Math.abs(p.size - 3200) < 320));
  // Neighbours ×1.2 apart are not split however far off the middle one lies.
  const close = [1000, 1200, 1440].map((size, i) => at({ size, ms: i === 1 ? 10 : 1 }));
  assert.deepEqual(bendPoints(close, add, "f32"), []);
});

Deno.test("a wobble the medians' intervals explain is not a bend", () => {
  // 1600 is 40 % off the line, but the three medians are each only ±30 % sure.
  const wobbly = (relCi: number) =>
    smooth.map((m) =>
      at({ size: m.size, ms: (m.size === 1600 ? 1.4 : 1) * 1e-3 * m.size ** 0.9, relCi })
    );
  assert.deepEqual(bendPoints(wobbly(0.3), add, "f32"), []);
  const sure = wobbly(0.02);
  assert.ok(bendPoints(sure, add, "f32").length > 0);
});

Deno.test("one series gets the two sides of its worst bend, not every extra size", () => {
  // Every interior point zigzags 3× off the line: many bends, one series.
  const zigzag = [100, 400, 1600, 6400, 25600, 102400].map((size, i) =>
    at({ size, ms: (i % 2 ? 3 : 1) * 1e-3 * size })
  );
  assert.equal(bendPoints(zigzag, add, "f32", { max: 10 }).length, 2);
});

Deno.test("each backend, residency and variant is its own curve, and failed runs are not points", () => {
  // Alternating backends would zigzag if they were read as one curve.
  const mixed = [100, 400, 1600, 6400].map((size, i) =>
    at({ size, ms: 1e-3 * size * (i % 2 ? 10 : 1), backend: i % 2 ? "js" : "wasm" })
  );
  assert.deepEqual(bendPoints(mixed, add, "f32"), []);
  const failed = [
    ...smooth,
    at({ size: 1600, ms: 500, residency: "end-to-end", variant: "unroll=4", state: "failed" }),
  ];
  assert.deepEqual(bendPoints(failed, add, "f32"), []);
  const devices = [100, 400, 1600].map((size, i) =>
    at({ size, ms: i === 1 ? 50 : 1, backend: "webgpu", residency: "device-resident" })
  );
  assert.deepEqual(
    bendPoints([...smooth, ...devices], add, "f32").map((p) => [p.backend, p.residency, p.size]),
    [["webgpu", "device-resident", 200], ["webgpu", "device-resident", 800]],
  );
});

Deno.test("a full calibration plan measures bends, a quick one does not", () => {
  const plan = (quick: boolean) =>
    planFor({ quick, ops: OPS, dtypes: ["f32"], backends: ["wasm"] });
  assert.ok(plan(false).bendPoints > 0);
  assert.equal(plan(true).bendPoints, 0);
});

Deno.test("streamingMidpoints() asks for the grid's midpoints of a WebGPU device-resident gemv from a mebibyte of weights up", () => {
  const gemv = getOp("gemv");
  const series = (backend: string, residency: string) =>
    [45, 102, 228, 512, 1149, 2580, 5793].map((size) => ({
      ...at({ size, ms: size * size * 2.5e-7, backend, residency, variant: "rpi=8" }),
      op: "gemv",
    } as Measurement));
  const resident = series("webgpu", "device-resident");
  // 512² f32 is the first size with a mebibyte of weights; straight lines, so no bend anywhere.
  assert.deepEqual(streamingMidpoints(resident, gemv, "f32", 2).map((p) => p.size), [768, 1720]);
  assert.deepEqual(bendPoints(resident, gemv, "f32"), []);
  assert.equal(streamingMidpoints(resident, gemv, "f32", 0).length, 0, "a plan without bends");
  for (const p of streamingMidpoints(resident, gemv, "f32", 2)) {
    assert.equal(p.backend, "webgpu");
    assert.equal(p.residency, "device-resident");
    assert.equal(p.variant, "rpi=8");
  }
  // Measured already: the steps around it are under ×2 and ask for nothing more.
  const filled = [...resident, { ...resident[3]!, size: 768 } as Measurement];
  assert.deepEqual(streamingMidpoints(filled, gemv, "f32", 1).map((p) => p.size), [1720]);
  // The size beside the switch to streamed operands (976² in f32) is not a grid size: the grid's
  // gap 512 → 1149 still gets its midpoint.
  const edged = [...resident, { ...resident[3]!, size: 976 } as Measurement];
  assert.deepEqual(streamingMidpoints(edged, gemv, "f32", 1).map((p) => p.size), [768]);
  // Quantized weights: the sizes beside the switch (q8's 1840² and 2024²) cover the grid's
  // 512² → 5793² midpoint, so what 1840² left of the gap is split; q4's grid gap is split as is.
  const quantized = (sizes: number[], dtype: string) =>
    sizes.map((size) => ({
      ...at({ size, ms: size * size * 6e-8, backend: "webgpu", residency: "device-resident" }),
      op: "gemv",
      dtype,
    } as Measurement));
  const q8 = quantized([102, 228, 512, 1840, 2024, 5793, 8192], "q8");
  assert.deepEqual(streamingMidpoints(q8, gemv, "q8", 2).map((p) => p.size), [968, 3424]);
  const q4 = quantized([102, 228, 512, 2580, 8192], "q4");
  assert.deepEqual(streamingMidpoints(q4, gemv, "q4", 2).map((p) => p.size), [1152, 4600]);
  // Only cheap midpoints: at 100× the time per byte, 768² would run 15 ms.
  const slow = [45, 102, 228, 512, 1149, 2580, 5793].map((size) => ({
    ...at({ size, ms: size * size * 2.5e-5, backend: "webgpu", residency: "device-resident" }),
    op: "gemv",
  } as Measurement));
  assert.deepEqual(streamingMidpoints(slow, gemv, "f32", 2).map((p) => p.size), []);
  // End to end the sync carries the time; the CPU's bends are bendPoints' business; add streams
  // nothing it reuses.
  assert.equal(streamingMidpoints(series("webgpu", "end-to-end"), gemv, "f32", 2).length, 0);
  assert.equal(streamingMidpoints(series("wasm", "end-to-end"), gemv, "f32", 2).length, 0);
  assert.equal(
    streamingMidpoints(resident.map((m) => ({ ...m, op: "add" })), add, "f32", 2).length,
    0,
  );
});

Deno.test("rateStepMidpoints() halves a CPU series' gap where its rate steps, until the cliff is pinned", () => {
  const dot = getOp("dot");
  // One-thread wasm dot on a 2-vCPU Intel Xeon VM (8 bytes an element): µs at each grid size of a
  // default run, 67 GB/s at 6502 elements and 28 at 131 072; 60–72 GB/s up to 50 001, 27–30 from
  // 100 000 (the cliff's middle, 44, at 70 001) in a finer scan.
  const measured = new Map([
    [16, 0.0587],
    [323, 0.0737],
    [6502, 0.707],
    [131072, 36.8],
    [
      588493,
      173,
    ],
    [29192, 3.39],
    [61856, 7.9],
  ]);
  const series = (sizes: number[]) =>
    sizes.map((size) => ({
      ...at({ size, ms: measured.get(size)! / 1000 }),
      op: "dot",
      bytes: 8 * size,
    } as Measurement));
  const grid = series([16, 323, 6502, 131072, 588493]);
  // 131 072 lies 21 % off the line from 6502 to 588 493, under bendPoints' tolerance: the rate
  // still steps ×2.4 beside it.
  assert.ok(!bendPoints(grid, dot, "f32").some((p) => p.size > 6502));
  const first = rateStepMidpoints(grid, dot, "f32", 2);
  assert.deepEqual(first.map((p) => p.size), [29192]);
  assert.ok(first[0]!.miss > 1.3, "the step is ×2.4");
  assert.equal(first[0]!.variant, "unroll=4");
  // Measured, the gap that still steps is the one above it; the flat gaps ask nothing.
  const second = rateStepMidpoints(series([16, 323, 6502, 29192, 131072, 588493]), dot, "f32", 2);
  assert.deepEqual(second.map((p) => p.size), [61856]);
  // Then the cliff lies within a ×2.1 gap, the one that still steps.
  const third = rateStepMidpoints(series([...measured.keys()]), dot, "f32", 2);
  assert.deepEqual(third.map((p) => p.size), [90040]);
  // The launch's climb (323 → 6502 runs 7× the rate) is the fit's business, not a cache.
  assert.ok(![...first, ...second, ...third].some((p) => p.size < 6502));
});

Deno.test("rateStepMidpoints() leaves WebGPU's searched variants, matrix ops, long runs and quick plans alone", () => {
  const dot = getOp("dot");
  const stepping = (backend: string, scale = 1) =>
    [16, 6502, 131072].map((size) => ({
      ...at({ size, ms: scale * (5e-5 + (8 * size) / (size < 10_000 ? 66 : 28) / 1e6), backend }),
      op: "dot",
      bytes: 8 * size,
    } as Measurement));
  assert.equal(rateStepMidpoints(stepping("wasm"), dot, "f32", 2).length, 1);
  assert.equal(rateStepMidpoints(stepping("wasm-mt"), dot, "f32", 2).length, 1);
  // Three sizes of a WebGPU variant are the variant search's anchors, not the grid's series.
  const searched = stepping("webgpu").map((m) => ({ ...m, residency: "device-resident" }));
  assert.equal(rateStepMidpoints(searched as Measurement[], dot, "f32", 2).length, 0);
  assert.equal(
    rateStepMidpoints(stepping("wasm"), dot, "f32", 0).length,
    0,
    "a plan without bends",
  );
  // A midpoint whose run (the geometric mean of its ends') is longer than a cheap run: the gap
  // stays open.
  const [, lo, hi] = stepping("wasm").map((m) => m.state === "ok" ? m.wall.median : NaN);
  const slow = (CHEAP_STEP_RUN_MS / Math.sqrt(lo! * hi!)) * 1.01;
  assert.equal(rateStepMidpoints(stepping("wasm", slow), dot, "f32", 2).length, 0);
  assert.equal(rateStepMidpoints(stepping("wasm", slow / 1.02), dot, "f32", 2).length, 1);
  const gemv = getOp("gemv");
  const matrix = stepping("wasm").map((m) => ({ ...m, op: "gemv" }) as Measurement);
  assert.equal(rateStepMidpoints(matrix, gemv, "f32", 2).length, 0);
});

Deno.test("rateStepMidpoints() splits a cheap gap of ×8 or more even where its ends run alike: a cache's hump hides inside", () => {
  const add = getOp("add");
  // Two-thread wasm add: 72 and 70 GB/s at the ends (12 bytes an element), faster between.
  const flat = (sizes: number[]) =>
    sizes.map((size) => ({
      ...at({ size, ms: 5e-5 + (12 * size) / 71 / 1e6, backend: "wasm-mt" }),
      bytes: 12 * size,
    } as Measurement));
  assert.deepEqual(
    rateStepMidpoints(flat([16, 323, 6502, 131072]), add, "f32", 2).map((p) => p.size),
    [
      29192,
    ],
  );
  // A grid step (×4.5) with ends alike asks nothing.
  assert.deepEqual(rateStepMidpoints(flat([16, 323, 6502, 29193]), add, "f32", 2), []);
});

Deno.test("rateStepMidpoints() fills a WebGPU device-resident series where its rate climbs, not its end-to-end one", () => {
  const sum = getOp("sum");
  // lavapipe's device-resident sum (4 bytes an element): a 50 µs launch, then 1.6 GB/s at 588 493
  // elements and 2.4 at 2.6·10⁶; 900 000 ran 2.8 ms where the line through these said 2.0.
  const measured = new Map([[16, 0.05], [6502, 0.069], [29193, 0.15], [588493, 1.45], [
    2642246,
    4.4,
  ]]);
  const series = (residency: string, extraMs = 0) =>
    [...measured].map(([size, ms]) => ({
      ...at({ size, ms: ms + extraMs, backend: "webgpu", residency }),
      op: "sum",
      bytes: 4 * size,
    } as Measurement));
  const points = rateStepMidpoints(series("device-resident"), sum, "f32", 2);
  // The ×20 gap above the launch-bound sizes, and the gap where the rate climbs ×1.5.
  assert.deepEqual(points.map((p) => p.size).sort((a, b) => a - b), [131072, 1246976]);
  assert.ok(points.every((p) => p.backend === "webgpu" && p.residency === "device-resident"));
  // End to end, every run is a sync (11 ms) and more: nothing is cheap there.
  assert.deepEqual(rateStepMidpoints(series("end-to-end", 11), sum, "f32", 2), []);
  // A device run past the cheap limit is not asked for.
  const slow = [...measured].map(([size, ms]) => ({
    ...at({
      size,
      ms: ms * CHEAP_STEP_RUN_MS,
      backend: "webgpu",
      residency: "device-resident",
    }),
    op: "sum",
    bytes: 4 * size,
  } as Measurement));
  assert.deepEqual(rateStepMidpoints(slow, sum, "f32", 2).map((p) => p.size), [131072]);
});

Deno.test("rateStepMidpoints() fills the top gap of a slow CPU series, where its operands leave the cache", () => {
  const fma = getOp("fma");
  // Scalar fma on the Intel Xeon VM (16 bytes an element), ms: one gap of ×32 at the top.
  const measured = [[16, 3.55e-5], [6502, 0.0103], [29192, 0.0481], [131072, 0.219], [
    4194304,
    7.39,
  ]] as const;
  const series = measured.map(([size, ms]) => ({
    ...at({ size, ms, backend: "js" }),
    op: "fma",
    bytes: 16 * size,
  } as Measurement));
  assert.deepEqual(rateStepMidpoints(series, fma, "f32", 2).map((p) => p.size), [741456]);
});

Deno.test("threadWakePoints() asks each wasm-mt series of a 1-D op for the first size that wakes a worker", () => {
  const series = (op: string, backend: string, sizes: number[], variant: string) =>
    sizes.map((size) => ({
      ...at({ size, ms: size * 5e-8, backend, variant }),
      op,
      bytes: 4 * size,
    } as Measurement));
  const grid = [16, 6502, 29193, 131072, 588493];
  const sum = getOp("sum");
  // One 65 536-element part and a quarter: two parts, one thread doing four fifths.
  const [p] = threadWakePoints(series("sum", "wasm-mt", grid, "accs=4,fma=false"), sum, "f32");
  assert.deepEqual(p, {
    size: 81920,
    backend: "wasm-mt",
    residency: "end-to-end",
    variant: "accs=4,fma=false",
    miss: 0,
  });
  assert.equal(sum.impls.wasm!.parts({ n: 65536 }, { accs: 4, fma: false }), 1);
  assert.equal(sum.impls.wasm!.parts({ n: 81920 }, { accs: 4, fma: false }), 2);
  // Elementwise parts are 16 384 elements.
  assert.deepEqual(
    threadWakePoints(series("add", "wasm-mt", grid, "unroll=4"), add, "f32").map((q) => q.size),
    [20480],
  );
  // Not one thread, not a series already measured there or never that large, not a matrix op,
  // not a searched variant's few sizes.
  assert.deepEqual(
    threadWakePoints(series("sum", "wasm", grid, "accs=4,fma=false"), sum, "f32"),
    [],
  );
  const near = series("sum", "wasm-mt", [...grid, 82000], "accs=4,fma=false");
  assert.deepEqual(threadWakePoints(near, sum, "f32"), []);
  const small = series("sum", "wasm-mt", [16, 323, 6502, 29193], "accs=4,fma=false");
  assert.deepEqual(threadWakePoints(small, sum, "f32"), []);
  const few = series("sum", "wasm-mt", [16, 131072, 588493], "accs=4,fma=false");
  assert.deepEqual(threadWakePoints(few, sum, "f32"), []);
  const gemv = series("gemv", "wasm-mt", [16, 228, 512, 1149, 2580], "default");
  assert.deepEqual(threadWakePoints(gemv, getOp("gemv"), "f32"), []);
});

Deno.test("cacheEdgePoints() asks each CPU series of a byte-bound op for a size on either side of the switch to streamed operands", () => {
  const sum = getOp("sum");
  const series = (backend: string, sizes: number[], residency = "end-to-end") =>
    sizes.map((size) => ({
      ...at({ size, ms: size * 5e-8, backend, residency, variant: "accs=4,fma=false" }),
      op: "sum",
      bytes: sum.bytes(sum.axis.shape(size), "f32"),
    } as Measurement));
  const grid = [16, 6502, 29193, 131072, 588493, 2640000];
  const points = cacheEdgePoints(series("wasm", grid), sum, "f32");
  const mib = (size: number) => sum.bytes(sum.axis.shape(size), "f32") / 2 ** 20;
  assert.equal(points.length, 2);
  const [under, over] = points.map((p) => p.size);
  assert.ok(mib(under!) < 4 && mib(under!) > 3.5, `${mib(under!)} MiB`);
  assert.ok(mib(over!) >= 4 && mib(over!) < 4.5, `${mib(over!)} MiB`);
  assert.deepEqual(points[0], {
    size: under,
    backend: "wasm",
    residency: "end-to-end",
    variant: "accs=4,fma=false",
    miss: 0,
  });
  // A side measured already within ×1.3 of the switch gets nothing.
  assert.deepEqual(
    cacheEdgePoints(series("js", [...grid, 1_000_000]), sum, "f32").map((p) => p.size),
    [over],
  );
  // Device-resident WebGPU too; not end to end (every run uploads its operands afresh), not a
  // series that stays on one side, not a square matmul (bound by its flops).
  assert.equal(cacheEdgePoints(series("webgpu", grid, "device-resident"), sum, "f32").length, 2);
  assert.deepEqual(cacheEdgePoints(series("webgpu", grid), sum, "f32"), []);
  assert.deepEqual(cacheEdgePoints(series("wasm", grid.slice(0, 5)), sum, "f32"), []);
  const matmul = getOp("matmul");
  const squares = [16, 64, 256, 512, 1024].map((size) => ({
    ...at({ size, ms: size ** 3 * 1e-8, variant: "default" }),
    op: "matmul",
    bytes: matmul.bytes(matmul.axis.shape(size), "f32"),
  } as Measurement));
  assert.deepEqual(cacheEdgePoints(squares, matmul, "f32"), []);
});
