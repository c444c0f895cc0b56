/**
 * The `webgpu` runner: binds an op's WGSL program to device buffers, runs it for verification and
 * times it end-to-end (upload, dispatch, readback per run) or device-resident (many dispatches,
 * one synchronisation), with GPU timestamps when the adapter has `timestamp-query`.
 *
 * @module
 */
import type {
  Dtype,
  HostArray,
  OpInputs,
  OpSpec,
  Residency,
  Shape,
  Variant,
  WgslProgram,
} from "../../kernels/types.ts";
import type { GpuHandle } from "../device.ts";
import {
  alignBytes,
  bindGroupFor,
  type CompiledProgram,
  compileProgram,
  type GpuProgram,
  GpuResources,
  opProgram,
  Readback,
  recordDispatch,
  STORAGE_ALIGN,
  TimestampQueries,
  validated,
} from "./gpu.ts";
import { type BatchTiming, type Prepared, type Runner, UnsupportedError } from "../runner.ts";
import { withWatchdog } from "./_watchdog.ts";
import { type OperandLease, SharedCopies } from "./_gpu_operands.ts";
import { COLD_SPAN_BYTES, STREAMED_FROM_BYTES } from "../../core/operand_rotation.ts";

/**
 * Options of {@linkcode createWebGpuRunner}.
 *
 * @example
 * ```ts
 * import type { WebGpuRunnerOptions } from "./webgpu.ts";
 * const patient: WebGpuRunnerOptions = { watchdogMs: 120_000 };
 * ```
 */
export interface WebGpuRunnerOptions {
  /** Longest wait for one synchronisation before the run fails, ms. */
  readonly watchdogMs?: number;
  /** Operand sets smaller than this get several buffer copies, rotated between runs, bytes. */
  readonly rotateBelowBytes?: number;
  /** How many operand copies to rotate through when rotating. */
  readonly rotationCopies?: number;
  /**
   * Rotate operand copies until they span at least this many bytes (at most
   * {@linkcode MAX_ROTATION_COPIES} copies), instead of `rotateBelowBytes` and `rotationCopies`:
   * an operand is then as cold at its next use as in a program that streams this many other bytes
   * between two uses of it, as a decode streams every layer's weights once per token.
   */
  readonly rotationSpanBytes?: number;
}

/** Default longest wait for one synchronisation, ms. */
export const DEFAULT_WATCHDOG_MS = 30_000;
/** Default size below which operand copies are rotated, bytes (32 MiB). */
export const DEFAULT_ROTATE_BELOW_BYTES = 32 * 2 ** 20;
/** Default number of rotated operand copies. */
export const DEFAULT_ROTATION_COPIES = 3;
/**
 * Bytes an op that streams its operands ({@linkcode OpSpec.streamsOperands}) rotates through when
 * the runner sets no span: more than a server CPU's last-level cache, so a software adapter's
 * operands come from memory, as a decode's weights do. (Timed with three copies, a 512×512
 * projection stayed in cache, and the report-only decode estimate came out fast: 10 of 12 pairs
 * over +9 %, up to +52 %.)
 */
export const STREAMED_SPAN_BYTES = 64 * 2 ** 20;

/** Most operand copies `rotationSpanBytes` makes (a tiny operand would otherwise need thousands). */
export const MAX_ROTATION_COPIES = 256;

