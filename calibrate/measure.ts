/**
 * `measure()`: verify a kernel against its reference, then time it until the median is known to
 * ±2 % (or a budget is spent). `measureMany()` does the same for several cases with their samples
 * interleaved, so that drift on a noisy machine hits every backend alike.
 *
 * @module
 */
import { getOp } from "../kernels/catalog.ts";
import { seededRng } from "../kernels/_random.ts";
import {
  type Backend,
  CPU_BACKENDS,
  implOf,
  type OpInputs,
  type OpSpec,
  type Residency,
  type Variant,
  variantId,
} from "../kernels/types.ts";
import type { MeasureIdentity, MeasureOk, MeasureRequest, MeasureResult } from "../core/result.ts";
import { type Prepared, type Runner, UnsupportedError } from "./runner.ts";
import {
  DEFAULT_STOPPING,
  median,
  poolWindows,
  type StoppingRule,
  stopReason,
  summarize,
} from "../core/stats.ts";
import { verifySampledRows } from "./sampled.ts";
import { verifyOutput } from "./verify.ts";
import { COLD_SPAN_BYTES, STREAMED_FROM_BYTES } from "../core/operand_rotation.ts";

/**
 * Where `measure()` gets a backend's runner: a runner, or the reason the backend is unavailable
 * here (e.g. "No WebGPU adapter").
 */
export type RunnerSource = (backend: Backend) => Promise<Runner | string>;

/**
 * Options of {@linkcode measure} and {@linkcode measureMany}.
 *
 * @example
 * ```ts
 * import type { MeasureOptions } from "./measure.ts";
 * const o: MeasureOptions = { seed: 7, stopping: { budgetMs: 500 } };
 * ```
 */
export interface MeasureOptions {
  /** Runners to use; by default each backend's runner is opened for the call and closed after. */
  readonly runners?: RunnerSource;
  /**
   * Seed of the random operands: each op, shape and dtype of the call derives its own from it,
   * and its cases (backends, residencies) share them and their reference.
   */
  readonly seed?: number;
  /** Overrides of the stopping rule (per case). */
  readonly stopping?: Partial<StoppingRule>;
  /** Smallest batch duration worth timing, ms: short kernels are repeated to reach it. */
  readonly minBatchMs?: number;
  /** Aborts sampling; cases measured so far are returned with what they have. */
  readonly signal?: AbortSignal;
  /**
   * Told the raw samples behind every `ok` result, so that a later window of the same case can be
   * pooled with them ({@linkcode pooledResult}).
   */
  readonly onSamples?: (result: MeasureOk, samples: WindowSamples) => void;
}

/**
 * The samples of one measurement window: wall-clock ms per run, and GPU ms per run when every
 * sample had timestamps (else empty).
 *
 * @example
 * ```ts
 * import type { WindowSamples } from "./measure.ts";
 * const w: WindowSamples = { wall: [1.02, 0.98, 1.0], gpu: [] };
 * ```
 */
export interface WindowSamples {
  /** Wall-clock ms per run. */
  readonly wall: readonly number[];
  /** GPU ms per run, or empty when a sample lacked timestamps. */
  readonly gpu: readonly number[];
}

/** Device-resident batches aim at this long: comparable with the ~11 ms sync they subtract. */
const RESIDENT_BATCH_MS = 50;
/**
 * A device-resident sample whose wall time per dispatch is under this share of the GPU's own time
 * per dispatch is impossible (back-to-back dispatches cannot finish faster than the device runs
 * them) and is dropped: the two batches' syncs, each waiting for a ~10 ms poll, were taken apart
 * by more than the work between them. Seen on lavapipe: softmax 32×1625 at 0.029 ms per dispatch
 * by the wall clock and 0.394 ms by the timestamps of the same batches.
 */
