import assert from "node:assert/strict";
import { fitTilePenalty, NO_TILE_COST, tileLn } from "../models/_tiles.ts";
import { getOp } from "../kernels/catalog.ts";
import { variantFromId } from "../kernels/types.ts";

const point = (utilisation: number, penalty: number, fitMs = 2, t0 = 0.05) => ({
  ms: t0 + (fitMs - t0) * utilisation ** -penalty,
  fitMs,
  t0,
  utilisation,
});

Deno.test("fitTilePenalty() recovers the share of partly empty tiles' idle area a run pays", () => {
  for (const penalty of [0, 0.4, 0.75, 1]) {
    const fitted = fitTilePenalty([point(1, 9), point(0.55, penalty), point(0.72, penalty)]);
    assert.ok(Math.abs(fitted.penalty - penalty) < 1e-9, `${penalty}: ${fitted.penalty}`);
    assert.equal(fitted.leastUtilisation, 0.55);
  }
  // The median of the estimates: one size run through a stall does not set it.
  assert.ok(
    Math.abs(fitTilePenalty([point(0.55, 0.7), point(0.72, 0.8), point(0.6, 3)]).penalty - 0.8) <
      1e-9,
  );
});

Deno.test("fitTilePenalty() says 0 where nothing measured partial tiles, and stays within [0, 1]", () => {
  assert.deepEqual(fitTilePenalty([]), NO_TILE_COST);
  assert.deepEqual(
    fitTilePenalty([point(1, 0.5), point(0.97, 0.5)]),
    NO_TILE_COST,
    "whole tiles say nothing",
  );
  // A launch-bound size says nothing either: its time is the launch whatever the tiles.
  assert.deepEqual(fitTilePenalty([point(0.5, 1, 0.06, 0.05)]), NO_TILE_COST);
  assert.equal(fitTilePenalty([point(0.5, 2.5)]).penalty, 1);
  assert.equal(fitTilePenalty([point(0.5, -0.5)]).penalty, 0);
});

Deno.test("tileLn() prices the idle share at the penalty, nothing for whole tiles, and emptier tiles than measured as the emptiest measured", () => {
  const measured = (penalty: number) => ({ penalty, leastUtilisation: 0.25 });
  assert.equal(tileLn(measured(0.75), 1), 0);
  assert.ok(Math.abs(tileLn(measured(1), 0.5) - Math.log(2)) < 1e-12);
  assert.ok(Math.abs(tileLn(measured(0.5), 0.25) - Math.log(2)) < 1e-12);
  assert.ok(Math.abs(tileLn(measured(0.5), 0.1) - Math.log(2)) < 1e-12, "not extrapolated");
  assert.equal(tileLn(NO_TILE_COST, 0.3), 0);
});

Deno.test("a WebGPU matmul's utilisation counts whole tiles along dimensions of a tile or more", () => {
  const impl = getOp("matmul").impls.webgpu!;
  // 16 × 16 per thread in an 8 × 4 workgroup: 64 rows × 128 columns a tile.
  const big = variantFromId("algo=reg,avec4=true,kt=0,tm=16,tn=16,vec4=true,wg=8,wgy=4");
  const at = (m: number, n: number) => impl.utilisation!({ m, k: 256, n }, big);
  assert.equal(at(256, 256), 1);
  assert.equal(at(64, 128), 1);
  assert.ok(Math.abs(at(260, 260) - (260 / 320) * (260 / 384)) < 1e-12);
  // A decode's few rows are under one tile: its invocation blocks say what they cost (below).
  assert.equal(at(1, 1024), 1);
  assert.equal(at(8, 1000), 1000 / 1024);
});

Deno.test("a WebGPU matmul's block utilisation counts the arithmetic its invocations do under one tile", () => {
  const impl = getOp("matmul").impls.webgpu!;
  const at = (id: string, m: number, n: number) =>
    impl.blockUtilisation!({ m, k: 256, n }, variantFromId(id));
  // Registers only: an invocation computes its 16 × 16 block whole, and one past m returns.
  const big = "algo=reg,avec4=true,kt=0,tm=16,tn=16,vec4=true,wg=8,wgy=4";
  assert.equal(at(big, 1, 1024), 1 / 16);
  assert.equal(at(big, 24, 1024), 24 / 32);
  assert.equal(at(big, 16, 100), 100 / 112);
  assert.equal(at(big, 72, 1000), 1, "a tile or more is utilisation's");
  // Slices through workgroup memory keep every invocation for the barriers: the whole tile.
  assert.equal(at("algo=reg,kt=16,tm=4,tn=4,vec4=true,wg=8", 1, 1024), 1 / 32);
  // One output an invocation: nothing idle.
  assert.equal(at("algo=naive,wg=8", 1, 3), 1);
});