/**
 * Creates the `webgpu` runner on an open device.
 *
 * Buffers, bindings (group 0): operands `0..n-1` read-only storage, the output at `n`, the
 * uniforms at `n + 1`, a scratch buffer at `n + 2` when the program asks for one (zero-filled once,
 * at creation). Every storage buffer is zero-padded to a multiple of 16 bytes, so a
 * kernel may view an operand as `array<vec4<T>>` and still reach its tail. The output's WGSL
 * element type is `f16` for f16 ops and `f32` otherwise; `output()` returns f32 either way.
 *
 * Device-resident timing records one compute pass per dispatch (needed for per-dispatch
 * timestamps; on lavapipe it costs the same wall time as one pass with many dispatches).
 *
 * @param gpu The open device (see `openGpu`).
 * @param options Watchdog and operand-rotation settings.
 * @returns The runner; `close()` destroys the device.
 * @example
 * ```ts ignore
 * import { openGpu } from "../device.ts";
 * import { createWebGpuRunner } from "./webgpu.ts";
 * import { add } from "../../kernels/elementwise/mod.ts";
 * import { seededRng } from "../../kernels/_random.ts";
 *
 * const gpu = await openGpu();
 * if (gpu) {
 *   const runner = createWebGpuRunner(gpu);
 *   const shape = { n: 1024 };
 *   const inputs = add.inputs(shape, "f32", seededRng(1));
 *   const prepared = await runner.prepare(add, shape, "f32", add.impls.webgpu!.variants[0]!, inputs, "device-resident");
 *   console.log((await prepared.output()).length, (await prepared.time(10)).wallMs);
 *   prepared.dispose();
 *   await runner.close();
 * }
 * ```
 */
export function createWebGpuRunner(gpu: GpuHandle, options: WebGpuRunnerOptions = {}): Runner {
  const settings = {
    watchdogMs: options.watchdogMs ?? DEFAULT_WATCHDOG_MS,
    rotateBelowBytes: options.rotateBelowBytes ?? DEFAULT_ROTATE_BELOW_BYTES,
    rotationCopies: Math.max(1, Math.floor(options.rotationCopies ?? DEFAULT_ROTATION_COPIES)),
    rotationSpanBytes: options.rotationSpanBytes ?? null,
  };
  const live = new Set<Prepared>();
  const shared = new SharedCopies(gpu.device);
  return {
    backend: "webgpu",
    async prepare(op, shape, dtype, variant, inputs, residency) {
      const prepared = await prepareWebGpu(
        gpu,
        { ...settings, shared },
        op,
        shape,
        dtype,
        variant,
        inputs,
        residency,
      );
      live.add(prepared);
      return {
        compileMs: prepared.compileMs,
        output: () => prepared.output(),
        time: (reps) => prepared.time(reps),
        dispose: () => {
          live.delete(prepared);
          prepared.dispose();
        },
      };
    },
    close() {
      for (const p of live) p.dispose();
      live.clear();
      gpu.device.destroy();
      return Promise.resolve();
    },
  };
}

interface Settings {
  readonly watchdogMs: number;
  readonly rotateBelowBytes: number;
  readonly rotationCopies: number;
  readonly rotationSpanBytes: number | null;
  /** Streamed device-resident operand copies, shared by the variants of a case. */
  readonly shared: SharedCopies;
}

/** A case's device buffers: operand copies, output, readback, uniforms and scratch. */
interface CaseBuffers {
  /** The operands' host bytes, uploaded into every copy. */
  readonly uploads: readonly Uint8Array<ArrayBuffer>[];
  /** One set of operand buffers per rotated copy. */
  readonly operandSets: readonly (readonly GPUBuffer[])[];
  /** The hold on `operandSets`: the case's own, or shared with its variants when streamed. */
  readonly operands: OperandLease;
  readonly output: GPUBuffer;
  readonly outBytes: number;
  readonly readback: Readback;
  readonly uniform: GPUBuffer | null;
  readonly scratch: GPUBuffer | null;
}

/** A case's compiled program, one bind group per operand copy, and its first run's cost. */
interface CompiledCase {
  readonly compiled: CompiledProgram;
  readonly groups: readonly GPUBindGroup[];
  readonly compileMs: number;
}

async function prepareWebGpu(
  gpu: GpuHandle,
  settings: Settings,
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  variant: Variant,
  inputs: OpInputs,
  residency: Residency,
): Promise<Prepared> {
  if (gpu.loss) {
    throw new Error(
      `WebGPU device was lost ("${gpu.loss.reason}": ${gpu.loss.message}): reopen it with gpu.reopen()`,
    );
  }
  const program = supportedProgram(gpu.device, op, shape, dtype, variant, inputs);
  const resources = new GpuResources(gpu.device);
  let buffers: CaseBuffers | undefined;
  try {
    buffers = await allocateCase(
      resources,
      op,
      shape,
      dtype,
      program,
      inputs,
      settings,
      residency,
    );
    const gpuProgram = opProgram(program, dtype, inputs.arrays.length);
    const compiled = await compileCase(gpu.device, op, program, gpuProgram, buffers, settings);
    return new WebGpuCase(gpu, settings, op, program, inputs, dtype, residency, {
      resources,
      buffers,
      compiled,
    });
  } catch (e) {
    resources.destroy();
    buffers?.operands.release();
    throw e;
  }
}

