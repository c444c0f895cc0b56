/**
 * The synthetic decode's math in float64 on the CPU, from the same seeded weights as its WebGPU
 * kernels (`_weights.ts`): what a decode step on the device is checked against before it is
 * timed. Each step regenerates the weights tensor by tensor, so only one matrix is on the host at
 * a time.
 *
 * @module
 */
import { groupsPerRow, q4RowBytes } from "../kernels/gemv/mod.ts";
import { QUANT_GROUP_SIZE } from "../kernels/types.ts";
import type { ModelSpec } from "../models/llm/presets.ts";
import { type DecodeQuant, gainTensor, hostTensor, matrixTensors } from "./_weights.ts";

/** RMSNorm's epsilon, as the WGSL has it. */
const NORM_EPS = 1e-5;
/** RoPE's base. */
const ROPE_BASE = 10000;

/**
 * What one step computed: the residual stream after the last layer (before the final norm), the
 * logits, and the greedy next token (the lowest index of the largest logit).
 *
 * @example
 * ```ts
 * import type { ReferenceStep } from "./reference.ts";
 * const top = (s: ReferenceStep) => s.logits[s.token];
 * ```
 */
export interface ReferenceStep {
  readonly hidden: Float64Array;
  readonly logits: Float64Array;
  readonly token: number;
}

/** A matrix as the decode stores it, read back as float64. */
interface HostMatrix {
  readonly rows: number;
  readonly cols: number;
  /** Writes row `r`, dequantized, into `out` (cols long). */
  readonly row: (r: number, out: Float64Array) => void;
}

/**
 * The float64 decode of a model: keeps its own KV cache (zero where no step wrote, as the
 * device's starts), so successive {@linkcode ReferenceDecoder.step} calls follow a device decode
 * position by position.
 *
 * @example
 * ```ts
 * import { ReferenceDecoder } from "./reference.ts";
 * const model = {
 *   name: "toy", layers: 1, hidden: 64, intermediate: 128, heads: 2, kvHeads: 1, headDim: 32,
 *   vocab: 32, tiedEmbeddings: false, qkvBias: false,
 * };
 * const ref = new ReferenceDecoder(model, "f32", 4);
 * const step = ref.step(0, 1);
 * console.log(step.logits.length, step.token < 32); // 32 true
 * ```
 */
export class ReferenceDecoder {
  readonly #kcache: Float64Array[];
  readonly #vcache: Float64Array[];

  /**
   * @param model The model (its dimensions and layer count; biases are not part of the decode).
   * @param quant Weight format.
   * @param context KV cache capacity.
   */
  constructor(
    readonly model: Pick<
      ModelSpec,
      "layers" | "hidden" | "intermediate" | "heads" | "kvHeads" | "headDim" | "vocab"
    >,
    readonly quant: DecodeQuant,
    readonly context: number,
  ) {
    const rows = context * model.kvHeads * model.headDim;
    this.#kcache = Array.from({ length: model.layers }, () => new Float64Array(rows));
    this.#vcache = Array.from({ length: model.layers }, () => new Float64Array(rows));
  }

