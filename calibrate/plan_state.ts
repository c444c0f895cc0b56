/**
 * What the planner (`planner.ts`) and its phases (`phases.ts`, `grid.ts`) share: the steps they
 * ask for, the outcomes they receive, and the state of the calibration so far.
 *
 * @module
 */
import type { OpSpec, Shape } from "../kernels/types.ts";
import { isOnAxis, variantId } from "../kernels/types.ts";
import type { Measurement, SystemFigures } from "../core/schema.ts";
import type { WindowSamples } from "./measure.ts";
import type { CalibrationPlan } from "./plan.ts";
import type { ProgressEvent } from "./progress.ts";
import type { MeasureRequest, MeasureResult } from "../core/result.ts";
import type { StoppingRule } from "../core/stats.ts";
import { formatMs, formatPercent } from "../core/format.ts";
import { TimeKeeper } from "./timekeeper.ts";

/**
 * One thing the planner asks its caller to do.
 *
 * - `measure`: measure these requests interleaved with this stopping rule; `record` says whether
 *   the results go into the report (a repeat that only decides what to measure next does not).
 * - `system`: measure the machine-wide figures. `probe`: take a drift probe. `save`: write the
 *   report so far. `llm`: validate the LLM decode estimate against a real decode. `llm-sample`:
 *   decode once now, for that validation to pool (`LlmValidationPlan.sampleEveryS`).
 *
 * @example
 * ```ts
 * import type { PlanStep } from "./plan_state.ts";
 * const s: PlanStep = { kind: "save" };
 * ```
 */
export type PlanStep =
  | { readonly kind: "system" }
  | { readonly kind: "probe" }
  | { readonly kind: "save" }
  | { readonly kind: "llm" }
  | { readonly kind: "llm-sample" }
  | {
    readonly kind: "measure";
    readonly requests: readonly MeasureRequest[];
    readonly stopping: Partial<StoppingRule>;
    readonly record: boolean;
  };

/**
 * What came of a step: for `measure`, one result per request (and the samples of each `ok` one);
 * for `system`, the figures.
 *
 * @example
 * ```ts
 * import type { StepOutcome } from "./plan_state.ts";
 * const o: StepOutcome = { results: [], windows: [] };
 * ```
 */
export interface StepOutcome {
  readonly results?: readonly MeasureResult[];
  /** Per request, the samples of an `ok` result. */
  readonly windows?: readonly (WindowSamples | undefined)[];
  readonly system?: SystemFigures | null;
  /** The run was aborted during the step: results that only say so are not recorded. */
  readonly aborted?: boolean;
  /** For `llm-sample`: whether the decode ran (false while the report cannot price it yet). */
  readonly sampled?: boolean;
}

/**
 * Options of a {@linkcode Planner}.
 *
 * @example
 * ```ts
 * import type { PlannerOptions } from "./plan_state.ts";
 * import { planFor } from "./plan.ts";
 * import { OPS } from "../kernels/catalog.ts";
 * const o: PlannerOptions = {
 *   plan: planFor({ quick: true, ops: OPS, dtypes: ["f32"], backends: ["js"] }),
 *   llm: false,
 *   clock: () => performance.now() / 1000,
 * };
 * ```
 */
export interface PlannerOptions {
  readonly plan: CalibrationPlan;
  /** Measurements of a resumed run: not measured again. */
  readonly resumed?: readonly Measurement[];
  /** System figures already known (a resumed run's): the system step is skipped. */
  readonly system?: SystemFigures | null;
  /** End with the LLM decode validation. */
  readonly llm: boolean;
  /** Seconds since the run began. */
  readonly clock: () => number;
  /** Told of phases and of every measurement recorded. */
  readonly onEvent?: (event: ProgressEvent) => void;
  /** How long the same run took on this machine last time, s, for the ETA (`lastRunSeconds`). */
  readonly lastRunS?: number | null;
}