/**
 * The op's program for the case, once the device is known to run it: the implementation exists,
 * the adapter has the dtype's features, the variant suits the shape and the limits hold.
 */
function supportedProgram(
  device: GPUDevice,
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  variant: Variant,
  inputs: OpInputs,
): WgslProgram {
  const impl = op.impls.webgpu;
  if (!impl) throw new UnsupportedError(`Op "${op.name}" has no WebGPU implementation`);
  for (const feature of impl.features?.[dtype] ?? []) {
    if (!device.features.has(feature)) {
      throw new UnsupportedError(`Adapter lacks "${feature}", which ${op.name} needs for ${dtype}`);
    }
  }
  const reason = impl.unsupported?.(shape, dtype, variant);
  if (reason) throw new UnsupportedError(reason);
  const program = impl.program(shape, dtype, variant);
  checkLimits(device.limits, op, program, inputs, dtype);
  return program;
}

/** Creates and fills the case's buffers; running out of device memory is unsupported, not a bug. */
async function allocateCase(
  resources: GpuResources,
  op: OpSpec,
  shape: Shape,
  dtype: Dtype,
  program: WgslProgram,
  inputs: OpInputs,
  settings: Settings,
  residency: Residency,
): Promise<CaseBuffers> {
  const { device } = resources;
  const uploads = inputs.arrays.map(hostBytes);
  const operandBytes = uploads.reduce((sum, u) => sum + u.byteLength, 0);
  const streamed = residency === "device-resident" && op.bytes(shape, dtype) >= STREAMED_FROM_BYTES;
  const copies = operandCopies(op, operandBytes, settings, streamed);
  const outBytes = alignBytes(inputs.outputLength * (dtype === "f16" ? 2 : 4), 4);
  const makeSets = (owner: GpuResources) =>
    Array.from(
      { length: copies },
      () =>
        uploads.map((u) =>
          owner.buffer(u.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST)
        ),
    );
  device.pushErrorScope("out-of-memory");
  // Streamed device-resident copies are the same data for every variant: one set serves them all.
  const operands = streamed
    ? settings.shared.acquire(inputs, copies, makeSets)
    : { sets: makeSets(resources), fresh: true, release: () => {} };
  const buffers: CaseBuffers = {
    uploads,
    operandSets: operands.sets,
    operands,
    output: resources.buffer(
      outBytes,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    ),
    outBytes,
    readback: new Readback(resources, outBytes),
    uniform: program.uniforms ? resources.uniform(program.uniforms) : null,
    scratch: program.scratchBytes === undefined
      ? null
      : resources.buffer(program.scratchBytes, GPUBufferUsage.STORAGE),
  };
  const oom = await device.popErrorScope();
  if (oom) {
    operands.release();
    throw new UnsupportedError(
      `Out of device memory for ${op.name} at ${JSON.stringify(shape)}: ${oom.message}`,
    );
  }
  if (operands.fresh) {
    for (const set of buffers.operandSets) {
      set.forEach((buffer, i) => resources.upload(buffer, uploads[i]!));
    }
  }
  return buffers;
}

/**
 * Compiles the program, binds every operand copy and runs it once: the first dispatch is where
 * drivers compile, so its time is the case's compile cost.
 */
async function compileCase(
  device: GPUDevice,
  op: OpSpec,
  program: WgslProgram,
  gpuProgram: GpuProgram,
  buffers: CaseBuffers,
  settings: Settings,
): Promise<CompiledCase> {
  const started = performance.now();
  const { compiled, groups } = await validated(device, `${op.name} (${program.key})`, () => {
    const compiled = compileProgram(device, gpuProgram);
    const groups = buffers.operandSets.map((set) =>
      bindGroupFor(device, compiled, [
        ...set,
        buffers.output,
        ...(buffers.uniform || buffers.scratch ? [buffers.uniform] : []),
        ...(buffers.scratch ? [buffers.scratch] : []),
      ])
    );
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    recordDispatch(pass, compiled, groups[0]!, program.workgroups);
    pass.end();
    device.queue.submit([encoder.finish()]);
    return { compiled, groups };
  });
  await withWatchdog(device.queue.onSubmittedWorkDone(), settings.watchdogMs, "the first dispatch");
  return { compiled, groups, compileMs: performance.now() - started };
}

