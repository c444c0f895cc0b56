/**
 * The synthetic decode's device side: its buffers, seeded weights, programs and bind groups, built
 * through the one WebGPU engine (`calibrate/runners/gpu.ts`), in the kernel order of
 * `models/llm/decode_kernels.ts`. {@linkcode DecodeGraph.encodeStep} records one token's step as
 * one compute pass.
 *
 * @module
 */
import { gemvWebGpu } from "../kernels/gemv/webgpu.ts";
import { type Dtype, QUANT_GROUP_SIZE, type Variant, variantId } from "../kernels/types.ts";
import {
  bindGroupFor,
  type CompiledProgram,
  compileProgram,
  GpuResources,
  opProgram,
  Readback,
  recordDispatch,
  wgslWorkgroupSize,
} from "../calibrate/runners/gpu.ts";
import {
  argmaxProgram,
  type DecodeDims,
  type DecodeProgram,
  embedProgram,
  residualProgram,
  rmsNormProgram,
  ropeProgram,
  scoresProgram,
  siluMulProgram,
  softmaxProgram,
  valuesProgram,
} from "./_decode_wgsl.ts";
import { type DecodeQuant, gainTensor, matrixTensors, uploadTensor } from "./_weights.ts";
import { KERNELS_PER_LAYER, MODEL_KERNELS } from "../models/llm/decode_kernels.ts";
import type { ModelSpec } from "../models/llm/presets.ts";
import { groupsPerRow, q4RowBytes } from "../kernels/gemv/mod.ts";

/**
 * What {@linkcode buildDecodeGraph} builds.
 *
 * @example
 * ```ts
 * import type { DecodeGraphOptions } from "./graph.ts";
 * const o: DecodeGraphOptions = { quant: "int4", context: 64, gemvVariant: () => ({}), softmaxWg: 64 };
 * ```
 */
export interface DecodeGraphOptions {
  readonly quant: DecodeQuant;
  /** KV cache capacity. */
  readonly context: number;
  /** The gemv variant of a projection, by its kernel name (`"q_proj"`, `"lm_head"` …). */
  readonly gemvVariant: (name: string) => Variant;
  /** Lanes of the attention softmax. */
  readonly softmaxWg: 64 | 256;
}

/**
 * One launch of a step.
 *
 * @example
 * ```ts
 * import type { Dispatch } from "./graph.ts";
 * const label = (d: Dispatch) => `${d.name} (${d.program.key})`;
 * ```
 */
export interface Dispatch {
  readonly name: string;
  readonly program: DecodeProgram;
  readonly compiled: CompiledProgram;
  /** The bind group for a position (most ignore it). */
  readonly group: (pos: number) => GPUBindGroup;
}

/** The token every decode starts from. */
export const START_TOKEN = 1;

/**
 * What one step left on the device: the residual stream after the last layer (before the final
 * norm), the logits and the next token's id.
 *
 * @example
 * ```ts
 * import type { DeviceStep } from "./graph.ts";
 * const broken = (s: DeviceStep) => s.logits.some((v) => !Number.isFinite(v));
 * ```
 */
export interface DeviceStep {
  readonly hidden: Float32Array;
  readonly logits: Float32Array;
  readonly token: number;
}

/** The buffers a step reads and writes, besides the weights and the KV cache. */
interface Activations {
  readonly x: GPUBuffer;
  readonly xn: GPUBuffer;
  readonly out: GPUBuffer;
  readonly q: GPUBuffer;
  readonly k: GPUBuffer;
  readonly attn: GPUBuffer;
  readonly scores: GPUBuffer;
  readonly gate: GPUBuffer;
  readonly up: GPUBuffer;
  readonly logits: GPUBuffer;
  readonly token: GPUBuffer;
  readonly step: GPUBuffer;
}

/**
 * A decode built on a device: every launch of a step, in order, and the buffers a caller reads.
 *
 * @example
 * ```ts ignore
 * import { buildDecodeGraph } from "./graph.ts";
 * const graph = buildDecodeGraph(device, model, { quant: "f32", context: 8, gemvVariant: () => variant, softmaxWg: 64 });
 * const encoder = device.createCommandEncoder();
 * graph.encodeStep(encoder, 0);
 * device.queue.submit([encoder.finish()]);
 * graph.destroy();
 * ```
 */
export class DecodeGraph {
  #stepReadback: Readback | null = null;

