/**
 * The side of a calibration that touches the world: the machine and its adapter, the runners,
 * the clock and budget, drift probes, the report file. It performs the steps a `Planner`
 * (`planner.ts`) asks for; `calibrate()` is the loop between the two.
 *
 * @module
 */
import { OPS } from "../kernels/catalog.ts";
import { type Backend, BACKENDS } from "../kernels/types.ts";
import type { EarlierRun, Report } from "../core/schema.ts";
import { writeJsonAtomic } from "../core/atomic.ts";
import { assembleReport, NOISY_WARNING, type RunContext } from "./assemble.ts";
import type { CalibrateOptions } from "./options.ts";
import { type GpuHandle, type GpuInfo, openGpu, peekAdapter } from "./device.ts";
import { describeMachine, hugePageWarning, machineFingerprint, machineSlug } from "./machine.ts";
import { measureMany, type RunnerSource, type WindowSamples } from "./measure.ts";
import { type CalibrationPlan, type LlmValidationPlan, type Mode, planFor } from "./plan.ts";
import { Planner } from "./planner.ts";
import { lastRunSeconds } from "./timekeeper.ts";
import { type Checkout, gitCheckout } from "./checkout.ts";
import {
  disagreeingBackends,
  levelShifts,
  MAX_TYPICAL_DISAGREEMENT,
  poolMeasurements,
  poolRefusal,
} from "./pool.ts";
import { measurementKey, type PlanStep, type StepOutcome } from "./plan_state.ts";
import type { Runner } from "./runner.ts";
import { openRunner } from "./runners/mod.ts";
import { earlierRunsOf, measureProbe, type StabilityProbe } from "./stability.ts";
import { measureSystem } from "./system.ts";

type MachineInfo = Awaited<ReturnType<typeof describeMachine>>;

/**
 * One calibration run's world: opened from the options, performs planner steps, saves reports.
 *
 * @example
 * ```ts ignore
 * import { CalibrationSession } from "./session.ts";
 * const session = await CalibrationSession.open({ mode: "quick", ops: ["add"] });
 * const planner = session.planner();
 * for (let s = planner.next(); s; s = planner.next()) planner.observe(await session.perform(s));
 * await session.finish("finished");
 * ```
 */
export class CalibrationSession {
  readonly options: CalibrateOptions;
  readonly mode: Mode;
  readonly path: string;
  /** Aborted by the caller's signal or when the `--budget` is spent. */
  readonly signal: AbortSignal;
  readonly #machine: MachineInfo;
  readonly #fingerprint: string;
  readonly #slug: string;
  readonly #commit: string | null;
  /** The adapter of a run whose `backends` left WebGPU out: recorded, not measured. */
  readonly #unmeasuredAdapter: GpuInfo | null;
  readonly #started = performance.now();
  readonly #warnings: string[];
  readonly #probes: StabilityProbe[];
  readonly #earlierRuns: readonly EarlierRun[];
  readonly #runners = new Map<Backend, Promise<Runner | string>>();
  readonly #budgetOver = new AbortController();
  readonly #budgetTimer: ReturnType<typeof setTimeout> | undefined;
  #gpu: GpuHandle | null;
  #planner: Planner | null = null;
  #llm: Report["llm"];