const IMPOSSIBLE_SHARE = 0.5;
/** Most dispatches recorded into one device-resident batch. */
const MAX_RESIDENT_REPS = 256;
/**
 * A device-resident sample's long batch is this many batch lengths (R), and its short batch one
 * dispatch: the sync that the difference takes out costs the same either way, and each batch's
 * dispatches add their own noise to the difference. Batches of R and 2R put 3R dispatches of noise
 * and two syncs' jitter into a difference over R; one dispatch and 3R put the same into a
 * difference over 3R − 1: a third of the spread for the same time. On lavapipe, `deno task noise`
 * (webgpu, 4 windows) gave device-resident σ ln 0.204 and 59 % of times within ±15 % with R and
 * 2R, and σ ln 0.069 and 88 % with this; the wall time per dispatch now matches the GPU
 * timestamps' within ~1 % where R and 2R were up to 20 % off them.
 */
const RESIDENT_SAMPLE_BATCHES = 3;
/** CPU and end-to-end batches aim at this long by default, well above timer resolution. */
const DEFAULT_MIN_BATCH_MS = 2;
/** Most untimed batches that size a CPU or end-to-end case's batch (see `warmUp`). */
const MAX_SIZING_BATCHES = 4;
/** Longest cold start seen in a first run (wasm-mt waking its workers on a busy machine), ms. */
const COLD_START_MS = 10;

let seedCounter = 0x9e3779b9;

function resolveVariant(
  op: OpSpec,
  backend: Backend,
  requested: MeasureRequest["variant"],
): Variant | string {
  const impl = implOf(op, backend);
  if (!impl) return `${op.name} has no ${backend} implementation`;
  const variants = impl.variants;
  if (requested === undefined) return variants[0] ?? {};
  const id = typeof requested === "string" ? requested : variantId(requested);
  const found = variants.find((v) => variantId(v) === id);
  if (!found) {
    throw new RangeError(
      `Unknown variant "${id}" of ${op.name} on ${backend}: known variants are ${
        variants.map(variantId).join("; ")
      }`,
    );
  }
  return found;
}

interface LiveCase {
  identity: MeasureIdentity;
  prepared: Prepared;
  reps: number;
  /** The latest time of one run, ms: the warm-up's, then each sample's (CPU and end-to-end). */
  runMs: number;
  wall: number[];
  gpu: number[];
  elapsedMs: number;
  /** Samples taken, dropped ones included. */
  attempts: number;
  done: boolean;
  compileMs: number;
  maxRelError: number;
  flops: number;
  bytes: number;
}

/**
 * Runners opened on first use, one per backend, and closed together: what {@linkcode measureMany}
 * uses when given none, and what a caller measuring many batches shares between them (a WebGPU
 * device is opened once).
 *
 * @returns The source and its `close`.
 * @example
 * ```ts ignore
 * const runners = await openRunnerSource();
 * try {
 *   await measureMany(requests, { runners: runners.source });
 * } finally {
 *   await runners.close();
 * }
 * ```
 */
export async function openRunnerSource(): Promise<
  { source: RunnerSource; close(): Promise<void> }
> {
  const { openRunner } = await import("./runners/mod.ts");
  const open = new Map<Backend, Promise<Runner | string>>();
  return {
    source: (backend) => {
      let r = open.get(backend);
      if (!r) open.set(backend, r = openRunner(backend));
      return r;
    },
    close: async () => {
      for (const r of open.values()) {
        const runner = await r;
        if (typeof runner !== "string") await runner.close();
      }
    },
  };
}

/**
 * The operands of one op, shape and dtype in a batch, shared by the batch's cases of it (its
 * backends and residencies): generated once and their reference computed once. Built afresh per
 * case, they were a quarter of a quick run here: a 4096 × 1024 gemv's float64 reference took
 * 0.15–0.3 s, five times over.
 */
interface SharedOperands {
  readonly seed: number;
  inputs?: OpInputs;
  reference?: Float64Array;
}

/** What makes two requests' operands the same: op, dtype and shape. */
function operandKey(req: MeasureRequest): string {
  const dims = Object.keys(req.shape).sort().map((k) => `${k}=${req.shape[k]}`).join(",");
  return `${req.op}|${req.dtype}|${dims}`;
}

