/**
 * The vocabulary every kernel, runner and model shares: backends, dtypes,
 * shapes, variants and the {@linkcode OpSpec} contract that one op file fills in.
 *
 * An op is data plus bodies: what it computes (a float64 reference), how much
 * work it is (FLOPs, minimum bytes), how to sweep its size, and one
 * implementation per backend with a declared search space of variants.
 *
 * @module
 */

/** Every backend gpucal measures, fastest-to-set-up last. */
export const BACKENDS = ["webgpu", "wasm", "wasm-mt", "js"] as const;

/**
 * A compute backend.
 *
 * - `webgpu`: WGSL on the adapter Deno's WebGPU gives us.
 * - `wasm`: WebAssembly SIMD128 (f32x4) on one thread.
 * - `wasm-mt`: the same WebAssembly spread over all cores with workers and shared memory.
 * - `js`: plain scalar TypeScript on typed arrays.
 *
 * @example
 * ```ts
 * import { type Backend, BACKENDS } from "./types.ts";
 * const b: Backend = "wasm";
 * console.log(BACKENDS.includes(b)); // true
 * ```
 */
export type Backend = typeof BACKENDS[number];

/**
 * The CPU backends, slowest first: the order the `js→wasm` and `wasm→wasm-mt` crossovers climb.
 *
 * @example
 * ```ts
 * import { CPU_BACKENDS } from "./types.ts";
 * console.log(CPU_BACKENDS.includes("webgpu")); // false
 * ```
 */
export const CPU_BACKENDS: readonly Backend[] = ["js", "wasm", "wasm-mt"];

/** Every element type gpucal knows. */
export const DTYPES = ["f32", "f16", "q8", "q4"] as const;

/**
 * Element type of an op's operands.
 *
 * - `f32`, `f16`: IEEE floats for every operand (`f16` needs WebGPU `shader-f16`).
 * - `q8`, `q4`: weight-only quantization (gemv): int8 or packed int4 weights with one f32 scale
 *   per group of {@linkcode QUANT_GROUP_SIZE} weights, f32 activations and accumulation.
 *
 * @example
 * ```ts
 * import { BYTES_PER_ELEMENT } from "./types.ts";
 * console.log(BYTES_PER_ELEMENT.f16); // 2
 * ```
 */
export type Dtype = typeof DTYPES[number];

/** Weights per f32 scale in the quantized dtypes `q8` and `q4`. */
export const QUANT_GROUP_SIZE = 32;

/**
 * Storage bytes per element, scales of quantized weights included.
 *
 * @example
 * ```ts
 * import { BYTES_PER_ELEMENT } from "./types.ts";
 * console.log(BYTES_PER_ELEMENT.q4); // 0.625 (half a byte plus 4/32 of a scale)
 * ```
 */
export const BYTES_PER_ELEMENT: Readonly<Record<Dtype, number>> = {
  f32: 4,
  f16: 2,
  q8: 1 + 4 / QUANT_GROUP_SIZE,
  q4: 0.5 + 4 / QUANT_GROUP_SIZE,
};

/**
 * How an op's cost grows with its size, in the seeds' three classes.
 *
 * @example
 * ```ts
 * import type { Complexity } from "./types.ts";
 * const c: Complexity = "matrix";
 * ```
 */
export type Complexity = "elementwise" | "reduction" | "matrix";

/**
 * Where the data lives when a measurement starts and ends.
 *
 * - `end-to-end`: host arrays in, host array out: upload + kernel + readback, what a CPU caller pays.
 * - `device-resident`: operands already on the device, many dispatches per synchronisation.
 *
 * CPU backends are always end-to-end (there is nothing to move).
 *
 * @example
 * ```ts
 * import type { Residency } from "./types.ts";
 * const r: Residency = "device-resident";
 * ```
 */
export type Residency = "end-to-end" | "device-resident";

/**
 * A shape: named integer dimensions, e.g. `{ m: 512, k: 512, n: 512 }` or `{ n: 1048576 }`.
 *
 * @example
 * ```ts
 * import type { Shape } from "./types.ts";
 * const s: Shape = { m: 64, k: 33, n: 7 };
 * ```
 */
export type Shape = Readonly<Record<string, number>>;

/**
 * One point in a kernel's search space: tile sizes, workgroup shape, vector width...
 * Its {@linkcode variantId} names it in reports.
 *
 * @example
 * ```ts
 * import { variantId, type Variant } from "./types.ts";
 * const v: Variant = { wg: 64, tile: 4, vec4: true };
 * console.log(variantId(v)); // "tile=4,vec4=true,wg=64"
 * ```
 */
