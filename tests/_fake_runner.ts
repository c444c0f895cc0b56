/**
 * A fake runner for driving a `Planner` without a machine: each request's time comes from a
 * formula, and a fake clock advances by what the measurement would have taken.
 *
 * @module
 */
import { getOp } from "../kernels/catalog.ts";
import { variantId } from "../kernels/types.ts";
import type { Planner, PlanStep } from "../calibrate/planner.ts";
import type { SystemFigures } from "../core/schema.ts";
import type { MeasureRequest, MeasureResult } from "../core/result.ts";

/** Per request, its time per run in ms, or a string: the reason it is unsupported. */
export type FakeTimes = (req: MeasureRequest) => number | string;

/** A result as `measureMany()` would return it for a case that runs in `ms` (±1 %). */
export function fakeResult(req: MeasureRequest, times: FakeTimes): MeasureResult {
  const op = getOp(req.op);
  const identity = {
    op: req.op,
    shape: req.shape,
    dtype: req.dtype,
    backend: req.backend,
    variant: typeof req.variant === "string" ? req.variant : variantId(
      req.variant ?? op.impls[req.backend === "wasm-mt" ? "wasm" : req.backend]!
        .variants[0] ??
        {},
    ),
    residency: req.residency ?? "end-to-end",
  } as const;
  const ms = times(req);
  if (typeof ms === "string") return { ...identity, state: "unsupported", reason: ms };
  const flops = op.flops(req.shape);
  const bytes = op.bytes(req.shape, req.dtype);
  return {
    ...identity,
    state: "ok",
    wall: {
      n: 9,
      median: ms,
      p10: ms * 0.99,
      p90: ms * 1.01,
      mad: ms * 0.005,
      min: ms * 0.99,
      max: ms * 1.01,
      ciHalfWidth: ms * 0.005,
      relCi: 0.005,
    },
    compileMs: 0,
    maxRelError: 0,
    flops,
    bytes,
    gflops: flops / ms / 1e6,
    gbps: bytes / ms / 1e6,
    noisy: false,
  };
}

/**
 * Drives `planner` to its end with fake results; `clock.s` advances by ten runs of every case
 * measured. An LLM decode sample ran when `llmSample()` says so. Returns every step performed.
 */
export function drive(
  planner: Planner,
  times: FakeTimes,
  clock: { s: number },
  system: SystemFigures | null = null,
  llmSample: () => boolean = () => false,
): PlanStep[] {
  const steps: PlanStep[] = [];
  for (let step = planner.next(); step; step = planner.next()) {
    steps.push(step);
    if (step.kind === "llm-sample") {
      planner.observe({ sampled: llmSample() });
      continue;
    }
    if (step.kind !== "measure") {
      planner.observe(step.kind === "system" ? { system } : {});
      continue;
    }
    const results = step.requests.map((r) => fakeResult(r, times));
    for (const r of results) if (r.state === "ok") clock.s += (10 * r.wall.median) / 1000;
    planner.observe({
      results,
      windows: results.map((r) =>
        r.state === "ok" ? { wall: Array(9).fill(r.wall.median), gpu: [] } : undefined
      ),
    });
  }
  return steps;
}
