/**
 * The time plan of a budgeted run, as it unfolds: each (op, dtype) job's deadline, the revisit
 * pass's and the LLM validation's reserve, and the ETA the progress line shows.
 *
 * @module
 */
import type { Report } from "../core/schema.ts";
import type { CalibrationPlan } from "./plan.ts";
import { sameConfiguration } from "./machine.ts";

/** The ETA's pace factor stays within these bounds however early or late the first jobs end. */
const PACE_MIN = 0.25;
const PACE_MAX = 1.5;
/** Share of a budgeted run kept for batches that end past their deadline. */
const OVERRUN_SHARE = 0.05;
/** Share of a job's slice its variant search may take before it stops trying more variants. */
const SEARCH_SHARE = 0.3;

/**
 * Shares a budgeted run's time out as it goes. Each job gets, when it starts, a slice of what is
 * left before the revisit reserve in proportion to its weight (its planned measurements), so time
 * a job does not need rolls on to the next. A run without a budget (`thorough`) has no deadlines
 * and no planned ETA.
 *
 * @example
 * ```ts
 * import { TimeKeeper } from "./timekeeper.ts";
 * import { planFor } from "./plan.ts";
 * import { OPS } from "../kernels/catalog.ts";
 * let now = 0;
 * const plan = planFor({ quick: false, mode: "default", ops: OPS, dtypes: ["f32"], backends: ["wasm"] });
 * const time = new TimeKeeper(plan, () => now, false);
 * time.systemDone();
 * time.startJob(0);
 * console.log(time.gridDeadline() > 0 && time.gridDeadline() < 300); // true
 * ```
 */
export class TimeKeeper {
  readonly #plan: CalibrationPlan;
  readonly #clock: () => number;
  readonly #weights: number[];
  readonly #llmS: number;
  #allot: number[] = [];
  #used: number[] = [];
  #job = -1;
  #jobStart = 0;
  #jobDeadline = Infinity;
  #revisitDeadline = Infinity;
  #stage: "system" | "jobs" | "revisit" | "llm" = "system";
  #llmStart = 0;
  /** Seconds the LLM decode samples between jobs took: they come out of the LLM reserve. */
  #llmSampledS = 0;

  /**
   * @param plan The plan, with its time plan.
   * @param clock Seconds since the run began.
   * @param llm Whether the run ends with the LLM validation (else its reserve goes to the jobs).
   * @param lastRunS How long the same run took on this machine last time ({@linkcode lastRunSeconds}).
   */
  constructor(
    plan: CalibrationPlan,
    clock: () => number,
    llm: boolean,
    lastRunS: number | null = null,
  ) {
    this.#plan = plan;
    this.#clock = clock;
    this.#llmS = llm ? plan.time.llmS : 0;
    this.#weights = plan.jobs.map((j) => Math.max(1, j.weight));
    this.#lastRunS = lastRunS;
  }

  /** How long the same run took on this machine last time, s; null when unknown. */
  readonly #lastRunS: number | null;

  /** Seconds since the run began. */
  now(): number {
    return this.#clock();
  }

