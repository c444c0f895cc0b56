/**
 * `calibrate()`: sweeps every op over sizes, dtypes, backends and variants on this machine, fits
 * cost models and crossovers, and writes the report — atomically after every op, so an
 * interrupted or over-budget run keeps what it measured and `--resume` continues it.
 *
 * @module
 */
import { OPS } from "../kernels/catalog.ts";
import {
  type Backend,
  BACKENDS,
  type Dtype,
  implOf,
  type OpSpec,
  type Residency,
  type Shape,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { Measurement, Report } from "../reports/schema.ts";
import { writeJsonAtomic } from "../reports/atomic.ts";
import { nextRefinementSizes } from "./analyze.ts";
import { openGpu, peekAdapter } from "./device.ts";
import { formatMs, formatPercent } from "./_format.ts";
import { describeMachine, machineFingerprint, machineSlug } from "./machine.ts";
import {
  measureMany,
  pooledResult,
  remeasureUnsure,
  requestOf,
  type RunnerSource,
  type WindowSamples,
  windowsDisagree,
} from "./measure.ts";
import { bendPoints } from "./bends.ts";
import { type CalibrationPlan, planFor } from "./plan.ts";
import type { ProgressEvent } from "./progress.ts";
import type { MeasureRequest, MeasureResult } from "./result.ts";
import type { Runner } from "./runner.ts";
import { openRunner } from "./runners/mod.ts";
import { measureSystem } from "./system.ts";
import { assembleReport, NOISY_WARNING, type RunContext } from "./assemble.ts";
import { measureProbe, type StabilityProbe } from "./stability.ts";

/**
 * Options of {@linkcode calibrate}.
 *
 * @example
 * ```ts
 * import type { CalibrateOptions } from "./calibrate.ts";
 * const o: CalibrateOptions = { quick: true, ops: ["matmul"], backends: ["wasm", "webgpu"] };
 * ```
 */
export interface CalibrateOptions {
  /** A short run (~1 min): fewer sizes, smaller budgets per measurement. */
  readonly quick?: boolean;
  /** Ops to calibrate (default: all in the catalog). */
  readonly ops?: readonly string[];
  /** Dtypes to calibrate (default: all each op supports). */
  readonly dtypes?: readonly Dtype[];
  /** Backends to calibrate (default: all). */
  readonly backends?: readonly Backend[];
  /** Wall-clock budget in seconds; when spent the report is written with `complete: false`. */
  readonly budgetS?: number;
  /** Report path; the default is `reports/<machine-slug>.json`. */
  readonly out?: string;
  /** A previous report of this machine to continue: finished measurements are not redone. */
  readonly resume?: Report;
  /** Where `resume` came from, for the report's provenance. */
  readonly resumePath?: string;
  /** Aborting it (Ctrl-C) stops measuring and writes a partial report. */
  readonly signal?: AbortSignal;
  /** Told of every step. */
  readonly onProgress?: (event: ProgressEvent) => void;
  /** The command line, for the report's provenance. */
  readonly command?: readonly string[];
  /**
   * Validate the LLM tokens/sec estimate against a synthetic WebGPU decode after the ops
   * (default: on for a full run with an adapter, off for a quick one).
   */
  readonly llm?: boolean;
  /**
   * Passes over the sweep: after the first, every point of a fitted series (three sizes or more)
   * is measured again in a window minutes later and the windows are pooled. Default: the plan's
   * (2 in a full run, 1 in a quick one).
   */
  readonly passes?: number;
  /**
   * Opens a CPU backend's runner instead of {@linkcode openRunner} (tests wrap a real runner
   * to inject stalls).
   */
  readonly openCpuRunner?: (backend: Backend) => Promise<Runner | string>;
}

/**
 * What {@linkcode calibrate} returns.
 *
 * @example
 * ```ts
 * import type { CalibrationResult } from "./calibrate.ts";
 * function where(r: CalibrationResult) { return r.path; }
 * ```
 */
export interface CalibrationResult {
  /** The report as written. */
  readonly report: Report;
  /** Where it was written. */
  readonly path: string;
}

function measurementKey(m: {
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

/** The first `keep` of the ranked variants that declare they can run this shape. */
function runnable(
  op: OpSpec,
  backend: Backend,
  shape: Shape,
  dtype: Dtype,
  ranked: readonly Variant[] | undefined,
  keep: number,
): Variant[] {
  const impl = implOf(op, backend);
  return (ranked ?? [])
    .filter((v) => (impl?.unsupported?.(shape, dtype, v) ?? null) === null)
    .slice(0, keep);
}

/** Series with at least this many sizes are measured again in later passes. */
const REVISIT_MIN_SIZES = 3;

/** Variants that pass the screening at the smaller search anchor. */
const SCREENED_VARIANTS = 4;

function residenciesFor(backend: Backend): Residency[] {
  return backend === "webgpu" ? ["end-to-end", "device-resident"] : ["end-to-end"];
}

/**
 * Calibrates this machine and writes the report.
 *
 * @param options What to calibrate, budget, output, resume, progress, abort signal.
 * @returns The report and where it was written.
 * @throws {RangeError} for an unknown op name.
 * @example
 * ```ts ignore
 * import { calibrate } from "./calibrate.ts";
 * const { report, path } = await calibrate({ quick: true, ops: ["add"] });
 * console.log(path, report.crossovers.length);
 * ```
 */
export async function calibrate(options: CalibrateOptions = {}): Promise<CalibrationResult> {
  const started = performance.now();
  const elapsedS = () => (performance.now() - started) / 1000;
  const emit = options.onProgress ?? (() => {});
  // The noisy-machine warning is the report's own summary: recomputed, not carried over.
  const warnings: string[] = (options.resume?.provenance.warnings ?? [])
    .filter((w) => !NOISY_WARNING.test(w));
  const warn = (message: string) => {
    warnings.push(message);
    emit({ kind: "warning", message, elapsedS: elapsedS() });
  };

  const machine = await describeMachine();
  const gpuLeftOut = options.backends !== undefined && !options.backends.includes("webgpu");
  const gpu = gpuLeftOut
    ? null
    : await openGpu({ onUnavailable: (why) => warn(`${why}: calibrating the CPU backends only`) });
  // Left out by choice, the adapter is still the machine's: its fingerprint matches a full run's.
  const adapter = gpu?.info ?? (gpuLeftOut ? await peekAdapter() : null);
  const fingerprint = await machineFingerprint(machine, adapter);
  const slug = machineSlug(machine, adapter, fingerprint);
  const path = options.out ?? `reports/${slug}.json`;
  if (options.resume && options.resume.fingerprint !== fingerprint) {
    throw new RangeError(
      `Cannot resume "${
        options.resumePath ?? "report"
      }": it was measured on another machine or adapter (fingerprint ${options.resume.fingerprint}, this one is ${fingerprint})`,
    );
  }

  const budgetMs = options.budgetS !== undefined ? options.budgetS * 1000 : Infinity;
  const budgetOver = new AbortController();
  const budgetTimer = Number.isFinite(budgetMs)
    ? setTimeout(() => budgetOver.abort(), budgetMs)
    : undefined;
  const signal = options.signal
    ? AbortSignal.any([options.signal, budgetOver.signal])
    : budgetOver.signal;

  const runners = new Map<Backend, Promise<Runner | string>>();
  let currentGpu = gpu;
  const source: RunnerSource = (backend) => {
    let r = runners.get(backend);
    if (!r) {
      r = backend === "webgpu"
        ? (currentGpu
          ? openRunnerOn(currentGpu)
          : Promise.resolve("No WebGPU adapter on this machine"))
        : (options.openCpuRunner ?? openRunner)(backend);
      runners.set(backend, r);
    }
    return r;
  };

  const measurements: Measurement[] = [...(options.resume?.measurements ?? [])];
  const done = new Map<string, Measurement>(measurements.map((m) => [measurementKey(m), m]));
  /** The samples of each window of this session's measurements, for pooling in later passes. */
  const windowsOf = new Map<string, WindowSamples[]>();
  const recordWindow = (r: MeasureResult, samples: WindowSamples) =>
    windowsOf.set(measurementKey(r), [samples]);
  let seq = measurements.reduce((s, m) => Math.max(s, m.seq + 1), 0);
  /** Measurements from this seq on were taken by this session (a resumed one's are kept as they are). */
  const sessionSeq = seq;
  const plan: CalibrationPlan = planFor({
    quick: options.quick ?? false,
    ops: options.ops ? options.ops.map((n) => OPS.find((o) => o.name === n) ?? unknownOp(n)) : OPS,
    dtypes: options.dtypes ?? null,
    backends: options.backends ?? BACKENDS,
    ...(options.passes === undefined ? {} : { passes: options.passes }),
  });
  let progressDone = 0;
  let progressTotal = plan.estimatedCases;

  // Drift probes continue a resumed run's, on its clock: seconds since its first session began.
  const probes: StabilityProbe[] = [...(options.resume?.stability?.probes ?? [])];
  const priorS = options.resume?.provenance.durationS ?? 0;
  const probeBackends = (options.backends ?? BACKENDS).filter((b) => b !== "webgpu" || gpu);
  const probe = async () => {
    if (signal.aborted) return;
    const p = await measureProbe(probeBackends, source, priorS + elapsedS(), signal);
    if (!signal.aborted && Object.keys(p.ms).length > 0) probes.push(p);
  };

  const commit = await gitCommit();
  const context = (): RunContext => ({
    commit,
    machine,
    gpu: currentGpu?.info ?? null,
    unmeasuredAdapter: gpuLeftOut ? adapter : null,
    fingerprint,
    slug,
    quick: options.quick ?? false,
    budgetS: options.budgetS ?? null,
    command: options.command ?? [],
    resumedFrom: options.resumePath ?? null,
    warnings,
    startedAt: new Date(Date.now() - (performance.now() - started)),
    durationS: elapsedS() + priorS,
    probes,
  });
  let system = options.resume?.system ?? null;
  let llm: Report["llm"] = options.resume?.llm ?? null;
  const save = async (complete: boolean, stopReason: Report["provenance"]["stopReason"]) => {
    const report = {
      ...assembleReport(context(), measurements, system, complete, stopReason, OPS),
      ...(llm ? { llm } : {}),
    };
    await writeJsonAtomic(path, report);
    emit({
      kind: "saved",
      path,
      complete,
      measurements: measurements.length,
      elapsedS: elapsedS(),
    });
    return report;
  };

  /** Measures what is not measured yet, interleaved; records and returns every result. */
  const run = async (
    requests: MeasureRequest[],
    op: OpSpec,
    stopping: CalibrationPlan["stopping"],
  ) => {
    const fresh: MeasureRequest[] = [];
    const results = new Map<MeasureRequest, MeasureResult | Measurement>();
    for (const req of requests) {
      const key = measurementKey({
        op: req.op,
        dtype: req.dtype,
        backend: req.backend,
        variant: typeof req.variant === "string" ? req.variant : variantId(req.variant ?? {}),
        residency: req.residency ?? "end-to-end",
        shape: req.shape,
      });
      const prior = done.get(key);
      if (prior) results.set(req, prior);
      else fresh.push(req);
    }
    if (fresh.length > 0 && !signal.aborted) {
      const measured = await measureMany(fresh, {
        runners: source,
        stopping,
        signal,
        onSamples: recordWindow,
      });
      measured.forEach((result, i) => {
        const req = fresh[i]!;
        if (signal.aborted && result.state === "failed" && /Aborted/.test(result.error)) return;
        const m = { ...result, size: op.axis.size(req.shape), seq: seq++ } as Measurement;
        measurements.push(m);
        done.set(measurementKey(m), m);
        results.set(req, m);
        emitMeasured(m);
        if (m.state === "failed" && /lost/i.test(m.error) && currentGpu?.loss) {
          warn(
            `WebGPU device lost (${
              currentGpu.loss.message || currentGpu.loss.reason
            }); reopened it`,
          );
          void reopenGpu();
        }
      });
    }
    return requests.map((r) => results.get(r));
  };

  const emitMeasured = (m: Measurement, note = "") => {
    progressDone++;
    emit({
      kind: "measured",
      label: `${m.op} ${m.dtype} ${m.backend}${
        m.backend === "webgpu" ? ` ${m.residency}` : ""
      } ${m.size}${note}`,
      state: m.state,
      detail: m.state === "ok"
        ? `${formatMs(m.wall.median)} ±${formatPercent(m.wall.relCi)}`
        : m.state === "failed"
        ? `FAILED ${m.error}`
        : `unsupported: ${m.reason}`,
      done: progressDone,
      total: Math.max(progressTotal, progressDone),
      elapsedS: elapsedS(),
    });
  };

  /**
   * Another pass over the sweep: every point of a fitted series this session measured (three
   * sizes or more: what fits, crossovers and predictions rest on) is measured again, size by size
   * with its backends interleaved as in the grid, and pooled with its earlier windows. Each point
   * then stands for the machine over the whole run, not for the minute its op was measured in.
   */
  const revisit = async (pass: number, final: boolean) => {
    const seriesOf = (m: Measurement) =>
      `${m.op}|${m.dtype}|${m.backend}|${m.variant}|${m.residency}`;
    const mine = measurements.filter((m) =>
      m.state === "ok" && m.seq >= sessionSeq && windowsOf.has(measurementKey(m))
    );
    const sizesOf = new Map<string, Set<number>>();
    for (const m of mine) {
      sizesOf.set(seriesOf(m), (sizesOf.get(seriesOf(m)) ?? new Set()).add(m.size));
    }
    const todo = mine.filter((m) => sizesOf.get(seriesOf(m))!.size >= REVISIT_MIN_SIZES);
    progressTotal += todo.length;
    for (const job of plan.jobs) {
      const group = todo.filter((m) => m.op === job.op.name && m.dtype === job.dtype);
      if (group.length === 0 || signal.aborted) continue;
      emit({
        kind: "phase",
        phase: `${job.op.name} ${job.dtype}: pass ${pass} of ${plan.passes}`,
        done: progressDone,
        total: progressTotal,
        elapsedS: elapsedS(),
      });
      const sizes = [...new Set(group.map((m) => m.size))].sort((a, b) => a - b);
      for (const size of sizes) {
        if (signal.aborted) break;
        await addWindow(group.filter((m) => m.size === size));
      }
      // After the last pass, a point whose windows disagree (a stall in one, or the adapter on
      // one core) gets one more: with two, the pooled median would sit halfway between them.
      if (final) {
        const split = group.map((m) => done.get(measurementKey(m))!).filter((m) =>
          windowsDisagree(windowsOf.get(measurementKey(m)) ?? [])
        );
        progressTotal += split.length;
        for (const size of sizes) {
          if (signal.aborted) break;
          const atSize = split.filter((m) => m.size === size);
          if (atSize.length > 0) await addWindow(atSize);
        }
      }
      await save(false, "interrupted");
    }
  };

  /** Measures `atSize` (one size, its backends interleaved) once more and pools each point. */
  const addWindow = async (atSize: readonly Measurement[]) => {
    const added = new Map<string, WindowSamples>();
    await measureMany(
      atSize.map(requestOf),
      {
        runners: source,
        stopping: plan.stopping,
        signal,
        onSamples: (r, samples) => added.set(measurementKey(r), samples),
      },
    );
    for (const m of atSize) {
      const key = measurementKey(m);
      const window = added.get(key);
      if (!window || m.state !== "ok") continue;
      const windows = [...windowsOf.get(key)!, window];
      windowsOf.set(key, windows);
      const pooled = { ...pooledResult(m, windows), size: m.size, seq: m.seq } as Measurement;
      measurements[measurements.indexOf(m)] = pooled;
      done.set(key, pooled);
      emitMeasured(pooled, ` (${windows.length} windows)`);
    }
  };

  const reopenGpu = async () => {
    const old = currentGpu;
    runners.delete("webgpu");
    currentGpu = old ? await old.reopen() : null;
  };

  let stopReason: Report["provenance"]["stopReason"] = "finished";
  let finalReport: Report;
  try {
    if (system === null && !signal.aborted) {
      emit({
        kind: "phase",
        phase: "system figures",
        done: progressDone,
        total: progressTotal,
        elapsedS: elapsedS(),
      });
      system = await measureSystem(currentGpu, { quick: options.quick ?? false, signal });
    }
    await probe();
    for (const job of plan.jobs) {
      if (signal.aborted) break;
      const { op, dtype } = job;
      emit({
        kind: "phase",
        phase: `${op.name} ${dtype}`,
        done: progressDone,
        total: progressTotal,
        elapsedS: elapsedS(),
      });
      const backends = job.backends.filter((b) => implOf(op, b) !== undefined);

      // Variant search at the anchor sizes, then only the best few variants everywhere else.
      const chosen = new Map<Backend, Variant[]>();
      for (const backend of backends) {
        const variants = implOf(op, backend)!.variants;
        if (variants.length <= plan.keepVariants || !plan.searchVariants) {
          chosen.set(backend, [...variants]);
          continue;
        }
        // Screen every variant at the smaller anchor; only the best few go on to the larger.
        let candidates: Variant[] = [...variants];
        for (const [i, size] of job.anchors.entries()) {
          const shape = op.axis.shape(size);
          const residency = residenciesFor(backend).at(-1)!;
          const results = await run(
            candidates.map((v) => ({ op: op.name, shape, dtype, backend, variant: v, residency })),
            op,
            plan.searchStopping,
          );
          const ms = (j: number) => {
            const r = results[j];
            return r?.state === "ok" ? r.wall.median : Infinity;
          };
          const order = candidates.map((_, j) => j).filter((j) => ms(j) < Infinity)
            .sort((a, b) => ms(a) - ms(b));
          if (order.length === 0) break;
          const keep = i < job.anchors.length - 1 ? SCREENED_VARIANTS : plan.keepVariants;
          candidates = order.slice(0, keep).map((j) => candidates[j]!);
        }
        // Ranked winners first, then the rest in declared order: a size the winner cannot run
        // (a vec4 kernel at n = 11) falls to the best variant that can.
        chosen.set(backend, [...candidates, ...variants.filter((v) => !candidates.includes(v))]);
      }

      // The grid, growing until the fastest backend's rate has converged or runs get too long.
      const stopped = new Set<Backend>();
      // Per backend and residency: the fastest time seen (≈ its fixed overhead) and the last one.
      const seen = new Map<string, { size: number; ms: number; fixedMs: number }>();
      const work = (s: number) => {
        const shape = op.axis.shape(s);
        return Math.max(op.flops(shape), op.bytes(shape, dtype));
      };
      // Predicts the next run as fixed overhead + the rest scaled with work, so a WebGPU case
      // dominated by its ~11 ms sync is not cut off as if all of it grew with size.
      const tooLong = (backend: Backend, residency: Residency, size: number) => {
        const last = seen.get(`${backend}|${residency}`);
        if (!last) return false;
        const variable = Math.max(last.ms - last.fixedMs, 0);
        return last.fixedMs + variable * (work(size) / work(last.size)) > plan.maxCaseMs;
      };
      // A backend is dropped on one measurement only after a repeat: a single stall (a wasm-mt
      // worker woken late, lavapipe down to one core) once cut wasm-mt off below its crossover.
      const confirmed = new Set<string>();
      const confirmSlowness = async (size: number) => {
        const repeats: MeasureRequest[] = [];
        for (const backend of backends) {
          if (stopped.has(backend)) continue;
          for (const residency of residenciesFor(backend)) {
            const key = `${backend}|${residency}`;
            const last = seen.get(key);
            if (!last || confirmed.has(key) || !tooLong(backend, residency, size)) continue;
            confirmed.add(key);
            const lastShape = op.axis.shape(last.size);
            for (
              const v of runnable(op, backend, lastShape, dtype, chosen.get(backend), 1)
            ) {
              repeats.push({
                op: op.name,
                shape: lastShape,
                dtype,
                backend,
                variant: v,
                residency,
              });
            }
          }
        }
        if (repeats.length === 0 || signal.aborted) return;
        // Not recorded: the repeat decides what to measure next; the report keeps what was measured.
        const again = await measureMany(repeats, {
          runners: source,
          stopping: plan.stopping,
          signal,
        });
        again.forEach((r, i) => {
          if (r.state !== "ok") return;
          const key = `${repeats[i]!.backend}|${r.residency}`;
          const prev = seen.get(key);
          if (prev && r.wall.median < prev.ms) seen.set(key, { ...prev, ms: r.wall.median });
        });
      };
      for (const size of job.sizes) {
        if (signal.aborted) break;
        await confirmSlowness(size);
        const shape = op.axis.shape(size);
        const reqs: MeasureRequest[] = [];
        for (const backend of backends) {
          if (stopped.has(backend)) continue;
          for (const residency of residenciesFor(backend)) {
            if (tooLong(backend, residency, size)) continue;
            for (
              const v of runnable(op, backend, shape, dtype, chosen.get(backend), plan.keepVariants)
            ) {
              reqs.push({ op: op.name, shape, dtype, backend, variant: v, residency });
            }
          }
        }
        if (reqs.length === 0) break;
        const results = await run(reqs, op, plan.stopping);
        results.forEach((r, i) => {
          const req = reqs[i]!;
          if (r?.state === "unsupported" && req.backend !== "webgpu") stopped.add(req.backend);
          if (r?.state === "ok") {
            const key = `${req.backend}|${r.residency}`;
            const prev = seen.get(key);
            const ms = r.wall.median;
            if (!prev || prev.size !== size) {
              seen.set(key, { size, ms, fixedMs: Math.min(prev?.fixedMs ?? ms, ms) });
            } else if (ms < prev.ms) {
              seen.set(key, { ...prev, ms, fixedMs: Math.min(prev.fixedMs, ms) });
            }
          }
        });
        if (job.converged(measurements, size)) break;
      }

      // A CPU case measured through a stall (one sum ran 3× slow for a whole 0.3 s window, a
      // wasm-mt gemv ±30 %) is repeated once at the end of the grid and of the refinement, so a
      // threshold is not decided by one stall. A resumed run's measurements stay as they are.
      const retried = new Set<string>();
      const retryUnsure = async () => {
        const unsure = measurements.filter((m) =>
          m.seq >= sessionSeq && m.op === op.name && m.dtype === dtype &&
          !retried.has(measurementKey(m))
        );
        for (const m of unsure) retried.add(measurementKey(m));
        const repeatWindows = new Map<string, WindowSamples>();
        const repeats = await remeasureUnsure(unsure, {
          runners: source,
          stopping: plan.stopping,
          signal,
          onSamples: (r, samples) => repeatWindows.set(measurementKey(r), samples),
        });
        const kept = repeats.flatMap((r, i) => r ? [[unsure[i]!, r] as const] : []);
        if (kept.length === 0) return;
        emit({
          kind: "phase",
          phase: `${op.name} ${dtype}: ${kept.length} unsure CPU measurement${
            kept.length === 1 ? "" : "s"
          } repeated surer`,
          done: progressDone,
          total: progressTotal,
          elapsedS: elapsedS(),
        });
        for (const [old, r] of kept) {
          const m = { ...r, size: old.size, seq: seq++ } as Measurement;
          measurements[measurements.indexOf(old)] = m;
          done.set(measurementKey(m), m);
          const window = repeatWindows.get(measurementKey(m));
          if (window) windowsOf.set(measurementKey(m), [window]);
        }
      };
      await retryUnsure();

      // Refinement: bisect where the fastest backend changes, until bracketed within ±10 %.
      for (let round = 0; round < plan.refineRounds && !signal.aborted; round++) {
        const sizes = nextRefinementSizes(measurements, op, dtype);
        if (sizes.length === 0) break;
        progressTotal += sizes.length * backends.length;
        const reqs: MeasureRequest[] = [];
        for (const { size, backends: pair, residency } of sizes) {
          for (const backend of pair) {
            if (!backends.includes(backend)) continue;
            for (
              const v of runnable(op, backend, op.axis.shape(size), dtype, chosen.get(backend), 1)
                .slice(0, 1)
            ) {
              reqs.push({
                op: op.name,
                shape: op.axis.shape(size),
                dtype,
                backend,
                variant: v,
                residency: backend === "webgpu" ? residency : "end-to-end",
              });
            }
          }
        }
        await run(reqs, op, plan.stopping);
      }
      // Where a series bends between grid points, the midpoints on either side of the bend.
      const bends = bendPoints(measurements, op, dtype, { max: plan.bendPoints })
        .filter((p) => {
          const variant = implOf(op, p.backend)?.variants.find((v) => variantId(v) === p.variant);
          return backends.includes(p.backend) && variant !== undefined &&
            runnable(op, p.backend, op.axis.shape(p.size), dtype, [variant], 1).length === 1;
        });
      if (bends.length > 0 && !signal.aborted) {
        progressTotal += bends.length;
        await run(
          bends.map((p) => ({
            op: op.name,
            shape: op.axis.shape(p.size),
            dtype,
            backend: p.backend,
            variant: p.variant,
            residency: p.residency,
          })),
          op,
          plan.stopping,
        );
      }
      await retryUnsure();
      await probe();
      await save(false, "interrupted");
    }
    for (let pass = 2; pass <= plan.passes && !signal.aborted; pass++) {
      await revisit(pass, pass === plan.passes);
    }
    if ((options.llm ?? !options.quick) && currentGpu && !signal.aborted) {
      emit({
        kind: "phase",
        phase: "llm decode",
        done: progressDone,
        total: progressTotal,
        elapsedS: elapsedS(),
      });
      llm = await validateLlm(
        currentGpu,
        assembleReport(context(), measurements, system, false, "interrupted", OPS),
        warn,
      ) ?? llm;
    }
    if (options.signal?.aborted) stopReason = "interrupted";
    else if (budgetOver.signal.aborted) stopReason = "budget";
  } catch (e) {
    stopReason = "error";
    warn(`Calibration stopped by an error: ${e instanceof Error ? e.message : String(e)}`);
    throw e;
  } finally {
    clearTimeout(budgetTimer);
    finalReport = await save(stopReason === "finished", stopReason);
    for (const r of runners.values()) {
      const runner = await r;
      if (typeof runner !== "string") await runner.close();
    }
    if (currentGpu && !currentGpu.loss) currentGpu.device.destroy();
  }
  return { report: finalReport, path };
}

/** The LLM decode validation, or null with a warning when it cannot run (figures missing, decode failed). */
async function validateLlm(
  gpu: NonNullable<Awaited<ReturnType<typeof openGpu>>>,
  report: Report,
  warn: (message: string) => void,
): Promise<Report["llm"]> {
  const { validateDecode } = await import("../models/llm/validate.ts");
  const { MissingCalibrationError } = await import("../models/llm/rates.ts");
  try {
    return { validations: await validateDecode(gpu, report) };
  } catch (e) {
    // The op measurements stand on their own: a decode that cannot run must not discard them.
    warn(
      e instanceof MissingCalibrationError
        ? `LLM decode validation skipped: ${e.message}`
        : `LLM decode validation failed: ${e instanceof Error ? e.message : String(e)}`,
    );
    return null;
  }
}

async function openRunnerOn(gpu: NonNullable<Awaited<ReturnType<typeof openGpu>>>) {
  const { createWebGpuRunner } = await import("./runners/webgpu.ts");
  return createWebGpuRunner(gpu);
}

/** The gpucal checkout's commit, or null (imported from a URL, no git, or not permitted). */
async function gitCommit(): Promise<string | null> {
  const dir = new URL("..", import.meta.url);
  if (dir.protocol !== "file:") return null;
  try {
    const out = await new Deno.Command("git", {
      args: ["rev-parse", "HEAD"],
      cwd: dir,
      stdout: "piped",
      stderr: "null",
    }).output();
    const sha = new TextDecoder().decode(out.stdout).trim();
    return out.success && /^[0-9a-f]{7,64}$/.test(sha) ? sha : null;
  } catch {
    return null;
  }
}

function unknownOp(name: string): never {
  throw new RangeError(`Unknown op "${name}": known ops are ${OPS.map((o) => o.name).join(", ")}`);
}
