/**
 * gpucal: measures what this machine's GPU (Deno's WebGPU) and CPU (scalar JS, WebAssembly SIMD
 * on one thread and on all cores) really do, and turns the measurements into numbers other
 * programs decide with.
 *
 * - {@linkcode measure}: verify one kernel against its float64 reference, then time it.
 * - {@linkcode calibrate}: sweep every op, fit cost models and crossovers, write a report.
 * - {@linkcode loadReport} / {@linkcode parseReport}: read a report (file or URL) safely.
 * - {@linkcode BackendSelector}, {@linkcode predictTime}, {@linkcode recommendTuning},
 *   {@linkcode planGraph}, {@linkcode AdaptiveSelector}: decisions from a report.
 * - {@linkcode estimateTokensPerSec}, {@linkcode planSharding}, {@linkcode ratesFromReport}: LLM
 *   estimates from measured rates.
 * - {@linkcode compareReports}: noise-aware regression check of two reports.
 * - {@linkcode nearestReport}, {@linkcode borrowReport}: figures for a machine that has no report.
 *
 * @example Choosing a backend from a published report
 * ```ts ignore
 * import { BackendSelector, loadReport } from "./mod.ts";
 * const report = await loadReport("reports/llvmpipe-vulkan-x86_64-0123abcd.json");
 * const selector = BackendSelector.fromReport(report);
 * const choice = selector.select({ op: "matmul", shape: { m: 512, k: 512, n: 512 }, dtype: "f32" });
 * console.log(choice.backend, choice.reason);
 * ```
 *
 * @example Measuring one kernel (needs a WebGPU adapter for backend "webgpu")
 * ```ts ignore
 * import { measure } from "./mod.ts";
 * const r = await measure({ op: "add", shape: { n: 1 << 20 }, dtype: "f32", backend: "wasm" });
 * if (r.state === "ok") console.log(`${r.gbps.toFixed(1)} GB/s`);
 * ```
 *
 * @module
 */
export * from "./kernels/types.ts";
export { getOp, OPS } from "./kernels/catalog.ts";
export {
  measure,
  measureMany,
  type MeasureOptions,
  type RunnerSource,
  type WindowSamples,
} from "./calibrate/measure.ts";
export type { BatchTiming, Prepared, Runner } from "./calibrate/runner.ts";
export type * from "./core/result.ts";
export type { CalibrateOptions, CalibrationResult, LlmValidator } from "./calibrate/calibrate.ts";
export type { Checkout } from "./calibrate/checkout.ts";
export type { ProgressEvent } from "./calibrate/progress.ts";
export type { LlmValidationPlan } from "./calibrate/plan.ts";
export { calibrate } from "./decode/hook.ts";
export { type CostPoint, fitCostModel, type FitMeta } from "./calibrate/fit.ts";
export { predictMs } from "./core/costmodel.ts";
export {
  type BackendCurve,
  type CrossoverInput,
  type CurvePoint,
  findCrossovers,
} from "./calibrate/crossover.ts";
export { type StoppingRule, summarize } from "./core/stats.ts";
export {
  type GpuEntry,
  type GpuHandle,
  type GpuInfo,
  type GpuLimits,
  type GpuLoss,
  openGpu,
  type OpenGpuOptions,
} from "./calibrate/device.ts";
export * from "./models/light.ts";
export {
  type CompareOptions,
  compareReports,
  type Comparison,
  type ComparisonRow,
  type Drift,
} from "./reports/compare.ts";
export type { Tie } from "./reports/near_tie.ts";
export type { BackendShift, HostReference, PointChange } from "./reports/backend_shift.ts";
export type { ChoiceCost } from "./reports/threshold_cost.ts";