  private constructor(
    options: CalibrateOptions,
    machine: MachineInfo,
    gpu: GpuHandle | null,
    ids: {
      fingerprint: string;
      slug: string;
      commit: string | null;
      unmeasuredAdapter: GpuInfo | null;
    },
  ) {
    this.options = options;
    this.mode = options.mode ?? (options.quick ? "quick" : "default");
    this.#machine = machine;
    this.#gpu = gpu;
    this.#fingerprint = ids.fingerprint;
    this.#slug = ids.slug;
    this.#commit = ids.commit;
    this.#unmeasuredAdapter = ids.unmeasuredAdapter;
    this.path = options.out ?? `reports/${ids.slug}.json`;
    // The noisy-machine warning is the report's own summary: recomputed, not carried over.
    this.#warnings = (options.resume?.provenance.warnings ?? []).filter((w) =>
      !NOISY_WARNING.test(w)
    );
    this.#probes = [...(options.resume?.stability?.probes ?? [])];
    // A resumed run is the same run: it keeps the earlier runs it started with.
    this.#earlierRuns = options.resume?.stability?.earlierRuns ??
      earlierRunsOf(options.earlier ?? [], ids.fingerprint, machine.driverEnv);
    this.#llm = options.resume?.llm ?? null;
    const budgetMs = options.budgetS !== undefined ? options.budgetS * 1000 : Infinity;
    this.#budgetTimer = Number.isFinite(budgetMs)
      ? setTimeout(() => this.#budgetOver.abort(), budgetMs)
      : undefined;
    this.signal = options.signal
      ? AbortSignal.any([options.signal, this.#budgetOver.signal])
      : this.#budgetOver.signal;
  }

  /**
   * Describes the machine, opens the adapter (unless `backends` leaves WebGPU out) and checks a
   * resumed report is of this machine.
   *
   * @throws {RangeError} when `resume` was measured on another machine or adapter.
   */
  static async open(options: CalibrateOptions): Promise<CalibrationSession> {
    for (const name of options.ops ?? []) if (!OPS.some((op) => op.name === name)) unknownOp(name);
    const warnings: string[] = [];
    const machine = await describeMachine();
    const hugePages = hugePageWarning(machine);
    if (hugePages !== null) warnings.push(hugePages);
    const gpuLeftOut = options.backends !== undefined && !options.backends.includes("webgpu");
    const gpu = gpuLeftOut ? null : await openGpu({
      onUnavailable: (why) => warnings.push(`${why}: calibrating the CPU backends only`),
    });
    // Left out by choice, the adapter is still the machine's: its fingerprint matches a full run's.
    const adapter = gpu?.info ?? (gpuLeftOut ? await peekAdapter() : null);
    const fingerprint = await machineFingerprint(machine, adapter);
    const slug = machineSlug(machine, adapter, fingerprint);
    if (options.resume && options.resume.fingerprint !== fingerprint) {
      gpu?.device.destroy();
      throw new RangeError(
        `Cannot resume "${
          options.resumePath ?? "report"
        }": it was measured on another machine or adapter (fingerprint ${options.resume.fingerprint}, this one is ${fingerprint})`,
      );
    }
    const checkout = options.checkout ?? await gitCheckout();
    const session = new CalibrationSession(options, machine, gpu, {
      fingerprint,
      slug,
      commit: checkout.commit,
      unmeasuredAdapter: gpuLeftOut ? adapter : null,
    });
    await session.#choosePool(checkout);
    const skipped = skippedWarning(session.plan().skippedDtypes);
    if (skipped !== null) warnings.push(skipped);
    // A resumed run carries its warnings over already.
    for (const w of warnings) if (!session.#warnings.includes(w)) session.warn(w);
    return session;
  }

  /** The report to pool with once the measurements are done (`calibrate/pool.ts`), if any. */
  #poolWith: Report | null = null;
  /** Set once the measurements are done: from then on the report pools with `#poolWith`. */
  #measuringDone = false;

  /**
   * Decides whether this run pools with the report it replaces, and says so when it does not.
   * A resumed run does not: what it replaces is its own partial report.
   *
   * @param checkout The checkout this run measures with.
   */
  async #choosePool(checkout: Checkout): Promise<void> {
    const earlier = this.options.poolWith;
    if (earlier === undefined || this.options.resume) return;
    const commit = earlier.gpucal.commit;
    const why = poolRefusal(earlier, {
      fingerprint: this.#fingerprint,
      mode: this.mode,
      measuresAsEarlier: commit === null ? null : await checkout.measuresAs(commit),
      driverEnv: this.#machine.driverEnv,
      denoVersion: this.#machine.denoVersion,
    });
    if (why === null) {
      this.#poolWith = earlier;
      this.#notice(
        `pools its measurements with the report it replaces (${earlier.provenance.date})`,
      );
    } else {
      this.#notice(
        `keeps its own measurements: the report it replaces is not pooled with (${why})`,
      );
    }
  }

