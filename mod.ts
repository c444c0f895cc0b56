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
export { measure, measureMany, type MeasureOptions } from "./calibrate/measure.ts";
export type * from "./core/result.ts";
export type { CalibrateOptions, CalibrationResult } from "./calibrate/calibrate.ts";
export { calibrate } from "./decode/hook.ts";
export { fitCostModel } from "./calibrate/fit.ts";
export { predictMs } from "./core/costmodel.ts";
export { findCrossovers } from "./calibrate/crossover.ts";
export { summarize } from "./core/stats.ts";
export { openGpu } from "./calibrate/device.ts";
export {
  checkConsistency,
  loadReport,
  type LoadReportOptions,
  parseReport,
  type ParseReportOptions,
  ReportError,
} from "./reports/load.ts";
export type { Crossover, Figure, Measurement, Report } from "./core/schema.ts";
export * from "./models/mod.ts";
export { estimateTokensPerSec } from "./models/llm/estimate.ts";
export { planSharding } from "./models/llm/sharding.ts";
export { getPreset, PRESETS } from "./models/llm/presets.ts";
export { ratesFromReport } from "./models/llm/rates.ts";
export { compareReports } from "./reports/compare.ts";
export { borrowReport, nearestReport } from "./models/nearest.ts";