async function prepareCase(
  req: MeasureRequest,
  source: RunnerSource,
  operands: SharedOperands,
): Promise<LiveCase | MeasureResult> {
  const op = getOp(req.op);
  const residency: Residency = req.backend === "webgpu"
    ? req.residency ?? "end-to-end"
    : "end-to-end";
  const variant = resolveVariant(op, req.backend, req.variant);
  const identity: MeasureIdentity = {
    op: op.name,
    shape: req.shape,
    dtype: req.dtype,
    backend: req.backend,
    variant: typeof variant === "string" ? "default" : variantId(variant),
    residency,
  };
  if (typeof variant === "string") return { ...identity, state: "unsupported", reason: variant };
  if (!op.dtypes.includes(req.dtype)) {
    return {
      ...identity,
      state: "unsupported",
      reason: `${op.name} does not support ${req.dtype}: it supports ${op.dtypes.join(", ")}`,
    };
  }
  const runner = await source(req.backend);
  if (typeof runner === "string") return { ...identity, state: "unsupported", reason: runner };

  const seed = operands.seed;
  const inputs = operands.inputs ??= op.inputs(req.shape, req.dtype, seededRng(seed));
  let prepared: Prepared;
  try {
    prepared = await runner.prepare(op, req.shape, req.dtype, variant, inputs, residency);
  } catch (e) {
    if (e instanceof UnsupportedError) {
      return { ...identity, state: "unsupported", reason: e.message };
    }
    return { ...identity, state: "failed", error: `Cannot prepare: ${errorText(e)}` };
  }
  try {
    const out = await prepared.output();
    // A huge case is verified on seeded sampled rows: its full reference would cost more than
    // its measurement, and a kernel that skips work still misses some of them.
    const check = verifySampledRows(op, req.shape, req.dtype, inputs, out, seed) ??
      verifyOutput(
        out,
        operands.reference ??= op.reference(req.shape, req.dtype, inputs),
        op.tolerance(req.shape, req.dtype),
      );
    if (!check.ok) {
      prepared.dispose();
      return {
        ...identity,
        state: "failed",
        error: check.message ?? "Wrong result",
        // NaN outputs and length mismatches have no finite error to record.
        ...(Number.isFinite(check.maxRelError) ? { maxRelError: check.maxRelError } : {}),
      };
    }
    return {
      identity,
      prepared,
      reps: 1,
      runMs: 0,
      wall: [],
      gpu: [],
      elapsedMs: 0,
      attempts: 0,
      done: false,
      compileMs: prepared.compileMs,
      maxRelError: check.maxRelError,
      flops: op.flops(req.shape),
      bytes: op.bytes(req.shape, req.dtype),
    };
  } catch (e) {
    prepared.dispose();
    return { ...identity, state: "failed", error: errorText(e) };
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Untimed warm-up batches that find a batch size long enough to time well. */
async function warmUp(c: LiveCase, minBatchMs: number): Promise<void> {
  const first = await c.prepared.time(1);
  if (c.identity.residency === "device-resident") {
    // A fast kernel's single run is mostly the ~11 ms sync: size its batch from the growth
    // between a batch of 1 and a batch of 8 instead. A slow one is its own measure.
    let perRun = first.wallMs;
    if (first.wallMs < RESIDENT_BATCH_MS) {
      const eight = await c.prepared.time(8);
      perRun = Math.max((eight.wallMs - first.wallMs) / 7, eight.wallMs / 8 / 100, 1e-3);
    }
    c.reps = Math.min(MAX_RESIDENT_REPS, Math.max(1, Math.ceil(RESIDENT_BATCH_MS / perRun)));
  } else {
    // A cold single run can be many times a warm one: wasm-mt's first run after a pause wakes
    // its workers (0.1–1.3 ms against 0.01 ms per run of add n = 65536 here). Sized from it
    // alone, batches came out 2–24 runs long instead of ~200, far below minBatchMs, and each
    // sample was mostly the wake-up at its start: ×10 between windows. So the size is checked
    // with a batch of that size, and taken again from it while that batch is too short.
    let perRun = c.runMs = first.wallMs;
    for (let round = 0; round < MAX_SIZING_BATCHES; round++) {
      c.reps = Math.max(1, Math.ceil(minBatchMs / Math.max(perRun, 1e-4)));
      // A cold start is small beside a run this long: it needs no second look.
      if (c.reps === 1 && perRun > COLD_START_MS) break;
      const batch = await c.prepared.time(c.reps);
      c.runMs = batch.wallMs / c.reps;
      if (batch.wallMs >= minBatchMs / 2) break;
      perRun = c.runMs;
    }
  }
}

/**
 * Most runs of the untimed pass before a CPU sample: a batch of this many runs reads every
 * operand copy the CPU runners hold in cache (two) twice.
 */
const REWARM_RUNS = 4;
/** A CPU run at least this long is its own warm-up: its cold start is a small part of it. */
const REWARM_BELOW_MS = 20;

/**
 * Runs a CPU case untimed before its sample, over the operand copies the timed batch will use
 * (`Prepared.warm`), so that every sample starts from the same warm state. Interleaved with other
 * cases, a sample otherwise started from whatever the host left in the caches since the case last
 * ran: on a 2-vCPU VM (Intel Xeon, 2 MiB L2 per core, an L3 shared with other guests), wasm gemv q8
 * 1024 × 3000 ran 0.49–0.53 ms alone and 1.31–1.38 ms in most windows interleaved with WebGPU,
 * the first two runs after any 30 ms of other work, sleep or a spin loop alike, taking 0.7–2.0 ms
 * against 0.4–0.6 warm. A pause of 1–3 ms left it warm. The pass must read the batch's own
 * copies: a batch of two runs that went on to the two copies after the pass's read them cold, and
 * interleaved with a WebGPU end-to-end case that case ran at 2.6–2.7 GB/s in every window of a
 * process, 6.4–6.6 GB/s beside CPU cases alone.
 */
async function rewarm(c: LiveCase): Promise<void> {
  if (!CPU_BACKENDS.includes(c.identity.backend) || c.runMs >= REWARM_BELOW_MS) return;
  const runs = Math.min(c.reps, REWARM_RUNS);
  const started = performance.now();
  if (c.prepared.warm) await c.prepared.warm(runs);
  else await c.prepared.time(runs);
  c.elapsedMs += performance.now() - started;
}

/**
 * One sample. Device-resident: a batch of one dispatch and a batch of 3R, each ending in one
 * sync; their difference over 3R − 1 is the time per dispatch with the fixed sync cost taken out
 * (GPU timestamps, when present, never include it). A difference lost in noise (≤ 0, or under half
 * the GPU's own time: {@linkcode IMPOSSIBLE_SHARE}) is not recorded.
 * Otherwise: a batch of R runs over R.
 */
async function takeSample(c: LiveCase): Promise<void> {
  if (c.identity.residency !== "device-resident") {
    await rewarm(c);
    const t = await c.prepared.time(c.reps);
    c.elapsedMs += t.wallMs;
    c.runMs = t.wallMs / c.reps;
    c.wall.push(c.runMs);
    if (t.gpuMs !== undefined) c.gpu.push(t.gpuMs / c.reps);
    return;
  }
  const longRuns = RESIDENT_SAMPLE_BATCHES * c.reps;
  const short = await c.prepared.time(1);
  const long = await c.prepared.time(longRuns);
  c.elapsedMs += short.wallMs + long.wallMs;
  const perRun = (long.wallMs - short.wallMs) / (longRuns - 1);
  if (!(perRun > 0)) return;
  const gpuPerRun = short.gpuMs !== undefined && long.gpuMs !== undefined
    ? (short.gpuMs + long.gpuMs) / (longRuns + 1)
    : undefined;
  if (gpuPerRun !== undefined && perRun < IMPOSSIBLE_SHARE * gpuPerRun) return;
  c.wall.push(perRun);
  if (gpuPerRun !== undefined) c.gpu.push(gpuPerRun);
}

/** Sample attempts a case makes before {@linkcode isOverdue} may stop it. */
const OVERDUE_ATTEMPTS = 3;

/**
 * Whether a case stops although its stopping rule has not: dropped device-resident samples could
 * otherwise keep it sampling below its sample count forever. It has spent three budgets and made
 * at least three attempts: a device-resident sample of a long kernel is four runs (one, then
 * three), so a 90 ms matmul spent three budgets of 120 ms in its first sample, and off-axis
 * shapes measured with one sample each, whose samples here spread ×1.5–2.5, taught the shape
 * model their noise.
 *
 * @param attempts Samples taken, dropped ones included.
 * @param elapsedMs Time the case spent sampling.
 * @param rule The stopping rule.
 * @returns True when the case should stop.
 * @example
 * ```ts
 * import { isOverdue } from "./measure.ts";
 * import { DEFAULT_STOPPING } from "../core/stats.ts";
 * const rule = { ...DEFAULT_STOPPING, budgetMs: 120 };
 * console.log(isOverdue(1, 360, rule)); // false: one sample of a long kernel
 * console.log(isOverdue(3, 1080, rule)); // true
 * ```
 */
export function isOverdue(attempts: number, elapsedMs: number, rule: StoppingRule): boolean {
  return attempts >= OVERDUE_ATTEMPTS && elapsedMs >= 3 * rule.budgetMs;
}

function finish(c: LiveCase, rule: StoppingRule): MeasureResult {
  c.prepared.dispose();
  if (c.wall.length === 0) {
    const error = c.elapsedMs > 0
      ? "No usable sample: the time per dispatch was lost in the synchronisation noise"
      : "Aborted before any sample was taken";
    return { ...c.identity, state: "failed", error };
  }
  const wall = summarize(c.wall);
  const gpu = c.gpu.length === c.wall.length ? summarize(c.gpu) : undefined;
  const seconds = wall.median / 1000;
  return {
    ...c.identity,
    state: "ok",
    wall,
    ...(gpu ? { gpu } : {}),
    compileMs: c.compileMs,
    maxRelError: c.maxRelError,
    flops: c.flops,
    bytes: c.bytes,
    gflops: c.flops / seconds / 1e9,
    gbps: c.bytes / seconds / 1e9,
    noisy: wall.relCi > rule.targetRelCi,
  };
}

/**
 * Measures several cases with their samples interleaved round-robin: each is verified first (a
 * wrong answer is `failed` and never timed), warmed up, then sampled in turn until each meets its
 * stopping rule. Cases of the same op, shape and dtype share their operands and reference.
 *
 * @param requests The cases.
 * @param options Runners, seed, stopping rule, abort signal.
 * @returns One result per request, in order.
 * @throws {RangeError} for an unknown op or variant.
 * @example
 * ```ts ignore
 * import { measureMany } from "./measure.ts";
 * const [js, wasm] = await measureMany([
 *   { op: "add", shape: { n: 1 << 16 }, dtype: "f32", backend: "js" },
 *   { op: "add", shape: { n: 1 << 16 }, dtype: "f32", backend: "wasm" },
 * ]);
 * ```
 */
export async function measureMany(
  requests: readonly MeasureRequest[],
  options: MeasureOptions = {},
): Promise<MeasureResult[]> {
  const owned = options.runners ? null : await openRunnerSource();
  const source = options.runners ?? owned!.source;
  const results: MeasureResult[] = [];
  try {
    for (const batch of operandBatches(requests, BATCH_OPERAND_BYTES)) {
      if (options.signal?.aborted) {
        results.push(...batch.map(abortedBeforeStart));
        continue;
      }
      results.push(...await measureBatch(batch, results.length, source, options));
    }
    return results;
  } finally {
    await owned?.close();
  }
}

/**
 * Bytes of operand copies one interleaved batch of {@linkcode measureMany} holds, at most. Every
 * prepared case keeps its copies until its batch ends, and a streamed CPU case's span 256 MiB
 * (`COLD_SPAN_BYTES`): 40 wasm cases of 1024² to 768 × 3072 in one call ran the runner's memory
 * past wasm32's 4 GiB, and every case after the fifteenth came back `unsupported`.
 */
const BATCH_OPERAND_BYTES = 2 * 2 ** 30;

/**
 * Splits requests, in order, into batches whose operand copies fit `budget` bytes together (a
 * case bigger than the budget alone is a batch of its own). Cases are interleaved within a batch
 * only, so a batch of small cases is as before: every case of a call, sampled in turn.
 *
 * @param requests The cases.
 * @param budget Bytes of operand copies a batch may hold.
 * @returns The batches, in order, together holding every request once.
 * @example
 * ```ts
 * import { operandBatches } from "./measure.ts";
 * const big = { op: "add", shape: { n: 2 ** 22 }, dtype: "f32", backend: "wasm" } as const;
 * const small = { ...big, shape: { n: 4096 } };
 * console.log(operandBatches([big, big, small, big], 2 ** 29).map((b) => b.length)); // [2, 2]
 * ```
 */
export function operandBatches(
  requests: readonly MeasureRequest[],
  budget: number,
): MeasureRequest[][] {
  const batches: MeasureRequest[][] = [];
  let current: MeasureRequest[] = [];
  let held = 0;
  for (const req of requests) {
    const bytes = heldOperandBytes(req);
    if (current.length > 0 && held + bytes > budget) {
      batches.push(current);
      current = [];
      held = 0;
    }
    current.push(req);
    held += bytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Bytes a prepared case's operand copies take, as the runners size them: two copies of a run
 * held in cache, copies spanning `COLD_SPAN_BYTES` of a streamed one; 0 for a request whose op or
 * shape is wrong (its preparation reports that).
 */
function heldOperandBytes(req: MeasureRequest): number {
  try {
    const runBytes = getOp(req.op).bytes(req.shape, req.dtype);
    if (!Number.isFinite(runBytes)) return 0;
    return runBytes < STREAMED_FROM_BYTES ? 2 * runBytes : Math.max(COLD_SPAN_BYTES, runBytes);
  } catch {
    return 0;
  }
}

/** A case of a batch the abort signal stopped before it began: failed, with no sample. */
function abortedBeforeStart(req: MeasureRequest): MeasureResult {
  return {
    op: req.op,
    shape: req.shape,
    dtype: req.dtype,
    backend: req.backend,
    variant: typeof req.variant === "object" ? variantId(req.variant) : req.variant ?? "default",
    residency: req.backend === "webgpu" ? req.residency ?? "end-to-end" : "end-to-end",
    state: "failed",
    error: "Aborted before any sample was taken",
  };
}

/**
 * {@linkcode measureMany} of one batch: prepared and verified together, then sampled in turn.
 * `first` is the batch's first request's index in the call, which seeds its operands.
 */
async function measureBatch(
  requests: readonly MeasureRequest[],
  first: number,
  source: RunnerSource,
  options: MeasureOptions,
): Promise<MeasureResult[]> {
  const rule: StoppingRule = { ...DEFAULT_STOPPING, ...options.stopping };
  const minBatchMs = options.minBatchMs ?? DEFAULT_MIN_BATCH_MS;
  const results: (MeasureResult | LiveCase)[] = [];
  const operands = new Map<string, SharedOperands>();
  try {
    for (const req of requests) {
      const key = operandKey(req);
      let shared = operands.get(key);
      if (shared === undefined) {
        const seed = options.seed !== undefined
          ? options.seed + first + results.length
          : (seedCounter = (seedCounter + 0x6d2b79f5) >>> 0);
        operands.set(key, shared = { seed });
      }
      results.push(await prepareCase(req, source, shared));
    }
    // The cases keep what they need of the operands; the batch's references can go now.
    operands.clear();
    const live = results.filter((r): r is LiveCase => "prepared" in r);
    for (const c of live) {
      try {
        await warmUp(c, minBatchMs);
      } catch (e) {
        c.done = true;
        results[results.indexOf(c)] = failedCase(c, e);
      }
    }
    while (!options.signal?.aborted) {
      const pending = live.filter((c) => !c.done);
      if (pending.length === 0) break;
      for (const c of pending) {
        if (options.signal?.aborted) break;
        try {
          await takeSample(c);
          c.attempts++;
          const overdue = isOverdue(c.attempts, c.elapsedMs, rule);
          if (overdue || stopReason(c.wall, c.elapsedMs, rule) !== null) c.done = true;
        } catch (e) {
          c.done = true;
          results[results.indexOf(c)] = failedCase(c, e);
        }
      }
    }
    return results.map((r) => {
      if (!("prepared" in r)) return r;
      const done = finish(r, rule);
      if (done.state === "ok") {
        options.onSamples?.(done, {
          wall: r.wall,
          gpu: r.gpu.length === r.wall.length ? r.gpu : [],
        });
      }
      return done;
    });
  } finally {
    for (const r of results) if ("prepared" in r) r.prepared.dispose();
  }
}

/**
 * What {@linkcode remeasureUnsure} reads of an earlier result; every {@linkcode MeasureResult} is
 * one.
 *
 * @example
 * ```ts
 * import type { Remeasurable } from "./measure.ts";
 * const r: Remeasurable = {
 *   op: "add", shape: { n: 4096 }, dtype: "f32", backend: "wasm", variant: "default",
 *   residency: "end-to-end", state: "ok", wall: { relCi: 0.3 },
 * };
 * ```
 */
export type Remeasurable =
  & MeasureIdentity
  & (
    | { readonly state: "ok"; readonly wall: { readonly relCi: number } }
    | { readonly state: "failed" | "unsupported" }
  );

/** A CPU median less sure than ±this (95 %) after its budget was likely taken through a stall. */
export const UNSURE_REL_CI = 0.1;

/**
 * Measures again, once, every CPU result whose median is less sure than
 * {@linkcode UNSURE_REL_CI} — taken through a stall, when the OS gave its core away for part of
 * the window — and keeps the surer of the two. Call it some time after the first measurement, so
 * the repeat falls outside the stall. WebGPU results are left alone: on a software adapter their
 * spread is the adapter's own (one core or two), not a stall a repeat would escape.
 *
 * @param results Earlier results (any objects extending them, e.g. report measurements).
 * @param options Runners, stopping rule, abort signal, as for {@linkcode measureMany}.
 * @returns Per input, the repeat when it came out surer, else `undefined`.
 * @example
 * ```ts ignore
 * import { measureMany, remeasureUnsure } from "./measure.ts";
 * const first = await measureMany(requests);
 * const repeats = await remeasureUnsure(first);
 * const kept = first.map((r, i) => repeats[i] ?? r);
 * ```
 */
export async function remeasureUnsure(
  results: readonly Remeasurable[],
  options: MeasureOptions = {},
): Promise<(MeasureOk | undefined)[]> {
  const unsure = results.flatMap((r, i) =>
    r.state === "ok" && r.backend !== "webgpu" && r.wall.relCi > UNSURE_REL_CI ? [i] : []
  );
  const out: (MeasureOk | undefined)[] = results.map(() => undefined);
  if (unsure.length === 0 || options.signal?.aborted) return out;
  const again = await measureMany(
    unsure.map((i) => requestOf(results[i]!)),
    options,
  );
  again.forEach((r, j) => {
    const first = results[unsure[j]!]!;
    if (r.state === "ok" && first.state === "ok" && r.wall.relCi < first.wall.relCi) {
      out[unsure[j]!] = r;
    }
  });
  return out;
}

/**
 * The request that measures the same case again as an earlier result (or report measurement).
 *
 * @param m The earlier result.
 * @returns Its op, shape, dtype, backend, variant and residency as a request.
 * @example
 * ```ts
 * import { requestOf } from "./measure.ts";
 * const r = requestOf({
 *   op: "add", shape: { n: 64 }, dtype: "f32", backend: "js", variant: "default",
 *   residency: "end-to-end",
 * });
 * console.log(r.variant); // "default"
 * ```
 */
export function requestOf(m: MeasureIdentity): MeasureRequest {
  const { op, shape, dtype, backend, variant, residency } = m;
  return { op, shape, dtype, backend, variant, residency };
}

function failedCase(c: LiveCase, e: unknown): MeasureResult {
  c.prepared.dispose();
  return { ...c.identity, state: "failed", error: `Failed while timing: ${errorText(e)}` };
}

/**
 * Verifies one kernel against its float64 reference and, when right, times it.
 *
 * @param request What to measure: op, shape, dtype, backend, variant, residency.
 * @param options Runners, seed, stopping rule, abort signal.
 * @returns `ok` with wall (and GPU) statistics, `failed` with the error, or `unsupported`.
 * @throws {RangeError} for an unknown op or variant.
 * @example
 * ```ts ignore
 * import { measure } from "./measure.ts";
 * const r = await measure({ op: "matmul", shape: { m: 256, k: 256, n: 256 }, dtype: "f32", backend: "wasm" });
 * if (r.state === "ok") console.log(`${r.gflops.toFixed(1)} GFLOP/s`);
 * ```
 */
export async function measure(
  request: MeasureRequest,
  options: MeasureOptions = {},
): Promise<MeasureResult> {
  const [result] = await measureMany([request], options);
  return result!;
}

/**
 * One measurement from several windows of the same case: {@linkcode poolWindows} of their wall
 * (and, when every window had timestamps, GPU) samples, with rates from the pooled median.
 *
 * @param first The first window's result (identity, compile time, verification, work).
 * @param windows The samples of every window, the first included.
 * @param targetRelCi Above this relative CI the result is `noisy`; the default stopping rule's.
 * @returns The pooled result.
 * @throws {RangeError} when no window has a sample.
 * @example
 * ```ts ignore
 * const windows: WindowSamples[] = [];
 * const [first] = await measureMany([req], { onSamples: (_, s) => windows.push(s) });
 * await measureMany([req], { onSamples: (_, s) => windows.push(s) });
 * if (first.state === "ok") console.log(pooledResult(first, windows).wall.median);
 * ```
 */
export function pooledResult(
  first: MeasureOk,
  windows: readonly WindowSamples[],
  targetRelCi: number = DEFAULT_STOPPING.targetRelCi,
): MeasureOk {
  const wall = poolWindows(windows.map((w) => w.wall));
  const timed = windows.every((w) => w.gpu.length > 0);
  const seconds = wall.median / 1000;
  const { gpu: _dropped, ...rest } = first;
  return {
    ...rest,
    wall,
    ...(timed ? { gpu: poolWindows(windows.map((w) => w.gpu)) } : {}),
    gflops: first.flops / seconds / 1e9,
    gbps: first.bytes / seconds / 1e9,
    noisy: wall.relCi > targetRelCi,
  };
}

/**
 * The wall-clock median of each window that has samples, in window order.
 *
 * @param windows A case's windows.
 * @returns Their medians, ms.
 * @example
 * ```ts
 * import { windowMedians } from "./measure.ts";
 * console.log(windowMedians([{ wall: [1, 3, 2], gpu: [] }, { wall: [], gpu: [] }])); // [2]
 * ```
 */
export function windowMedians(windows: readonly WindowSamples[]): number[] {
  return windows.filter((w) => w.wall.length > 0).map((w) => median(w.wall));
}

/**
 * Whether the windows of one case disagree: half the range of their wall-clock medians is more
 * than {@linkcode UNSURE_REL_CI} of the median of those medians. With two windows that disagree
 * the pooled median sits halfway between a stall and a typical minute; a third window decides.
 *
 * @param windows The case's windows.
 * @returns True when a further window is worth taking.
 * @example
 * ```ts
 * import { windowsDisagree } from "./measure.ts";
 * console.log(windowsDisagree([{ wall: [12, 12.1], gpu: [] }, { wall: [60, 61], gpu: [] }])); // true
 * console.log(windowsDisagree([{ wall: [12, 12.1], gpu: [] }, { wall: [12.3], gpu: [] }])); // false
 * ```
 */
export function windowsDisagree(windows: readonly WindowSamples[]): boolean {
  const medians = windowMedians(windows);
  if (medians.length < 2) return false;
  const center = median(medians);
  return (Math.max(...medians) - Math.min(...medians)) / 2 > UNSURE_REL_CI * center;
}
