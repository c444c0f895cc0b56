import assert from "node:assert/strict";
import { correctionAt, localLooError, neighboursAt, residualCurve } from "../models/_residuals.ts";

const flat = () => 1;

Deno.test("residualCurve() averages repeated sizes and sorts by bytes", () => {
  const c = residualCurve([
    { bytes: 100, ms: 4 },
    { bytes: 10, ms: 2 },
    { bytes: 10, ms: 0.5 },
  ], flat);
  assert.deepEqual([...c.x], [Math.log(10), Math.log(100)]);
  assert.ok(Math.abs(c.r[0]!) < 1e-12, "ln 2 and ln 0.5 average to 0");
  assert.ok(Math.abs(c.r[1]! - Math.log(4)) < 1e-12);
});

Deno.test("residualCurve() skips points it cannot take a logarithm of", () => {
  const c = residualCurve([{ bytes: 0, ms: 1 }, { bytes: 10, ms: -1 }, { bytes: 10, ms: 1 }], flat);
  assert.equal(c.x.length, 1);
});

Deno.test("residualCurve() scores leaving each interior size out, and needs three sizes to", () => {
  assert.equal(residualCurve([{ bytes: 1, ms: 1 }, { bytes: 4, ms: 1 }], flat).looMape, null);
  // ln-linear residuals are predicted exactly; a bump of 2× at the middle is missed by 50 %.
  const line = residualCurve([1, 10, 100].map((b) => ({ bytes: b, ms: b })), flat);
  assert.ok(line.looMax! < 1e-12);
  const bump = residualCurve(
    [{ bytes: 1, ms: 1 }, { bytes: 10, ms: 2 }, { bytes: 100, ms: 1 }],
    flat,
  );
  assert.ok(Math.abs(bump.looMape! - 0.5) < 1e-12);
  assert.ok(Math.abs(bump.looMax! - 0.5) < 1e-12);
});

Deno.test("correctionAt() interpolates in ln(bytes) and holds the end values beyond", () => {
  const c = residualCurve(
    [{ bytes: 1, ms: 1 }, { bytes: 100, ms: 4 }, { bytes: 1e4, ms: 1 }],
    flat,
  );
  assert.ok(Math.abs(correctionAt(c, 10) - 2) < 1e-12);
  assert.ok(Math.abs(correctionAt(c, 100) - 4) < 1e-12);
  assert.ok(Math.abs(correctionAt(c, 1e3) - 2) < 1e-12);
  assert.equal(correctionAt(c, 0.01), 1);
  assert.equal(correctionAt(c, 1e9), 1);
});

Deno.test("correctionAt() of an empty curve leaves the model alone", () => {
  assert.equal(correctionAt(residualCurve([], flat), 123), 1);
});

Deno.test("residualCurve() shrinks a median known only to worse than ±25 % toward the sure points", () => {
  const model = (p: { bytes: number }) => p.bytes / 1e6;
  const points = (ciHalfWidth: number) => [
    { bytes: 1e3, ms: 0.001, ciHalfWidth: 0.00001 },
    { bytes: 1e5, ms: 0.2, ciHalfWidth }, // 2× off the model
    { bytes: 1e7, ms: 10, ciHalfWidth: 0.1 },
  ];
  const unsure = correctionAt(residualCurve(points(0.13), model), 1e5); // ±65 %
  const sure = correctionAt(residualCurve(points(0.004), model), 1e5); // ±2 %
  assert.ok(unsure > 1.2 && unsure < 1.6, `partway to its own 2×, got ${unsure}`);
  assert.ok(Math.abs(sure - 2) < 1e-9, "a sure median is taken whole");
});

Deno.test("an unsure largest size still moves what lies beyond it", () => {
  // Sure sizes say the model is 1.3× slow; the largest, at ±28 %, runs at the model's speed.
  const model = (p: { bytes: number }) => p.bytes / 1e6;
  const sizes = [1e3, 1e4, 1e5, 1e6];
  const curve = residualCurve([
    ...sizes.map((bytes, i) => ({ bytes, ms: model({ bytes }) * (1.3 + 0.1 * (i % 2)) })),
    { bytes: 1e7, ms: 10, ciHalfWidth: 2.8 },
  ], model);
  const beyond = correctionAt(curve, 3e7);
  assert.ok(beyond < 1.1, `held near the unsure end's own 1×, got ${beyond}`);
});

