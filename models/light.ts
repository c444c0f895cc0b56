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
export {
  type Backend,
  BACKENDS,
  type Complexity,
  type Dtype,
  DTYPES,
  type Residency,
  type Shape,
  type Variant,
} from "../kernels/types.ts";
export type * from "../core/result.ts";
export {
  checkConsistency,
  loadReport,
  type LoadReportOptions,
  parseReport,
  type ParseReportOptions,
} from "../reports/load.ts";
export { ReportError, type ReportErrorKind, type ReportIssue } from "../reports/error.ts";
export {
  type AdapterInfo,
  type CalibrationMode,
  type CostFit,
  type Crossover,
  type CrossoverPair,
  type DecodeStepProbe,
  type EarlierRun,
  type EstimateInterval,
  type Figure,
  type GpuApi,
  type GpucalInfo,
  type Interval,
  type JsonValue,
  type LlmSection,
  type LlmValidation,
  type MachineInfo,
  type Measurement,
  type MeasurementPlace,
  type ProvenanceTag,
  type RepeatabilityGroup,
  type RepeatabilityInfo,
  type Report,
  type ReportProvenance,
  SCHEMA_VERSION,
  type StabilityInfo,
  type StabilityProbe,
  type StopReason,
  type SystemFigures,
  type Threshold,
  type TimedVariant,
  type Tuning,
} from "../core/schema.ts";
export {
  type DecodeBreakdown,
  type DecodeInterval,
  type DeviceMemory,
  type DeviceRates,
  type EstimateOptions,
  estimateTokensPerSec,
  type KernelEstimate,
  type KernelTime,
  type KernelTimeModel,
  type KernelTimeRequest,
  type PrefillBreakdown,
  type RateFigure,
  type TokensPerSecEstimate,
} from "./llm/estimate.ts";
export {
  planSharding,
  type ShardingCandidate,
  type ShardingOptions,
  type ShardingPlan,
} from "./llm/sharding.ts";
export type { ParallelPlan, Strategy } from "./llm/shards.ts";
export type { Interconnect } from "./llm/comm.ts";
export {
  type FitCheck,
  KV_DTYPES,
  type KvDtype,
  type MemoryBreakdown,
  type Quant,
  QUANTS,
} from "./llm/memory.ts";
export type { KernelWork } from "./llm/decode_kernels.ts";
export { getPreset, type ModelSpec, PRESETS } from "./llm/presets.ts";
export { ratesFromReport, type RatesOptions, type ReportRates } from "./llm/rates.ts";
export {
  borrowReport,
  type MachineDescription,
  type NearestReport,
  nearestReport,
} from "./nearest.ts";
export type { IndexEntry, ReportIndex } from "../reports/index.ts";
