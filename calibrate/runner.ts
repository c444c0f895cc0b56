/**
 * The contract between `measure()` and a backend: prepare a kernel on its operands, run it for
 * verification, time it in batches, and release what it made.
 *
 * @module
 */
import type {
  Backend,
  Dtype,
  OpInputs,
  OpSpec,
  Residency,
  Shape,
  Variant,
} from "../kernels/types.ts";

/**
 * Thrown by {@linkcode Runner.prepare} when a case cannot run here (a missing feature, a buffer
 * over the adapter's limits, a variant that does not fit the shape); `measure()` records it as
 * `unsupported` with this message.
 *
 * @example
 * ```ts
 * import { UnsupportedError } from "./runner.ts";
 * throw new UnsupportedError("Adapter lacks \"shader-f16\"");
 * ```
 */
export class UnsupportedError extends Error {
  /** @param message Why the case cannot run. */
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedError";
  }
}

/**
 * Timing of one batch of runs.
 *
 * @example
 * ```ts
 * import type { BatchTiming } from "./runner.ts";
 * const t: BatchTiming = { wallMs: 12.5 };
 * ```
 */
export interface BatchTiming {
  /** Wall-clock milliseconds for the whole batch. */
  readonly wallMs: number;
  /** GPU milliseconds for the whole batch from timestamp queries, when available. */
  readonly gpuMs?: number;
}

/**
 * A kernel bound to its operands, ready to run.
 *
 * @example
 * ```ts
 * import type { Prepared } from "./runner.ts";
 * async function once(p: Prepared) { const out = await p.output(); p.dispose(); return out; }
 * ```
 */
export interface Prepared {
  /** Cost of the first run (shader compile, pipeline creation, WASM instantiation), ms. */
  readonly compileMs: number;
  /** Run once (end-to-end) and return the output in host memory, as f32 values. */
  output(): Promise<Float32Array>;
  /**
   * Run `reps` times back to back and time the batch.
   * End-to-end: each rep uploads, dispatches and reads back. Device-resident: `reps` dispatches in
   * one submission and one synchronisation at the end. Operand copies are rotated between reps
   * when they would otherwise stay in cache.
   */
  time(reps: number): Promise<BatchTiming>;
  /**
   * Runs `reps` times untimed, so that the next `time(reps)` starts warm (CPU runners). Where a
   * case's operand copies stay in the caches, these runs read the very copies that batch will read,
   * in its order; where they stream from memory, the runs go on through other copies and leave the
   * batch's own cold. Without it, a caller warms with an untimed `time()`.
   */
  warm?(reps: number): Promise<void>;
  /** Release buffers, memory and workers. Safe to call twice. */
  dispose(): void;
}

/**
 * A backend that can prepare kernels.
 *
 * @example
 * ```ts
 * import type { Runner } from "./runner.ts";
 * function name(r: Runner) { return r.backend; }
 * ```
 */
export interface Runner {
  /** The backend this runner drives. */
  readonly backend: Backend;
  /**
   * Bind `op` at `shape`/`dtype`/`variant` to `inputs`.
   * @throws {UnsupportedError} when the case cannot run here.
   */
  prepare(
    op: OpSpec,
    shape: Shape,
    dtype: Dtype,
    variant: Variant,
    inputs: OpInputs,
    residency: Residency,
  ): Promise<Prepared>;
  /** Release everything the runner holds (devices, worker pools). */
  close(): Promise<void>;
}