/** A prepared `webgpu` case: verification runs, end-to-end and device-resident timing. */
class WebGpuCase implements Prepared {
  readonly compileMs: number;
  readonly #device: GPUDevice;
  readonly #timestamps: TimestampQueries | null;
  readonly #what: string;
  #disposed = false;
  #verifications = 0;
  #rotation = 0;

  constructor(
    readonly gpu: GpuHandle,
    readonly settings: Settings,
    readonly op: OpSpec,
    readonly program: WgslProgram,
    readonly inputs: OpInputs,
    readonly dtype: Dtype,
    readonly residency: Residency,
    readonly parts: {
      readonly resources: GpuResources;
      readonly buffers: CaseBuffers;
      readonly compiled: CompiledCase;
    },
  ) {
    this.compileMs = parts.compiled.compileMs;
    this.#device = gpu.device;
    this.#timestamps = TimestampQueries.create(parts.resources);
    this.#what = `${op.name} (${program.key})`;
  }

  output(): Promise<Float32Array> {
    return validated(this.#device, this.#what, async () => {
      this.#alive();
      // Successive calls go through every operand copy, so verification covers them all.
      const set = this.#verifications++ % this.#copies;
      this.#upload(set);
      const encoder = this.#device.createCommandEncoder();
      // A kernel that skips elements must not pass verification on a previous run's output.
      encoder.clearBuffer(this.parts.buffers.output);
      this.#dispatch(encoder, set);
      const bytes = await this.#readOutput(encoder, "the verification readback");
      return toFloat32(bytes, this.inputs.outputLength, this.dtype);
    });
  }

  time(reps: number): Promise<BatchTiming> {
    return validated(this.#device, this.#what, () => {
      this.#alive();
      if (!Number.isInteger(reps) || reps < 1) {
        throw new RangeError(`Cannot time ${reps} runs: pass a positive integer`);
      }
      this.#timestamps?.reserve(reps);
      return this.residency === "end-to-end" ? this.#timeEndToEnd(reps) : this.#timeResident(reps);
    });
  }

  dispose(): void {
    this.#disposed = true;
    this.parts.resources.destroy();
    this.parts.buffers.operands.release();
  }

  get #copies(): number {
    return this.parts.buffers.operandSets.length;
  }

  /**
   * The next operand copy to run on, carrying on across batches: a batch starts on the copy after
   * the one the last batch ended on, never on operands a run just left in a cache.
   */
  #nextCopy(): number {
    const copy = this.#rotation;
    this.#rotation = (copy + 1) % this.#copies;
    return copy;
  }

  /** Each rep uploads its operands, dispatches in its own pass and reads the output back. */
  async #timeEndToEnd(reps: number): Promise<BatchTiming> {
    const started = performance.now();
    for (let r = 0; r < reps; r++) {
      const copy = this.#nextCopy();
      this.#upload(copy);
      const encoder = this.#device.createCommandEncoder();
      this.#dispatch(encoder, copy, this.#timestamps?.writes(r));
      await this.#readOutput(encoder, `end-to-end run ${r + 1} of ${reps}`);
    }
    const wallMs = performance.now() - started;
    if (!this.#timestamps) return { wallMs };
    const encoder = this.#device.createCommandEncoder();
    this.#timestamps.resolve(encoder, reps);
    this.#device.queue.submit([encoder.finish()]);
    return withGpu({ wallMs }, await this.#timestamps.read(reps, this.settings.watchdogMs));
  }

  /**
   * One compute pass for the batch, as a program chains its kernels: a pass per dispatch costs
   * ~78 µs each on lavapipe against ~31 µs in one pass, and a decode step's hundred-odd small
   * kernels would be priced that much too slow.
   */
  async #timeResident(reps: number): Promise<BatchTiming> {
    const { compiled, groups } = this.parts.compiled;
    const timestamps = this.#timestamps;
    const started = performance.now();
    const encoder = this.#device.createCommandEncoder();
    const pass = encoder.beginComputePass(
      timestamps ? { timestampWrites: timestamps.batchWrites() } : {},
    );
    for (let r = 0; r < reps; r++) {
      recordDispatch(pass, compiled, groups[this.#nextCopy()]!, this.program.workgroups);
    }
    pass.end();
    if (timestamps) timestamps.resolve(encoder, 1);
    this.#device.queue.submit([encoder.finish()]);
    if (!timestamps) {
      await withWatchdog(
        this.#device.queue.onSubmittedWorkDone(),
        this.settings.watchdogMs,
        `${reps} device-resident runs`,
      );
      return { wallMs: performance.now() - started };
    }
    // Mapping the timestamps is the one synchronisation: it waits for every dispatch.
    const gpuMs = await timestamps.read(1, this.settings.watchdogMs);
    return withGpu({ wallMs: performance.now() - started }, gpuMs);
  }

  #alive(): void {
    if (this.#disposed) {
      throw new Error(`Cannot run ${this.#what}: it was disposed, prepare it again`);
    }
    if (this.gpu.loss) {
      throw new Error(
        `WebGPU device was lost ("${this.gpu.loss.reason}"): reopen it with gpu.reopen()`,
      );
    }
  }

  #upload(set: number): void {
    const { resources, buffers } = this.parts;
    buffers.operandSets[set]!.forEach((buffer, i) => resources.upload(buffer, buffers.uploads[i]!));
  }

  #dispatch(
    encoder: GPUCommandEncoder,
    set: number,
    timestampWrites?: GPUComputePassTimestampWrites,
  ): void {
    const { compiled, groups } = this.parts.compiled;
    const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : {});
    recordDispatch(pass, compiled, groups[set]!, this.program.workgroups);
    pass.end();
  }

  #readOutput(encoder: GPUCommandEncoder, what: string): Promise<ArrayBuffer> {
    const { output, outBytes, readback } = this.parts.buffers;
    readback.copy(encoder, output, outBytes);
    this.#device.queue.submit([encoder.finish()]);
    return readback.read(what, this.settings.watchdogMs);
  }
}

