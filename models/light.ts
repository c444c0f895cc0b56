/**
 * The light entry of gpucal, for programs that decide from a calibration report and measure
 * nothing: load a report (from a path or a URL), select a backend, predict a time, recommend a
 * variant, plan a chain of ops, adapt online, and estimate LLM tokens per second and sharding.
 * It loads no runner and no WebAssembly assembler (wabt); the kernel catalog comes along for the
 * ops' FLOP and byte counts, as text. Import it as `@gpucal/gpucal/models` or from the raw URL of
 * this file.
 *
 * @example
 * ```ts ignore
 * import { BackendSelector, loadReport, predictTime } from "./light.ts";
 * const report = await loadReport("reports/<slug>.json");
 * const choice = BackendSelector.fromReport(report).select({
 *   op: "matmul", shape: { m: 1, k: 4096, n: 1024 }, dtype: "f32",
 * });
 * console.log(choice.backend, predictTime(report, { op: "matmul", shape: { m: 1, k: 4096, n: 1024 }, dtype: "f32", backend: choice.backend }).interval);
 * ```
 *
 * @module
 */
export * from "./mod.ts";
export { loadReport, parseReport } from "../reports/load.ts";
export type { Figure, Measurement, Report } from "../core/schema.ts";
export { estimateTokensPerSec } from "./llm/estimate.ts";
export { planSharding } from "./llm/sharding.ts";
export { getPreset, PRESETS } from "./llm/presets.ts";
export { ratesFromReport } from "./llm/rates.ts";
export { borrowReport, nearestReport } from "./nearest.ts";
