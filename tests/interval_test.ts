import assert from "node:assert/strict";
import { learnedHalfWidth, pooledRuns, typicalRunDrift, withDrift } from "../models/_interval.ts";
import type { Measurement } from "../core/schema.ts";

const STILL = { z: 1.645, sigma: 0, betweenSigma: 0 };

Deno.test("on the axis, the axis curve's held-out error and the shape model's spread add in quadrature", () => {
  const half = learnedHalfWidth({ axis: 0.3, shape: 0.4, offAxisModel: false }, STILL);
  assert.ok(Math.abs(half - 0.5) < 1e-12);
});

Deno.test("off the axis, the shape model's spread already holds the axis curve's error: the wider of the two stands", () => {
  assert.ok(
    Math.abs(learnedHalfWidth({ axis: 0.3, shape: 0.4, offAxisModel: true }, STILL) - 0.4) < 1e-12,
  );
  assert.ok(
    Math.abs(learnedHalfWidth({ axis: 0.3, shape: 0.1, offAxisModel: true }, STILL) - 0.3) < 1e-12,
  );
});

Deno.test("a variant's ratio and an alignment class add in quadrature; extrapolation adds on top", () => {
  const parts = { axis: 0.3, shape: 0.4, offAxisModel: true, variant: 0.3, align: 0 };
  assert.ok(Math.abs(learnedHalfWidth(parts, STILL) - 0.5) < 1e-12);
  assert.ok(
    Math.abs(learnedHalfWidth({ ...parts, extrapolation: 0.25 }, STILL) - 0.75) < 1e-12,
  );
});

Deno.test("a learned half-width takes only the between-run drift beside it: the drift within the run is in its left-out errors", () => {
  // Within the run 0.3, between runs 0.4 (whole drift 0.5), at z = 1.
  const drift = { z: 1, sigma: 0.5, betweenSigma: 0.4 };
  assert.ok(Math.abs(withDrift(0.3, drift) - 0.5) < 1e-12, "hypot(0.3, 0.4), not hypot(0.3, 0.5)");
  assert.ok(Math.abs(withDrift(1.2, drift) - Math.hypot(1.2, 0.4)) < 1e-12);
});

Deno.test("an interval is never narrower than the machine's whole drift", () => {
  const drift = { z: 2, sigma: 0.1, betweenSigma: 0.05 };
  assert.ok(Math.abs(withDrift(0, drift) - 0.2) < 1e-12);
  assert.ok(Math.abs(withDrift(0.05, drift) - 0.2) < 1e-12);
  assert.ok(
    Math.abs(learnedHalfWidth({ axis: 0.01, shape: 0, offAxisModel: false }, drift) - 0.2) < 1e-12,
  );
});

Deno.test("a pooled report's drift within a run is its runs' usual one: one noisy run does not set it", () => {
  const run = (wasmMt: number) => ({
    date: "2026-11-28T13:41:34Z",
    medianMs: { "wasm-mt": 0.01 },
    driftSigma: { "wasm-mt": wasmMt },
  });
  const stability = { driftSigma: { "wasm-mt": 0.265 }, earlierRuns: [run(0.063), run(0.071)] };
  assert.equal(typicalRunDrift(stability, "wasm-mt", 3), 0.071);
  // A machine's first run, and runs from before the drift was remembered: this run's own.
  assert.equal(typicalRunDrift({ driftSigma: { "wasm-mt": 0.265 } }, "wasm-mt", 3), 0.265);
  const older = { date: "2026-11-20T10:00:00Z", medianMs: { "wasm-mt": 0.01 } };
  assert.equal(
    typicalRunDrift({ driftSigma: { "wasm-mt": 0.265 }, earlierRuns: [older] }, "wasm-mt", 2),
    0.265,
  );
  assert.equal(typicalRunDrift(stability, "js", 3), 0, "a backend no run probed");
});

Deno.test("a report whose run kept its own times holds that run's drift, whatever earlier runs did", () => {
  const run = (js: number) => ({
    date: "2026-11-28T13:41:34Z",
    medianMs: { js: 0.04 },
    driftSigma: { js },
  });
  const stability = { driftSigma: { js: 0.13 }, earlierRuns: [run(0.03), run(0.035), run(0.09)] };
  assert.equal(typicalRunDrift(stability, "js", 1), 0.13, "not pooled: its own");
  assert.equal(
    typicalRunDrift(stability, "js", 2),
    (0.13 + 0.09) / 2,
    "pooled with the latest run",
  );
  assert.equal(typicalRunDrift(stability, "js", 4), (0.035 + 0.09) / 2, "pooled with all three");
});

Deno.test("a report pools as many runs as its most pooled measurement", () => {
  const ms = (runs?: number) => ({ ...(runs === undefined ? {} : { runs }) }) as Measurement;
  assert.equal(pooledRuns({ measurements: [] }), 1);
  assert.equal(pooledRuns({ measurements: [ms(), ms()] }), 1);
  assert.equal(pooledRuns({ measurements: [ms(), ms(3), ms(2)] }), 3);
});
