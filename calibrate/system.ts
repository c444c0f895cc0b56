/**
 * Machine-wide WebGPU figures: the synchronisation round trip, the cost of one more dispatch in a
 * submission, the host's cost of recording one, upload / readback / device-to-device copy
 * bandwidth and pipeline compile time.
 *
 * Transfers are timed at two sizes and the bandwidth is the slope between them, so the fixed
 * ~11 ms synchronisation Deno adds to every transfer does not pose as slow bandwidth.
 *
 * @module
 */
import type { Figure, SystemFigures } from "../core/schema.ts";
import type { GpuHandle } from "./device.ts";
import { missingSystemFigures } from "./assemble.ts";
import { medianFigure, quantile } from "../core/stats.ts";

/**
 * Options of {@linkcode measureSystem}.
 *
 * @example
 * ```ts
 * import type { SystemOptions } from "./system.ts";
 * const o: SystemOptions = { quick: true };
 * ```
 */
export interface SystemOptions {
  /** Fewer samples and smaller transfers. */
  readonly quick?: boolean;
  /** Stops early; figures not reached are null with a reason. */
  readonly signal?: AbortSignal;
}

const TRIVIAL_WGSL = (nonce: number) =>
  `// ${nonce}
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() { out[0] = out[0] + ${nonce % 1000 + 1}u; }`;

async function timeMs(fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function samples(
  n: number,
  fn: () => Promise<void>,
  signal?: AbortSignal,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n && !signal?.aborted; i++) out.push(await timeMs(fn));
  return out;
}

/** Storage bindings per recorded launch: a projection binds weights, scales, input and output. */
const RECORDED_BINDINGS = 4;
/** Distinct bind groups the recorded launches cycle through, as a decode's kernels bind their own. */
const RECORDED_GROUPS = 64;
/** Distinct pipelines they cycle through. */
const RECORDED_PIPELINES = 4;

/**
 * The host's cost of recording one more dispatch, µs per sample: a pass of `batch` dispatches
 * less a pass of one, over `batch − 1`. Each dispatch sets its own pipeline and a bind group of
 * {@linkcode RECORDED_BINDINGS} buffers, cycling through distinct ones as a decode's kernels do:
 * one binding and one bind group recorded at a third of the cost on lavapipe. Nothing is
 * submitted: the GPU's part is `perDispatchUs`. Timestamp-timed kernels exclude this cost, and a
 * program pays it before its submit.
 */
function recordingUs(
  device: GPUDevice,
  buffer: (size: number, usage: number) => GPUBuffer,
  { batch, samples, signal }: { batch: number; samples: number; signal?: AbortSignal | undefined },
): number[] {
  const names = Array.from({ length: RECORDED_BINDINGS }, (_, i) => `b${i}`);
  const layout = device.createBindGroupLayout({
    entries: names.map((_, i) => ({
      binding: i,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type: "storage" as const },
    })),
  });
  const pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });
  const code = (k: number) =>
    names.map((b, i) => `@group(0) @binding(${i}) var<storage, read_write> ${b}: array<u32>;`)
      .join("\n") +
    `\n@compute @workgroup_size(1) fn main() { ${
      names.map((b) => `${b}[0] = ${b}[0] + ${k + 1}u;`).join(" ")
    } }`;
  const pipelines = Array.from(
    { length: RECORDED_PIPELINES },
    (_, k) =>
      device.createComputePipeline({
        layout: pipelineLayout,
        compute: { module: device.createShaderModule({ code: code(k) }), entryPoint: "main" },
      }),
  );
  const groups = Array.from({ length: RECORDED_GROUPS }, () =>
    device.createBindGroup({
      layout,
      entries: names.map((_, i) => ({
        binding: i,
        resource: { buffer: buffer(256, GPUBufferUsage.STORAGE) },
      })),
    }));
  const record = (count: number) => {
    const t = performance.now();
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (let i = 0; i < count; i++) {
      pass.setPipeline(pipelines[i % RECORDED_PIPELINES]!);
      pass.setBindGroup(0, groups[i % RECORDED_GROUPS]!);
      pass.dispatchWorkgroups(1);
    }
    pass.end();
    encoder.finish();
    return performance.now() - t;
  };
  record(batch);
  const out: number[] = [];
  for (let i = 0; i < samples && !signal?.aborted; i++) {
    const one = record(1);
    out.push(Math.max(0, (record(batch) - one) / (batch - 1) * 1000));
  }
  return out;
}

