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
import { type BatchTiming, type Prepared, type Runner, UnsupportedError } from "../runner.ts";
import { withWatchdog } from "./_watchdog.ts";

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
/** Most operand copies `rotationSpanBytes` makes (a tiny operand would otherwise need thousands). */
export const MAX_ROTATION_COPIES = 256;

/** WebGPU caps a query set at 4096 queries: 2048 begin/end pairs. */
const QUERIES_PER_SET = 4096;
/** Storage buffers are padded to this, so `vec4` views of an operand reach its last elements. */
const STORAGE_ALIGN = 16;

interface DeviceCache {
  readonly pipelines: Map<string, GPUComputePipeline>;
  readonly layouts: Map<string, GPUBindGroupLayout>;
}

// Keyed by device, so a destroyed or lost device takes its pipelines with it.
const caches = new WeakMap<GPUDevice, DeviceCache>();

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
  return {
    backend: "webgpu",
    async prepare(op, shape, dtype, variant, inputs, residency) {
      const prepared = await prepareWebGpu(
        gpu,
        settings,
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
  const { device } = gpu;
  if (gpu.loss) {
    throw new Error(
      `WebGPU device was lost ("${gpu.loss.reason}": ${gpu.loss.message}): reopen it with gpu.reopen()`,
    );
  }
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

  const uploads = inputs.arrays.map(hostBytes);
  const operandBytes = uploads.reduce((sum, u) => sum + u.byteLength, 0);
  const copies = rotatedCopies(operandBytes, settings);
  const outBytes = align(inputs.outputLength * (dtype === "f16" ? 2 : 4), 4);
  const owned: (GPUBuffer | GPUQuerySet)[] = [];
  const make = (size: number, usage: number) => {
    const buffer = device.createBuffer({ size: align(Math.max(size, 4), STORAGE_ALIGN), usage });
    owned.push(buffer);
    return buffer;
  };
  const destroyOwned = () => {
    for (const o of owned) o.destroy();
    owned.length = 0;
  };

  try {
    device.pushErrorScope("out-of-memory");
    const operandSets = Array.from(
      { length: copies },
      () =>
        uploads.map((u) => make(u.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST)),
    );
    const output = make(
      outBytes,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    );
    const staging = make(outBytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const uniform = program.uniforms
      ? make(program.uniforms.byteLength, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST)
      : null;
    const scratch = program.scratchBytes === undefined
      ? null
      : make(program.scratchBytes, GPUBufferUsage.STORAGE);
    const oom = await device.popErrorScope();
    if (oom) {
      throw new UnsupportedError(
        `Out of device memory for ${op.name} at ${JSON.stringify(shape)}: ${oom.message}`,
      );
    }

    for (const set of operandSets) {
      set.forEach((buffer, i) => device.queue.writeBuffer(buffer, 0, uploads[i]!));
    }
    if (uniform && program.uniforms) {
      device.queue.writeBuffer(uniform, 0, new Uint32Array(program.uniforms));
    }

    const started = performance.now();
    device.pushErrorScope("validation");
    const pipeline = pipelineFor(device, program, dtype, uploads.length);
    const groups = operandSets.map((set) =>
      device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          ...[...set, output].map((buffer, binding) => ({ binding, resource: { buffer } })),
          ...(uniform ? [{ binding: set.length + 1, resource: { buffer: uniform } }] : []),
          ...(scratch ? [{ binding: set.length + 2, resource: { buffer: scratch } }] : []),
        ],
      })
    );
    const first = device.createCommandEncoder();
    dispatch(first, pipeline, groups[0]!, program.workgroups);
    device.queue.submit([first.finish()]);
    const invalid = await device.popErrorScope();
    if (invalid) throw new Error(`WebGPU rejected ${op.name} (${program.key}): ${invalid.message}`);
    await withWatchdog(
      device.queue.onSubmittedWorkDone(),
      settings.watchdogMs,
      "the first dispatch",
    );
    const compileMs = performance.now() - started;

    const timestamps = device.features.has("timestamp-query")
      ? new TimestampPool(device, owned)
      : null;
    const hostOut = new Uint8Array(outBytes);
    const readback = async (encoder: GPUCommandEncoder, what: string) => {
      encoder.copyBufferToBuffer(output, 0, staging, 0, outBytes);
      device.queue.submit([encoder.finish()]);
      await withWatchdog(staging.mapAsync(GPUMapMode.READ, 0, outBytes), settings.watchdogMs, what);
      hostOut.set(new Uint8Array(staging.getMappedRange(0, outBytes)));
      staging.unmap();
    };
    const upload = (set: number) =>
      operandSets[set]!.forEach((buffer, i) => device.queue.writeBuffer(buffer, 0, uploads[i]!));

    let disposed = false;
    let verifications = 0;
    const alive = () => {
      if (disposed) {
        throw new Error(
          `Cannot run ${op.name} (${program.key}): it was disposed, prepare it again`,
        );
      }
      if (gpu.loss) {
        throw new Error(
          `WebGPU device was lost ("${gpu.loss.reason}"): reopen it with gpu.reopen()`,
        );
      }
    };
    const checked = async <T>(run: () => Promise<T>): Promise<T> => {
      device.pushErrorScope("validation");
      const outcome = await run().then((value) => ({ value }), (error: unknown) => ({ error }));
      const invalid = await device.popErrorScope();
      if (invalid) {
        throw new Error(`WebGPU rejected ${op.name} (${program.key}): ${invalid.message}`);
      }
      if ("error" in outcome) throw outcome.error;
      return outcome.value;
    };

    return {
      compileMs,
      output: () =>
        checked(async () => {
          alive();
          // Successive calls go through every operand copy, so verification covers them all.
          const set = verifications++ % copies;
          upload(set);
          const encoder = device.createCommandEncoder();
          // A kernel that skips elements must not pass verification on a previous run's output.
          encoder.clearBuffer(output);
          dispatch(encoder, pipeline, groups[set]!, program.workgroups);
          await readback(encoder, "the verification readback");
          return toFloat32(hostOut, inputs.outputLength, dtype);
        }),
      time: (reps) =>
        checked(async () => {
          alive();
          if (!Number.isInteger(reps) || reps < 1) {
            throw new RangeError(`Cannot time ${reps} runs: pass a positive integer`);
          }
          timestamps?.reserve(reps);
          const started = performance.now();
          if (residency === "end-to-end") {
            for (let r = 0; r < reps; r++) {
              upload(r % copies);
              const encoder = device.createCommandEncoder();
              dispatch(
                encoder,
                pipeline,
                groups[r % copies]!,
                program.workgroups,
                timestamps?.writes(r),
              );
              await readback(encoder, `end-to-end run ${r + 1} of ${reps}`);
            }
            const wallMs = performance.now() - started;
            if (!timestamps) return { wallMs };
            const encoder = device.createCommandEncoder();
            timestamps.resolve(encoder, reps);
            device.queue.submit([encoder.finish()]);
            return withGpu({ wallMs }, await timestamps.read(reps, settings.watchdogMs));
          }
          // One compute pass for the batch, as a program chains its kernels: a pass per dispatch
          // costs ~78 µs each on lavapipe against ~31 µs in one pass, and a decode step's
          // hundred-odd small kernels would be priced that much too slow.
          const encoder = device.createCommandEncoder();
          const pass = encoder.beginComputePass(
            timestamps ? { timestampWrites: timestamps.batchWrites() } : {},
          );
          pass.setPipeline(pipeline);
          for (let r = 0; r < reps; r++) {
            pass.setBindGroup(0, groups[r % copies]!);
            pass.dispatchWorkgroups(...program.workgroups);
          }
          pass.end();
          if (timestamps) timestamps.resolve(encoder, 1);
          device.queue.submit([encoder.finish()]);
          if (!timestamps) {
            await withWatchdog(
              device.queue.onSubmittedWorkDone(),
              settings.watchdogMs,
              `${reps} device-resident runs`,
            );
            return { wallMs: performance.now() - started };
          }
          // Mapping the timestamps is the one synchronisation: it waits for every dispatch.
          const gpuMs = await timestamps.read(1, settings.watchdogMs);
          return withGpu({ wallMs: performance.now() - started }, gpuMs);
        }),
      dispose: () => {
        disposed = true;
        destroyOwned();
      },
    };
  } catch (e) {
    destroyOwned();
    throw e;
  }
}