Deno.test("localLooError() carries a regime change only to predictions near it", () => {
  // Smooth over 10–10⁴ bytes and 10⁵–10⁸, a 4× step between 10⁴ and 10⁵.
  const sizes = [10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
  const c = residualCurve(sizes.map((bytes, i) => ({ bytes, ms: i < 4 ? 1 : 4 })), flat);
  assert.ok(c.looMax! > 0.5, "the series as a whole holds out badly at the step");
  assert.ok(localLooError(c, 3e4)! >= 0.5, "between the sizes around the step: the step's error");
  assert.ok(localLooError(c, 300)! < 1e-9, "far below it: interpolation held exactly");
  assert.ok(localLooError(c, 3e6)! < 1e-9, "far above it too");
  assert.ok(localLooError(c, 1e9)! < 1e-9, "beyond the largest size: the error near that end");
  assert.ok(localLooError(c, 1)! < 1e-9, "below the smallest: the two sizes tested nearest it");
});

Deno.test("localLooError() never claims less than the series' median held-out error, shrunk as near a measured size as the query is", () => {
  // Every interior size is 2× off its neighbours' line (zig-zag) except the last one tested.
  const c = residualCurve(
    [1, 2, 1, 2, 1, 1, 1].map((ms, i) => ({ bytes: 10 ** i, ms })),
    flat,
  );
  const errors = [...c.looErrors].filter((e) => !Number.isNaN(e)).sort((a, b) => a - b);
  const median = errors[2]!;
  // Halfway between 10⁵ and 10⁶ in ln(bytes): half the distance a left-out size had.
  assert.ok(localLooError(c, 10 ** 5.5)! >= median * Math.sqrt(0.5) - 1e-12);
  assert.ok(localLooError(c, 10 ** 7.5)! >= median - 1e-12, "beyond the sizes: unshrunk");
  assert.equal(localLooError(residualCurve([{ bytes: 1, ms: 1 }], flat), 1), null);
});

Deno.test("localLooError() shrinks with the distance to the nearest measured size: nothing at one, the left-out error at a full gap", () => {
  // Flat up to 10³ bytes, then 2× per decade: only leaving 10³ out sees the bend.
  const c = residualCurve(
    [1, 1, 1, 1, 2, 4].map((ms, i) => ({ bytes: 10 ** i, ms })),
    flat,
  );
  const left = c.looErrors[3]!;
  assert.ok(left > 0.4, "the bend is seen by leaving 10³ out");
  assert.ok(localLooError(c, 1e3)! < 1e-12, "at a measured size");
  const quarter = localLooError(c, 10 ** 3.25)!;
  const half = localLooError(c, 10 ** 3.5)!;
  assert.ok(Math.abs(quarter - left * Math.sqrt(0.25)) < 1e-9, `${quarter} vs ${left}`);
  assert.ok(Math.abs(half - left * Math.sqrt(0.5)) < 1e-9, `${half} vs ${left}`);
  assert.ok(localLooError(c, 1e3, 0.3)! < 1e-12, "a floor shrinks with it");
  assert.ok(Math.abs(localLooError(c, 10 ** 1.5, 1)! - Math.sqrt(0.5)) < 1e-9);
});

Deno.test("across a break the correction holds each side's level instead of interpolating", () => {
  // 3× slower per byte from 4 MiB up, where the CPU runners stream their operands.
  const MiB = 2 ** 20;
  const points = [0.5, 1, 2, 3.8, 4.2, 8, 16].map((m) => ({ bytes: m * MiB, ms: m < 4 ? 1 : 3 }));
  const smooth = residualCurve(points, flat);
  const broken = residualCurve(points, flat, [4 * MiB]);
  // Between 3.8 and 4.2 MiB: interpolated, the middle; with the break, the side's own level.
  assert.ok(correctionAt(smooth, 3.9 * MiB) > 1.2);
  assert.ok(Math.abs(correctionAt(broken, 3.9 * MiB) - 1) < 1e-12);
  assert.ok(Math.abs(correctionAt(broken, 4 * MiB) - 3) < 1e-12);
  // Leaving out a size next to the break, its own side's neighbour predicts it: no error.
  assert.ok(broken.looMax! < 1e-12, `${broken.looErrors}`);
  assert.ok(smooth.looMax! > 1);
  // So an interval near the break is as narrow as its side's scatter, not the step.
  assert.ok(localLooError(broken, 3.9 * MiB)! < 1e-12);
  assert.ok(localLooError(smooth, 3.9 * MiB)! > 0.5);
});

Deno.test("a side of a break without measured sizes takes the nearest side's", () => {
  const points = [1, 2, 3].map((bytes) => ({ bytes, ms: bytes }));
  const c = residualCurve(points, flat, [10]);
  assert.ok(Math.abs(correctionAt(c, 100) - 3) < 1e-12);
  assert.ok(Math.abs(correctionAt(c, 2) - 2) < 1e-12);
});

Deno.test("neighboursAt() says how far the measured sizes either side lie from the interpolation, within one side of a break", () => {
  const MiB = 2 ** 20;
  // A sum held in cache to 2.2 MiB at 1 ms a unit, then 2.3× slower before the streamed regime.
  const points = [0.5, 1, 2.2, 3.6, 8, 16].map((m) => ({ bytes: m * MiB, ms: m < 3 ? 1 : 2.3 }));
  const c = residualCurve(points, flat, [4 * MiB]);
  const [lo, hi] = neighboursAt(c, 3 * MiB)!;
  const at = correctionAt(c, 3 * MiB);
  assert.ok(Math.abs(Math.exp(lo) * at - 1) < 1e-12, "the faster neighbour's level");
  assert.ok(Math.abs(Math.exp(hi) * at - 2.3) < 1e-12, "the slower neighbour's level");
  assert.equal(neighboursAt(c, 2.2 * MiB), null, "on a measured size");
  assert.equal(neighboursAt(c, 0.25 * MiB), null, "before the first");
  assert.equal(neighboursAt(c, 3.8 * MiB), null, "its side of the break has no size after it");
  assert.ok(Math.abs(neighboursAt(c, 10 * MiB)![1]) < 1e-12, "one level on the streamed side");
});