/** Bandwidth from the slope between a small and a large transfer, each a list of ms samples. */
function slopeFigure(
  smallBytes: number,
  small: readonly number[],
  largeBytes: number,
  large: readonly number[],
  source: string,
): Figure {
  if (small.length === 0 || large.length === 0) {
    return { value: null, unit: "GB/s", tag: "measured", reason: "Interrupted" };
  }
  const sorted = (v: readonly number[]) => [...v].sort((a, b) => a - b);
  const s = sorted(small);
  const l = sorted(large);
  const gbps = (ds: number, dl: number) =>
    (largeBytes - smallBytes) / Math.max(dl - ds, 1e-6) / 1e6;
  const value = gbps(quantile(s, 0.5), quantile(l, 0.5));
  // The interval pairs the quartiles the pessimistic and the optimistic way round.
  const lo = gbps(quantile(s, 0.25), quantile(l, 0.75));
  const hi = gbps(quantile(s, 0.75), quantile(l, 0.25));
  return {
    value,
    unit: "GB/s",
    tag: "fitted",
    ci: [Math.min(lo, value), Math.max(hi, value)],
    source: `${source}: slope between ${smallBytes / 2 ** 20} MiB and ${
      largeBytes / 2 ** 20
    } MiB transfers, ${small.length}+${large.length} samples`,
  };
}

/** Makes buffers on a device and remembers them, so the caller destroys them all at the end. */
type MakeBuffer = (size: number, usage: number) => GPUBuffer;

/** Samples of one measurement, with the signal that stops it early. */
interface SampleOptions {
  readonly n: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * A trivial one-binding program: pipelines of {@linkcode TRIVIAL_WGSL} (a nonce makes each one
 * new to every cache) and a submit of `count` dispatches of one, resolved when the GPU is done.
 */
interface TrivialProgram {
  readonly makePipeline: (nonce: number) => GPUComputePipeline;
  readonly submitDispatches: (pipeline: GPUComputePipeline, count: number) => Promise<void>;
  /** One dispatch, its 4-byte result copied to a mappable buffer, mapped and read. */
  readonly submitAndRead: (pipeline: GPUComputePipeline) => Promise<void>;
}

function trivialProgram(device: GPUDevice, buffer: MakeBuffer): TrivialProgram {
  const target = buffer(256, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
  const readable = buffer(256, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
  const layout = device.createBindGroupLayout({
    entries: [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } }],
  });
  const pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });
  const bindGroup = device.createBindGroup({
    layout,
    entries: [{ binding: 0, resource: { buffer: target } }],
  });
  return {
    makePipeline: (nonce) =>
      device.createComputePipeline({
        layout: pipelineLayout,
        compute: {
          module: device.createShaderModule({ code: TRIVIAL_WGSL(nonce) }),
          entryPoint: "main",
        },
      }),
    submitDispatches: (pipeline, count) => {
      const encoder = encodeDispatches(pipeline, count);
      device.queue.submit([encoder.finish()]);
      return device.queue.onSubmittedWorkDone();
    },
    submitAndRead: async (pipeline) => {
      const encoder = encodeDispatches(pipeline, 1);
      encoder.copyBufferToBuffer(target, 0, readable, 0, 4);
      device.queue.submit([encoder.finish()]);
      await readable.mapAsync(GPUMapMode.READ, 0, 4);
      new Uint32Array(readable.getMappedRange(0, 4)).slice();
      readable.unmap();
    },
  };

  function encodeDispatches(pipeline: GPUComputePipeline, count: number): GPUCommandEncoder {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    for (let i = 0; i < count; i++) pass.dispatchWorkgroups(1);
    pass.end();
    return encoder;
  }
}

