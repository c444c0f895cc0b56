/**
 * The calibration report, defined once: zod schemas that validate untrusted report JSON, the
 * TypeScript types inferred from them, and the JSON Schema (`reports/schema.json`) generated from
 * the same definitions.
 *
 * Every string and array is bounded, every number is finite, and every object is strict (unknown
 * keys are rejected) except the free-form `details` of an LLM validation. Any change to the shape
 * bumps {@linkcode SCHEMA_VERSION} and adds a migration in `reports/load.ts`.
 *
 * @example
 * ```ts
 * import { ReportSchema } from "./schema.ts";
 * const result = ReportSchema.safeParse({ schemaVersion: 1 });
 * console.log(result.success); // false
 * ```
 *
 * @module
 */
// Library code imports npm packages by full specifier, so it works without this deno.json.
// deno-lint-ignore no-import-prefix
import { z } from "npm:zod@4.6.7";
import { BACKENDS, DTYPES } from "../kernels/types.ts";

/** The report format version this module defines. */
export const SCHEMA_VERSION = 1;

/** Registry naming the reused sub-schemas, so the JSON Schema shares them under `$defs`. */
const defs = z.registry<{ id: string; description: string }>();

function named<T extends z.ZodType>(schema: T, id: string, description: string): T {
  defs.add(schema, { id, description });
  return schema;
}

/** Caps on untrusted data; generous for real reports, small enough to refuse abuse. */
const MAX = {
  name: 128,
  text: 4096,
  warnings: 1000,
  features: 256,
  limits: 256,
  shapeDims: 16,
  measurements: 100_000,
  derived: 10_000,
  others: 64,
  command: 256,
  validations: 1000,
  details: 256,
  probes: 10_000,
  repeatabilityGroups: 64,
} as const;

const name = z.string().min(1).max(MAX.name);
const text = z.string().max(MAX.text);
const finite = z.number();
const nonNegative = z.number().nonnegative();
const count = z.int().nonnegative();
const share = z.number().min(0).max(1);

function boundedRecord<K extends z.ZodString, V extends z.ZodType>(key: K, value: V, max: number) {
  return z.record(key, value).refine((r) => Object.keys(r).length <= max, {
    message: `Expected at most ${max} keys`,
  });
}

/** Backend enum, from `kernels/types.ts`. */
export const BackendSchema = z.enum(BACKENDS);
/** Dtype enum, from `kernels/types.ts`. */
export const DtypeSchema = z.enum(DTYPES);
/** Residency enum (`Residency` in `kernels/types.ts`). */
export const ResidencySchema = z.enum(["end-to-end", "device-resident"]);
/** Complexity class enum (`Complexity` in `kernels/types.ts`). */
export const ComplexitySchema = z.enum(["elementwise", "reduction", "matrix"]);
/** Where a number came from. */
export const ProvenanceTagSchema = z.enum(["measured", "fitted", "extrapolated", "borrowed"]);

const interval = named(
  z.tuple([finite, finite]),
  "Interval",
  "A 95 % interval [low, high] in the unit of the number it qualifies",
);

/** A headline number with its unit, provenance and, when it could not be obtained, the reason. */
export const FigureSchema = named(
  z.strictObject({
    value: finite.nullable(),
    unit: z.string().max(MAX.name),
    tag: ProvenanceTagSchema,
    ci: interval.exactOptional(),
    source: text.exactOptional(),
    reason: text.exactOptional(),
  }),
  "Figure",
  "A headline number; value is null when it could not be obtained, and reason says why",
);

/** Robust timing statistics in ms per run (`SampleStats` in `core/result.ts`). */
export const SampleStatsSchema = named(
  z.strictObject({
    n: count,
    median: nonNegative,
    p10: nonNegative,
    p90: nonNegative,
    mad: nonNegative,
    min: nonNegative,
    max: nonNegative,
    ciHalfWidth: nonNegative,
    relCi: nonNegative,
  }),
  "SampleStats",
  "Robust summary of timing samples, ms per run",
);

