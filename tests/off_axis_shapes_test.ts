import assert from "node:assert/strict";
import { offAxisShapes, sureOffAxisShapes } from "../calibrate/shapes.ts";
import { getOp } from "../kernels/catalog.ts";
import type { OpSpec } from "../kernels/types.ts";
import { rowStridePower } from "../models/_alignment.ts";

const matmul = getOp("matmul");

/** The off-axis shapes a default run measures whatever the clock says. */
function sureShapes(op: OpSpec) {
  return offAxisShapes(op, "f32", "default").slice(0, sureOffAxisShapes(op, "default"));
}

Deno.test("a default run's sure matmul shapes span decode to prefill rows and both widths of k", () => {
  const sure = sureShapes(matmul);
  const ms = new Set(sure.map((s) => s.m));
  for (const m of [1, 8, 64]) assert.ok(ms.has(m), `no sure shape with m = ${m}`);
  // A batch of a few rows: below wasm's mr = 6, and one block of its mr = 4.
  assert.ok(sure.some((s) => s.m! > 1 && s.m! < 6), "no sure shape with 1 < m < 6");
  assert.ok(sure.some((s) => s.m! >= 128), "no sure shape at prefill rows");
  assert.ok(sure.some((s) => s.m! > 16 && s.m! < 64), "no sure shape between 16 and 64 rows");
  const ks = sure.map((s) => s.k!);
  assert.ok(Math.min(...ks) <= 512, `narrowest sure k is ${Math.min(...ks)}`);
  assert.ok(Math.max(...ks) >= 4096, `widest sure k is ${Math.max(...ks)}`);
});

Deno.test("a default run's sure shapes take a tile's rows (m = 64) at a shallow and a deep k", () => {
  const sure = sureShapes(matmul);
  const ks = sure.filter((s) => s.m === 64).map((s) => s.k!);
  assert.ok(Math.min(...ks) <= 1024, `shallowest m = 64 shape has k = ${Math.min(...ks)}`);
  assert.ok(Math.max(...ks) >= 4096, `deepest m = 64 shape has k = ${Math.max(...ks)}`);
});

Deno.test("every off-axis matmul shape is off the square axis", () => {
  for (const s of offAxisShapes(matmul, "f32", "thorough")) {
    assert.ok(!(s.m === s.k && s.k === s.n), JSON.stringify(s));
  }
});

Deno.test("a default run's sure gemv shapes take rows ≠ cols both ways round at two widths", () => {
  const gemv = getOp("gemv");
  const sure = sureShapes(gemv);
  const tall = sure.filter((s) => s.rows! >= 4 * s.cols!).map((s) => s.cols!);
  const wide = sure.filter((s) => s.cols! >= 4 * s.rows!).map((s) => s.rows!);
  for (const [way, widths] of [["rows ≥ 4 cols", tall], ["cols ≥ 4 rows", wide]] as const) {
    assert.ok(
      widths.length >= 2 && Math.max(...widths) >= 2 * Math.min(...widths),
      `${way}: sure shapes at widths ${widths.join(", ")}`,
    );
  }
});

Deno.test("a default run's sure decode shapes (m = 1) take narrow and wide rows of B", () => {
  const sure = sureShapes(matmul);
  const ns = sure.filter((s) => s.m === 1).map((s) => s.n!);
  assert.ok(Math.min(...ns) <= 512, `narrowest m = 1 shape has n = ${Math.min(...ns)}`);
  assert.ok(Math.max(...ns) >= 4096, `widest m = 1 shape has n = ${Math.max(...ns)}`);
});

Deno.test("a default run's sure softmax shapes take many rows both short and long", () => {
  const softmax = getOp("softmax");
  const sure = sureShapes(softmax);
  const many = sure.filter((s) => s.rows! >= 128).map((s) => s.cols!);
  assert.ok(Math.min(...many) <= 1024, `many rows at ${many.join(", ")} columns`);
  assert.ok(Math.max(...many) >= 4096, `many rows at ${many.join(", ")} columns`);
});

Deno.test("a default run's sure decode shapes tell B's depth from its row length", () => {
  const sure = sureShapes(matmul);
  const decode = sure.filter((s) => s.m === 1);
  const pairs = decode.flatMap((a) => decode.map((b) => [a, b] as const)).filter(([a, b]) =>
    a !== b
  );
  assert.ok(
    pairs.some(([a, b]) => a.k === b.k && a.n !== b.n),
    "no two m = 1 shapes differ in n alone",
  );
  assert.ok(
    pairs.some(([a, b]) => a.n === b.n && a.k !== b.k),
    "no two m = 1 shapes differ in k alone",
  );
});

Deno.test("a default run's sure few-row shapes (1 < m < 6) run k < n and k > n", () => {
  const sure = sureShapes(matmul);
  const few = sure.filter((s) => s.m! > 1 && s.m! < 6);
  assert.ok(few.some((s) => s.k! < s.n!), "no few-row shape widening (k < n)");
  assert.ok(few.some((s) => s.k! > s.n!), "no few-row shape narrowing (k > n)");
});

Deno.test("a default run's sure few-row shapes (m < 6) read a B that streams and one that stays in cache", () => {
  const sure = sureShapes(matmul);
  const bBytes = (s: { k?: number; n?: number }) => 4 * s.k! * s.n!;
  const few = sure.filter((s) => s.m! < 6).map(bBytes);
  assert.ok(Math.max(...few) >= 16 * 2 ** 20, `largest few-row B is ${Math.max(...few)} bytes`);
  assert.ok(Math.min(...few) <= 2 ** 20, `smallest few-row B is ${Math.min(...few)} bytes`);
});

Deno.test("a default run's first two gemv shapes, where variants are screened, space rows kilobytes apart and a few bytes apart", () => {
  const gemv = getOp("gemv");
  for (const dtype of ["f32", "f16", "q8"] as const) {
    const strides = offAxisShapes(gemv, dtype, "default").slice(0, 2)
      .map((s) => rowStridePower(gemv.rowBytes!(s, dtype)));
    assert.ok(Math.max(...strides) >= 1024 && Math.min(...strides) <= 32, `${dtype}: ${strides}`);
  }
});