/** Compile times, ms: a fresh shader each time (a nonce defeats caches), through its first dispatch. */
async function compileSamples(
  program: TrivialProgram,
  { n, signal }: SampleOptions,
): Promise<number[]> {
  const compile: number[] = [];
  for (let i = 0; i < n && !signal?.aborted; i++) {
    const nonce = Math.floor(Math.random() * 1e9);
    compile.push(await timeMs(() => program.submitDispatches(program.makePipeline(nonce), 1)));
  }
  return compile;
}

/**
 * The round trip of one dispatch (ms samples), the same with its result read back (ms samples),
 * and the GPU's cost of one more dispatch in a submit (µs samples: a submit of `batch` less a
 * submit of one, over `batch − 1`), on a warmed pipeline.
 */
async function dispatchSamples(
  program: TrivialProgram,
  batch: number,
  { n, signal }: SampleOptions,
): Promise<{ roundTrip: number[]; readRoundTrip: number[]; perDispatch: number[] }> {
  const pipeline = program.makePipeline(1);
  await program.submitAndRead(pipeline);
  // Alternated, so that both round trips meet the same moments of the host's polling.
  const roundTrip: number[] = [];
  const readRoundTrip: number[] = [];
  for (let i = 0; i < n && !signal?.aborted; i++) {
    roundTrip.push(await timeMs(() => program.submitDispatches(pipeline, 1)));
    readRoundTrip.push(await timeMs(() => program.submitAndRead(pipeline)));
  }
  const batched = await samples(n, () => program.submitDispatches(pipeline, batch), signal);
  const perDispatch = batched.map((t, i) =>
    Math.max(0, (t - (roundTrip[i] ?? t)) / (batch - 1) * 1000)
  );
  return { roundTrip, readRoundTrip, perDispatch };
}

/** Times of a transfer at the small and at the large size, ms, alternating. */
interface TransferPair {
  readonly small: number[];
  readonly large: number[];
}

/** What the transfer timings measured: each kind's pair and the sizes they were timed at. */
interface TransferSamples {
  readonly smallBytes: number;
  readonly largeBytes: number;
  /** Copies per submit of the device-to-device timing. */
  readonly copies: number;
  readonly up: TransferPair;
  readonly down: TransferPair;
  readonly cp: TransferPair;
}

/**
 * Upload, readback and device-to-device copy, each timed at a small and a large size, so their
 * bandwidths are slopes free of the fixed synchronisation cost.
 */
