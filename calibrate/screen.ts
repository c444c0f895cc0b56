/**
 * Screening: many variants of one backend timed at one shape with the plan's light stopping rule,
 * in batches between looks at the clock — the variant search at the sweep's anchors, and again at
 * the first cheap shape off the axis, where another variant may be fastest.
 *
 * @module
 */
import type { OpSpec } from "../kernels/types.ts";
import type { Measurement } from "../core/schema.ts";
import type { MeasureRequest } from "../core/result.ts";
import type { PlanState, Steps } from "./plan_state.ts";

/** Variants measured together in one screening batch, between looks at the clock. */
export const SCREEN_BATCH = 6;

/**
 * Measures `requests` (one shape, many variants) in batches of {@linkcode SCREEN_BATCH}; once
 * `deadline` (seconds since the start) has passed, the rest are not tried, so the first batch
 * always is and the order of `requests` says what matters most. Without a time plan (an infinite
 * deadline, a thorough run) every request is measured in one interleaved batch.
 *
 * @param state The planner's state.
 * @param op The op measured.
 * @param requests The requests, most wanted first.
 * @param deadline Seconds since the start after which no further batch starts.
 * @returns Per request its measurement, undefined for those not tried.
 * @example
 * ```ts ignore
 * const results = yield* screen(state, op, requests, state.time.searchDeadline());
 * ```
 */
export function* screen(
  state: PlanState,
  op: OpSpec,
  requests: readonly MeasureRequest[],
  deadline: number,
): Steps<(Measurement | undefined)[]> {
  const out: (Measurement | undefined)[] = [];
  const size = Number.isFinite(deadline) ? SCREEN_BATCH : requests.length;
  for (let i = 0; i < requests.length; i += size) {
    if (i > 0 && state.time.past(deadline)) break;
    const batch = requests.slice(i, i + size);
    out.push(...(yield* state.measure(batch, op, state.plan.searchStopping)));
  }
  return out;
}