function withGpu(timing: { wallMs: number }, gpuMs: number | null): BatchTiming {
  return gpuMs === null ? timing : { ...timing, gpuMs };
}

function checkLimits(
  limits: GPUSupportedLimits,
  op: OpSpec,
  program: WgslProgram,
  inputs: OpInputs,
  dtype: Dtype,
): void {
  const perDimension = limits.maxComputeWorkgroupsPerDimension;
  if (program.workgroups.some((w) => w > perDimension)) {
    throw new UnsupportedError(
      `Dispatch [${
        program.workgroups.join(", ")
      }] of ${op.name} exceeds maxComputeWorkgroupsPerDimension ${perDimension}`,
    );
  }
  const storageBindings = inputs.arrays.length + 1 + (program.scratchBytes === undefined ? 0 : 1);
  if (storageBindings > limits.maxStorageBuffersPerShaderStage) {
    throw new UnsupportedError(
      `${op.name} binds ${storageBindings} storage buffers, over maxStorageBuffersPerShaderStage ${limits.maxStorageBuffersPerShaderStage}`,
    );
  }
  const largest = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const sizes = [
    ...inputs.arrays.map((a, i) => [`operand ${i}`, a.byteLength] as const),
    ["output", inputs.outputLength * (dtype === "f16" ? 2 : 4)] as const,
    ["scratch", program.scratchBytes ?? 0] as const,
  ];
  for (const [name, bytes] of sizes) {
    if (alignBytes(bytes, STORAGE_ALIGN) > largest) {
      throw new UnsupportedError(
        `${op.name} ${name} needs ${bytes} bytes, over the adapter's largest storage binding ${largest}`,
      );
    }
  }
}

