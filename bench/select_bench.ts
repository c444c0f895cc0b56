/**
 * Cost of one `BackendSelector.select()` call (target ≤ 1 µs), on the synthetic test report:
 * `deno bench bench/select_bench.ts`.
 *
 * @module
 */
import { BackendSelector } from "../models/selector.ts";
import { syntheticReport } from "../tests/_fixtures.ts";

const selector = BackendSelector.fromReport(syntheticReport());
const fitted = { op: "matmul", shape: { m: 300, k: 300, n: 300 }, dtype: "f32" } as const;
const measured = { op: "matmul", shape: { m: 128, k: 128, n: 128 }, dtype: "f32" } as const;
const elementwise = { op: "add", shape: { n: 100_000 }, dtype: "f32" } as const;
// Builds the per-(op, dtype, residency) tables before timing.
for (const r of [fitted, measured, elementwise]) selector.select(r);

let sink = 0;

Deno.bench("select() matmul, fitted size", { group: "select", baseline: true }, () => {
  sink += selector.select(fitted).backend.length;
});

Deno.bench("select() matmul, measured size", { group: "select" }, () => {
  sink += selector.select(measured).backend.length;
});

Deno.bench("select() add, fitted size", { group: "select" }, () => {
  sink += selector.select(elementwise).backend.length;
});

Deno.bench("select() matmul with predictedMs read", { group: "select" }, () => {
  sink += selector.select(fitted).predictedMs.js!;
});

Deno.bench("select() matmul with its reason read", { group: "select" }, () => {
  sink += selector.select(fitted).reason.length;
});

Deno.bench("selectForMatmul()", { group: "select" }, () => {
  sink += selector.selectForMatmul(300, 300, 300).backend.length;
});

globalThis.addEventListener("unload", () => {
  if (sink === 0) console.log(sink);
});