async function transferSamples(
  device: GPUDevice,
  buffer: MakeBuffer,
  quick: boolean,
  { n, signal }: SampleOptions,
): Promise<TransferSamples> {
  const smallBytes = 4 * 2 ** 20;
  const largeBytes = (quick ? 32 : 64) * 2 ** 20;
  const src = new Uint8Array(largeBytes);
  crypto.getRandomValues(src.subarray(0, 65536));
  const storage = buffer(
    largeBytes,
    GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
  );
  const storage2 = buffer(largeBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
  const staging = buffer(largeBytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
  const upload = (bytes: number) => async () => {
    device.queue.writeBuffer(storage, 0, src, 0, bytes);
    await device.queue.onSubmittedWorkDone();
  };
  const readback = (bytes: number) => async () => {
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(storage, 0, staging, 0, bytes);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ, 0, bytes);
    new Uint8Array(staging.getMappedRange(0, bytes)).slice();
    staging.unmap();
  };
  const copies = quick ? 4 : 8;
  const copy = (bytes: number) => () => {
    const encoder = device.createCommandEncoder();
    for (let i = 0; i < copies; i++) encoder.copyBufferToBuffer(storage, 0, storage2, 0, bytes);
    device.queue.submit([encoder.finish()]);
    return device.queue.onSubmittedWorkDone();
  };
  const pair = async (make: (bytes: number) => () => Promise<void>): Promise<TransferPair> => {
    const small: number[] = [];
    const large: number[] = [];
    for (let i = 0; i < n && !signal?.aborted; i++) {
      small.push(await timeMs(make(smallBytes)));
      large.push(await timeMs(make(largeBytes)));
    }
    return { small, large };
  };
  const up = await pair(upload);
  const down = await pair(readback);
  const cp = await pair(copy);
  return { smallBytes, largeBytes, copies, up, down, cp };
}

/** The three bandwidth figures from the transfer timings. */
function transferFigures(
  t: TransferSamples,
): Pick<SystemFigures, "uploadGBps" | "readbackGBps" | "copyGBps"> {
  const { smallBytes, largeBytes, copies } = t;
  return {
    uploadGBps: slopeFigure(smallBytes, t.up.small, largeBytes, t.up.large, "writeBuffer + sync"),
    readbackGBps: slopeFigure(
      smallBytes,
      t.down.small,
      largeBytes,
      t.down.large,
      "copy to MAP_READ buffer + mapAsync + copy out",
    ),
    copyGBps: slopeFigure(
      smallBytes * copies,
      t.cp.small,
      largeBytes * copies,
      t.cp.large,
      `${copies} copyBufferToBuffer in one submit`,
    ),
  };
}

/** The dispatch figures: round trip, GPU cost per dispatch, host cost of recording one. */
function dispatchFigures(
  batch: number,
  d: {
    roundTrip: number[];
    readRoundTrip: number[];
    perDispatch: number[];
    encodePerDispatch: number[];
  },
): Pick<
  SystemFigures,
  "dispatchRoundTripMs" | "readbackRoundTripMs" | "perDispatchUs" | "encodePerDispatchUs"
> {
  return {
    dispatchRoundTripMs: medianFigure(
      d.roundTrip,
      "ms",
      "submit of one trivial dispatch + onSubmittedWorkDone",
    ),
    readbackRoundTripMs: medianFigure(
      d.readRoundTrip,
      "ms",
      "submit of one trivial dispatch + copy of 4 bytes to a MAP_READ buffer + mapAsync + read",
    ),
    perDispatchUs: medianFigure(
      d.perDispatch,
      "us",
      `(${batch} dispatches − 1 dispatch) / ${batch - 1}, one submit each`,
    ),
    encodePerDispatchUs: medianFigure(
      d.encodePerDispatch,
      "us",
      `host time recording (${batch} − 1) / ${batch - 1} dispatches into a pass, each with ` +
        `its pipeline (${RECORDED_PIPELINES} cycled) and a bind group of ` +
        `${RECORDED_BINDINGS} buffers (${RECORDED_GROUPS} cycled), not submitted`,
    ),
  };
}

/**
 * Measures the system figures on `gpu`; with no adapter, every figure is null with the reason.
 *
 * @param gpu The open adapter and device, or null.
 * @param options Quick mode and abort signal.
 * @returns The figures (peak rates are left empty: they come from the sweeps).
 * @example
 * ```ts ignore
 * import { openGpu } from "./device.ts";
 * import { measureSystem } from "./system.ts";
 * const gpu = await openGpu();
 * const sys = await measureSystem(gpu, { quick: true });
 * console.log(sys.dispatchRoundTripMs.value);
 * ```
 */
export async function measureSystem(
  gpu: GpuHandle | null,
  options: SystemOptions = {},
): Promise<SystemFigures> {
  if (!gpu) return missingSystemFigures("No WebGPU adapter");
  const { device } = gpu;
  const quick = options.quick ?? false;
  const sampling: SampleOptions = { n: quick ? 7 : 15, signal: options.signal };
  const made: GPUBuffer[] = [];
  const buffer: MakeBuffer = (size, usage) => {
    const b = device.createBuffer({ size, usage });
    made.push(b);
    return b;
  };
  try {
    const program = trivialProgram(device, buffer);
    const compile = await compileSamples(program, { ...sampling, n: quick ? 3 : 5 });
    const batch = quick ? 100 : 400;
    const dispatch = await dispatchSamples(program, batch, sampling);
    const { n, signal } = sampling;
    const encodePerDispatch = recordingUs(device, buffer, { batch, samples: n, signal });
    const transfers = await transferSamples(device, buffer, quick, sampling);
    return {
      ...dispatchFigures(batch, { ...dispatch, encodePerDispatch }),
      ...transferFigures(transfers),
      compileMs: medianFigure(
        compile,
        "ms",
        "new shader module + pipeline + first dispatch + sync",
      ),
      peakGflops: {},
      peakGbps: {},
    };
  } finally {
    for (const b of made) b.destroy();
  }
}