function hostBytes(array: HostArray): Uint8Array<ArrayBuffer> {
  const size = alignBytes(Math.max(array.byteLength, 4), 4);
  if (array.buffer instanceof ArrayBuffer && size === array.byteLength) {
    return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  }
  // writeBuffer moves whole 4-byte words from unshared memory: odd f16 and int8 lengths get a
  // zero tail, operands in shared memory (wasm-mt) a private copy.
  const copy = new Uint8Array(size);
  copy.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  return copy;
}

function toFloat32(bytes: ArrayBuffer, length: number, dtype: Dtype): Float32Array {
  if (dtype === "f16") return Float32Array.from(new Float16Array(bytes, 0, length));
  return new Float32Array(bytes, 0, length);
}

/**
 * How many copies of one case's operands the runner rotates through: {@linkcode rotatedCopies},
 * spanning {@linkcode STREAMED_SPAN_BYTES} for an op that streams its operands when the runner
 * sets no span of its own, and, device-resident, {@linkcode COLD_SPAN_BYTES} for a
 * run moving {@linkcode STREAMED_FROM_BYTES} or more (as the CPU runners do): a software adapter's
 * device memory is the host's, whose last-level cache other guests share. Spanning 64 MiB (or one
 * copy of 60 MB), lavapipe's device-resident gemv f32 of 9 MB was predicted 18–42 % fast against
 * `bench:regret`'s truths, measured beside CPU cases streaming 256 MiB, and tiny-64m f32's decode
 * estimate (its weights 256 MB a token) 15–28 % fast in three calibrations.
 *
 * @param op The op.
 * @param operandBytes Bytes of one copy of the case's operands.
 * @param settings The runner's rotation settings.
 * @param streamed Whether the case is device-resident and its run moves
 *   {@linkcode STREAMED_FROM_BYTES} or more.
 * @returns The number of copies.
 * @example
 * ```ts
 * import { operandCopies } from "./webgpu.ts";
 * import { getOp } from "../../kernels/catalog.ts";
 * const settings = { rotateBelowBytes: 2 ** 25, rotationCopies: 3, rotationSpanBytes: null };
 * console.log(operandCopies(getOp("add"), 1 << 20, settings)); // 3
 * console.log(operandCopies(getOp("gemv"), 1 << 20, settings)); // 64: weights as cold as a decode's
 * console.log(operandCopies(getOp("add"), 60e6, settings, true)); // 5: 300 MB
 * ```
 */
export function operandCopies(
  op: OpSpec,
  operandBytes: number,
  settings: Parameters<typeof rotatedCopies>[1],
  streamed = false,
): number {
  if (settings.rotationSpanBytes !== null) return rotatedCopies(operandBytes, settings);
  const span = streamed ? COLD_SPAN_BYTES : op.streamsOperands ? STREAMED_SPAN_BYTES : null;
  return rotatedCopies(
    operandBytes,
    span === null ? settings : { ...settings, rotationSpanBytes: span },
  );
}

/**
 * How many copies of a case's operands a runner rotates through: enough to span
 * `rotationSpanBytes` when it is set (at most {@linkcode MAX_ROTATION_COPIES}), else
 * `rotationCopies` for operand sets under `rotateBelowBytes` and one for larger sets.
 *
 * @param operandBytes Bytes of one copy of the case's operands.
 * @param settings The runner's rotation settings.
 * @returns The number of copies.
 * @example
 * ```ts
 * import { rotatedCopies } from "./webgpu.ts";
 * const cold = { rotateBelowBytes: 2 ** 25, rotationCopies: 3, rotationSpanBytes: 10e6 };
 * console.log(rotatedCopies(160e3, cold)); // 63: 10 MB between two uses of a copy
 * ```
 */
export function rotatedCopies(
  operandBytes: number,
  settings: {
    readonly rotateBelowBytes: number;
    readonly rotationCopies: number;
    readonly rotationSpanBytes: number | null;
  },
): number {
  const span = settings.rotationSpanBytes;
  if (span !== null) {
    return Math.min(MAX_ROTATION_COPIES, Math.max(1, Math.ceil(span / Math.max(operandBytes, 1))));
  }
  return operandBytes < settings.rotateBelowBytes ? settings.rotationCopies : 1;
}
