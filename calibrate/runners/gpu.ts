/**
 * The WebGPU plumbing every GPU program of gpucal goes through: the `webgpu` runner's catalog
 * kernels and the synthetic decode's alike, so there is one WebGPU engine.
 *
 * - A program is its WGSL, a cache key and its bindings ({@linkcode GpuProgram}); catalog
 *   programs get theirs from the kernel contract ({@linkcode opProgram}).
 * - {@linkcode compileProgram} builds a pipeline with an explicit bind-group layout — an `"auto"`
 *   layout drops the bindings a shader does not use, and a bind group naming them then fails —
 *   and caches both per device (a `WeakMap`, so a lost or destroyed device takes them along).
 * - {@linkcode GpuResources} creates padded buffers and query sets and destroys them together;
 *   {@linkcode Readback} brings results to the host through one reused staging buffer;
 *   {@linkcode TimestampQueries} takes GPU timestamps where the adapter has `timestamp-query`.
 *
 * @module
 */
import type { Dtype, WgslProgram } from "../../kernels/types.ts";
import { withWatchdog } from "./_watchdog.ts";

/**
 * How a program uses one buffer of bind group 0: read-only storage (`var<storage, read>`),
 * read-write storage (`var<storage, read_write>`) or a uniform block (`var<uniform>`).
 *
 * @example
 * ```ts
 * import type { GpuBinding } from "./gpu.ts";
 * const output: GpuBinding = "read_write";
 * ```
 */
export type GpuBinding = "read" | "read_write" | "uniform";

/**
 * A WGSL compute program ready to compile: what the pipeline cache and the bind-group layouts
 * need to know of it.
 *
 * @example
 * ```ts
 * import type { GpuProgram } from "./gpu.ts";
 * const scale: GpuProgram = {
 *   key: "scale|n=64",
 *   bindings: ["read_write"],
 *   code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
 * @compute @workgroup_size(64)
 * fn main(@builtin(global_invocation_id) g: vec3<u32>) { x[g.x] *= 2.0; }`,
 * };
 * ```
 */
export interface GpuProgram {
  /** Complete WGSL source with an `@compute` entry point named `main`. */
  readonly code: string;
  /** Cache key folding in every parameter that changes `code`. */
  readonly key: string;
  /**
   * Binding `i` of group 0 at index `i`; `null` for a number the program leaves unused. The
   * layout keeps a binding the shader declares but never reads, so bind groups stay valid.
   */
  readonly bindings: readonly (GpuBinding | null)[];
}

/**
 * A compiled program: its pipeline and the explicit layout its bind groups use.
 *
 * @example
 * ```ts
 * import type { CompiledProgram } from "./gpu.ts";
 * const name = (c: CompiledProgram) => c.program.key;
 * ```
 */
export interface CompiledProgram {
  readonly program: GpuProgram;
  readonly pipeline: GPUComputePipeline;
  readonly layout: GPUBindGroupLayout;
}

/** A buffer bound whole, or a range of one. */
export type GpuResource = GPUBuffer | GPUBufferBinding;

/** Storage buffers are padded to this, so `vec4` views of an operand reach its last elements. */
export const STORAGE_ALIGN = 16;
/** WebGPU caps a query set at 4096 queries: 2048 begin/end pairs. */
const QUERIES_PER_SET = 4096;

const LAYOUT_TYPES: Readonly<Record<GpuBinding, GPUBufferBindingType>> = {
  read: "read-only-storage",
  read_write: "storage",
  uniform: "uniform",
};

interface DeviceCache {
  readonly pipelines: Map<string, CompiledProgram>;
  readonly layouts: Map<string, GPUBindGroupLayout>;
}

// Keyed by device, so a destroyed or lost device takes its pipelines with it.
const caches = new WeakMap<GPUDevice, DeviceCache>();

/**
 * Rounds a byte count up to a multiple of `to`.
 *
 * @param bytes The byte count.
 * @param to The alignment.
 * @returns The aligned count.
 * @example
 * ```ts
 * import { alignBytes } from "./gpu.ts";
 * console.log(alignBytes(17, 16)); // 32
 * ```
 */
export function alignBytes(bytes: number, to: number): number {
  return Math.ceil(bytes / to) * to;
}