  /**
   * @param device The device.
   * @param dims The dimensions the programs are specialised for.
   * @param resources Every buffer of the decode (destroyed by {@linkcode DecodeGraph.destroy}).
   * @param buffers The activations, token and step uniform.
   * @param dispatches The launches of a step, in order.
   * @param weightBytes Bytes of weights on the device.
   * @param gemvVariants The distinct gemv variants the projections run.
   */
  constructor(
    readonly device: GPUDevice,
    readonly dims: DecodeDims,
    readonly resources: GpuResources,
    readonly buffers: Activations,
    readonly dispatches: readonly Dispatch[],
    readonly weightBytes: number,
    readonly gemvVariants: readonly string[],
  ) {}

  /**
   * Sets the token the next step embeds.
   *
   * @param id The token id.
   */
  writeToken(id: number): void {
    this.resources.upload(this.buffers.token, new Uint32Array([id]));
  }

  /**
   * Makes every bind group the steps at these positions use, so a timed token pays only for its
   * work.
   *
   * @param positions The positions.
   */
  bindPositions(positions: readonly number[]): void {
    for (const pos of positions) for (const d of this.dispatches) d.group(pos);
  }

  /**
   * Writes the step's position and records its launches as one compute pass.
   *
   * @param encoder The encoder.
   * @param pos The position decoded (the step attends to pos + 1 positions).
   * @param timestampWrites Timestamps at the pass's start and end.
   */
  encodeStep(
    encoder: GPUCommandEncoder,
    pos: number,
    timestampWrites?: GPUComputePassTimestampWrites,
  ): void {
    this.encodeLaunches(encoder, pos, this.dispatches, timestampWrites);
  }

  /**
   * As {@linkcode DecodeGraph.encodeStep}, with `launches` (some or all of the step's, in any
   * order) in place of the step's: for timing how order and count change a step, not for
   * decoding (out of order, the step computes nothing meaningful).
   *
   * @param encoder The encoder.
   * @param pos The position (the step attends to pos + 1 positions).
   * @param launches Launches of this graph.
   * @param timestampWrites Timestamps at the pass's start and end.
   */
  encodeLaunches(
    encoder: GPUCommandEncoder,
    pos: number,
    launches: readonly Dispatch[],
    timestampWrites?: GPUComputePassTimestampWrites,
  ): void {
    const n = pos + 1;
    this.resources.upload(this.buffers.step, new Uint32Array([pos, n, 0, 0]));
    const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : {});
    for (const d of launches) {
      recordDispatch(pass, d.compiled, d.group(pos), d.program.workgroups(n));
    }
    pass.end();
  }

  /**
   * Runs one step at `pos` on its own and reads back what it left (one synchronisation: for
   * checks, not for timing). The token buffer keeps the step's output, as in a decode.
   *
   * @param pos The position.
   * @returns The hidden state, logits and next token.
   */
  async runStep(pos: number): Promise<DeviceStep> {
    const { hidden, vocab } = this.dims;
    const readback = this.#stepReadback ??= new Readback(
      this.resources,
      (hidden + vocab + 1) * 4,
      "step readback",
    );
    const encoder = this.device.createCommandEncoder();
    this.encodeStep(encoder, pos);
    readback.copy(encoder, this.buffers.x, hidden * 4);
    readback.copy(encoder, this.buffers.logits, vocab * 4, { to: hidden * 4 });
    readback.copy(encoder, this.buffers.token, 4, { to: (hidden + vocab) * 4 });
    this.device.queue.submit([encoder.finish()]);
    const bytes = await readback.read(`the step at position ${pos}`);
    return {
      hidden: new Float32Array(bytes, 0, hidden),
      logits: new Float32Array(bytes, hidden * 4, vocab),
      token: new Uint32Array(bytes, (hidden + vocab) * 4, 1)[0]!,
    };
  }

  /** Destroys every buffer of the decode. */
  destroy(): void {
    this.resources.destroy();
  }
}

/** What building needs at hand; weights are counted as they are made. */
interface Build {
  readonly device: GPUDevice;
  readonly resources: GpuResources;
  readonly maxBinding: number;
  readonly model: ModelSpec;
  readonly dims: DecodeDims;
  readonly options: DecodeGraphOptions;
  readonly dtype: Dtype;
  readonly act: Activations;
  /** The gemv dims uniform of each rows × cols. */
  readonly gemvUniforms: Map<string, GPUBuffer>;
  readonly gemvVariants: Set<string>;
  weightBytes: number;
}

