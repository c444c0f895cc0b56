import assert from "node:assert/strict";
import { offAxisShapes, sureOffAxisShapes } from "../calibrate/shapes.ts";
import { getOp } from "../kernels/catalog.ts";

const matmul = getOp("matmul");

Deno.test("a default run's sure matmul shapes span decode to prefill rows and both widths of k", () => {
  const sure = offAxisShapes(matmul, "f32", "default").slice(
    0,
    sureOffAxisShapes(matmul, "default"),
  );
  const ms = new Set(sure.map((s) => s.m));
  for (const m of [1, 8, 64]) assert.ok(ms.has(m), `no sure shape with m = ${m}`);
  assert.ok(sure.some((s) => s.m! >= 128), "no sure shape at prefill rows");
  const ks = sure.map((s) => s.k!);
  assert.ok(Math.min(...ks) <= 512, `narrowest sure k is ${Math.min(...ks)}`);
  assert.ok(Math.max(...ks) >= 4096, `widest sure k is ${Math.max(...ks)}`);
});

Deno.test("every off-axis matmul shape is off the square axis", () => {
  for (const s of offAxisShapes(matmul, "f32", "thorough")) {
    assert.ok(!(s.m === s.k && s.k === s.n), JSON.stringify(s));
  }
});
