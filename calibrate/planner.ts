/**
 * The calibration's policy in one place: what to measure next, what each result changes, and
 * when to stop. `calibrate()` is a loop over a {@linkcode Planner}: ask {@linkcode Planner.next}
 * for a step, perform it (measure, probe, save, …), hand the outcome to
 * {@linkcode Planner.observe}. The planner does no I/O, so a test drives it with a fake runner and
 * a fake clock.
 *
 * @module
 */
import type { Measurement, SystemFigures } from "../core/schema.ts";
import { jobSteps, revisitSteps } from "./phases.ts";
import {
  type PlannerOptions,
  PlanState,
  type PlanStep,
  type StepOutcome,
  type Steps,
} from "./plan_state.ts";

export { measurementKey } from "./plan_state.ts";
export type { PlannerOptions, PlanStep, StepOutcome, Steps } from "./plan_state.ts";

/**
 * The planner: a calibration as a sequence of steps. Ask {@linkcode next} for the step to
 * perform, perform it, pass its outcome to {@linkcode observe}; repeat until `next()` is null.
 *
 * @example
 * ```ts
 * import { Planner } from "./planner.ts";
 * import { planFor } from "./plan.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const planner = new Planner({
 *   plan: planFor({ quick: true, ops: [getOp("add")], dtypes: ["f32"], backends: ["js"] }),
 *   llm: false,
 *   clock: () => 0,
 * });
 * console.log(planner.next()?.kind); // "system"
 * ```
 */
export class Planner {
  readonly #state: PlanState;
  readonly #steps: Steps;
  #current: PlanStep | null = null;

  /** @param options The plan, resumed measurements, clock and progress listener. */
  constructor(options: PlannerOptions) {
    this.#state = new PlanState(options);
    this.#steps = calibrationSteps(this.#state, options.llm);
    this.#advance({});
  }

  /** The step to perform now, or null when the calibration is done. */
  next(): PlanStep | null {
    return this.#current;
  }

  /** Takes the outcome of the current step and moves on to the next. */
  observe(outcome: StepOutcome = {}): void {
    if (this.#current === null) throw new RangeError("The planner is done: nothing to observe");
    this.#advance(outcome);
  }

  /** True once every step has been performed. */
  get done(): boolean {
    return this.#current === null;
  }

  /** Every measurement so far, resumed ones included. */
  get measurements(): readonly Measurement[] {
    return this.#state.measurements;
  }

  /** The system figures, once measured (or resumed). */
  get system(): SystemFigures | null {
    return this.#state.system;
  }

  /** What is left of the plan's LLM reserve for the validation at the end, s. */
  llmLeftS(): number {
    return this.#state.time.llmLeftS();
  }

  /** Seconds until the plan's end, or null when the plan has no budget to go by. */
  etaS(): number | null {
    return this.#state.time.etaS();
  }

  #advance(outcome: StepOutcome): void {
    const r = this.#steps.next(outcome);
    this.#current = r.done ? null : r.value;
  }
}

/** The whole calibration: system figures, each job, the revisit passes, the LLM validation. */
function* calibrationSteps(state: PlanState, llm: boolean): Steps {
  if (state.system === null) {
    state.phase("system figures");
    const { system } = yield { kind: "system" };
    state.system = system ?? null;
  }
  state.time.systemDone();
  yield* state.probe();
  const jobs = state.plan.jobs;
  for (const [i, job] of jobs.entries()) {
    state.time.startJob(i);
    yield* jobSteps(state, job);
    state.time.endJob(i);
  }
  for (let pass = 2; pass <= state.plan.passes; pass++) {
    yield* revisitSteps(state, pass, pass === state.plan.passes);
  }
  state.time.revisitDone();
  if (llm) {
    state.phase("llm decode");
    yield { kind: "llm" };
  }
}