/** A shape: named positive integer dimensions. */
export const ShapeSchema = named(
  boundedRecord(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).max(32),
    z.int().positive(),
    MAX.shapeDims,
  ),
  "Shape",
  "Named positive integer dimensions, e.g. {m, k, n}",
);

const measureIdentity = {
  op: name,
  shape: ShapeSchema,
  dtype: DtypeSchema,
  backend: BackendSchema,
  variant: z.string().min(1).max(512),
  residency: ResidencySchema,
  size: nonNegative,
  seq: count,
  /**
   * Set on the shapes a calibration measures beside the op's sweep axis (`calibrate/shapes.ts`):
   * they teach predictions how proportions change time, while fits, crossovers and tuning keep to
   * the axis.
   */
  offAxis: z.literal(true).exactOptional().describe(
    "True for a shape measured beside the op's sweep axis (a non-square matmul, a gemv with rows != cols): used by predictions, left out of fits, crossovers and tuning",
  ),
};

/** One measurement: `MeasureResult` from `core/result.ts` plus its axis `size` and `seq`. */
export const MeasurementSchema = z.discriminatedUnion("state", [
  z.strictObject({
    ...measureIdentity,
    state: z.literal("ok"),
    wall: SampleStatsSchema,
    gpu: SampleStatsSchema.exactOptional(),
    compileMs: nonNegative,
    maxRelError: nonNegative,
    flops: nonNegative,
    bytes: nonNegative,
    gflops: nonNegative,
    gbps: nonNegative,
    noisy: z.boolean(),
  }),
  z.strictObject({
    ...measureIdentity,
    state: z.literal("failed"),
    error: text,
    maxRelError: nonNegative.exactOptional(),
  }),
  z.strictObject({
    ...measureIdentity,
    state: z.literal("unsupported"),
    reason: text,
  }),
]);

/** A cost model `t(work) = t0 + smooth max(flops / F, bytes / B)` fitted to one series. */
export const CostFitSchema = z.strictObject({
  op: name,
  dtype: DtypeSchema,
  backend: BackendSchema,
  variant: z.string().min(1).max(512),
  residency: ResidencySchema,
  t0Us: finite,
  gflops: nonNegative.nullable(),
  gbps: nonNegative.nullable(),
  points: count,
  sizeRange: interval,
  rmsLogError: nonNegative,
  cvMape: nonNegative.nullable(),
  cvMaxError: nonNegative.nullable(),
});

/** The backend pairs a crossover compares. */
export const CrossoverPairSchema = z.enum(["js→wasm", "wasm→wasm-mt", "cpu→webgpu"]);

/** The size at which one backend starts beating another. */
export const CrossoverSchema = z.strictObject({
  op: name,
  dtype: DtypeSchema,
  residency: ResidencySchema,
  pair: CrossoverPairSchema,
  from: BackendSchema,
  to: BackendSchema,
  size: nonNegative.nullable(),
  unit: z.string().max(MAX.name),
  ci: interval.nullable(),
  driftCi: named(
    z.tuple([finite, finite]),
    "DriftInterval",
    "A 95 % interval of the crossover size that also lets each backend's whole curve shift by the run's measured drift (stability.driftSigma): the spread another run of this machine should expect. Absent when the report has no stability data",
  ).exactOptional(),
  driftOutOfRange: z.number().min(0).max(1).exactOptional(),
  fromFit: nonNegative.nullable(),
  fromRaw: nonNegative.nullable(),
  tag: ProvenanceTagSchema,
  reason: text.nullable(),
  others: z.array(nonNegative).max(MAX.others),
});

const timedVariant = z.strictObject({ variant: z.string().min(1).max(512), ms: nonNegative });

/** The best variant of a backend over a size range, from the tuning sweep. */
export const TuningSchema = z.strictObject({
  op: name,
  dtype: DtypeSchema,
  backend: BackendSchema,
  residency: ResidencySchema,
  sizeMin: nonNegative,
  sizeMax: nonNegative,
  unit: z.string().max(MAX.name),
  best: timedVariant,
  runnerUp: timedVariant.nullable(),
  tag: ProvenanceTagSchema,
});