export type Variant = Readonly<Record<string, number | string | boolean>>;

/**
 * A stable name for a variant: its keys sorted, `key=value` joined by commas; `"default"` when empty.
 *
 * @param variant The variant to name.
 * @returns The variant's id.
 * @example
 * ```ts
 * import { variantId } from "./types.ts";
 * console.log(variantId({})); // "default"
 * ```
 */
export function variantId(variant: Variant): string {
  const keys = Object.keys(variant).sort();
  if (keys.length === 0) return "default";
  return keys.map((k) => `${k}=${variant[k]}`).join(",");
}

/**
 * A variant back from its id (`"tile=4,vec4=true,wg=8x8"`, see {@linkcode variantId}); `"default"`
 * is `{}`.
 *
 * @param id A variant id, as a report stores it.
 * @returns Its parameters: numbers and booleans where the text is one, strings otherwise.
 * @example
 * ```ts
 * import { variantFromId } from "./types.ts";
 * console.log(variantFromId("tile=4,vec4=true,wg=8x8")); // { tile: 4, vec4: true, wg: "8x8" }
 * ```
 */
export function variantFromId(id: string): Variant {
  if (id === "default" || id === "") return {};
  const out: Record<string, number | string | boolean> = {};
  for (const part of id.split(",")) {
    const eq = part.indexOf("=");
    const key = eq < 0 ? part : part.slice(0, eq);
    const text = eq < 0 ? "true" : part.slice(eq + 1);
    const num = Number(text);
    out[key] = text === "true"
      ? true
      : text === "false"
      ? false
      : text !== "" && Number.isFinite(num)
      ? num
      : text;
  }
  return out;
}

/**
 * Host data of one operand: f32 data as `Float32Array`, f16 as `Float16Array`, quantized weights
 * as `Int8Array` (q8) or `Uint8Array` (q4, two weights a byte, low nibble first, offset by 8).
 */
export type HostArray = Float32Array | Float16Array | Int8Array | Uint8Array;

/**
 * The operands of one run, in the order the op declares them, and the output length.
 *
 * @example
 * ```ts
 * import type { OpInputs } from "./types.ts";
 * const io: OpInputs = { arrays: [new Float32Array(4)], outputLength: 4 };
 * ```
 */
export interface OpInputs {
  /** Operand arrays in declaration order (quantized scales are their own Float32Array operand). */
  readonly arrays: readonly HostArray[];
  /** Number of output elements. */
  readonly outputLength: number;
}

/**
 * A deterministic random source: uniform floats in [0, 1).
 *
 * @example
 * ```ts
 * import type { Rng } from "./types.ts";
 * const rng: Rng = Math.random;
 * ```
 */
export type Rng = () => number;

/**
 * How the calibrator sweeps an op over one size axis: `shape(size)` maps the scalar size the
 * crossovers are expressed in (e.g. `n` of a square matmul, or an element count) to a shape.
 *
 * @example
 * ```ts
 * import type { SizeAxis } from "./types.ts";
 * const axis: SizeAxis = {
 *   unit: "elements", min: 1, max: 1 << 26, shape: (n) => ({ n }), size: (s) => s.n ?? 0,
 * };
 * ```
 */
export interface SizeAxis {
  /** What the size counts, for people: "elements", "n (M=N=K)", "rows (k = 4096)". */
  readonly unit: string;
  /** Smallest meaningful size. */
  readonly min: number;
  /** Largest size worth sweeping on a big machine (limits and memory may stop earlier). */
  readonly max: number;
  /** Shape of the sweep at a size. */
  shape(size: number): Shape;
  /** Size of a shape on this axis (the inverse of `shape`). */
  size(shape: Shape): number;
}

/**
 * A JavaScript (scalar TypeScript) implementation: writes the output in place.
 *
 * @example
 * ```ts
 * import type { JsImpl } from "./types.ts";
 * const add: JsImpl = {
 *   variants: [{}],
 *   run: (ins, out) => {
 *     const a = ins[0] as Float32Array, b = ins[1] as Float32Array;
 *     for (let i = 0; i < out.length; i++) out[i] = a[i]! + b[i]!;
 *   },
 * };
 * ```
 */
export interface JsImpl {
  /** The search space; `[{}]` when there is nothing to tune. */
  readonly variants: readonly Variant[];
  /** Why this variant cannot run this shape and dtype (e.g. f16 on the CPU), or null. */
  unsupported?(shape: Shape, dtype: Dtype, variant: Variant): string | null;
  /** Compute `out` from `ins`. */
  run(ins: readonly HostArray[], out: Float32Array, shape: Shape, variant: Variant): void;
}