function withGpu(timing: { wallMs: number }, gpuMs: number | null): BatchTiming {
  return gpuMs === null ? timing : { ...timing, gpuMs };
}

function dispatch(
  encoder: GPUCommandEncoder,
  pipeline: GPUComputePipeline,
  group: GPUBindGroup,
  workgroups: readonly [number, number, number],
  timestampWrites?: GPUComputePassTimestampWrites,
): void {
  const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : {});
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(workgroups[0], workgroups[1], workgroups[2]);
  pass.end();
}

function pipelineFor(
  device: GPUDevice,
  program: WgslProgram,
  dtype: Dtype,
  operands: number,
): GPUComputePipeline {
  let cache = caches.get(device);
  if (!cache) {
    cache = { pipelines: new Map(), layouts: new Map() };
    caches.set(device, cache);
  }
  const hasUniforms = program.uniforms !== undefined;
  const hasScratch = program.scratchBytes !== undefined;
  const layoutKey = `operands=${operands}|uniforms=${hasUniforms}|scratch=${hasScratch}`;
  const key = `${program.key}|${dtype}|${layoutKey}`;
  const cached = cache.pipelines.get(key);
  if (cached) return cached;
  let layout = cache.layouts.get(layoutKey);
  if (!layout) {
    // An explicit layout: "auto" would drop bindings a shader does not read and break the bind group.
    const entries: GPUBindGroupLayoutEntry[] = [];
    for (let i = 0; i < operands; i++) {
      entries.push({
        binding: i,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: "read-only-storage" },
      });
    }
    entries.push({
      binding: operands,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type: "storage" },
    });
    if (hasUniforms) {
      entries.push({
        binding: operands + 1,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: "uniform" },
      });
    }
    if (hasScratch) {
      entries.push({
        binding: operands + 2,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: "storage" },
      });
    }
    layout = device.createBindGroupLayout({ entries });
    cache.layouts.set(layoutKey, layout);
  }
  const pipeline = device.createComputePipeline({
    label: key,
    layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: {
      module: device.createShaderModule({ label: key, code: program.code }),
      entryPoint: "main",
    },
  });
  cache.pipelines.set(key, pipeline);
  return pipeline;
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
    if (align(bytes, STORAGE_ALIGN) > largest) {
      throw new UnsupportedError(
        `${op.name} ${name} needs ${bytes} bytes, over the adapter's largest storage binding ${largest}`,
      );
    }
  }
}