/**
 * The key that identifies one measured case: op, dtype, backend, variant, residency and shape.
 *
 * @param m The case.
 * @returns The key.
 * @example
 * ```ts
 * import { measurementKey } from "./plan_state.ts";
 * const k = measurementKey({
 *   op: "add", dtype: "f32", backend: "js", variant: "default", residency: "end-to-end", shape: { n: 4 },
 * });
 * console.log(k); // "add|f32|js|default|end-to-end|n=4"
 * ```
 */
export function measurementKey(m: {
  op: string;
  dtype: string;
  backend: string;
  variant: string;
  residency: string;
  shape: Shape;
}): string {
  const dims = Object.keys(m.shape).sort().map((k) => `${k}=${m.shape[k]}`).join(",");
  return `${m.op}|${m.dtype}|${m.backend}|${m.variant}|${m.residency}|${dims}`;
}

function requestKey(req: MeasureRequest): string {
  return measurementKey({
    op: req.op,
    dtype: req.dtype,
    backend: req.backend,
    variant: typeof req.variant === "string" ? req.variant : variantId(req.variant ?? {}),
    residency: req.residency ?? "end-to-end",
    shape: req.shape,
  });
}

/** A generator of steps that receives each step's outcome: how every phase is written. */
export type Steps<T = void> = Generator<PlanStep, T, StepOutcome>;

/**
 * What the phases share: the measurements so far, their windows, the progress counts and the
 * time plan. Internal to the planner and its phases (`phases.ts`).
 *
 * @example
 * ```ts ignore
 * function* again(state: PlanState, m: Measurement) { return yield* state.sample([requestOf(m)]); }
 * ```
 */
export class PlanState {
  readonly plan: CalibrationPlan;
  readonly measurements: Measurement[];
  /** Measurements by {@linkcode measurementKey}. */
  readonly done: Map<string, Measurement>;
  /** The samples of each window of this session's measurements, for pooling in later passes. */
  readonly windowsOf = new Map<string, WindowSamples[]>();
  /** Measurements from this seq on were taken by this session (a resumed one's stay as they are). */
  readonly sessionSeq: number;
  readonly time: TimeKeeper;
  system: SystemFigures | null;
  progressDone = 0;
  progressTotal: number;
  #seq: number;
  readonly #emit: (event: ProgressEvent) => void;
  readonly #llm: boolean;

  /** @param options The planner's options. */
  constructor(options: PlannerOptions) {
    this.plan = options.plan;
    this.measurements = [...(options.resumed ?? [])];
    this.done = new Map(this.measurements.map((m) => [measurementKey(m), m]));
    this.#seq = this.measurements.reduce((s, m) => Math.max(s, m.seq + 1), 0);
    this.sessionSeq = this.#seq;
    this.system = options.system ?? null;
    this.progressTotal = options.plan.estimatedCases;
    this.time = new TimeKeeper(options.plan, options.clock, options.llm, options.lastRunS ?? null);
    this.#llm = options.llm;
    this.#emit = options.onEvent ?? (() => {});
  }

  /** When the last drift probe was asked for, seconds since the run began; null before any. */
  #probedAtS: number | null = null;

  /** A drift probe: asked for and its time noted. */
  *probe(): Steps {
    this.#probedAtS = this.time.now();
    yield { kind: "probe" };
  }

  /**
   * Whether a drift probe is due after a job: always after the last, else once the plan's
   * `probeEveryS` have passed since the last probe (every job when it is 0).
   */
  probeDue(lastJob: boolean): boolean {
    return lastJob || this.#probedAtS === null ||
      this.time.now() - this.#probedAtS >= this.plan.probeEveryS;
  }

  /** When the last decode sample ran, seconds since the run began; null before any. */
  #sampledAtS: number | null = null;

