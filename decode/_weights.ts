/**
 * The synthetic decode's random weights, reproducible tensor by tensor: each tensor has its own
 * generator, seeded from its label, so the GPU upload and the float64 reference
 * (`reference.ts`) read the same values, and neither ever holds the whole model on the host.
 *
 * @module
 */
import { groupsPerRow, q4RowBytes } from "../kernels/gemv/mod.ts";

/**
 * Weight formats the synthetic decode runs: f32, or int4 (the `q4` gemv: packed nibbles, low
 * first, weight = (nibble − 8) × scale, one f32 scale per 32 weights of a row).
 *
 * @example
 * ```ts
 * import type { DecodeQuant } from "./_weights.ts";
 * const q: DecodeQuant = "int4";
 * ```
 */
export type DecodeQuant = "f32" | "int4";

/**
 * One tensor's contents: `words` 32-bit words, word `i` made from the `i`-th value `u` of its
 * generator — `offset + scale × u` stored as an f32 when `asFloat`, else `u`'s raw bits.
 *
 * @example
 * ```ts
 * import { gainTensor } from "./_weights.ts";
 * console.log(gainTensor("final_norm", 512).words); // 512
 * ```
 */
export interface Tensor {
  /** Names the tensor (and its buffer) and seeds its generator. */
  readonly label: string;
  readonly words: number;
  readonly asFloat: boolean;
  readonly scale: number;
  readonly offset: number;
}

/** Base of every tensor's seed. */
const WEIGHT_SEED = 0x9e3779b9;
/** Words written per `writeBuffer` call: the host holds no more of a tensor than this. */
const CHUNK_WORDS = 1 << 20;

/**
 * A tensor's generator state: its label hashed (FNV-1a) with the decode's seed, never 0.
 *
 * @param label The tensor's label.
 * @returns The xorshift32 seed.
 * @example
 * ```ts
 * import { tensorSeed } from "./_weights.ts";
 * console.log(tensorSeed("embed") === tensorSeed("embed"), tensorSeed("embed") !== 0); // true true
 * ```
 */
export function tensorSeed(label: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) hash = Math.imul(hash ^ label.charCodeAt(i), 0x01000193);
  return (hash ^ WEIGHT_SEED) >>> 0 || 1;
}

/**
 * Fills `out` with the tensor's next `out.length` words from generator state `state` (xorshift32:
 * fast and reproducible; the values only need to be varied, not good).
 *
 * @returns The state after them.
 */
function generate(tensor: Tensor, out: Float32Array | Uint32Array, length: number, state: number) {
  let s = state;
  const { scale, offset } = tensor;
  for (let i = 0; i < length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = offset + scale * (s >>> 0);
  }
  return s;
}

/**
 * The tensors of a rows × cols matrix: f32 uniform in ±1/√cols, or q4 random nibbles (packed in
 * words) with per-32 scales uniform in [1/8, 3/8) × 1/√cols.
 *
 * @param label The matrix's label (`"layer0.wq"`, `"lm_head"` …).
 * @param rows Rows.
 * @param cols Columns.
 * @param quant Weight format.
 * @returns `[weights]` for f32, `[packed weights, scales]` for int4.
 * @example
 * ```ts
 * import { matrixTensors } from "./_weights.ts";
 * console.log(matrixTensors("lm_head", 16, 64, "int4").map((t) => `${t.label}:${t.words}`));
 * // ["lm_head.q4:128", "lm_head.scales:32"]
 * ```
 */
export function matrixTensors(
  label: string,
  rows: number,
  cols: number,
  quant: DecodeQuant,
): Tensor[] {
  const amp = 1 / Math.sqrt(cols);
  if (quant === "f32") {
    return [{ label, words: rows * cols, asFloat: true, scale: amp / 2 ** 31, offset: -amp }];
  }
  return [
    {
      label: `${label}.q4`,
      words: Math.ceil(rows * q4RowBytes(cols) / 4),
      asFloat: false,
      scale: 1,
      offset: 0,
    },
    {
      label: `${label}.scales`,
      words: rows * groupsPerRow(cols),
      asFloat: true,
      scale: amp / 4 / 2 ** 32,
      offset: amp / 8,
    },
  ];
}

/**
 * The gain of an RMSNorm: values in [0.75, 1.25), so a kernel that ignored it would show.
 *
 * @param label The norm's label.
 * @param n Its length.
 * @returns The tensor.
 * @example
 * ```ts
 * import { gainTensor, hostTensor } from "./_weights.ts";
 * const g = hostTensor(gainTensor("final_norm", 4)) as Float32Array;
 * console.log(g.every((v) => v >= 0.75 && v < 1.25)); // true
 * ```
 */
export function gainTensor(label: string, n: number): Tensor {
  return { label, words: n, asFloat: true, scale: 2 ** -33, offset: 0.75 };
}

/**
 * Bytes a tensor's data takes (its buffer may be padded beyond).
 *
 * @param tensor The tensor.
 * @returns 4 × words.
 * @example
 * ```ts
 * import { gainTensor, tensorBytes } from "./_weights.ts";
 * console.log(tensorBytes(gainTensor("g", 8))); // 32
 * ```
 */
export function tensorBytes(tensor: Tensor): number {
  return tensor.words * 4;
}

/**
 * A host copy of a tensor: f32 values as a `Float32Array`, raw words as a `Uint32Array`.
 *
 * @param tensor The tensor.
 * @returns Its words.
 * @example
 * ```ts
 * import { gainTensor, hostTensor } from "./_weights.ts";
 * console.log(hostTensor(gainTensor("g", 3)).length); // 3
 * ```
 */
export function hostTensor(tensor: Tensor): Float32Array | Uint32Array {
  const out = tensor.asFloat ? new Float32Array(tensor.words) : new Uint32Array(tensor.words);
  generate(tensor, out, out.length, tensorSeed(tensor.label));
  return out;
}

/**
 * Writes a tensor into a device buffer chunk by chunk, so no host copy of it is ever whole.
 *
 * @param device The device.
 * @param buffer The destination (with `COPY_DST`, at least {@linkcode tensorBytes} long).
 * @param tensor The tensor.
 * @example
 * ```ts ignore
 * import { gainTensor, uploadTensor } from "./_weights.ts";
 * uploadTensor(device, buffer, gainTensor("final_norm", 512));
 * ```
 */
export function uploadTensor(device: GPUDevice, buffer: GPUBuffer, tensor: Tensor): void {
  const length = Math.min(tensor.words, CHUNK_WORDS);
  const chunk = tensor.asFloat ? new Float32Array(length) : new Uint32Array(length);
  let state = tensorSeed(tensor.label);
  for (let at = 0; at < tensor.words; at += chunk.length) {
    const n = Math.min(chunk.length, tensor.words - at);
    state = generate(tensor, chunk, n, state);
    device.queue.writeBuffer(buffer, at * 4, chunk, 0, n);
  }
}
