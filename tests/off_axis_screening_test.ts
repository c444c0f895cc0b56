import assert from "node:assert/strict";
import { newExtras, outputShareAt, screeningOrder } from "../calibrate/off_axis_steps.ts";
import { getOp } from "../kernels/catalog.ts";
import { variantId } from "../kernels/types.ts";

const v = (tile: number) => ({ tile });
const ids = (variants: readonly object[]) => variants.map((x) => variantId(x as never));

Deno.test("an off-axis screen tries the winner, the squares' runner-up, then the variants the square search never timed before the ones it timed and ranked low", () => {
  // The search timed 8, 16, 4 (in that order of speed); 2 and 32 it never reached.
  const ranked = [v(8), v(16), v(4), v(2), v(32)];
  const timed = new Set(["tile=8", "tile=16", "tile=4"]);
  assert.deepEqual(ids(screeningOrder(ranked, [], timed)), [
    "tile=8",
    "tile=16",
    "tile=2",
    "tile=32",
    "tile=4",
  ]);
});

Deno.test("at a decode's one row the variants after the runner-up go by how much of their arithmetic lands in the output, workgroup-memory tiles last", () => {
  const matmul = getOp("matmul");
  const variants = matmul.impls.webgpu!.variants;
  const [winner, runnerUp] = variants;
  const timed = new Set([variantId(winner!), variantId(runnerUp!)]);
  const share = outputShareAt(matmul, "webgpu", { m: 1, k: 1024, n: 1024 });
  const order = screeningOrder(variants, [], timed, true, share);
  assert.deepEqual(order.slice(0, 2), [winner, runnerUp]);
  const shares = order.slice(2).map(share);
  assert.deepEqual(shares, [...shares].sort((a, b) => b - a));
  // lavapipe's 32-row workgroup-memory tiles ran 26 ms a run at 1 × 1024² where the 4-row
  // register blocks ran 1–4: the 4-row blocks are screened before them.
  const at = (p: (v: Record<string, unknown>) => boolean) => order.findIndex((v) => p(v));
  assert.ok(at((v) => v.tm === 4 && v.tn === 8 && v.avec4 === true) < at((v) => v.kt === 16));
  // Where every block is full, the declared order stands.
  const square = outputShareAt(matmul, "webgpu", { m: 1024, k: 1024, n: 1024 });
  assert.deepEqual(
    screeningOrder(variants, [], timed, true, square),
    screeningOrder(variants, [], timed, true),
  );
});

Deno.test("a variant already found faster off the axis is screened right after the winner, once", () => {
  const ranked = [v(8), v(16), v(4), v(2)];
  const timed = new Set(["tile=8", "tile=16", "tile=4", "tile=2"]);
  assert.deepEqual(ids(screeningOrder(ranked, [v(2)], timed)), [
    "tile=8",
    "tile=2",
    "tile=16",
    "tile=4",
  ]);
});

Deno.test("a later screen tries the square search's ranking before the variants it never timed", () => {
  const ranked = [v(8), v(16), v(4), v(2), v(32)];
  const timed = new Set(["tile=8", "tile=16", "tile=4"]);
  assert.deepEqual(ids(screeningOrder(ranked, [v(32)], timed, false)), [
    "tile=8",
    "tile=32",
    "tile=16",
    "tile=4",
    "tile=2",
  ]);
});

Deno.test("a screen adds every variant that beat the winner by a margin and tied the fastest, at most two, fastest first", () => {
  const t = (rpi: number, ms: number | null) => ({ variant: { rpi }, ms });
  // lavapipe's gemv at 4096 × 1024: the winner of the squares (16 rows per invocation) 3.07 ms.
  const timings = [t(16, 3.07), t(8, 1.91), t(4, 2.01), t(2, 2.05), t(1, 2.9), t(32, null)];
  assert.deepEqual(newExtras(timings, { rpi: 16 }, []), [{ rpi: 8 }, { rpi: 4 }]);
  // One already found is not found again; one barely faster than the winner is not taken, nor
  // one well behind the fastest.
  assert.deepEqual(newExtras(timings, { rpi: 16 }, [{ rpi: 8 }]), [{ rpi: 4 }, { rpi: 2 }]);
  assert.deepEqual(newExtras([t(16, 3.0), t(8, 2.8), t(4, 1.9)], { rpi: 16 }, []), [{ rpi: 4 }]);
  // Nothing beat the winner, or the winner did not run: nothing to add.
  assert.deepEqual(newExtras([t(16, 1.0), t(8, 0.95)], { rpi: 16 }, []), []);
  assert.deepEqual(newExtras([t(16, null), t(8, 0.5)], { rpi: 16 }, []), []);
});