/**
 * A catalog program as the kernel contract binds it (see `WgslProgram` in `kernels/types.ts`):
 * operands `0..n-1` read-only, the output at `n`, the uniforms at `n + 1` when it has some, a
 * scratch buffer at `n + 2` when it asks for one. Its key adds the dtype.
 *
 * @param program The op's program.
 * @param dtype The dtype it was made for.
 * @param operands How many operands it reads.
 * @returns The program with its bindings.
 * @example
 * ```ts
 * import { opProgram } from "./gpu.ts";
 * import { gemvWebGpu } from "../../kernels/gemv/webgpu.ts";
 * const program = gemvWebGpu.program({ rows: 64, cols: 64 }, "q4", gemvWebGpu.variants[0]!);
 * console.log(opProgram(program, "q4", 3).bindings);
 * // ["read", "read", "read", "read_write", "uniform"]
 * ```
 */
export function opProgram(program: WgslProgram, dtype: Dtype, operands: number): GpuProgram {
  const bindings: (GpuBinding | null)[] = Array.from({ length: operands }, () => "read");
  bindings.push("read_write");
  if (program.uniforms !== undefined || program.scratchBytes !== undefined) {
    bindings.push(program.uniforms === undefined ? null : "uniform");
  }
  if (program.scratchBytes !== undefined) bindings.push("read_write");
  return { code: program.code, key: `${program.key}|${dtype}`, bindings };
}

/**
 * The group-0 bindings a WGSL source declares, by binding number (`null` where it declares none).
 *
 * @param code WGSL source.
 * @returns The declared bindings.
 * @example
 * ```ts
 * import { wgslBindings } from "./gpu.ts";
 * const code = `@group(0) @binding(0) var<storage, read> a: array<f32>;
 * @group(0) @binding(2) var<uniform> dims: vec4<u32>;`;
 * console.log(wgslBindings(code)); // ["read", null, "uniform"]
 * ```
 */
export function wgslBindings(code: string): (GpuBinding | null)[] {
  const declared: (GpuBinding | null)[] = [];
  const pattern =
    /@group\(\s*0\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var\s*<\s*(storage|uniform)\s*(?:,\s*(read_write|read)\s*)?>/g;
  for (const m of code.matchAll(pattern)) {
    const binding = Number(m[1]);
    while (declared.length <= binding) declared.push(null);
    declared[binding] = m[2] === "uniform"
      ? "uniform"
      : m[3] === "read_write"
      ? "read_write"
      : "read";
  }
  return declared;
}

/**
 * The workgroup size a WGSL source declares, `[x, y, z]`, or null when it is not literal numbers.
 *
 * @param code WGSL source.
 * @returns The size.
 * @example
 * ```ts
 * import { wgslWorkgroupSize } from "./gpu.ts";
 * console.log(wgslWorkgroupSize("@compute @workgroup_size(32, 4) fn main() {}")); // [32, 4, 1]
 * ```
 */
export function wgslWorkgroupSize(code: string): [number, number, number] | null {
  const m = /@workgroup_size\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?,?\s*\)/.exec(code);
  return m ? [Number(m[1]), Number(m[2] ?? 1), Number(m[3] ?? 1)] : null;
}

/**
 * Checks that a program's declared bindings agree with its WGSL: every binding the WGSL declares
 * must be declared the same way (the program may declare more, which its layout then keeps).
 *
 * @param program The program.
 * @throws {TypeError} naming the first binding that disagrees.
 * @example
 * ```ts
 * import { checkBindings } from "./gpu.ts";
 * const code = "@group(0) @binding(0) var<storage, read_write> x: array<f32>;";
 * checkBindings({ key: "x", code, bindings: ["read_write"] });
 * try {
 *   checkBindings({ key: "x", code, bindings: ["read"] });
 * } catch (e) {
 *   console.log((e as Error).message.startsWith('Program "x" declares binding 0')); // true
 * }
 * ```
 */
export function checkBindings(program: GpuProgram): void {
  wgslBindings(program.code).forEach((inWgsl, binding) => {
    const declared = program.bindings[binding] ?? null;
    if (inWgsl !== null && inWgsl !== declared) {
      throw new TypeError(
        `Program "${program.key}" declares binding ${binding} as ${JSON.stringify(declared)} ` +
          `but its WGSL has "${inWgsl}": make the two agree`,
      );
    }
  });
}