/** Machine-wide figures: synchronisation, transfer, compile and peak rates. */
export const SystemSchema = z.strictObject({
  dispatchRoundTripMs: FigureSchema,
  perDispatchUs: FigureSchema,
  /**
   * Host time to record one dispatch with its pipeline and bind group into a compute pass, µs.
   * Absent in reports calibrated before gpucal measured it.
   */
  encodePerDispatchUs: FigureSchema.optional(),
  uploadGBps: FigureSchema,
  readbackGBps: FigureSchema,
  copyGBps: FigureSchema,
  compileMs: FigureSchema,
  peakGflops: z.partialRecord(DtypeSchema, FigureSchema),
  peakGbps: z.partialRecord(BackendSchema, FigureSchema),
});

/** One row of the seeds' threshold table: where SIMD beats scalar and the GPU beats the CPU. */
export const ThresholdSchema = z.strictObject({
  complexity: ComplexitySchema,
  op: name,
  dtype: DtypeSchema,
  residency: ResidencySchema,
  simdAbove: FigureSchema,
  gpuAbove: FigureSchema,
});

/** An end-to-end check of the cost models against a measured LLM decode rate. */
export const LlmValidationSchema = z.strictObject({
  model: name,
  quant: z.string().min(1).max(64),
  measuredTokensPerSec: nonNegative,
  estimatedTokensPerSec: nonNegative,
  error: finite,
  details: boundedRecord(
    z.string().max(MAX.name),
    named(z.json(), "JsonValue", "Any JSON value"),
    MAX.details,
  ).exactOptional(),
});

/** One drift probe: when it was taken and each backend's median time of the probe case. */
export const StabilityProbeSchema = z.strictObject({
  atS: nonNegative,
  ms: z.partialRecord(BackendSchema, nonNegative),
});

/**
 * How well one backend (in one residency) repeats its own times: fixed cases measured in several
 * windows minutes apart (`deno task noise`, `calibrate/stability.ts`).
 */
export const RepeatabilityGroupSchema = z.strictObject({
  backend: BackendSchema,
  residency: ResidencySchema,
  /** Cases measured in at least two windows. */
  cases: count,
  /** Their (case, window) times, each compared with its case's median over the windows. */
  times: count,
  within5: share,
  within10: share,
  within15: share,
  /** 1.4826 × the median absolute deviation of ln(time) from its case's median. */
  sigmaLn: nonNegative,
});

/** The repeatability of every backend over windows some time apart. */
export const RepeatabilitySchema = named(
  z.strictObject({
    windows: z.int().positive(),
    gapS: nonNegative,
    groups: z.array(RepeatabilityGroupSchema).max(MAX.repeatabilityGroups),
  }),
  "Repeatability",
  "Per backend and residency, the share of repeated times within ±5/10/15 % of their case's median over windows gapS seconds apart, and the robust standard deviation of ln(time)",
);

/**
 * The machine's drift during the run: a fixed small case measured on every backend at the start,
 * after every op and at the end (`calibrate/stability.ts`).
 */
export const StabilitySchema = named(
  z.strictObject({
    op: name,
    dtype: DtypeSchema,
    shape: ShapeSchema,
    residency: ResidencySchema,
    probes: z.array(StabilityProbeSchema).max(MAX.probes),
    driftSigma: z.partialRecord(BackendSchema, nonNegative),
    repeatability: RepeatabilitySchema.exactOptional(),
  }),
  "Stability",
  "Run-to-run drift: probe times of one fixed case per backend over the run, and per backend the standard deviation of ln(probe time) (driftSigma; 0.1 is about 10 %)",
);

/** The gpucal build that wrote the report. */
export const GpucalInfoSchema = z.strictObject({
  version: z.string().min(1).max(64),
  commit: z.string().regex(/^[0-9a-f]{7,64}$/).nullable(),
});

