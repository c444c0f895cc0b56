/**
 * A synthetic transformer decode on WebGPU: random weights, the real kernel sequence of
 * {@linkcode KERNELS_PER_LAYER} and {@linkcode MODEL_KERNELS}, one submit per token and one
 * readback of the token id (greedy argmax on the device) — what the tokens/sec estimate charges,
 * measured. The projections run the gemv kernel of `kernels/gemv/webgpu.ts`.
 *
 * The KV cache is f32 and starts zeroed; the decoded positions are the last `warmup + tokens`
 * of the context, so the timed steps attend to nearly the whole context.
 *
 * @module
 */
import { gemvWebGpu } from "../kernels/gemv/webgpu.ts";
import { type Dtype, QUANT_GROUP_SIZE, type Variant } from "../kernels/types.ts";
import type { GpuHandle } from "../calibrate/device.ts";
import {
  argmaxShader,
  type DecodeDims,
  type DecodeShader,
  embedShader,
  LANE_WG,
  residualShader,
  rmsNormShader,
  ropeShader,
  scoresShader,
  siluMulShader,
  softmaxShader,
  valuesShader,
} from "./_decode_wgsl.ts";
import { type KernelDims, KERNELS_PER_LAYER, MODEL_KERNELS } from "../models/llm/decode_kernels.ts";
import { positiveInteger } from "../models/llm/memory.ts";
import type { ModelSpec } from "../models/llm/presets.ts";
import { median } from "../core/stats.ts";

/** Weight formats the synthetic decode runs: f32, or int4 (the `q4` gemv). */
export type DecodeQuant = "f32" | "int4";

/**
 * Options of {@linkcode measureDecode}.
 *
 * @example
 * ```ts
 * import type { DecodeOptions } from "./decode.ts";
 * const o: DecodeOptions = { tokens: 8, context: 128, gemvVariant: "rpw=1,tpr=64,vec4=true" };
 * ```
 */
export interface DecodeOptions {
  /** Timed tokens. */
  readonly tokens: number;
  /** KV cache capacity; the last timed token attends to all of it. */
  readonly context: number;
  /** Untimed tokens first (pipelines warm, caches filled); default 2. */
  readonly warmup?: number;
  /** Gemv variant (object or id such as `"rpw=1,tpr=64,vec4=true"`); a sound default when absent. */
  readonly gemvVariant?: Variant | string;
  /** Gemv variant id per projection kernel name (`"q_proj"`, `"lm_head"` …), over `gemvVariant`. */
  readonly gemvVariants?: Readonly<Record<string, string>>;
  /**
   * The catalog softmax variant whose workgroup size the attention softmax takes (an id such as
   * `"acc=f32,wg=256"`); 64 lanes when absent. Its accumulation is always f32.
   */
  readonly softmaxVariant?: string;
}

/**
 * What {@linkcode measureDecode} measured.
 *
 * @example
 * ```ts
 * import type { DecodeMeasurement } from "./decode.ts";
 * const say = (m: DecodeMeasurement) => `${m.model} ${m.quant}: ${m.tokensPerSec.toFixed(1)} tok/s`;
 * ```
 */
export interface DecodeMeasurement {
  readonly model: string;
  readonly quant: DecodeQuant;
  readonly context: number;
  readonly warmup: number;
  /** Tokens per second: 1000 / the median per-token time. */
  readonly tokensPerSec: number;
  readonly medianMs: number;
  /** Wall time of each timed token: uniform write, encode, submit, token readback. */
  readonly perTokenMs: readonly number[];
  /** Median host time of a token's uniform write and command encoding, before the submit. */
  readonly encodeMedianMs: number;
  /**
   * GPU time of each timed token's one compute pass (timestamps at its start and end), ms; null
   * when the device has no `timestamp-query`. The wall time less this is what the token paid
   * for encoding, submitting and the synchronisation that reads its id back.
   */
  readonly gpuPerTokenMs: readonly number[] | null;
  /** Median of {@linkcode gpuPerTokenMs}, or null without timestamps. */
  readonly gpuMedianMs: number | null;
  /** Every token id produced, warm-up included. */
  readonly tokenIds: readonly number[];
  /** Kernel launches per token. */
  readonly dispatchesPerToken: number;
  /** Bytes of weights on the device. */
  readonly weightBytes: number;
  /** The gemv variant the projections ran (the distinct ones, `;`-separated, when several). */
  readonly gemvVariant: string;
  /** KV cache element type (always f32 here). */
  readonly kvDtype: "f32";
  /** Buffer creation, random weights and pipeline compilation, ms. */
  readonly setupMs: number;
}