/**
 * Checks that a model suits the decode's kernels on this device.
 *
 * @param model The model.
 * @param device The device (its storage offset alignment).
 * @throws {RangeError} naming the dimension that does not suit.
 * @example
 * ```ts ignore
 * import { checkDecodeDims } from "./graph.ts";
 * checkDecodeDims(model, device);
 * ```
 */
export function checkDecodeDims(model: ModelSpec, device: GPUDevice): void {
  const { hidden, heads, kvHeads, headDim } = model;
  if (hidden % QUANT_GROUP_SIZE !== 0 || headDim % 4 !== 0 || heads % kvHeads !== 0) {
    throw new RangeError(
      `Model "${model.name}": the decode kernels need hidden % 32 == 0 (got ${hidden}), ` +
        `headDim % 4 == 0 (got ${headDim}) and kvHeads dividing heads`,
    );
  }
  const kvd = kvHeads * headDim;
  const align = device.limits.minStorageBufferOffsetAlignment;
  if ((kvd * 4) % align !== 0) {
    throw new RangeError(
      `Model "${model.name}": a KV cache row is ${kvd * 4} bytes, not a multiple of the ` +
        `device's ${align}-byte storage offset alignment, so v_proj cannot write into the cache`,
    );
  }
}

/**
 * Builds a model's decode on a device: buffers, seeded weights (`_weights.ts`), the programs of
 * every launch and their bind groups. The KV cache starts zeroed; the token buffer holds
 * {@linkcode START_TOKEN}.
 *
 * @param device The device.
 * @param model The model (checked with {@linkcode checkDecodeDims} first).
 * @param options Weight format, context, gemv variants, softmax lanes.
 * @returns The graph.
 * @throws {RangeError} when a dimension does not suit the kernels, a buffer exceeds the device's
 *   binding limit or a gemv variant cannot run its projection.
 * @example
 * ```ts ignore
 * import { buildDecodeGraph } from "./graph.ts";
 * const graph = buildDecodeGraph(device, model, { quant: "int4", context: 64, gemvVariant: () => variant, softmaxWg: 64 });
 * console.log(graph.dispatches.length, graph.weightBytes);
 * graph.destroy();
 * ```
 */
export function buildDecodeGraph(
  device: GPUDevice,
  model: ModelSpec,
  options: DecodeGraphOptions,
): DecodeGraph {
  checkDecodeDims(model, device);
  const resources = new GpuResources(device);
  try {
    const { hidden, heads, kvHeads, headDim, intermediate, vocab } = model;
    const dims = { hidden, heads, kvHeads, headDim, context: options.context, intermediate, vocab };
    const maxBinding = Math.min(
      device.limits.maxStorageBufferBindingSize,
      device.limits.maxBufferSize,
    );
    const b: Build = {
      device,
      resources,
      maxBinding,
      model,
      dims,
      options,
      dtype: options.quant === "f32" ? "f32" : "q4",
      act: activations({ resources, maxBinding }, dims),
      gemvUniforms: new Map(),
      gemvVariants: new Set(),
      weightBytes: 0,
    };
    resources.upload(b.act.token, new Uint32Array([START_TOKEN]));
    const dispatches = [...modelDispatches(b, "first")];
    for (let layer = 0; layer < model.layers; layer++) {
      dispatches.push(...layerDispatches(b, layer));
    }
    dispatches.push(...modelDispatches(b, "last"));
    return new DecodeGraph(device, dims, resources, b.act, dispatches, b.weightBytes, [
      ...b.gemvVariants,
    ]);
  } catch (e) {
    resources.destroy();
    throw e;
  }
}

/** A storage buffer of the decode, refused when over the device's binding limit. */
function buffer(
  b: Pick<Build, "resources" | "maxBinding">,
  label: string,
  bytes: number,
  usage = 0,
): GPUBuffer {
  const size = Math.max(16, Math.ceil(bytes / 16) * 16);
  if (size > b.maxBinding) {
    throw new RangeError(
      `Decode buffer "${label}" needs ${size} bytes, over this device's storage binding limit ` +
        `of ${b.maxBinding}; use a smaller model or context`,
    );
  }
  return b.resources.buffer(bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | usage, label);
}