/** How, when and how completely the report was produced. */
export const ReportProvenanceSchema = z.strictObject({
  date: z.iso.datetime({ offset: true }),
  denoVersion: z.string().min(1).max(64),
  command: z.array(text).max(MAX.command),
  durationS: nonNegative,
  complete: z.boolean(),
  stopReason: z.enum(["finished", "budget", "interrupted", "error"]),
  budgetS: nonNegative.nullable(),
  quick: z.boolean(),
  /**
   * The calibration mode (`quick`, `default`: a 5-minute time plan here, `thorough`). Absent in
   * reports calibrated before gpucal had modes.
   */
  mode: z.enum(["quick", "default", "thorough"]).optional(),
  noisy: z.boolean(),
  warnings: z.array(text).max(MAX.warnings),
  resumedFrom: text.nullable(),
});

/** The host the report was measured on. */
export const MachineSchema = z.strictObject({
  cpuModel: z.string().max(256),
  cores: z.int().positive(),
  memoryGiB: nonNegative,
  os: name,
  osRelease: z.string().max(256),
  arch: name,
});

/** The WebGPU adapter, or null when there was none. */
export const AdapterSchema = z.strictObject({
  description: z.string().max(256),
  vendor: z.string().max(256),
  architecture: z.string().max(256),
  device: z.string().max(256),
  backend: z.enum(["vulkan", "metal", "dx12", "gl", "unknown"]),
  backendSource: z.enum(["env", "inferred"]),
  software: z.boolean(),
  features: z.array(name).max(MAX.features),
  limits: boundedRecord(z.string().min(1).max(MAX.name), finite, MAX.limits),
});

/** A calibration report, schema version 1. */
export const ReportSchema = z.strictObject({
  schemaVersion: z.literal(SCHEMA_VERSION),
  gpucal: GpucalInfoSchema,
  provenance: ReportProvenanceSchema,
  machine: MachineSchema,
  adapter: AdapterSchema.nullable(),
  fingerprint: z.string().regex(/^[0-9a-f]{16}$/),
  slug: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/).max(MAX.name),
  measurements: z.array(MeasurementSchema).max(MAX.measurements),
  fits: z.array(CostFitSchema).max(MAX.derived),
  crossovers: z.array(CrossoverSchema).max(MAX.derived),
  tuning: z.array(TuningSchema).max(MAX.derived),
  system: SystemSchema,
  thresholds: z.array(ThresholdSchema).max(MAX.derived),
  stability: StabilitySchema.exactOptional(),
  llm: z.strictObject({ validations: z.array(LlmValidationSchema).max(MAX.validations) })
    .nullable()
    .exactOptional(),
});

/**
 * A calibration report.
 *
 * @example
 * ```ts
 * import type { Report } from "./schema.ts";
 * function roundTripMs(r: Report) { return r.system.dispatchRoundTripMs.value; }
 * ```
 */
export type Report = z.infer<typeof ReportSchema>;
/**
 * A headline number with unit and provenance.
 *
 * @example
 * ```ts
 * import type { Figure } from "./schema.ts";
 * const f: Figure = { value: 11.2, unit: "ms", tag: "measured" };
 * ```
 */
export type Figure = z.infer<typeof FigureSchema>;
/**
 * Where a number came from.
 *
 * @example
 * ```ts
 * import type { ProvenanceTag } from "./schema.ts";
 * const t: ProvenanceTag = "fitted";
 * ```
 */
export type ProvenanceTag = z.infer<typeof ProvenanceTagSchema>;
/**
 * One measurement of a report.
 *
 * @example
 * ```ts
 * import type { Measurement } from "./schema.ts";
 * function median(m: Measurement) { return m.state === "ok" ? m.wall.median : null; }
 * ```
 */
export type Measurement = z.infer<typeof MeasurementSchema>;
/**
 * A fitted cost model.
 *
 * @example
 * ```ts
 * import type { CostFit } from "./schema.ts";
 * function launchMs(f: CostFit) { return f.t0Us / 1000; }
 * ```
 */
export type CostFit = z.infer<typeof CostFitSchema>;
/**
 * A pair of backends a crossover compares.
 *
 * @example
 * ```ts
 * import type { CrossoverPair } from "./schema.ts";
 * const p: CrossoverPair = "cpu→webgpu";
 * ```
 */