/** Begin/end timestamp pairs, one per run, in query sets of 2048 pairs; resolved and read in bulk. */
class TimestampPool {
  #sets: GPUQuerySet[] = [];
  #resolved: GPUBuffer | null = null;
  #readable: GPUBuffer | null = null;

  constructor(readonly device: GPUDevice, readonly owned: (GPUBuffer | GPUQuerySet)[]) {}

  reserve(runs: number): void {
    const setsNeeded = Math.ceil((2 * runs) / QUERIES_PER_SET);
    if (setsNeeded <= this.#sets.length) return;
    while (this.#sets.length < setsNeeded) {
      const set = this.device.createQuerySet({ type: "timestamp", count: QUERIES_PER_SET });
      this.owned.push(set);
      this.#sets.push(set);
    }
    for (const old of [this.#resolved, this.#readable]) old?.destroy();
    const size = setsNeeded * QUERIES_PER_SET * 8;
    this.#resolved = this.device.createBuffer({
      size,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    });
    this.#readable = this.device.createBuffer({
      size,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    this.owned.push(this.#resolved, this.#readable);
  }

  writes(run: number): GPUComputePassTimestampWrites {
    const index = (2 * run) % QUERIES_PER_SET;
    return {
      querySet: this.#sets[Math.floor((2 * run) / QUERIES_PER_SET)]!,
      beginningOfPassWriteIndex: index,
      endOfPassWriteIndex: index + 1,
    };
  }

  /**
   * Timestamps at the start and end of a device-resident batch's one compute pass. (A timestamp
   * write in every pass costs ~0.3 ms per pass on lavapipe, ten times a small kernel.)
   */
  batchWrites(): GPUComputePassTimestampWrites {
    return { querySet: this.#sets[0]!, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 };
  }

  resolve(encoder: GPUCommandEncoder, runs: number): void {
    for (let s = 0; s * QUERIES_PER_SET < 2 * runs; s++) {
      const count = Math.min(QUERIES_PER_SET, 2 * runs - s * QUERIES_PER_SET);
      encoder.resolveQuerySet(this.#sets[s]!, 0, count, this.#resolved!, s * QUERIES_PER_SET * 8);
    }
    encoder.copyBufferToBuffer(this.#resolved!, 0, this.#readable!, 0, 2 * runs * 8);
  }

  /** Sum of the runs' GPU times, ms, or null when the timestamps are not usable (zero or backwards). */
  async read(runs: number, watchdogMs: number): Promise<number | null> {
    const readable = this.#readable!;
    await withWatchdog(
      readable.mapAsync(GPUMapMode.READ, 0, 2 * runs * 8),
      watchdogMs,
      "the timestamp readback",
    );
    const ticks = new BigInt64Array(readable.getMappedRange(0, 2 * runs * 8));
    let totalNs = 0n;
    let usable = true;
    for (let r = 0; r < runs; r++) {
      const delta = ticks[2 * r + 1]! - ticks[2 * r]!;
      if (delta < 0n) usable = false;
      totalNs += delta;
    }
    readable.unmap();
    return usable && totalNs > 0n ? Number(totalNs) / 1e6 : null;
  }
}

function hostBytes(array: HostArray): Uint8Array<ArrayBuffer> {
  const size = align(Math.max(array.byteLength, 4), 4);
  if (array.buffer instanceof ArrayBuffer && size === array.byteLength) {
    return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  }
  // writeBuffer moves whole 4-byte words from unshared memory: odd f16 and int8 lengths get a
  // zero tail, operands in shared memory (wasm-mt) a private copy.
  const copy = new Uint8Array(size);
  copy.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  return copy;
}

function toFloat32(bytes: Uint8Array, length: number, dtype: Dtype): Float32Array {
  if (dtype === "f16") return Float32Array.from(new Float16Array(bytes.buffer, 0, length));
  return new Float32Array(bytes.buffer.slice(0, length * 4));
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

function align(bytes: number, to: number): number {
  return Math.ceil(bytes / to) * to;
}