function activations(b: Pick<Build, "resources" | "maxBinding">, dims: DecodeDims): Activations {
  const { hidden, heads, kvHeads, headDim, context, intermediate, vocab } = dims;
  const words = (label: string, n: number, usage = 0) => buffer(b, label, n * 4, usage);
  // x, logits and the token are read back: the token every step, all three by the check.
  const readable = GPUBufferUsage.COPY_SRC;
  return {
    x: words("x", hidden, readable),
    xn: words("xn", hidden),
    out: words("out", hidden),
    q: words("q", heads * headDim),
    k: words("k", kvHeads * headDim),
    attn: words("attn", heads * headDim),
    scores: words("scores", heads * context),
    gate: words("gate", intermediate),
    up: words("up", intermediate),
    logits: words("logits", vocab, readable),
    token: words("token", 1, readable),
    step: b.resources.uniform(new Uint32Array(4), "step"),
  };
}

/** A rows × cols weight matrix on the device, filled from its seeded tensors. */
function weightMatrix(b: Build, label: string, rows: number, cols: number): GPUBuffer[] {
  const buffers = matrixTensors(label, rows, cols, b.options.quant).map((t) => {
    const buf = buffer(b, t.label, t.words * 4);
    uploadTensor(b.device, buf, t);
    return buf;
  });
  b.weightBytes += b.options.quant === "f32"
    ? rows * cols * 4
    : rows * q4RowBytes(cols) + rows * groupsPerRow(cols) * 4;
  return buffers;
}

function gains(b: Build, label: string): GPUBuffer {
  const t = gainTensor(label, b.dims.hidden);
  const buf = buffer(b, label, t.words * 4);
  uploadTensor(b.device, buf, t);
  b.weightBytes += t.words * 4;
  return buf;
}

/** A launch whose bind group is the same at every position. */
function fixed(
  b: Build,
  name: string,
  program: DecodeProgram,
  resources: readonly GPUBuffer[],
): Dispatch {
  const compiled = compileProgram(b.device, program);
  const group = bindGroupFor(b.device, compiled, resources);
  return { name, program, compiled, group: () => group };
}

/** The catalog gemv as a decode program, with its dims uniform. */
function gemvProgram(
  shape: { rows: number; cols: number },
  dtype: Dtype,
  v: Variant,
): DecodeProgram & { readonly uniforms: Uint32Array } {
  const program = gemvWebGpu.program(shape, dtype, v);
  const size = wgslWorkgroupSize(program.code);
  if (size === null) {
    throw new TypeError(`Gemv program "${program.key}" has no literal workgroup size`);
  }
  return {
    ...opProgram(program, dtype, dtype === "q4" ? 3 : 2),
    workgroupSize: size,
    workgroups: () => program.workgroups,
    uniforms: program.uniforms!,
  };
}

/**
 * A projection: the catalog gemv of `name`'s shape, reading `weight`, writing `output` (or, for
 * v_proj, the V cache row of the position).
 */
function projection(
  b: Build,
  name: string,
  weight: string,
  input: GPUBuffer,
  output: GPUBuffer | ((pos: number) => GPUBufferBinding),
): Dispatch {
  const shape = projectionShape(b.dims, name);
  const v = b.options.gemvVariant(name);
  const program = gemvProgram(shape, b.dtype, v);
  const why = gemvWebGpu.unsupported?.(shape, b.dtype, v);
  if (why) throw new RangeError(`Gemv variant ${variantId(v)} cannot run ${name}: ${why}`);
  b.gemvVariants.add(variantId(v));
  const w = weightMatrix(b, weight, shape.rows, shape.cols);
  const key = `${shape.rows}x${shape.cols}`;
  const dims = b.gemvUniforms.get(key) ?? b.resources.uniform(program.uniforms, `dims ${key}`);
  b.gemvUniforms.set(key, dims);
  const compiled = compileProgram(b.device, program);
  const bindAt = (y: GPUBuffer | GPUBufferBinding) =>
    bindGroupFor(b.device, compiled, [...w, input, y, dims]);
  if (typeof output !== "function") {
    const group = bindAt(output);
    return { name, program, compiled, group: () => group };
  }
  const groups = new Map<number, GPUBindGroup>();
  return {
    name,
    program,
    compiled,
    group: (pos) => {
      let g = groups.get(pos);
      if (!g) groups.set(pos, g = bindAt(output(pos)));
      return g;
    },
  };
}