  /**
   * A decode sample for the LLM validation, when the run has one, its plan samples and
   * `sampleEveryS` have passed since the last sample that ran. Its time comes out of the LLM
   * reserve, not the jobs'.
   */
  *llmSample(): Steps {
    const every = this.plan.llm.sampleEveryS;
    if (!this.#llm || every === undefined) return;
    if (this.#sampledAtS !== null && this.time.now() - this.#sampledAtS < every) return;
    const startS = this.time.now();
    const { sampled } = yield { kind: "llm-sample" };
    this.time.llmSampled(this.time.now() - startS);
    if (sampled) this.#sampledAtS = this.time.now();
  }

  /** Announces a phase. */
  phase(phase: string): void {
    this.#emit({
      kind: "phase",
      phase,
      done: this.progressDone,
      total: this.progressTotal,
      elapsedS: this.time.now(),
      ...this.#eta(),
    });
  }

  /** Announces a recorded measurement. */
  measured(m: Measurement, note = ""): void {
    this.progressDone++;
    const residency = m.backend === "webgpu" ? ` ${m.residency}` : "";
    this.#emit({
      kind: "measured",
      label: `${m.op} ${m.dtype} ${m.backend}${residency} ${m.size}${note}`,
      state: m.state,
      detail: m.state === "ok"
        ? `${formatMs(m.wall.median)} ±${formatPercent(m.wall.relCi)}`
        : m.state === "failed"
        ? `FAILED ${m.error}`
        : `unsupported: ${m.reason}`,
      done: this.progressDone,
      total: Math.max(this.progressTotal, this.progressDone),
      elapsedS: this.time.now(),
      ...this.#eta(),
    });
  }

  #eta(): { etaS?: number } {
    const eta = this.time.etaS();
    return eta === null ? {} : { etaS: eta };
  }

  /** The next sequence number of a recorded measurement. */
  nextSeq(): number {
    return this.#seq++;
  }

  /** Puts `m` where `old` was (a repeat or a pooled window of the same case). */
  replace(old: Measurement, m: Measurement): void {
    this.measurements[this.measurements.indexOf(old)] = m;
    this.done.set(measurementKey(m), m);
  }

  /**
   * Measures what is not measured yet, interleaved, and records it; returns per request its
   * measurement (new or earlier), or undefined when the run was aborted before it was taken.
   */
  *measure(
    requests: readonly MeasureRequest[],
    op: OpSpec,
    stopping: Partial<StoppingRule> = this.plan.stopping,
  ): Steps<(Measurement | undefined)[]> {
    const fresh = requests.filter((req) => !this.done.has(requestKey(req)));
    if (fresh.length > 0) {
      const outcome = yield { kind: "measure", requests: fresh, stopping, record: true };
      (outcome.results ?? []).forEach((result, i) => {
        if (outcome.aborted && result.state === "failed" && /Aborted/.test(result.error)) return;
        const shape = fresh[i]!.shape;
        const m: Measurement = {
          ...result,
          size: op.axis.size(shape),
          seq: this.nextSeq(),
          // A shape beside the sweep axis (calibrate/shapes.ts) is marked so: fits, crossovers
          // and tuning keep to the axis, predictions learn proportions from it.
          ...(isOnAxis(op, shape) ? {} : { offAxis: true as const }),
        };
        this.#record(m, outcome.windows?.[i]);
      });
    }
    return requests.map((req) => this.done.get(requestKey(req)));
  }

  #record(m: Measurement, window: WindowSamples | undefined): void {
    this.measurements.push(m);
    this.done.set(measurementKey(m), m);
    if (window) this.windowsOf.set(measurementKey(m), [window]);
    this.measured(m);
  }

  /** Measures without recording: the outcome decides what to do next. */
  *sample(
    requests: readonly MeasureRequest[],
    stopping: Partial<StoppingRule> = this.plan.stopping,
  ): Steps<StepOutcome> {
    if (requests.length === 0) return {};
    return yield { kind: "measure", requests, stopping, record: false };
  }
}