const DEFAULT_WARMUP = 2;

/**
 * Parses a variant id (as reports write them) back into a variant.
 *
 * @param id e.g. `"rpw=1,tpr=64,vec4=true"`; `"default"` is `{}`.
 * @returns The variant.
 * @throws {RangeError} when an item is not `key=value`.
 * @example
 * ```ts
 * import { parseVariantId } from "./decode.ts";
 * console.log(parseVariantId("rpw=4,tpr=32,unpack=bits")); // { rpw: 4, tpr: 32, unpack: "bits" }
 * ```
 */
export function parseVariantId(id: string): Variant {
  if (id === "default") return {};
  const out: Record<string, string | number | boolean> = {};
  for (const item of id.split(",")) {
    const m = /^([A-Za-z_]\w*)=(.+)$/.exec(item);
    if (!m) throw new RangeError(`Invalid variant id "${id}": items are key=value, got "${item}"`);
    const raw = m[2]!;
    out[m[1]!] = raw === "true"
      ? true
      : raw === "false"
      ? false
      : /^-?\d+(\.\d+)?$/.test(raw)
      ? Number(raw)
      : raw;
  }
  return out as Variant;
}

function variantText(v: Variant): string {
  const keys = Object.keys(v).sort();
  return keys.length === 0 ? "default" : keys.map((k) => `${k}=${v[k]}`).join(",");
}

/** The first of the catalog's gemv variants (listed fastest first) that runs this shape. */
function defaultVariant(dtype: Dtype, shape: { rows: number; cols: number }): Variant {
  const runnable = gemvWebGpu.variants.find((v) => !gemvWebGpu.unsupported?.(shape, dtype, v));
  if (runnable === undefined) {
    throw new RangeError(`No WebGPU gemv variant runs ${dtype} ${shape.rows}x${shape.cols}`);
  }
  return runnable;
}

/** A fast reproducible generator: the values only need to be varied, not good. */
function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

const CHUNK = 1 << 20;

interface Weight {
  readonly buffers: readonly GPUBuffer[];
  readonly bytes: number;
}

class Builder {
  readonly buffers: GPUBuffer[] = [];
  weightBytes = 0;
  readonly #pipelines = new Map<string, Promise<GPUComputePipeline>>();
  readonly #rand: () => number;

  constructor(readonly device: GPUDevice, readonly maxBinding: number, seed: number) {
    this.#rand = xorshift(seed);
  }

  buffer(label: string, bytes: number, usage = 0): GPUBuffer {
    const size = Math.max(16, Math.ceil(bytes / 16) * 16);
    if (size > this.maxBinding) {
      throw new RangeError(
        `Decode buffer "${label}" needs ${size} bytes, over this device's storage binding limit ` +
          `of ${this.maxBinding}; use a smaller model or context`,
      );
    }
    const b = this.device.createBuffer({
      label,
      size,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | usage,
    });
    this.buffers.push(b);
    return b;
  }

  /** Fills a buffer chunk by chunk, so no host copy of the whole model is ever held. */
  fill(buf: GPUBuffer, words: number, value: (word: number) => number, asFloat: boolean): void {
    const chunk = asFloat ? new Float32Array(Math.min(words, CHUNK)) : new Uint32Array(
      Math.min(words, CHUNK),
    );
    for (let at = 0; at < words; at += chunk.length) {
      const n = Math.min(chunk.length, words - at);
      for (let i = 0; i < n; i++) chunk[i] = value(at + i);
      this.device.queue.writeBuffer(buf, at * 4, chunk, 0, n);
    }
  }