/** The launches of one layer, in the order of `KERNELS_PER_LAYER`. */
function layerDispatches(b: Build, layer: number): Dispatch[] {
  const { x, xn, out, q, k, attn, scores, gate, up, step } = b.act;
  const { hidden, intermediate, kvHeads, headDim, context } = b.dims;
  const p = `layer${layer}`;
  const kvd = kvHeads * headDim;
  const kcache = buffer(b, `${p}.kcache`, context * kvd * 4);
  const vcache = buffer(b, `${p}.vcache`, context * kvd * 4);
  const attnNorm = gains(b, `${p}.attn_norm`);
  const mlpNorm = gains(b, `${p}.mlp_norm`);
  const vRow = (pos: number) => ({ buffer: vcache, offset: pos * kvd * 4, size: kvd * 4 });
  const builders: Record<string, () => Dispatch> = {
    attn_norm: () => fixed(b, "attn_norm", rmsNormProgram(hidden), [x, attnNorm, xn]),
    q_proj: () => projection(b, "q_proj", `${p}.wq`, xn, q),
    k_proj: () => projection(b, "k_proj", `${p}.wk`, xn, k),
    v_proj: () => projection(b, "v_proj", `${p}.wv`, xn, vRow),
    rope: () => fixed(b, "rope", ropeProgram(b.dims), [q, k, kcache, step]),
    attn_scores: () => fixed(b, "attn_scores", scoresProgram(b.dims), [q, kcache, scores, step]),
    softmax: () => fixed(b, "softmax", softmaxProgram(b.dims, b.options.softmaxWg), [scores, step]),
    attn_values: () => fixed(b, "attn_values", valuesProgram(b.dims), [scores, vcache, attn, step]),
    o_proj: () => projection(b, "o_proj", `${p}.wo`, attn, out),
    attn_residual: () => fixed(b, "attn_residual", residualProgram(hidden), [x, out]),
    mlp_norm: () => fixed(b, "mlp_norm", rmsNormProgram(hidden), [x, mlpNorm, xn]),
    gate_proj: () => projection(b, "gate_proj", `${p}.wgate`, xn, gate),
    up_proj: () => projection(b, "up_proj", `${p}.wup`, xn, up),
    silu_mul: () => fixed(b, "silu_mul", siluMulProgram(intermediate), [gate, up]),
    down_proj: () => projection(b, "down_proj", `${p}.wdown`, gate, out),
    mlp_residual: () => fixed(b, "mlp_residual", residualProgram(hidden), [x, out]),
  };
  return KERNELS_PER_LAYER.map((kernel) => builderFor(builders, kernel.name)());
}

/** The launches before the layers (`"first"`) or after them (`"last"`), per `MODEL_KERNELS`. */
function modelDispatches(b: Build, stage: "first" | "last"): Dispatch[] {
  const { x, xn, logits, token } = b.act;
  const { hidden, vocab } = b.dims;
  const builders: Record<string, () => Dispatch> = {
    embed: () => {
      const table = weightMatrix(b, "embed", vocab, hidden);
      const program = embedProgram(b.dims, b.options.quant === "int4");
      return fixed(b, "embed", program, [...table, token, x]);
    },
    final_norm: () =>
      fixed(b, "final_norm", rmsNormProgram(hidden), [x, gains(b, "final_norm"), xn]),
    lm_head: () => projection(b, "lm_head", "lm_head", xn, logits),
    argmax: () => fixed(b, "argmax", argmaxProgram(vocab), [logits, token]),
  };
  return MODEL_KERNELS.filter((m) => m.stage === stage).map((m) => builderFor(builders, m.name)());
}

/** A projection's rows × cols, as decode_kernels.ts gives them for these dimensions. */
function projectionShape(dims: DecodeDims, name: string): { rows: number; cols: number } {
  const kernel = [...KERNELS_PER_LAYER, ...MODEL_KERNELS].find((k) => k.name === name);
  const work = kernel?.work(dims, dims.context, 1);
  if (!work || work.op !== "gemv" || work.reads !== "weights") {
    throw new RangeError(
      `The synthetic decode builds "${name}" as a projection, but decode_kernels.ts does not ` +
        `list it as a weight gemv; make the two agree`,
    );
  }
  return { rows: work.shape.rows!, cols: work.shape.cols! };
}

function builderFor<T>(builders: Record<string, T>, name: string): T {
  const f = Object.hasOwn(builders, name) ? builders[name] : undefined;
  if (!f) {
    throw new RangeError(
      `The synthetic decode has no kernel "${name}" of decode_kernels.ts; add it to graph.ts`,
    );
  }
  return f;
}