/**
 * A WebAssembly implementation, shared by `wasm` (one thread) and `wasm-mt` (all cores).
 *
 * The module text imports `env.memory` (shared) and exports `run`. The runner lays operands out
 * in memory 16-byte aligned, then calls `run(...args(shape, ptrs, outPtr, start, end, variant,
 * dtype))`; for `wasm-mt` it splits `[0, parts(shape))` into a few contiguous chunks per thread,
 * which the threads claim as they go (so a late thread does less, not the same half).
 * `wat` and `args` get the dtype because one op may need a different module per dtype (gemv's
 * q8/q4 weights); ops with one module for every dtype simply ignore it.
 *
 * @example
 * ```ts
 * import type { WasmImpl } from "./types.ts";
 * const impl: WasmImpl = {
 *   variants: [{}],
 *   wat: () => `(module (import "env" "memory" (memory 1 65536 shared)) (func (export "run")))`,
 *   parts: () => 1,
 *   args: () => [],
 * };
 * ```
 */
export interface WasmImpl {
  /** The search space; `[{}]` when there is nothing to tune. */
  readonly variants: readonly Variant[];
  /** Why this variant cannot run this shape and dtype (e.g. f16 on the CPU), or null. */
  unsupported?(shape: Shape, dtype: Dtype, variant: Variant): string | null;
  /** WAT text for a variant and dtype (assembled with SIMD and threads enabled). */
  wat(variant: Variant, dtype: Dtype): string;
  /** Number of independent work items (rows, blocks) the op can be split into. */
  parts(shape: Shape, variant: Variant): number;
  /**
   * The length of the dimension `parts` cuts and how much of it one part takes (the last part
   * takes the rest): `{ total: n, per: 65536 }` for a reduction's blocks. A `wasm-mt` run is as
   * long as its busiest thread, so a sum of 70 001 (a full block and 4 465 elements) takes about
   * as long as its full block on one thread and the wake of the other (see
   * `models/_imbalance.ts`). Absent: parts are taken as equal.
   */
  partLength?(shape: Shape, variant: Variant): { readonly total: number; readonly per: number };
  /**
   * Which of the kernel's code paths a shape runs, where it has more than one whose speed its
   * work does not tell apart: 0 for the main one, a positive path one that skips the main one's
   * per-call work (`packsPerCall`), a negative one that does it another way. Paths a unit apart
   * are one gap apart in the shape model. Matmul runs fewer rows than one micro-tile unpacked
   * (path 1): in one process 5 × 1024² took 0.44 ms and 6 × 1024² (one packed micro-tile) 0.90;
   * and more columns than one packed block in blocks (path −1). The shape model keeps
   * measurements of different paths apart, so neither is drawn across the switch. Absent: one
   * path.
   */
  codePath?(shape: Shape, variant: Variant): number;
  /**
   * True when each call packs a shared operand for itself (matmul packs B for its rows): a
   * `wasm-mt` run then gives each thread one contiguous range, since every further range would
   * pack the operand again.
   */
  readonly packsPerCall?: boolean;
  /** Arguments of `run` for the work items `[start, end)`. */
  args(
    shape: Shape,
    inputPtrs: readonly number[],
    outPtr: number,
    start: number,
    end: number,
    variant: Variant,
    dtype: Dtype,
  ): number[];
  /**
   * For reductions across parts (`sum`, `dot`): how many f32 slots the output region needs,
   * when more than the op's `outputLength` (e.g. the result then one partial per part). The
   * runner reserves that many f32 at `outPtr` and reads back only the first `outputLength`.
   * Absent: exactly `outputLength`.
   */
  outputSlots?(shape: Shape, variant: Variant): number;
  /**
   * For reductions across parts: folds what the parts wrote into the output. The runner calls it
   * once per run, on its own thread, after every part of the run has finished (on `wasm-mt`:
   * after all workers are done), inside the timed region. `memory` views the whole module memory
   * as f32 and `outPtr` is a byte address, so the output is `memory[outPtr / 4]`. Absent: the
   * parts write the output themselves.
   */
  finish?(memory: Float32Array, outPtr: number, shape: Shape, variant: Variant): void;
}

