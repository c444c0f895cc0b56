import assert from "node:assert/strict";
import { correctionAt, residualCurve } from "../models/_residuals.ts";

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

Deno.test("residualCurve() leaves out a median known only to worse than ±25 %", () => {
  const model = (p: { bytes: number }) => p.bytes / 1e6;
  const curve = residualCurve([
    { bytes: 1e3, ms: 0.001, ciHalfWidth: 0.00001 },
    { bytes: 1e5, ms: 0.2, ciHalfWidth: 0.13 }, // 2× off, but ±65 %: noise, not a cache step
    { bytes: 1e7, ms: 10, ciHalfWidth: 0.1 },
  ], model);
  assert.equal(curve.x.length, 2);
  assert.ok(Math.abs(correctionAt(curve, 1e5) - 1) < 1e-9, "the fit carries the middle");
});