function cacheOf(device: GPUDevice): DeviceCache {
  let cache = caches.get(device);
  if (!cache) {
    cache = { pipelines: new Map(), layouts: new Map() };
    caches.set(device, cache);
  }
  return cache;
}

function layoutKey(bindings: readonly (GpuBinding | null)[]): string {
  return bindings.map((b) => b ?? "-").join(",");
}

function bindGroupLayout(
  device: GPUDevice,
  cache: DeviceCache,
  bindings: readonly (GpuBinding | null)[],
): GPUBindGroupLayout {
  const key = layoutKey(bindings);
  let layout = cache.layouts.get(key);
  if (!layout) {
    const entries: GPUBindGroupLayoutEntry[] = [];
    bindings.forEach((b, binding) => {
      if (b !== null) {
        entries.push({
          binding,
          visibility: GPUShaderStage.COMPUTE,
          buffer: { type: LAYOUT_TYPES[b] },
        });
      }
    });
    layout = device.createBindGroupLayout({ label: key, entries });
    cache.layouts.set(key, layout);
  }
  return layout;
}

/**
 * The pipeline of a program on a device with an explicit bind-group layout, compiled on first use
 * and cached per device by the program's key and bindings. (Drivers may defer the real compile to
 * the first dispatch.)
 *
 * @param device The device.
 * @param program The program.
 * @returns The compiled program.
 * @throws {TypeError} when the program's bindings disagree with its WGSL.
 * @example
 * ```ts ignore
 * import { bindGroupFor, compileProgram, GpuResources } from "./gpu.ts";
 * const device = await (await navigator.gpu.requestAdapter())!.requestDevice();
 * const compiled = compileProgram(device, {
 *   key: "double|n=64",
 *   bindings: ["read_write"],
 *   code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
 * @compute @workgroup_size(64)
 * fn main(@builtin(global_invocation_id) g: vec3<u32>) { x[g.x] *= 2.0; }`,
 * });
 * const resources = new GpuResources(device);
 * const group = bindGroupFor(device, compiled, [resources.buffer(256, GPUBufferUsage.STORAGE)]);
 * console.log(compiled.program.key, group !== null);
 * resources.destroy();
 * device.destroy();
 * ```
 */
export function compileProgram(device: GPUDevice, program: GpuProgram): CompiledProgram {
  const cache = cacheOf(device);
  const key = `${program.key}|${layoutKey(program.bindings)}`;
  const cached = cache.pipelines.get(key);
  if (cached) return cached;
  checkBindings(program);
  const layout = bindGroupLayout(device, cache, program.bindings);
  const pipeline = device.createComputePipeline({
    label: key,
    layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: {
      module: device.createShaderModule({ label: key, code: program.code }),
      entryPoint: "main",
    },
  });
  const compiled = { program, pipeline, layout };
  cache.pipelines.set(key, compiled);
  return compiled;
}

/**
 * A bind group for a compiled program: `resources[i]` at binding `i`, `null` where the program
 * leaves the binding unused.
 *
 * @param device The device.
 * @param compiled The program.
 * @param resources One buffer (or buffer range) per binding.
 * @returns The bind group.
 * @throws {RangeError} when the resources do not match the program's bindings one for one.
 * @example
 * ```ts ignore
 * // See compileProgram().
 * ```
 */
export function bindGroupFor(
  device: GPUDevice,
  compiled: CompiledProgram,
  resources: readonly (GpuResource | null)[],
): GPUBindGroup {
  const { bindings, key } = compiled.program;
  if (
    resources.length !== bindings.length ||
    resources.some((r, i) => (r === null) !== (bindings[i] === null))
  ) {
    throw new RangeError(
      `Program "${key}" binds [${layoutKey(bindings)}], got ${resources.length} resources ` +
        `with nulls at [${resources.flatMap((r, i) => r === null ? [i] : []).join(", ")}]`,
    );
  }
  const entries: GPUBindGroupEntry[] = [];
  resources.forEach((r, binding) => {
    if (r !== null) entries.push({ binding, resource: r instanceof GPUBuffer ? { buffer: r } : r });
  });
  return device.createBindGroup({ layout: compiled.layout, entries });
}