/**
 * One WGSL program to dispatch.
 *
 * Bindings, group 0: operands `0..n-1` as `var<storage, read>`, the output at `n` as
 * `var<storage, read_write>`, when `uniforms` is given, a `var<uniform>` at `n + 1`, and, when
 * `scratchBytes` is given, a `var<storage, read_write>` scratch buffer at `n + 2`.
 *
 * @example
 * ```ts
 * import type { WgslProgram } from "./types.ts";
 * const p: WgslProgram = { code: "...", workgroups: [4, 1, 1], key: "add|wg=64" };
 * ```
 */
export interface WgslProgram {
  /** Complete WGSL source with an `@compute` entry point named `main`. */
  readonly code: string;
  /** Workgroup counts to dispatch. */
  readonly workgroups: readonly [number, number, number];
  /** Uniform block contents (dims etc.), 16-byte padded by the runner. */
  readonly uniforms?: Uint32Array;
  /** Cache key folding in every parameter that changes `code` (not the uniforms). */
  readonly key: string;
  /**
   * Bytes of a scratch storage buffer bound at `n + 2` (e.g. per-workgroup partial sums and an
   * atomic counter, so the last workgroup of a single dispatch can fold a reduction). The runner
   * zero-fills it once when it creates it and never clears it between runs: a program must leave
   * it as it found it (reset its counters). Absent: no scratch binding.
   */
  readonly scratchBytes?: number;
}

/**
 * Output tiles at least this full count as whole (see {@linkcode WebGpuImpl.utilisation}): fits
 * are drawn through such sizes, and partial tiles are priced beside them.
 *
 * @example
 * ```ts
 * import { FULL_TILES } from "./types.ts";
 * console.log(FULL_TILES); // 0.95
 * ```
 */
export const FULL_TILES = 0.95;

/**
 * The WebGPU implementation of an op.
 *
 * @example
 * ```ts
 * import type { WebGpuImpl } from "./types.ts";
 * const impl: WebGpuImpl = {
 *   variants: [{ wg: 64 }],
 *   program: (_shape, _dtype, v) => ({ code: "...", workgroups: [1, 1, 1], key: `x|${v.wg}` }),
 * };
 * ```
 */
export interface WebGpuImpl {
  /** The search space. */
  readonly variants: readonly Variant[];
  /** Adapter features a dtype needs, e.g. `{ f16: ["shader-f16"] }`. */
  readonly features?: Partial<Record<Dtype, readonly GPUFeatureName[]>>;
  /** Why this variant cannot run this shape (e.g. a tile larger than the problem), or null. */
  unsupported?(shape: Shape, dtype: Dtype, variant: Variant): string | null;
  /** The program for a shape, dtype and variant. */
  program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram;
  /**
   * For a kernel that tiles its output: the share of the dispatched tiles' area that the output
   * covers, along the dimensions at least one tile long (1 where the tiles fit it exactly). A
   * partial tile's threads run their loops all the same, so a 260³ matmul on 64 × 128 tiles pays
   * for 320 × 384 outputs.
   */
  utilisation?(shape: Shape, variant: Variant): number;
  /**
   * For a kernel that tiles its output: along the dimensions under one tile (which `utilisation`
   * counts as covered), the share of the arithmetic its invocations do that lands in the output.
   * An invocation computes a whole block of outputs however few of them exist: a register-blocked
   * matmul of 16-row blocks runs one row of a decode as sixteen. 1 where the blocks fit exactly.
   */
  blockUtilisation?(shape: Shape, variant: Variant): number;
}

/**
 * Everything gpucal knows about one op: what it computes, what it costs, how to sweep it, and its
 * implementations. Adding an op is adding one file that exports one of these and listing it in
 * `kernels/catalog.ts`.
 *
 * @example
 * ```ts
 * import { matmul } from "./matmul/mod.ts";
 * console.log(matmul.flops({ m: 2, k: 3, n: 4 })); // 48
 * ```
 */
