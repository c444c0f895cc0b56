import assert from "node:assert/strict";
import { heldOutCases, scoreTuning, type TuningOutcome } from "../bench/tuning.ts";
import { getOp } from "../kernels/catalog.ts";
import { isOnAxis } from "../kernels/types.ts";
import { offAxisShapes } from "../calibrate/shapes.ts";

const wasmCase = { op: "matmul", dtype: "f32", backend: "wasm", residency: "end-to-end" } as const;

Deno.test("tuning regret is the chosen variants' total time over the fastest ones', less one", () => {
  const outcomes: TuningOutcome[] = [
    {
      case: { ...wasmCase, shape: { m: 1, k: 1000, n: 3000 } },
      chosen: "a",
      predicted: { variant: "a", ms: 3, interval: [2, 4] },
      times: { a: 3, b: 2 },
    },
    {
      case: { ...wasmCase, shape: { m: 5, k: 1024, n: 1024 } },
      chosen: "b",
      predicted: { variant: "b", ms: 1.5, interval: [1.4, 1.6] },
      times: { a: 2, b: 1, c: NaN },
    },
  ];
  const s = scoreTuning(outcomes);
  assert.equal(s.regret, (3 + 1) / (2 + 1) - 1);
  assert.equal(s.worst, 0.5);
  assert.equal(s.fastestPicked, 1);
  assert.equal(s.scored, 2);
  // The first prediction is exact and inside its interval; the second 50 % off and outside.
  assert.deepEqual([s.within10, s.within25, s.coverage, s.priced], [0.5, 0.5, 0.5, 2]);
});

Deno.test("a case whose chosen variant failed is not scored, and a failed candidate is not the fastest", () => {
  const s = scoreTuning([{
    case: { ...wasmCase, shape: { m: 2, k: 2560, n: 2560 } },
    chosen: "a",
    predicted: { variant: "a", ms: 1, interval: [0.5, 2] },
    times: { a: NaN, b: 1 },
  }]);
  assert.equal(s.scored, 0);
  assert.equal(s.priced, 0);
  assert.ok(Number.isNaN(s.regret));
});

Deno.test("the held-out tuning cases are shapes no calibration measures", () => {
  const cases = heldOutCases();
  assert.ok(cases.length >= 40, `${cases.length} cases`);
  for (const c of cases) {
    const op = getOp(c.op);
    assert.ok(!isOnAxis(op, c.shape), JSON.stringify(c.shape));
    const listed = offAxisShapes(op, c.dtype, "thorough").map((s) => JSON.stringify(s));
    assert.ok(!listed.includes(JSON.stringify(c.shape)), `${c.op} ${JSON.stringify(c.shape)}`);
  }
  const backends = new Set(cases.map((c) => `${c.backend} ${c.residency}`));
  assert.deepEqual([...backends].sort(), [
    "js end-to-end",
    "wasm end-to-end",
    "wasm-mt end-to-end",
    "webgpu device-resident",
    "webgpu end-to-end",
  ]);
});