  get #totalS(): number | null {
    return this.#plan.time.totalS;
  }

  /** Seconds kept at the end for the second windows of noisy points. */
  get #revisitS(): number {
    const total = this.#totalS;
    if (total === null || this.#plan.passes < 2) return 0;
    return this.#plan.time.revisitShare * Math.max(0, total - this.#plan.time.systemS - this.#llmS);
  }

  /**
   * When the jobs must be done, seconds since the start: before the reserves, and a margin for
   * the batches that end past their deadline (a loaded run's jobs ended 16 s late in all).
   */
  get #jobsEnd(): number {
    const total = this.#totalS;
    return total === null
      ? Infinity
      : total * (1 - OVERRUN_SHARE) - this.llmLeftS() - this.#revisitS;
  }

  /** The system figures are in: the jobs' original slices are set from here. */
  systemDone(): void {
    const pool = Math.max(0, this.#jobsEnd - this.now());
    const sum = this.#weights.reduce((a, b) => a + b, 0);
    this.#allot = this.#weights.map((w) => (pool * w) / sum);
    this.#stage = "jobs";
  }

  /** Job `i` starts: its deadline is its weight's share of what is left. */
  startJob(i: number): void {
    const now = this.now();
    const rest = this.#weights.slice(i).reduce((a, b) => a + b, 0);
    this.#job = i;
    this.#jobStart = now;
    this.#jobDeadline = now + (Math.max(0, this.#jobsEnd - now) * this.#weights[i]!) / rest;
  }

  /** Job `i` is done. */
  endJob(i: number): void {
    this.#used[i] = this.now() - this.#jobStart;
  }

  /** Until when the current job's variant search may try more variants. */
  searchDeadline(): number {
    return this.#jobStart + this.searchSpanS();
  }

  /**
   * How long the current job's variant search may take, s: its share of the job's slice (Infinity
   * without a time plan). A second search, at a shape off the axis, gets as long again.
   */
  searchSpanS(): number {
    return (this.#jobDeadline - this.#jobStart) * SEARCH_SHARE;
  }

  /** Until when the current job's grid, refinement and bends may measure. */
  gridDeadline(): number {
    const share = 1 - this.#plan.time.offAxisShare;
    return this.#jobStart + (this.#jobDeadline - this.#jobStart) * share;
  }

  /** Until when the current job may measure at all (its off-axis shapes last). */
  jobDeadline(): number {
    return this.#jobDeadline;
  }

  /**
   * The revisit pass starts: in the default mode it takes its reserve, even when the jobs ran
   * past their plan (the sure off-axis shapes run whatever the clock says: default runs took
   * 8–9 minutes against a 290 s plan, and a revisit bounded by the plan's end never ran: no point
   * of a 9-minute run on a 2-vCPU AMD EPYC VM got a second window); a quick run revisits only
   * when asked (`--passes`), and then every point, as a thorough one does.
   */
  startRevisit(): number {
    if (this.#stage !== "revisit") {
      this.#stage = "revisit";
      const total = this.#totalS;
      this.#revisitDeadline = this.#plan.mode === "default" && total !== null
        ? this.now() + this.#revisitS
        : Infinity;
    }
    return this.#revisitDeadline;
  }

  /** An LLM decode sample between jobs took `seconds`: the LLM reserve pays for it. */
  llmSampled(seconds: number): void {
    this.#llmSampledS += Math.max(0, seconds);
  }

  /** What is left of the LLM reserve for the validation at the end, s. */
  llmLeftS(): number {
    return Math.max(0, this.#llmS - this.#llmSampledS);
  }

  /** The revisit passes are over: the LLM validation (if any) is next. */
  revisitDone(): void {
    this.#stage = "llm";
    this.#llmStart = this.now();
  }

  /** Whether `deadline` (seconds since the start) has passed. */
  past(deadline: number): boolean {
    return this.now() >= deadline;
  }

  /**
   * Seconds until the run's end, or null without a budget: until the plan's end, where jobs so far
   * ended after some share of their slice (the pace) and the jobs to come are expected to do the
   * same; and, until the jobs are done, at least until the end the same run reached on this
   * machine last time. The sure shapes of a late job run whatever the clock says, so a default run
   * takes longer than its plan (566 s against 290 on a 2-vCPU AMD EPYC VM), and the plan alone
   * showed "ETA 1m32s" for the last five minutes of the jobs.
   */
  etaS(): number | null {
    const planned = this.#plannedEtaS();
    if (planned === null || this.#lastRunS === null) return planned;
    if (this.#stage !== "system" && this.#stage !== "jobs") return planned;
    return Math.max(planned, this.#lastRunS - this.now());
  }

  #plannedEtaS(): number | null {
    if (this.#totalS === null) return null;
    const now = this.now();
    if (this.#stage === "llm") return Math.max(0, this.#llmStart + this.llmLeftS() - now);
    if (this.#stage === "revisit") {
      return Number.isFinite(this.#revisitDeadline)
        ? Math.max(0, this.#revisitDeadline - now) + this.llmLeftS()
        : null;
    }
    if (this.#stage === "system") return Math.max(0, this.#totalS - now);
    const pace = this.#pace();
    const current = this.#job < 0 ? 0 : Math.max(
      0,
      Math.min(this.#jobDeadline, this.#jobStart + pace * this.#allot[this.#job]!) - now,
    );
    const later = this.#allot.slice(this.#job + 1).reduce((a, b) => a + b, 0) * pace;
    // Jobs that overran shrink the later ones' slices: the jobs end by their end all the same.
    const planned = Math.min(current + later, Math.max(0, this.#jobsEnd - now));
    return Math.max(planned, this.#fixedCostFloor()) + this.#totalS * OVERRUN_SHARE +
      this.#revisitS + this.llmLeftS();
  }

  /**
   * In a quick plan, whose slices (~4 s) are of the order of a job's fixed costs (its first
   * sizes, probe and save), the jobs to come take at least what the quickest one so far took: on
   * a loaded machine that, not the plan, decides the end. A default plan's slices are 5–25 s and
   * the jobs that overrun early shrink the later ones' slices, so the plan decides: counting the
   * quickest job's seconds there (a matmul f16 job of 10 s, for elementwise jobs of 5–7 s), the
   * ETA at half of a 251 s run said 350 s.
   */
  #fixedCostFloor(): number {
    if (this.#plan.mode !== "quick") return 0;
    return (this.#allot.length - this.#job - 1) * this.#quickestJobS();
  }

  #quickestJobS(): number {
    const used = this.#used.filter((u) => u !== undefined);
    return used.length === 0 ? 0 : Math.min(...used);
  }

  #pace(): number {
    let used = 0;
    let allotted = 0;
    this.#used.forEach((u, i) => {
      used += u;
      allotted += this.#allot[i] ?? 0;
    });
    if (allotted <= 0) return 1;
    return Math.min(PACE_MAX, Math.max(PACE_MIN, used / allotted));
  }
}

/**
 * How long the same run took on this machine last time, s, from the reports it replaces: the
 * latest complete, finished, not resumed report of the same machine (fingerprint), configuration
 * (driver settings: lavapipe on one thread runs a calibration's WebGPU half ×1.5 slower) and mode
 * that measured the same (op, dtype) jobs. Null when there is none (a first calibration: the ETA
 * is the plan's).
 *
 * @param reports Earlier reports (the one the run replaces, `--earlier-runs-from`).
 * @param run This run's machine fingerprint, mode and plan, and its driver settings (none when
 * absent).
 * @returns Its `provenance.durationS`, or null.
 * @example
 * ```ts
 * import { lastRunSeconds } from "./timekeeper.ts";
 * import { planFor } from "./plan.ts";
 * import { getOp } from "../kernels/catalog.ts";
 * const plan = planFor({ quick: true, ops: [getOp("add")], dtypes: ["f32"], backends: ["js"] });
 * console.log(lastRunSeconds([], { fingerprint: "1ec2aa7f915f3025", plan })); // null
 * ```
 */
export function lastRunSeconds(
  reports: readonly Report[],
  run: {
    readonly fingerprint: string;
    readonly plan: CalibrationPlan;
    readonly driverEnv?: Readonly<Record<string, string>> | null;
  },
): number | null {
  const jobs = jobsKey(run.plan.jobs.map((j) => `${j.op.name} ${j.dtype}`));
  const same = reports.filter((r) => {
    const p = r.provenance;
    return r.fingerprint === run.fingerprint && sameConfiguration(p.driverEnv, run.driverEnv) &&
      p.mode === run.plan.mode && p.complete &&
      p.stopReason === "finished" && p.resumedFrom === null &&
      jobsKey(r.measurements.map((m) => `${m.op} ${m.dtype}`)) === jobs;
  });
  const latest =
    same.sort((a, b) => Date.parse(b.provenance.date) - Date.parse(a.provenance.date))[0];
  return latest === undefined ? null : latest.provenance.durationS;
}

/** The distinct (op, dtype) names of a run, in one string. */
function jobsKey(names: readonly string[]): string {
  return [...new Set(names)].sort().join(",");
}