  /**
   * Marks the measurements done, from when the report pools them; says at what level this run
   * found each backend against the replaced report, and warns of each backend that keeps this
   * run's own times because its two runs disagree (`calibrate/pool.ts`).
   */
  #endMeasuring(): void {
    if (this.#measuringDone) return;
    this.#measuringDone = true;
    if (this.#poolWith === null) return;
    const own = this.planner().measurements;
    const shifts = [...levelShifts(own, this.#poolWith.measurements)]
      .map(([key, ln]) => `${key.replace("|", " ")} ×${Math.exp(ln).toFixed(2)}`);
    if (shifts.length > 0) {
      this.#notice(
        `pools at this run's level: it ran ${shifts.join(", ")} the replaced report's times`,
      );
    }
    for (const d of disagreeingBackends(own, this.#poolWith.measurements)) {
      const apart = `×${d.typicalFactor.toFixed(2)}`;
      this.warn(
        `${d.backend} keeps this run's own measurements: they sit typically ${apart} from the ` +
          `replaced report's (${d.residency}, ${d.cases} cases), more than two runs of one ` +
          `machine state do (×${MAX_TYPICAL_DISAGREEMENT}); the machine changed between them (a ` +
          `driver setting, its load or its clocks), so the report describes it as it is now`,
      );
    }
  }

  /** A line of the progress output that is not a warning. */
  #notice(phase: string): void {
    this.options.onProgress?.({
      kind: "phase",
      phase,
      done: 0,
      total: 0,
      elapsedS: this.elapsedS(),
    });
  }

  /** Seconds since this session began. */
  elapsedS(): number {
    return (performance.now() - this.#started) / 1000;
  }

  /** Records a warning in the report and tells the progress listener. */
  warn(message: string): void {
    this.#warnings.push(message);
    this.options.onProgress?.({ kind: "warning", message, elapsedS: this.elapsedS() });
  }

  /** The plan of this session's options. */
  plan(): CalibrationPlan {
    const o = this.options;
    return planFor({
      quick: this.mode === "quick",
      mode: this.mode,
      ops: o.ops ? o.ops.map((n) => OPS.find((op) => op.name === n) ?? unknownOp(n)) : OPS,
      dtypes: o.dtypes ?? null,
      backends: o.backends ?? BACKENDS,
      ...(o.passes === undefined ? {} : { passes: o.passes }),
    });
  }

  /**
   * The LLM validation's plan with the plan's time for it as its budget, so a slow decode ends
   * the phase after its first round instead of overrunning (108 s against 90 s planned here).
   */
  #llmPlan(): LlmValidationPlan {
    const { llm, time } = this.plan();
    // The decodes sampled between jobs spent part of the reserve already.
    return time.llmS > 0 && llm.budgetMs === undefined
      ? { ...llm, budgetMs: Math.max(1, this.planner().llmLeftS() * 1000) }
      : llm;
  }

  /** The planner of this session (one per session). */
  planner(): Planner {
    const llm = (this.options.llm ?? this.mode !== "quick") && this.#gpu !== null &&
      this.options.validateLlm !== undefined;
    this.#planner ??= new Planner({
      plan: this.plan(),
      resumed: this.options.resume?.measurements ?? [],
      system: this.options.resume?.system ?? null,
      llm,
      clock: () => this.elapsedS(),
      ...(this.options.onProgress ? { onEvent: this.options.onProgress } : {}),
      // A resumed run measures only what is left: the last run's length says nothing of it.
      lastRunS: this.options.resume ? null : lastRunSeconds(this.options.earlier ?? [], {
        fingerprint: this.#fingerprint,
        plan: this.plan(),
        driverEnv: this.#machine.driverEnv,
      }),
    });
    return this.#planner;
  }