export type CrossoverPair = z.infer<typeof CrossoverPairSchema>;
/**
 * A crossover size between two backends.
 *
 * @example
 * ```ts
 * import type { Crossover } from "./schema.ts";
 * function known(c: Crossover) { return c.size !== null; }
 * ```
 */
export type Crossover = z.infer<typeof CrossoverSchema>;
/**
 * The best variant of a backend over a size range.
 *
 * @example
 * ```ts
 * import type { Tuning } from "./schema.ts";
 * function best(t: Tuning) { return t.best.variant; }
 * ```
 */
export type Tuning = z.infer<typeof TuningSchema>;
/**
 * Machine-wide figures of a report.
 *
 * @example
 * ```ts
 * import type { SystemFigures } from "./schema.ts";
 * function upload(s: SystemFigures) { return s.uploadGBps.value; }
 * ```
 */
export type SystemFigures = z.infer<typeof SystemSchema>;
/**
 * The run's drift probes and per-backend drift.
 *
 * @example
 * ```ts
 * import type { StabilityInfo } from "./schema.ts";
 * function wasmDrift(s: StabilityInfo) { return s.driftSigma.wasm ?? null; }
 * ```
 */
export type StabilityInfo = z.infer<typeof StabilitySchema>;
/**
 * The repeatability of every backend over windows some time apart (`stability.repeatability`).
 *
 * @example
 * ```ts
 * import type { RepeatabilityInfo } from "./schema.ts";
 * function wasmShare(r: RepeatabilityInfo) {
 *   return r.groups.find((g) => g.backend === "wasm")?.within10 ?? null;
 * }
 * ```
 */
export type RepeatabilityInfo = z.infer<typeof RepeatabilitySchema>;
/**
 * A row of the threshold table.
 *
 * @example
 * ```ts
 * import type { Threshold } from "./schema.ts";
 * function gpu(t: Threshold) { return t.gpuAbove.value; }
 * ```
 */
export type Threshold = z.infer<typeof ThresholdSchema>;
/**
 * An LLM decode-rate validation.
 *
 * @example
 * ```ts
 * import type { LlmValidation } from "./schema.ts";
 * function err(v: LlmValidation) { return v.error; }
 * ```
 */
export type LlmValidation = z.infer<typeof LlmValidationSchema>;
/**
 * The WebGPU adapter description of a report.
 *
 * @example
 * ```ts
 * import type { AdapterInfo } from "./schema.ts";
 * function isSoftware(a: AdapterInfo | null) { return a?.software ?? false; }
 * ```
 */
export type AdapterInfo = z.infer<typeof AdapterSchema>;
/**
 * The host description of a report.
 *
 * @example
 * ```ts
 * import type { MachineInfo } from "./schema.ts";
 * function cores(m: MachineInfo) { return m.cores; }
 * ```
 */
export type MachineInfo = z.infer<typeof MachineSchema>;
/**
 * How a report was produced.
 *
 * @example
 * ```ts
 * import type { ReportProvenance } from "./schema.ts";
 * function finished(p: ReportProvenance) { return p.complete; }
 * ```
 */
export type ReportProvenance = z.infer<typeof ReportProvenanceSchema>;

/**
 * The report's JSON Schema (draft 2020-12), with reused parts under `$defs`.
 *
 * @returns A JSON-serialisable JSON Schema object.
 * @example
 * ```ts
 * import { reportJsonSchema } from "./schema.ts";
 * console.log(reportJsonSchema().$schema); // "https://json-schema.org/draft/2020-12/schema"
 * ```
 */
export function reportJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(ReportSchema, {
    target: "draft-2020-12",
    metadata: defs,
    unrepresentable: "throw",
  });
  const { $schema, ...rest } = generated;
  return {
    $schema,
    $id: `urn:gpucal:report:v${SCHEMA_VERSION}`,
    title: `gpucal calibration report, schema version ${SCHEMA_VERSION}`,
    ...rest,
  };
}