export interface OpSpec {
  /** Stable name used in reports and on the command line, e.g. `"matmul"`. */
  readonly name: string;
  /** One line for people. */
  readonly summary: string;
  /** The seeds' complexity class. */
  readonly complexity: Complexity;
  /** Names of the shape's dimensions, in display order. */
  readonly dims: readonly string[];
  /** Dtypes this op supports on at least one backend. */
  readonly dtypes: readonly Dtype[];
  /** The sweep axis. */
  readonly axis: SizeAxis;
  /** Floating-point operations of one run. */
  flops(shape: Shape): number;
  /** Minimum bytes one run must read and write. */
  bytes(shape: Shape, dtype: Dtype): number;
  /**
   * Bytes of the largest buffer a run binds, an operand or its output (the output is f32 for
   * q8/q4 weights, f16 for f16): a WebGPU adapter binds no storage buffer over its
   * `maxStorageBufferBindingSize`, whatever its memory (128 MiB on lavapipe). Every op of the
   * catalog has it; without it, predictions do not check the adapter's limit (its runner still
   * does).
   */
  readonly largestBufferBytes?: (shape: Shape, dtype: Dtype) => number;
  /** Random operands (never zeros) in the dtype's storage format. */
  inputs(shape: Shape, dtype: Dtype, rng: Rng): OpInputs;
  /** The exact answer, computed in float64 from the same (rounded) operands. */
  reference(shape: Shape, dtype: Dtype, inputs: OpInputs): Float64Array;
  /** Largest acceptable error, relative to the reference's scale (see `calibrate/verify.ts`). */
  tolerance(shape: Shape, dtype: Dtype): number;
  /**
   * Whether the programs that run it read its operands once per use, as a decode reads each
   * layer's weight matrix once per token while the others stream through the caches: then it is
   * timed with its operands as cold as there (see `calibrate/runners/webgpu.ts`).
   */
  readonly streamsOperands?: boolean;
  /**
   * Bytes of one row of the matrix the op streams in rows (gemv's W), in the dtype's storage
   * format; absent for ops without one. Whether a row starts on a 4-byte word or a 16-byte vector
   * decides which load path a kernel takes (see `models/_alignment.ts`).
   */
  readonly rowBytes?: (shape: Shape, dtype: Dtype) => number;
  /**
   * Bytes a row's length must be a multiple of for the WebGPU kernel to load it in vectors, by
   * dtype; 16 when absent. It is the kernel's unit, not the hardware's: a q8 gemv row loads as
   * `vec4<u32>` only when it is whole 32-weight groups, and 6000 columns (16-byte rows, not whole
   * groups) ran 1.6× slower on lavapipe than 6016.
   */
  readonly rowVectorBytes?: (dtype: Dtype) => number;
  /** Implementations; `wasm` serves both `wasm` and `wasm-mt`. */
  readonly impls: {
    readonly js?: JsImpl;
    readonly wasm?: WasmImpl;
    readonly webgpu?: WebGpuImpl;
  };
}

/**
 * Whether a shape lies on its op's sweep axis (`op.axis.shape(size)` of its own size): the square
 * matmuls, square gemvs and 32-row softmaxes of a sweep. Cost-model fits, crossovers and tuning
 * describe the axis; off-axis shapes (a matmul with m = 1, a gemv with rows ≠ cols) are measured
 * to learn how a shape's proportions change its time.
 *
 * @param op The op.
 * @param shape A shape of it.
 * @returns True when every dimension equals the axis shape's.
 * @example
 * ```ts
 * import { isOnAxis } from "./types.ts";
 * import { matmul } from "./matmul/mod.ts";
 * console.log(isOnAxis(matmul, { m: 64, k: 64, n: 64 }), isOnAxis(matmul, { m: 1, k: 64, n: 64 }));
 * // true false
 * ```
 */
export function isOnAxis(op: Pick<OpSpec, "dims" | "axis">, shape: Shape): boolean {
  const axis = op.axis.shape(op.axis.size(shape));
  return op.dims.every((d) => axis[d] === shape[d]);
}

/**
 * Formats a shape in its op's dimension order: `512x512x512`.
 *
 * @param op The op whose dims give the order.
 * @param shape The shape.
 * @returns The shape as text.
 * @example
 * ```ts
 * import { formatShape } from "./types.ts";
 * import { matmul } from "./matmul/mod.ts";
 * console.log(formatShape(matmul, { m: 2, k: 3, n: 4 })); // "2x3x4"
 * ```
 */
export function formatShape(op: Pick<OpSpec, "dims">, shape: Shape): string {
  return op.dims.map((d) => shape[d]).join("x");
}

/**
 * The implementation of `op` that runs on `backend` (`wasm` serves both `wasm` and `wasm-mt`).
 *
 * @param op The op.
 * @param backend The backend.
 * @returns Its implementation, or undefined when the op has none there.
 * @example
 * ```ts
 * import { implOf } from "./types.ts";
 * import { matmul } from "./matmul/mod.ts";
 * console.log(implOf(matmul, "wasm-mt") === matmul.impls.wasm); // true
 * ```
 */
export function implOf(op: OpSpec, backend: Backend): JsImpl | WasmImpl | WebGpuImpl | undefined {
  if (backend === "js") return op.impls.js;
  if (backend === "webgpu") return op.impls.webgpu;
  return op.impls.wasm;
}