/**
 * Records one dispatch of a compiled program into an open compute pass.
 *
 * @param pass The pass.
 * @param compiled The program.
 * @param group Its bind group.
 * @param workgroups Workgroup counts.
 * @example
 * ```ts ignore
 * import { recordDispatch } from "./gpu.ts";
 * const pass = encoder.beginComputePass();
 * recordDispatch(pass, compiled, group, [4, 1, 1]);
 * pass.end();
 * ```
 */
export function recordDispatch(
  pass: GPUComputePassEncoder,
  compiled: CompiledProgram,
  group: GPUBindGroup,
  workgroups: readonly [number, number, number],
): void {
  pass.setPipeline(compiled.pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(workgroups[0], workgroups[1], workgroups[2]);
}

/**
 * Runs `run` inside a validation error scope and throws what WebGPU rejected in it.
 *
 * @param device The device.
 * @param what What is run, for the message (`"add (add|f32|wg=64) "`...).
 * @param run The GPU work.
 * @returns Its value.
 * @throws {Error} `WebGPU rejected <what>: <reason>` when validation failed; else what `run` threw.
 * @example
 * ```ts ignore
 * import { validated } from "./gpu.ts";
 * await validated(device, "the decode's bind groups", () => buildGroups());
 * ```
 */
export async function validated<T>(
  device: GPUDevice,
  what: string,
  run: () => Promise<T> | T,
): Promise<T> {
  device.pushErrorScope("validation");
  let outcome: { value: T } | { error: unknown };
  try {
    outcome = { value: await run() };
  } catch (error) {
    outcome = { error };
  }
  const invalid = await device.popErrorScope();
  if (invalid) throw new Error(`WebGPU rejected ${what}: ${invalid.message}`);
  if ("error" in outcome) throw outcome.error;
  return outcome.value;
}

/**
 * The buffers and query sets of one piece of GPU work, destroyed together. Buffers are padded to
 * {@linkcode STORAGE_ALIGN} bytes (at least 16), so `vec4` views reach an operand's tail.
 *
 * @example
 * ```ts ignore
 * import { GpuResources } from "./gpu.ts";
 * const resources = new GpuResources(device);
 * const x = resources.buffer(40, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, "x");
 * resources.upload(x, new Float32Array(10).fill(1));
 * resources.destroy();
 * ```
 */
export class GpuResources {
  readonly #owned: (GPUBuffer | GPUQuerySet)[] = [];

  /** @param device The device the resources live on. */
  constructor(readonly device: GPUDevice) {}

  /**
   * A new buffer of at least `bytes` bytes.
   *
   * @param bytes Bytes needed.
   * @param usage `GPUBufferUsage` flags.
   * @param label A name for debugging.
   * @returns The buffer.
   */
  buffer(bytes: number, usage: number, label?: string): GPUBuffer {
    const size = alignBytes(Math.max(bytes, 4), STORAGE_ALIGN);
    const buffer = this.device.createBuffer(
      label === undefined ? { size, usage } : { label, size, usage },
    );
    this.#owned.push(buffer);
    return buffer;
  }

  /**
   * A uniform buffer holding `data`.
   *
   * @param data The uniform block (copied; padded to 16 bytes).
   * @param label A name for debugging.
   * @returns The buffer.
   */
  uniform(data: Uint32Array, label?: string): GPUBuffer {
    const buffer = this.buffer(
      data.byteLength,
      GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      label,
    );
    this.upload(buffer, new Uint32Array(data));
    return buffer;
  }

  /**
   * Queues a write of `data` at `offset` bytes of `buffer`.
   *
   * @param buffer The destination (with `COPY_DST`).
   * @param data Host bytes, a multiple of 4 long.
   * @param offset Byte offset in the buffer.
   */
  upload(buffer: GPUBuffer, data: ArrayBufferView<ArrayBuffer>, offset = 0): void {
    this.device.queue.writeBuffer(buffer, offset, data);
  }

  /**
   * A timestamp query set.
   *
   * @param count Queries.
   * @param label A name for debugging.
   * @returns The query set.
   */
  querySet(count: number, label?: string): GPUQuerySet {
    const set = this.device.createQuerySet(
      label === undefined ? { type: "timestamp", count } : { label, type: "timestamp", count },
    );
    this.#owned.push(set);
    return set;
  }

  /** Destroys everything made here. Safe to call twice. */
  destroy(): void {
    for (const o of this.#owned) o.destroy();
    this.#owned.length = 0;
  }
}

/**
 * A staging buffer that brings device data to the host: copies are recorded into the caller's
 * encoder, and {@linkcode Readback.read} maps it after the caller submits (one synchronisation).
 *
 * @example
 * ```ts ignore
 * import { GpuResources, Readback } from "./gpu.ts";
 * const readback = new Readback(new GpuResources(device), 16);
 * const encoder = device.createCommandEncoder();
 * readback.copy(encoder, output, 16);
 * device.queue.submit([encoder.finish()]);
 * console.log(new Float32Array(await readback.read("the output")));
 * ```
 */
export class Readback {
  /** The staging buffer (`MAP_READ | COPY_DST`). */
  readonly buffer: GPUBuffer;
  /** Bytes read back. */
  readonly bytes: number;

  /**
   * @param resources Where the staging buffer is made (and destroyed).
   * @param bytes Bytes to read back.
   * @param label A name for debugging.
   */
  constructor(resources: GpuResources, bytes: number, label?: string) {
    this.bytes = alignBytes(Math.max(bytes, 4), 4);
    this.buffer = resources.buffer(
      this.bytes,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label,
    );
  }

  /**
   * Records a copy of `bytes` bytes of `source` into the staging buffer.
   *
   * @param encoder The encoder.
   * @param source The buffer to read (with `COPY_SRC`).
   * @param bytes Bytes to copy, a multiple of 4.
   * @param at Byte offsets: `from` in the source, `to` in the staging buffer (both default 0).
   */
  copy(
    encoder: GPUCommandEncoder,
    source: GPUBuffer,
    bytes: number,
    at: { readonly from?: number; readonly to?: number } = {},
  ): void {
    encoder.copyBufferToBuffer(source, at.from ?? 0, this.buffer, at.to ?? 0, bytes);
  }

  /**
   * Maps the staging buffer once the submitted copies are done and returns its bytes.
   *
   * @param what What is read, for the watchdog's message.
   * @param watchdogMs Longest wait, ms; no limit when absent.
   * @returns A host copy of the {@linkcode Readback.bytes} bytes.
   */
  async read(what: string, watchdogMs?: number): Promise<ArrayBuffer> {
    const mapped = this.buffer.mapAsync(GPUMapMode.READ, 0, this.bytes);
    await (watchdogMs === undefined ? mapped : withWatchdog(mapped, watchdogMs, what));
    const copy = this.buffer.getMappedRange(0, this.bytes).slice(0);
    this.buffer.unmap();
    return copy;
  }
}

/**
 * The GPU time of `runs` begin/end timestamp pairs, ms: their summed spans, or null when any span
 * runs backwards or the sum is zero (a driver that does not count).
 *
 * @param ticks Begin and end ticks (ns) of each run, in order.
 * @param runs How many pairs to sum.
 * @returns The summed time, or null.
 * @example
 * ```ts
 * import { timestampSpanMs } from "./gpu.ts";
 * console.log(timestampSpanMs(new BigInt64Array([0n, 1_500_000n, 2_000_000n, 2_500_000n]), 2)); // 2
 * console.log(timestampSpanMs(new BigInt64Array([5n, 5n]), 1)); // null
 * ```
 */
export function timestampSpanMs(ticks: BigInt64Array, runs: number): number | null {
  let totalNs = 0n;
  for (let r = 0; r < runs; r++) {
    const delta = ticks[2 * r + 1]! - ticks[2 * r]!;
    if (delta < 0n) return null;
    totalNs += delta;
  }
  return totalNs > 0n ? Number(totalNs) / 1e6 : null;
}

/**
 * Begin/end timestamp pairs, one per run, in query sets of 2048 pairs; resolved and read in bulk,
 * or resolved into the caller's own readback so timing adds no synchronisation.
 *
 * @example
 * ```ts ignore
 * import { GpuResources, TimestampQueries } from "./gpu.ts";
 * const clock = TimestampQueries.create(new GpuResources(device));
 * if (clock) {
 *   clock.reserve(1);
 *   const encoder = device.createCommandEncoder();
 *   const pass = encoder.beginComputePass({ timestampWrites: clock.batchWrites() });
 *   pass.end();
 *   clock.resolve(encoder, 1);
 *   device.queue.submit([encoder.finish()]);
 *   console.log(await clock.read(1, 30_000), "ms");
 * }
 * ```
 */
export class TimestampQueries {
  #sets: GPUQuerySet[] = [];
  #resolved: GPUBuffer | null = null;
  #readable: GPUBuffer | null = null;

  private constructor(readonly resources: GpuResources) {}

  /**
   * Timestamp queries on the resources' device, or null when it lacks `timestamp-query`.
   *
   * @param resources Where the query sets and buffers are made (and destroyed).
   * @returns The queries, or null.
   */
  static create(resources: GpuResources): TimestampQueries | null {
    return resources.device.features.has("timestamp-query")
      ? new TimestampQueries(resources)
      : null;
  }

  /**
   * Makes room for `runs` pairs (query sets and resolve buffers grow, never shrink).
   *
   * @param runs Runs to time.
   */
  reserve(runs: number): void {
    const setsNeeded = Math.ceil((2 * runs) / QUERIES_PER_SET);
    if (setsNeeded <= this.#sets.length) return;
    while (this.#sets.length < setsNeeded) {
      this.#sets.push(this.resources.querySet(QUERIES_PER_SET));
    }
    for (const old of [this.#resolved, this.#readable]) old?.destroy();
    const size = setsNeeded * QUERIES_PER_SET * 8;
    this.#resolved = this.resources.buffer(
      size,
      GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    );
    this.#readable = this.resources.buffer(size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
  }

  /**
   * The timestamp writes of run `run`'s own compute pass.
   *
   * @param run The run, from 0.
   * @returns The pass's timestamp writes.
   */
  writes(run: number): GPUComputePassTimestampWrites {
    const index = (2 * run) % QUERIES_PER_SET;
    return {
      querySet: this.#sets[Math.floor((2 * run) / QUERIES_PER_SET)]!,
      beginningOfPassWriteIndex: index,
      endOfPassWriteIndex: index + 1,
    };
  }

  /**
   * Timestamps at the start and end of one compute pass holding a whole batch. (A timestamp write
   * in every pass costs ~0.3 ms per pass on lavapipe, ten times a small kernel.)
   *
   * @returns The pass's timestamp writes (the pair of run 0).
   */
  batchWrites(): GPUComputePassTimestampWrites {
    return this.writes(0);
  }

  /**
   * Records resolving the first `runs` pairs and copying their ticks to this object's readable
   * buffer, or to `into` (a buffer with `COPY_DST`, at a byte offset) for the caller to map.
   *
   * @param encoder The encoder.
   * @param runs Pairs to resolve.
   * @param into Where the ticks go instead of the readable buffer.
   */
  resolve(
    encoder: GPUCommandEncoder,
    runs: number,
    into?: { readonly buffer: GPUBuffer; readonly offset: number },
  ): void {
    for (let s = 0; s * QUERIES_PER_SET < 2 * runs; s++) {
      const count = Math.min(QUERIES_PER_SET, 2 * runs - s * QUERIES_PER_SET);
      encoder.resolveQuerySet(this.#sets[s]!, 0, count, this.#resolved!, s * QUERIES_PER_SET * 8);
    }
    const target = into ?? { buffer: this.#readable!, offset: 0 };
    encoder.copyBufferToBuffer(this.#resolved!, 0, target.buffer, target.offset, 2 * runs * 8);
  }

  /**
   * Maps the readable buffer (the one synchronisation) and sums the runs' GPU times.
   *
   * @param runs Pairs resolved.
   * @param watchdogMs Longest wait, ms.
   * @returns The summed time, ms, or null when the timestamps are not usable.
   */
  async read(runs: number, watchdogMs: number): Promise<number | null> {
    const readable = this.#readable!;
    await withWatchdog(
      readable.mapAsync(GPUMapMode.READ, 0, 2 * runs * 8),
      watchdogMs,
      "the timestamp readback",
    );
    const ms = timestampSpanMs(new BigInt64Array(readable.getMappedRange(0, 2 * runs * 8)), runs);
    readable.unmap();
    return ms;
  }
}