  /**
   * The report as the last save wrote it, until a step changes what it holds: the steps after a
   * save (a decode sample, the LLM validation) read it rather than fit every series again.
   */
  #saved: Report | null = null;

  /** The report so far: the last save's when nothing changed since. */
  #reportSoFar(): Report {
    return this.#saved ?? this.#report(false, "interrupted");
  }

  /** Performs one step of the planner. */
  async perform(step: PlanStep): Promise<StepOutcome> {
    if (step.kind !== "save" && step.kind !== "llm-sample") this.#saved = null;
    switch (step.kind) {
      case "system":
        return {
          system: await measureSystem(this.#gpu, {
            // The full figures (15 rounds of each) took 33 s of a 5-minute plan here.
            quick: this.mode !== "thorough",
            signal: this.signal,
          }),
        };
      case "probe":
        await this.#probe();
        return {};
      case "save":
        await this.save(false, "interrupted");
        return {};
      case "llm":
        this.#endMeasuring();
        this.#llm = await this.options.validateLlm!(
          this.#gpu!,
          this.#reportSoFar(),
          this.#llmPlan(),
          (message) => this.warn(message),
        ) ?? this.#llm;
        return {};
      case "llm-sample": {
        const sample = this.options.validateLlm?.sample;
        if (!sample || !this.#gpu || this.signal.aborted) return { sampled: false };
        // The decode runs the variants the final, pooled report will choose.
        const pooled = this.#poolWith ? this.#report(false, "interrupted", true) : null;
        return {
          sampled: await sample(this.#gpu, pooled ?? this.#reportSoFar(), this.#llmPlan()),
        };
      }
      case "measure":
        return await this.#measure(step.requests, step.stopping);
    }
  }

  async #measure(
    requests: Extract<PlanStep, { kind: "measure" }>["requests"],
    stopping: Extract<PlanStep, { kind: "measure" }>["stopping"],
  ): Promise<StepOutcome> {
    const windows = new Map<string, WindowSamples>();
    const results = await measureMany(requests, {
      runners: this.#source,
      stopping,
      signal: this.signal,
      onSamples: (r, samples) => windows.set(measurementKey(r), samples),
    });
    if (results.some((r) => r.state === "failed" && /lost/i.test(r.error)) && this.#gpu?.loss) {
      this.warn(
        `WebGPU device lost (${this.#gpu.loss.message || this.#gpu.loss.reason}); reopened it`,
      );
      this.#runners.delete("webgpu");
      this.#gpu = await this.#gpu.reopen();
    }
    return {
      results,
      windows: results.map((r) => r.state === "ok" ? windows.get(measurementKey(r)) : undefined),
      aborted: this.signal.aborted,
    };
  }

  readonly #source: RunnerSource = (backend) => {
    let r = this.#runners.get(backend);
    if (!r) {
      r = backend === "webgpu"
        ? (this.#gpu
          ? openRunnerOn(this.#gpu)
          : Promise.resolve("No WebGPU adapter on this machine"))
        : (this.options.openCpuRunner ?? openRunner)(backend);
      this.#runners.set(backend, r);
    }
    return r;
  };

  /** Drift probes continue a resumed run's, on its clock: seconds since its first session began. */
  async #probe(): Promise<void> {
    if (this.signal.aborted) return;
    const backends = (this.options.backends ?? BACKENDS).filter((b) => b !== "webgpu" || this.#gpu);
    const atS = this.#priorS + this.elapsedS();
    const p = await measureProbe(backends, this.#source, atS, this.signal);
    if (!this.signal.aborted && Object.keys(p.ms).length > 0) this.#probes.push(p);
  }

  get #priorS(): number {
    return this.options.resume?.provenance.durationS ?? 0;
  }

  #context(): RunContext {
    return {
      commit: this.#commit,
      machine: this.#machine,
      gpu: this.#gpu?.info ?? null,
      unmeasuredAdapter: this.#unmeasuredAdapter,
      fingerprint: this.#fingerprint,
      slug: this.#slug,
      quick: this.mode === "quick",
      mode: this.mode,
      budgetS: this.options.budgetS ?? null,
      command: this.options.command ?? [],
      resumedFrom: this.options.resumePath ?? null,
      warnings: this.#warnings,
      startedAt: new Date(Date.now() - (performance.now() - this.#started)),
      durationS: this.elapsedS() + this.#priorS,
      probes: this.#probes,
      earlierRuns: this.#earlierRuns,
    };
  }

  /**
   * The report as it stands; its measurements pooled with `#poolWith` once the measurements are
   * done, or before when `poolNow` asks (a decode sample picks its variants from that view).
   */
  #report(
    complete: boolean,
    stopReason: Report["provenance"]["stopReason"],
    poolNow = false,
  ): Report {
    const planner = this.planner();
    const own = [...planner.measurements];
    const pool = (this.#measuringDone || poolNow) && this.#poolWith
      ? poolMeasurements(own, this.#poolWith.measurements)
      : null;
    // A resumed run carries the pooling its partial report was saved with.
    const pooledWith = pool !== null && pool.pooled > 0
      ? this.#poolWith!.provenance.date
      : this.options.resume?.provenance.pooledWith;
    const context = this.#context();
    return {
      ...assembleReport(
        pooledWith === undefined ? context : { ...context, pooledWith },
        pool?.measurements ?? own,
        planner.system,
        complete,
        stopReason,
        OPS,
      ),
      ...(this.#llm ? { llm: this.#llm } : {}),
    };
  }

  /** Writes the report as it stands, atomically. */
  async save(complete: boolean, stopReason: Report["provenance"]["stopReason"]): Promise<Report> {
    const report = this.#report(complete, stopReason);
    this.#saved = !complete && stopReason === "interrupted" ? report : null;
    await writeJsonAtomic(this.path, report);
    this.options.onProgress?.({
      kind: "saved",
      path: this.path,
      complete,
      measurements: report.measurements.length,
      elapsedS: this.elapsedS(),
    });
    return report;
  }

  /** Why the loop ended when no error stopped it. */
  stopReason(): Report["provenance"]["stopReason"] {
    if (this.options.signal?.aborted) return "interrupted";
    return this.#budgetOver.signal.aborted ? "budget" : "finished";
  }

  /** Saves the final report and releases the runners and the adapter. */
  async finish(stopReason: Report["provenance"]["stopReason"]): Promise<Report> {
    clearTimeout(this.#budgetTimer);
    if (stopReason === "finished") this.#endMeasuring();
    try {
      return await this.save(stopReason === "finished", stopReason);
    } finally {
      for (const r of this.#runners.values()) {
        const runner = await r;
        if (typeof runner !== "string") await runner.close();
      }
      if (this.#gpu && !this.#gpu.loss) this.#gpu.device.destroy();
    }
  }
}

async function openRunnerOn(gpu: GpuHandle) {
  const { createWebGpuRunner } = await import("./runners/webgpu.ts");
  return createWebGpuRunner(gpu);
}

/** The report's word that a quick run left dtypes out, or null when it left none out. */
function skippedWarning(dtypes: readonly string[]): string | null {
  if (dtypes.length === 0) return null;
  const list = dtypes.join(", ");
  return `${list} not measured: a quick run leaves ${list} out; calibrate without --quick, or ` +
    `name it with --dtypes, to measure it`;
}

function unknownOp(name: string): never {
  throw new RangeError(`Unknown op "${name}": known ops are ${OPS.map((o) => o.name).join(", ")}`);
}