  uniform(label: string, data: Uint32Array): GPUBuffer {
    const b = this.device.createBuffer({
      label,
      size: 16,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.buffers.push(b);
    this.device.queue.writeBuffer(b, 0, new Uint32Array(data));
    return b;
  }

  /** A rows × cols matrix: f32 uniform in ±1/√cols, or q4 random nibbles with per-32 scales. */
  matrix(label: string, rows: number, cols: number, quant: DecodeQuant): Weight {
    const amp = 1 / Math.sqrt(cols);
    if (quant === "f32") {
      const w = this.buffer(label, rows * cols * 4);
      this.fill(w, rows * cols, () => (this.#rand() / 2 ** 31 - 1) * amp, true);
      this.weightBytes += rows * cols * 4;
      return { buffers: [w], bytes: rows * cols * 4 };
    }
    const rowBytes = Math.ceil(cols / 2);
    const words = Math.ceil(rows * rowBytes / 4);
    const groups = rows * Math.ceil(cols / QUANT_GROUP_SIZE);
    const w = this.buffer(`${label}.q4`, words * 4);
    const s = this.buffer(`${label}.scales`, groups * 4);
    this.fill(w, words, () => this.#rand(), false);
    this.fill(s, groups, () => (0.5 + this.#rand() / 2 ** 32) * amp / 4, true);
    const bytes = rows * rowBytes + groups * 4;
    this.weightBytes += bytes;
    return { buffers: [w, s], bytes };
  }

  ones(label: string, n: number): GPUBuffer {
    const b = this.buffer(label, n * 4);
    this.fill(b, n, () => 1, true);
    this.weightBytes += n * 4;
    return b;
  }

  pipeline(shader: DecodeShader): Promise<GPUComputePipeline> {
    let p = this.#pipelines.get(shader.key);
    if (!p) {
      p = this.device.createComputePipelineAsync({
        label: shader.key,
        layout: "auto",
        compute: {
          module: this.device.createShaderModule({ code: shader.code }),
          entryPoint: "main",
        },
      });
      this.#pipelines.set(shader.key, p);
    }
    return p;
  }

  bind(pipeline: GPUComputePipeline, resources: readonly (GPUBuffer | GPUBufferBinding)[]) {
    return this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: resources.map((r, i) => ({
        binding: i,
        resource: r instanceof GPUBuffer ? { buffer: r } : r,
      })),
    });
  }
}

interface Dispatch {
  readonly name: string;
  readonly pipeline: GPUComputePipeline;
  /** The bind group for a position (most ignore it). */
  readonly group: (pos: number) => GPUBindGroup;
  /** Workgroups for an attended length n = pos + 1. */
  readonly workgroups: (n: number) => readonly [number, number, number];
}

const lanes = (n: number): readonly [number, number, number] => [Math.ceil(n / LANE_WG), 1, 1];

/** The attention softmax's lanes per workgroup, from a catalog softmax variant id. */
function softmaxLanes(id: string | undefined): 64 | 256 {
  if (id === undefined) return LANE_WG;
  const { wg, acc } = parseVariantId(id);
  if ((wg !== 64 && wg !== 256) || (acc !== undefined && acc !== "f32")) {
    throw new RangeError(
      `Softmax variant "${id}" cannot run in the decode: it needs wg=64 or wg=256 and acc=f32`,
    );
  }
  return wg;
}

/**
 * Runs a synthetic decode of a model on a WebGPU device and times it per token.
 *
 * @param gpu An open device (not destroyed here; every buffer made here is).
 * @param model The model (the tiny presets fit a 128 MiB storage binding).
 * @param quant Weight format: `"f32"` or `"int4"`.
 * @param opts Timed tokens, context, warm-up, gemv variant.
 * @returns Tokens/s (median), per-token times and the token ids.
 * @throws {RangeError} when a dimension does not suit the kernels, a buffer exceeds the device's
 *   binding limit, tokens + warm-up exceed the context, or the decode yields an invalid token.
 * @example
 * ```ts ignore
 * import { openGpu } from "../calibrate/device.ts";
 * import { getPreset } from "../models/llm/presets.ts";
 * import { measureDecode } from "./decode.ts";
 * const gpu = await openGpu();
 * if (gpu) {
 *   const m = await measureDecode(gpu, getPreset("tiny-16m"), "int4", { tokens: 8, context: 64 });
 *   console.log(m.tokensPerSec.toFixed(1), "tokens/s");
 *   gpu.device.destroy();
 * }
 * ```
 */
export async function measureDecode(
  gpu: Pick<GpuHandle, "device">,
  model: ModelSpec,
  quant: DecodeQuant,
  opts: DecodeOptions,
): Promise<DecodeMeasurement> {
  const tokens = positiveInteger("tokens", opts.tokens);
  const context = positiveInteger("context", opts.context);
  const warmup = opts.warmup ?? DEFAULT_WARMUP;
  if (!Number.isInteger(warmup) || warmup < 0) {
    throw new RangeError(`"warmup" must be a non-negative integer, got ${warmup}; pass e.g. 2`);
  }
  if (tokens + warmup > context) {
    throw new RangeError(
      `Decoding ${tokens} + ${warmup} warm-up tokens needs a context of at least ` +
        `${tokens + warmup}, got ${context}; raise the context`,
    );
  }
  if (quant !== "f32" && quant !== "int4") {
    throw new RangeError(`The synthetic decode runs "f32" or "int4" weights, got "${quant}"`);
  }
  const softmaxWg = softmaxLanes(opts.softmaxVariant);
  const { hidden, heads, kvHeads, headDim, intermediate, vocab } = model;
  if (hidden % QUANT_GROUP_SIZE !== 0 || headDim % 4 !== 0 || heads % kvHeads !== 0) {
    throw new RangeError(
      `Model "${model.name}": the decode kernels need hidden % 32 == 0 (got ${hidden}), ` +
        `headDim % 4 == 0 (got ${headDim}) and kvHeads dividing heads`,
    );
  }
  const { device } = gpu;
  const kvd = kvHeads * headDim;
  const align = device.limits.minStorageBufferOffsetAlignment;
  if ((kvd * 4) % align !== 0) {
    throw new RangeError(
      `Model "${model.name}": a KV cache row is ${kvd * 4} bytes, not a multiple of the ` +
        `device's ${align}-byte storage offset alignment, so v_proj cannot write into the cache`,
    );
  }
  const started = performance.now();
  const maxBinding = Math.min(
    device.limits.maxStorageBufferBindingSize,
    device.limits.maxBufferSize,
  );
  const b = new Builder(device, maxBinding, 0x9e3779b9);
  // The token id at byte 0 and, with timestamps, the pass's begin and end ticks at byte 8: one
  // readback, so timing the GPU adds no synchronisation to the token.
  const readback = device.createBuffer({
    label: "token readback",
    size: TIMESTAMP_OFFSET + 16,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const clock = device.features.has("timestamp-query") ? passClock(device) : null;
  try {
    const dims: DecodeDims = { hidden, heads, kvHeads, headDim, context, intermediate, vocab };
    const dtype: Dtype = quant === "f32" ? "f32" : "q4";
    const variant = typeof opts.gemvVariant === "string"
      ? parseVariantId(opts.gemvVariant)
      : opts.gemvVariant ?? defaultVariant(dtype, { rows: hidden, cols: hidden });

    const act = (label: string, n: number, usage = 0) => b.buffer(label, n * 4, usage);
    const x = act("x", hidden), xn = act("xn", hidden), out = act("out", hidden);
    const q = act("q", heads * headDim), k = act("k", kvd), attn = act("attn", heads * headDim);
    const scores = act("scores", heads * context);
    const gate = act("gate", intermediate), up = act("up", intermediate);
    const logits = act("logits", vocab);
    const token = act("token", 1, GPUBufferUsage.COPY_SRC);
    const step = b.uniform("step", new Uint32Array(4));
    device.queue.writeBuffer(token, 0, new Uint32Array([1]));

    const shapes = new Map<string, GPUBuffer>();
    const ran = new Set<string>();
    const gemvShape = projectionShapes(dims, context);
    const gemv = async (
      name: string,
      weight: string,
      input: GPUBuffer,
      output: GPUBuffer | ((pos: number) => GPUBufferBinding),
      layer: string,
    ): Promise<Dispatch> => {
      const { rows, cols } = gemvShape(name);
      const w = b.matrix(`${layer}${weight}`, rows, cols, quant);
      const id = opts.gemvVariants?.[name];
      const v = id === undefined ? variant : parseVariantId(id);
      const program = gemvWebGpu.program({ rows, cols }, dtype, v);
      const why = gemvWebGpu.unsupported?.({ rows, cols }, dtype, v);
      if (why) {
        throw new RangeError(`Gemv variant ${variantText(v)} cannot run ${name}: ${why}`);
      }
      ran.add(variantText(v));
      const pipeline = await b.pipeline(program);
      const key = `${rows}x${cols}`;
      const dimsBuf = shapes.get(key) ?? b.uniform(`dims ${key}`, program.uniforms!);
      shapes.set(key, dimsBuf);
      const bindAt = (y: GPUBuffer | GPUBufferBinding) =>
        b.bind(pipeline, [...w.buffers, input, y, dimsBuf]);
      const group = typeof output === "function"
        ? (() => {
          const groups = new Map<number, GPUBindGroup>();
          return (pos: number) => {
            let g = groups.get(pos);
            if (!g) groups.set(pos, g = bindAt(output(pos)));
            return g;
          };
        })()
        : (() => {
          const g = bindAt(output);
          return () => g;
        })();
      return { name, pipeline, group, workgroups: () => program.workgroups };
    };
    const simple = async (
      name: string,
      shader: DecodeShader,
      resources: readonly GPUBuffer[],
      workgroups: (n: number) => readonly [number, number, number],
    ): Promise<Dispatch> => {
      const pipeline = await b.pipeline(shader);
      const g = b.bind(pipeline, resources);
      return { name, pipeline, group: () => g, workgroups };
    };

    const layerDispatches = async (layer: number): Promise<Dispatch[]> => {
      const p = `layer${layer}`;
      const kcache = act(`${p}.kcache`, context * kvd);
      const vcache = act(`${p}.vcache`, context * kvd);
      const attnNorm = b.ones(`${p}.attn_norm`, hidden);
      const mlpNorm = b.ones(`${p}.mlp_norm`, hidden);
      const builders: Record<string, () => Promise<Dispatch>> = {
        attn_norm: () =>
          simple("attn_norm", rmsNormShader(hidden), [x, attnNorm, xn], () => [1, 1, 1]),
        q_proj: () => gemv("q_proj", "wq", xn, q, `${p}.`),
        k_proj: () => gemv("k_proj", "wk", xn, k, `${p}.`),
        v_proj: () =>
          gemv("v_proj", "wv", xn, (pos) => ({
            buffer: vcache,
            offset: pos * kvd * 4,
            size: kvd * 4,
          }), `${p}.`),
        rope: () =>
          simple(
            "rope",
            ropeShader(dims),
            [q, k, kcache, step],
            () => lanes((heads + kvHeads) * headDim / 2),
          ),
        attn_scores: () =>
          simple("attn_scores", scoresShader(dims), [q, kcache, scores, step], (n) => [
            Math.ceil(n / LANE_WG),
            heads,
            1,
          ]),
        softmax: () =>
          simple("softmax", softmaxShader(dims, softmaxWg), [scores, step], () => [heads, 1, 1]),
        attn_values: () =>
          simple(
            "attn_values",
            valuesShader(dims),
            [scores, vcache, attn, step],
            () => lanes(heads * headDim),
          ),
        o_proj: () => gemv("o_proj", "wo", attn, out, `${p}.`),
        attn_residual: () =>
          simple("attn_residual", residualShader(hidden), [x, out], () => lanes(hidden)),
        mlp_norm: () =>
          simple("mlp_norm", rmsNormShader(hidden), [x, mlpNorm, xn], () => [1, 1, 1]),
        gate_proj: () => gemv("gate_proj", "wgate", xn, gate, `${p}.`),
        up_proj: () => gemv("up_proj", "wup", xn, up, `${p}.`),
        silu_mul: () =>
          simple("silu_mul", siluMulShader(intermediate), [gate, up], () => lanes(intermediate)),
        down_proj: () => gemv("down_proj", "wdown", gate, out, `${p}.`),
        mlp_residual: () =>
          simple("mlp_residual", residualShader(hidden), [x, out], () => lanes(hidden)),
      };
      const list: Dispatch[] = [];
      for (const kernel of KERNELS_PER_LAYER) list.push(await builderFor(builders, kernel.name)());
      return list;
    };

    const embedding = b.matrix("embed", vocab, hidden, quant);
    const finalNorm = b.ones("final_norm", hidden);
    const modelBuilders: Record<string, () => Promise<Dispatch>> = {
      embed: () =>
        simple(
          "embed",
          embedShader(dims, quant === "int4"),
          [...embedding.buffers, token, x],
          () => lanes(hidden),
        ),
      final_norm: () =>
        simple("final_norm", rmsNormShader(hidden), [x, finalNorm, xn], () => [1, 1, 1]),
      lm_head: () => gemv("lm_head", "lm_head", xn, logits, ""),
      argmax: () => simple("argmax", argmaxShader(vocab), [logits, token], () => [1, 1, 1]),
    };
    const byStage = (stage: "first" | "last") =>
      Promise.all(
        MODEL_KERNELS.filter((m) => m.stage === stage).map((m) =>
          builderFor(modelBuilders, m.name)()
        ),
      );
    const dispatches: Dispatch[] = [...await byStage("first")];
    for (let layer = 0; layer < model.layers; layer++) {
      dispatches.push(...await layerDispatches(layer));
    }
    dispatches.push(...await byStage("last"));

    const runToken = async (
      pos: number,
    ): Promise<{ id: number; ms: number; encodeMs: number; gpuMs: number | null }> => {
      const t0 = performance.now();
      const n = pos + 1;
      device.queue.writeBuffer(step, 0, new Uint32Array([pos, n, 0, 0]));
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass(clock ? { timestampWrites: clock.writes } : {});
      for (const d of dispatches) {
        pass.setPipeline(d.pipeline);
        pass.setBindGroup(0, d.group(pos));
        const [gx, gy, gz] = d.workgroups(n);
        pass.dispatchWorkgroups(gx, gy, gz);
      }
      pass.end();
      enc.copyBufferToBuffer(token, 0, readback, 0, 4);
      if (clock) {
        enc.resolveQuerySet(clock.writes.querySet, 0, 2, clock.resolved, 0);
        enc.copyBufferToBuffer(clock.resolved, 0, readback, TIMESTAMP_OFFSET, 16);
      }
      const commands = enc.finish();
      const encodeMs = performance.now() - t0;
      device.queue.submit([commands]);
      await readback.mapAsync(GPUMapMode.READ);
      const mapped = readback.getMappedRange();
      const id = new Uint32Array(mapped, 0, 1)[0]!;
      const gpuMs = clock && passMs(new BigInt64Array(mapped, TIMESTAMP_OFFSET, 2));
      readback.unmap();
      const ms = performance.now() - t0;
      if (!(id < vocab)) {
        throw new RangeError(
          `Decode of "${model.name}" (${quant}) produced token id ${id} at position ${pos}, not in ` +
            `[0, ${vocab}): the logits overflowed or a kernel is broken`,
        );
      }
      return { id, ms, encodeMs, gpuMs };
    };

    const first = context - tokens - warmup;
    const positions = Array.from({ length: tokens + warmup }, (_, i) => first + i);
    // Bind groups for every position exist before timing, so a token pays only for its work.
    for (const pos of positions) for (const d of dispatches) d.group(pos);
    await device.queue.onSubmittedWorkDone();
    const setupMs = performance.now() - started;

    const tokenIds: number[] = [];
    const perTokenMs: number[] = [];
    const encodeMs: number[] = [];
    const gpuMs: (number | null)[] = [];
    for (const [i, pos] of positions.entries()) {
      const token = await runToken(pos);
      tokenIds.push(token.id);
      if (i >= warmup) {
        perTokenMs.push(token.ms);
        encodeMs.push(token.encodeMs);
        gpuMs.push(token.gpuMs);
      }
    }
    const medianMs = median(perTokenMs);
    const gpuPerTokenMs = gpuMs.every((t) => t !== null) ? gpuMs as number[] : null;
    return {
      model: model.name,
      quant,
      context,
      warmup,
      tokensPerSec: 1000 / medianMs,
      medianMs,
      perTokenMs,
      encodeMedianMs: median(encodeMs),
      gpuPerTokenMs,
      gpuMedianMs: gpuPerTokenMs && median(gpuPerTokenMs),
      tokenIds,
      dispatchesPerToken: dispatches.length,
      weightBytes: b.weightBytes,
      gemvVariant: [...ran].join(";"),
      kvDtype: "f32",
      setupMs,
    };
  } finally {
    for (const buf of b.buffers) buf.destroy();
    readback.destroy();
    clock?.writes.querySet.destroy();
    clock?.resolved.destroy();
  }
}

/** Where the pass's two timestamps land in the token readback, bytes. */
const TIMESTAMP_OFFSET = 8;

/**
 * A pass's time from its begin and end ticks, ms; null for a zero or backwards span (a driver
 * that does not count).
 */
function passMs(ticks: BigInt64Array): number | null {
  const ns = ticks[1]! - ticks[0]!;
  return ns > 0n ? Number(ns) / 1e6 : null;
}

/** A query set for a pass's begin and end timestamps, and the buffer they resolve into. */
function passClock(device: GPUDevice): {
  writes: GPUComputePassTimestampWrites & { querySet: GPUQuerySet };
  resolved: GPUBuffer;
} {
  const querySet = device.createQuerySet({ label: "token pass", type: "timestamp", count: 2 });
  const resolved = device.createBuffer({
    label: "token pass timestamps",
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  return {
    writes: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
    resolved,
  };
}

/** Each projection's rows × cols, as decode_kernels.ts gives them for these dimensions. */
function projectionShapes(
  dims: KernelDims,
  context: number,
): (name: string) => { rows: number; cols: number } {
  return (name) => {
    const kernel = [...KERNELS_PER_LAYER, ...MODEL_KERNELS].find((k) => k.name === name);
    const work = kernel?.work(dims, context, 1);
    if (!work || work.op !== "gemv" || work.reads !== "weights") {
      throw new RangeError(
        `The synthetic decode builds "${name}" as a projection, but decode_kernels.ts does not ` +
          `list it as a weight gemv; make the two agree`,
      );
    }
    return { rows: work.shape.rows!, cols: work.shape.cols! };
  };
}

function builderFor<T>(builders: Record<string, T>, name: string): T {
  const f = Object.hasOwn(builders, name) ? builders[name] : undefined;
  if (!f) {
    throw new RangeError(
      `The synthetic decode has no kernel "${name}" of decode_kernels.ts; add it to decode.ts`,
    );
  }
  return f;
}
