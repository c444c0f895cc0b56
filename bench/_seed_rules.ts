/**
 * The fixed rules gpucal's calibrated selector is compared against in `deno task bench:regret`,
 * as pure functions choosing among `js` (scalar), `wasm` (SIMD, one thread) and `webgpu`:
 * the seeds' "5× PCIe rule" and Low/Medium/High thresholds table, and TF.js's CPU handoff.
 * None of them looks at a measurement; that is the point of the comparison.
 *
 * @example
 * ```ts
 * import { pcieRule, thresholdRule, tfjsHandoffRule } from "./_seed_rules.ts";
 * console.log(pcieRule(2 * 512 ** 3, 3 * 512 * 512 * 4)); // "wasm"
 * console.log(thresholdRule("matrix", 50_000)); // "webgpu"
 * console.log(tfjsHandoffRule([500, 500])); // "wasm"
 * ```
 *
 * @module
 */
import type { Complexity } from "../kernels/types.ts";

/**
 * The backends the fixed rules choose among: scalar, SIMD and GPU.
 *
 * @example
 * ```ts
 * import type { SeedBackend } from "./_seed_rules.ts";
 * const b: SeedBackend = "wasm";
 * ```
 */
export type SeedBackend = "js" | "wasm" | "webgpu";

/**
 * Constants of {@linkcode pcieRule}; the seeds' defaults when absent.
 *
 * @example
 * ```ts
 * import type { PcieRuleOptions } from "./_seed_rules.ts";
 * const pcie3: PcieRuleOptions = { linkBytesPerS: 16e9 };
 * ```
 */
export interface PcieRuleOptions {
  /** Host↔device link bandwidth, bytes/s; 32e9 (PCIe 4.0 x16). */
  readonly linkBytesPerS?: number;
  /** GPU compute throughput, FLOP/s; 20e12. */
  readonly gpuFlopsPerS?: number;
  /** How many times the transfer time the compute time must exceed; 5. */
  readonly dispatchRatio?: number;
}

/** The seeds' defaults: 32 GB/s, 20 TFLOP/s, 5×. */
export const PCIE_RULE_DEFAULTS: Required<PcieRuleOptions> = {
  linkBytesPerS: 32e9,
  gpuFlopsPerS: 20e12,
  dispatchRatio: 5,
};

/**
 * The seeds' "5× PCIe rule" (after Gregg & Hazelwood 2011): the GPU only when its compute time
 * exceeds the dispatch ratio times the transfer time, SIMD otherwise (it never picks scalar).
 * With the defaults the GPU needs more than 3125 FLOP per byte moved.
 *
 * @param flops Floating-point operations of the workload.
 * @param bytes Bytes moved between host and device.
 * @param options Link bandwidth, GPU throughput and ratio.
 * @returns `webgpu` when `flops / gpu > ratio × bytes / link`, else `wasm`.
 * @throws {RangeError} when `flops` or `bytes` is negative or not finite.
 * @example
 * ```ts
 * import { pcieRule } from "./_seed_rules.ts";
 * console.log(pcieRule(1e12, 1e6)); // "webgpu"
 * ```
 */
export function pcieRule(
  flops: number,
  bytes: number,
  options: PcieRuleOptions = {},
): "wasm" | "webgpu" {
  checkCount("flops", flops);
  checkCount("bytes", bytes);
  const { linkBytesPerS, gpuFlopsPerS, dispatchRatio } = { ...PCIE_RULE_DEFAULTS, ...options };
  const computeS = flops / gpuFlopsPerS;
  const transferS = bytes / linkBytesPerS;
  return computeS > dispatchRatio * transferS ? "webgpu" : "wasm";
}

/**
 * A row of the seeds' thresholds table: SIMD above `simdAbove` elements, GPU above `gpuAbove`
 * (null: never).
 *
 * @example
 * ```ts
 * import type { ThresholdRow } from "./_seed_rules.ts";
 * const low: ThresholdRow = { simdAbove: 1_000_000, gpuAbove: null };
 * ```
 */
export interface ThresholdRow {
  readonly simdAbove: number;
  readonly gpuAbove: number | null;
}

/**
 * The seeds' Low/Medium/High table: Low (elementwise) SIMD above 1M elements and never the GPU;
 * Medium (reductions) SIMD above 10K, GPU above 100K; High (matrix) SIMD above 1K, GPU above 10K.
 */
export const SEED_THRESHOLDS: Readonly<Record<Complexity, ThresholdRow>> = {
  elementwise: { simdAbove: 1_000_000, gpuAbove: null },
  reduction: { simdAbove: 10_000, gpuAbove: 100_000 },
  matrix: { simdAbove: 1_000, gpuAbove: 10_000 },
};

/**
 * The seeds' complexity routing with their fixed thresholds (strictly above a threshold clears
 * it).
 *
 * @param complexity The op's class: `elementwise` (Low), `reduction` (Medium), `matrix` (High).
 * @param elements Elements of the operation (gpucal passes its largest operand's).
 * @param table The thresholds; {@linkcode SEED_THRESHOLDS} by default.
 * @returns `webgpu`, `wasm` or `js`.
 * @throws {RangeError} when `elements` is negative or not finite.
 * @example
 * ```ts
 * import { thresholdRule } from "./_seed_rules.ts";
 * console.log(thresholdRule("elementwise", 500_000)); // "js"
 * console.log(thresholdRule("reduction", 50_000)); // "wasm"
 * ```
 */
export function thresholdRule(
  complexity: Complexity,
  elements: number,
  table: Readonly<Record<Complexity, ThresholdRow>> = SEED_THRESHOLDS,
): SeedBackend {
  checkCount("elements", elements);
  const row = table[complexity];
  if (row.gpuAbove !== null && elements > row.gpuAbove) return "webgpu";
  if (elements > row.simdAbove) return "wasm";
  return "js";
}

/** TF.js's `WEBGPU_CPU_HANDOFF_SIZE_THRESHOLD` default (tfjs-backend-webgpu 4.22.0). */
export const TFJS_HANDOFF_ELEMENTS = 1000;

/**
 * TF.js's WebGPU backend CPU handoff: a kernel runs on the CPU when every input tensor has fewer
 * than `threshold` elements, on the GPU otherwise. TF.js's CPU is modelled as `wasm`.
 *
 * @param inputElements Elements of each input tensor.
 * @param threshold The handoff size; {@linkcode TFJS_HANDOFF_ELEMENTS} by default.
 * @returns `wasm` when every input is below the threshold, else `webgpu`.
 * @throws {RangeError} when there is no input or a count is negative or not finite.
 * @example
 * ```ts
 * import { tfjsHandoffRule } from "./_seed_rules.ts";
 * console.log(tfjsHandoffRule([999, 999])); // "wasm"
 * console.log(tfjsHandoffRule([999, 1000])); // "webgpu"
 * ```
 */
export function tfjsHandoffRule(
  inputElements: readonly number[],
  threshold: number = TFJS_HANDOFF_ELEMENTS,
): "wasm" | "webgpu" {
  if (inputElements.length === 0) {
    throw new RangeError("Cannot apply the TF.js handoff to no inputs: pass each input's elements");
  }
  for (const n of inputElements) checkCount("input elements", n);
  return inputElements.every((n) => n < threshold) ? "wasm" : "webgpu";
}

function checkCount(what: string, value: number): void {
  if (!(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`Invalid ${what} ${value}: pass a finite number ≥ 0`);
  }
}