  /**
   * Decodes `token` at position `pos`, attending to positions 0..pos of the cache.
   *
   * @param pos The position (below the context).
   * @param token The input token id.
   * @returns The hidden state, logits and next token.
   * @throws {RangeError} when `pos` is outside the context or `token` outside the vocabulary.
   */
  step(pos: number, token: number): ReferenceStep {
    const { hidden, vocab, layers } = this.model;
    if (!(Number.isInteger(pos) && pos >= 0 && pos < this.context)) {
      throw new RangeError(`Position ${pos} is outside the context [0, ${this.context})`);
    }
    if (!(Number.isInteger(token) && token >= 0 && token < vocab)) {
      throw new RangeError(`Token ${token} is outside the vocabulary [0, ${vocab})`);
    }
    const x = matrixRow(this.#matrix("embed", vocab, hidden), token);
    for (let layer = 0; layer < layers; layer++) this.#layer(layer, x, pos);
    const xn = rmsNorm(x, this.#gain("final_norm"));
    const logits = matVec(this.#matrix("lm_head", vocab, hidden), xn);
    return { hidden: x, logits, token: argmax(logits) };
  }

  /** One transformer layer on x, in place; writes the layer's K and V rows at `pos`. */
  #layer(layer: number, x: Float64Array, pos: number): void {
    const { hidden, heads, kvHeads, headDim, intermediate } = this.model;
    const p = `layer${layer}`;
    const kvd = kvHeads * headDim;
    let xn = rmsNorm(x, this.#gain(`${p}.attn_norm`));
    const q = matVec(this.#matrix(`${p}.wq`, heads * headDim, hidden), xn);
    const k = matVec(this.#matrix(`${p}.wk`, kvd, hidden), xn);
    this.#vcache[layer]!.set(matVec(this.#matrix(`${p}.wv`, kvd, hidden), xn), pos * kvd);
    rope(q, headDim, pos);
    rope(k, headDim, pos);
    this.#kcache[layer]!.set(k, pos * kvd);
    const attn = attention(q, this.#kcache[layer]!, this.#vcache[layer]!, pos + 1, this.model);
    addInto(x, matVec(this.#matrix(`${p}.wo`, hidden, heads * headDim), attn));
    xn = rmsNorm(x, this.#gain(`${p}.mlp_norm`));
    const gate = matVec(this.#matrix(`${p}.wgate`, intermediate, hidden), xn);
    const up = matVec(this.#matrix(`${p}.wup`, intermediate, hidden), xn);
    for (let i = 0; i < intermediate; i++) gate[i] = gate[i]! / (1 + Math.exp(-gate[i]!)) * up[i]!;
    addInto(x, matVec(this.#matrix(`${p}.wdown`, hidden, intermediate), gate));
  }

  #gain(label: string): Float32Array {
    return hostTensor(gainTensor(label, this.model.hidden)) as Float32Array;
  }

  #matrix(label: string, rows: number, cols: number): HostMatrix {
    const [w, s] = matrixTensors(label, rows, cols, this.quant).map(hostTensor);
    if (this.quant === "f32") {
      const values = w as Float32Array;
      return { rows, cols, row: (r, out) => out.set(values.subarray(r * cols, (r + 1) * cols)) };
    }
    const bytes = new Uint8Array((w as Uint32Array).buffer);
    const scales = s as Float32Array;
    const rowBytes = q4RowBytes(cols);
    const groups = groupsPerRow(cols);
    return {
      rows,
      cols,
      row: (r, out) => {
        for (let c = 0; c < cols; c++) {
          const b = bytes[r * rowBytes + (c >> 1)]!;
          const nibble = (c & 1) === 0 ? b & 15 : b >> 4;
          out[c] = (nibble - 8) * scales[r * groups + Math.floor(c / QUANT_GROUP_SIZE)]!;
        }
      },
    };
  }
}

function matrixRow(m: HostMatrix, r: number): Float64Array {
  const out = new Float64Array(m.cols);
  m.row(r, out);
  return out;
}

function matVec(m: HostMatrix, x: Float64Array): Float64Array {
  const y = new Float64Array(m.rows);
  const row = new Float64Array(m.cols);
  for (let r = 0; r < m.rows; r++) {
    m.row(r, row);
    let sum = 0;
    for (let c = 0; c < m.cols; c++) sum += row[c]! * x[c]!;
    y[r] = sum;
  }
  return y;
}

function rmsNorm(x: Float64Array, gain: Float32Array): Float64Array {
  let squares = 0;
  for (const v of x) squares += v * v;
  const inv = 1 / Math.sqrt(squares / x.length + NORM_EPS);
  return x.map((v, i) => v * inv * gain[i]!);
}

/** Rotate-half RoPE of every head of `v` at position `pos`, in place. */
function rope(v: Float64Array, headDim: number, pos: number): void {
  const half = headDim / 2;
  for (let b = 0; b < v.length; b += headDim) {
    for (let i = 0; i < half; i++) {
      const angle = pos * ROPE_BASE ** (-2 * i / headDim);
      const [x0, x1] = [v[b + i]!, v[b + i + half]!];
      v[b + i] = x0 * Math.cos(angle) - x1 * Math.sin(angle);
      v[b + i + half] = x0 * Math.sin(angle) + x1 * Math.cos(angle);
    }
  }
}

/** Grouped-query attention of every head over the first `n` cached positions. */
function attention(
  q: Float64Array,
  kcache: Float64Array,
  vcache: Float64Array,
  n: number,
  d: Pick<ModelSpec, "heads" | "kvHeads" | "headDim">,
): Float64Array {
  const kvd = d.kvHeads * d.headDim;
  const out = new Float64Array(d.heads * d.headDim);
  for (let h = 0; h < d.heads; h++) {
    const kv = Math.floor(h / (d.heads / d.kvHeads)) * d.headDim;
    const scores = new Float64Array(n);
    for (let t = 0; t < n; t++) {
      let s = 0;
      for (let e = 0; e < d.headDim; e++) s += q[h * d.headDim + e]! * kcache[t * kvd + kv + e]!;
      scores[t] = s / Math.sqrt(d.headDim);
    }
    const top = Math.max(...scores);
    const weights = scores.map((s) => Math.exp(s - top));
    const total = weights.reduce((a, b) => a + b, 0);
    for (let e = 0; e < d.headDim; e++) {
      let s = 0;
      for (let t = 0; t < n; t++) s += weights[t]! * vcache[t * kvd + kv + e]!;
      out[h * d.headDim + e] = s / total;
    }
  }
  return out;
}

function addInto(x: Float64Array, y: Float64Array): void {
  for (let i = 0; i < x.length; i++) x[i] = x[i]! + y[i]!;
}

function argmax(v: Float64Array): number {
  let at = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[at]!) at = i;
  return at;
}
