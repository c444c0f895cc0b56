/**
 * The calibration report, defined once: its TypeScript types, written out, each beside the zod
 * schema that validates untrusted report JSON against it, and the JSON Schema
 * (`reports/schema.json`) generated from the same schemas. Every schema is checked at compile time
 * to accept exactly its type, so the two cannot drift apart.
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
import {
  type Backend,
  BACKENDS,
  type Complexity,
  type Dtype,
  DTYPES,
  type Residency,
  type Shape,
} from "../kernels/types.ts";
import type { MeasureResult, SampleStats } from "./result.ts";

/** The report format version this module defines. */
export const SCHEMA_VERSION = 1;

/** Registry naming the reused sub-schemas, so the JSON Schema shares them under `$defs`. */
const defs = z.registry<{ id: string; description: string }>();

function named<T extends z.ZodType>(schema: T, id: string, description: string): T {
  defs.add(schema, { id, description });
  return schema;
}

/**
 * `T` with every `readonly` dropped, at every depth, so written types and schemas compare by shape;
 * a JSON value stays whole (its type is infinitely deep).
 */
type Mutable<T> = [JsonValue] extends [T] ? JsonValue
  : T extends object ? { -readonly [K in keyof T]: Mutable<T[K]> }
  : T;

/** `true` when `A` and `B` are the same type once `readonly` is set aside. */
type Same<A, B> = (<X>() => X extends Mutable<A> ? 1 : 2) extends
  (<X>() => X extends Mutable<B> ? 1 : 2) ? true
  : false;

/**
 * Checks at compile time that `schema` validates exactly `T`: a schema whose output `T` does not
 * allow (an extra field, a wider value) fails the constraint; one whose output is narrower than `T`
 * (a field `T` has and the schema lacks) "differs from its written type".
 */
function exactly<T>() {
  return <S extends z.ZodType<T>>(
    schema:
      & S
      & (Same<z.output<S>, T> extends true ? unknown
        : { "differs from its written type": T }),
  ): S => schema;
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
  earlierRuns: 64,
} as const;

const name = z.string().min(1).max(MAX.name);
const text = z.string().max(MAX.text);
const finite = z.number();
const nonNegative = z.number().nonnegative();
const count = z.int().nonnegative();
const share = z.number().min(0).max(1);

function boundedRecord<K extends z.ZodString, V extends z.ZodType>(
  key: K,
  value: V,
  max: number,
): z.ZodRecord<K, V> {
  return z.record(key, value).refine((r) => Object.keys(r).length <= max, {
    message: `Expected at most ${max} keys`,
  });
}

/** Backend enum, from `kernels/types.ts`. */
export const BackendSchema: z.ZodEnum<{ [B in Backend]: B }> = z.enum(BACKENDS);
/** Dtype enum, from `kernels/types.ts`. */
export const DtypeSchema: z.ZodEnum<{ [D in Dtype]: D }> = z.enum(DTYPES);
/** Residency enum (`Residency` in `kernels/types.ts`). */
export const ResidencySchema: z.ZodEnum<{ [R in Residency]: R }> = z.enum([
  "end-to-end",
  "device-resident",
]);
/** Complexity class enum (`Complexity` in `kernels/types.ts`). */
export const ComplexitySchema: z.ZodEnum<{ [C in Complexity]: C }> = z.enum([
  "elementwise",
  "reduction",
  "matrix",
]);

/**
 * Where a number came from: `measured` at this size, `fitted` from a cost model inside the
 * measured range, `extrapolated` beyond it, `borrowed` from another machine's report.
 *
 * @example
 * ```ts
 * import type { ProvenanceTag } from "./schema.ts";
 * const t: ProvenanceTag = "fitted";
 * ```
 */
export type ProvenanceTag = "measured" | "fitted" | "extrapolated" | "borrowed";

/** Where a number came from ({@linkcode ProvenanceTag}). */
export const ProvenanceTagSchema: z.ZodEnum<{ [P in ProvenanceTag]: P }> = z.enum([
  "measured",
  "fitted",
  "extrapolated",
  "borrowed",
]);

/**
 * A 95 % interval `[low, high]` in the unit of the number it qualifies.
 *
 * @example
 * ```ts
 * import type { Interval } from "./schema.ts";
 * const ci: Interval = [0.9, 1.1];
 * ```
 */
export type Interval = [number, number];

const interval = named(
  exactly<Interval>()(z.tuple([finite, finite])),
  "Interval",
  "A 95 % interval [low, high] in the unit of the number it qualifies",
);

/**
 * A headline number with its unit and provenance; when it could not be obtained, `value` is null
 * and `reason` says why.
 *
 * @example
 * ```ts
 * import type { Figure } from "./schema.ts";
 * const f: Figure = { value: 11.2, unit: "ms", tag: "measured" };
 * ```
 */
export type Figure = {
  /** The number, or null when it could not be obtained. */
  value: number | null;
  /** Its unit, e.g. `"ms"` or `"GB/s"`. */
  unit: string;
  /** Where it came from. */
  tag: ProvenanceTag;
  /** Its 95 % interval, when known. */
  ci?: Interval;
  /** How it was obtained, for people reading the report. */
  source?: string;
  /** Why `value` is null, or a note on it. */
  reason?: string;
};

/** A headline number with its unit, provenance and, when it could not be obtained, the reason. */
export const FigureSchema: z.ZodType<Figure> = named(
  exactly<Figure>()(z.strictObject({
    value: finite.nullable(),
    unit: z.string().max(MAX.name),
    tag: ProvenanceTagSchema,
    ci: interval.exactOptional(),
    source: text.exactOptional(),
    reason: text.exactOptional(),
  })),
  "Figure",
  "A headline number; value is null when it could not be obtained, and reason says why",
);

/** Robust timing statistics in ms per run (`SampleStats` in `core/result.ts`). */
export const SampleStatsSchema: z.ZodType<SampleStats> = named(
  exactly<SampleStats>()(z.strictObject({
    n: count,
    median: nonNegative,
    p10: nonNegative,
    p90: nonNegative,
    mad: nonNegative,
    min: nonNegative,
    max: nonNegative,
    ciHalfWidth: nonNegative,
    relCi: nonNegative,
  })),
  "SampleStats",
  "Robust summary of timing samples, ms per run",
);

/** A shape: named positive integer dimensions (`Shape` in `kernels/types.ts`). */
export const ShapeSchema: z.ZodType<Shape> = named(
  exactly<Shape>()(boundedRecord(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).max(32),
    z.int().positive(),
    MAX.shapeDims,
  )),
  "Shape",
  "Named positive integer dimensions, e.g. {m, k, n}",
);

/**
 * Where a report files a measurement: its size on the op's axis, its place in the run, and
 * whether it lies beside the axis.
 *
 * @example
 * ```ts
 * import type { MeasurementPlace } from "./schema.ts";
 * const p: MeasurementPlace = { size: 4096, seq: 12 };
 * ```
 */
export type MeasurementPlace = {
  /** The shape's size on the op's sweep axis, in the axis unit. */
  size: number;
  /** Order of the measurement in the run, from 0. */
  seq: number;
  /**
   * Set on the shapes a calibration measures beside the op's sweep axis (`calibrate/shapes.ts`):
   * they teach predictions how proportions change time and which variant runs such shapes fastest,
   * while fits, crossovers and the tuning table keep to the axis.
   */
  offAxis?: true;
  /**
   * How many calibration runs of this machine the median pools (`calibrate/pool.ts`: the
   * geometric mean of their medians, the latest run weighing at least a quarter); absent, the run's
   * own.
   */
  runs?: number;
  /**
   * Set on a case of a job this run measured that only the earlier runs it pools measured (a
   * variant its screen passed over, a size its grid did not visit), kept as they measured it
   * (`calibrate/pool.ts`).
   */
  carriedOver?: true;
};

/**
 * One measurement of a report: a {@linkcode MeasureResult} (from `core/result.ts`) filed at its
 * {@linkcode MeasurementPlace}.
 *
 * @example
 * ```ts
 * import type { Measurement } from "./schema.ts";
 * function wallMs(m: Measurement) { return m.state === "ok" ? m.wall.median : null; }
 * ```
 */
export type Measurement = MeasureResult & MeasurementPlace;

const measureIdentity = {
  op: name,
  shape: ShapeSchema,
  dtype: DtypeSchema,
  backend: BackendSchema,
  variant: z.string().min(1).max(512),
  residency: ResidencySchema,
  size: nonNegative,
  seq: count,
  offAxis: z.literal(true).exactOptional().describe(
    "True for a shape measured beside the op's sweep axis (a non-square matmul, a gemv with rows != cols): used by predictions, left out of fits, crossovers and tuning",
  ),
  runs: z.int().min(2).max(1_000_000).exactOptional().describe(
    "How many calibration runs of this machine the median pools (the geometric mean of their medians, the latest run weighing at least a quarter); absent: this run's own",
  ),
  carriedOver: z.literal(true).exactOptional().describe(
    "True for a case of a job this run measured that only the earlier runs it pools measured (a variant its screen passed over, a size its grid did not visit), kept as they measured it",
  ),
};

/** One measurement: `MeasureResult` from `core/result.ts` plus its axis `size` and `seq`. */
export const MeasurementSchema: z.ZodType<Measurement> = exactly<Measurement>()(
  z.discriminatedUnion("state", [
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
  ]),
);

/**
 * A fitted cost model `t(work) = t0 + smoothmax(flops / F, bytes / B)` of one series (one op,
 * dtype, backend, variant and residency over several sizes).
 *
 * @example
 * ```ts
 * import type { CostFit } from "./schema.ts";
 * function launchMs(f: CostFit) { return f.t0Us / 1000; }
 * ```
 */
export type CostFit = {
  /** Op name from the catalog. */
  op: string;
  /** Element type. */
  dtype: Dtype;
  /** Backend the series ran on. */
  backend: Backend;
  /** Variant id of the series. */
  variant: string;
  /** Where the data lived. */
  residency: Residency;
  /** Launch/fixed overhead, microseconds. */
  t0Us: number;
  /** Effective compute rate; null when no point is compute-bound enough to identify it. */
  gflops: number | null;
  /** Effective bandwidth; null likewise. */
  gbps: number | null;
  /** Number of sizes fitted. */
  points: number;
  /** Min and max size (op axis units) that were fitted. */
  sizeRange: Interval;
  /** In-sample RMS of ln(predicted / measured). */
  rmsLogError: number;
  /** Leave-one-size-out cross-validated mean absolute percentage error (fraction); null with < 4 sizes. */
  cvMape: number | null;
  /** Worst leave-one-size-out relative error (fraction); null with < 4 sizes. */
  cvMaxError: number | null;
};

/** A cost model `t(work) = t0 + smooth max(flops / F, bytes / B)` fitted to one series. */
export const CostFitSchema: z.ZodType<CostFit> = exactly<CostFit>()(z.strictObject({
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
}));

/**
 * A pair of backends a crossover compares; the CPU side of `cpu→webgpu` is the fastest CPU
 * backend.
 *
 * @example
 * ```ts
 * import type { CrossoverPair } from "./schema.ts";
 * const p: CrossoverPair = "cpu→webgpu";
 * ```
 */
export type CrossoverPair = "js→wasm" | "wasm→wasm-mt" | "cpu→webgpu";

/** The backend pairs a crossover compares. */
export const CrossoverPairSchema: z.ZodEnum<{ [P in CrossoverPair]: P }> = z.enum([
  "js→wasm",
  "wasm→wasm-mt",
  "cpu→webgpu",
]);

/**
 * The size at which one backend starts beating another.
 *
 * @example
 * ```ts
 * import type { Crossover } from "./schema.ts";
 * function known(c: Crossover) { return c.size !== null; }
 * ```
 */
export type Crossover = {
  /** Op name from the catalog. */
  op: string;
  /** Element type. */
  dtype: Dtype;
  /** Where the data lived. */
  residency: Residency;
  /** The pair of backends compared. */
  pair: CrossoverPair;
  /** Faster below the crossover. */
  from: Backend;
  /** Faster above it. */
  to: Backend;
  /** The headline, op axis units: fit-based when the fits are good, raw otherwise; null when none in range. */
  size: number | null;
  /** Op axis unit. */
  unit: string;
  /** 95 % bootstrap interval of `size`. */
  ci: Interval | null;
  /**
   * 95 % bootstrap interval of `size` when each backend's whole curve may also shift by its
   * run-to-run drift (`stability.driftSigma`); absent when the run had no drift data.
   */
  driftCi?: Interval;
  /** Share of the drift replicates (0–1) whose curves no longer cross in range; with `driftCi`. */
  driftOutOfRange?: number;
  /** Crossover of the two fitted curves. */
  fromFit: number | null;
  /** Crossover of the raw medians, log-log interpolated between bracketing sizes. */
  fromRaw: number | null;
  /** `measured` when bracketed by measured sizes, `extrapolated` outside them, `fitted` when only the fits give it. */
  tag: ProvenanceTag;
  /** Why `size` is null, or a note. */
  reason: string | null;
  /** Further crossovers when the curves cross more than once. */
  others: number[];
};

/** The size at which one backend starts beating another. */
export const CrossoverSchema: z.ZodType<Crossover> = exactly<Crossover>()(z.strictObject({
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
}));

/**
 * A variant and its time.
 *
 * @example
 * ```ts
 * import type { TimedVariant } from "./schema.ts";
 * const v: TimedVariant = { variant: "tile=8", ms: 0.42 };
 * ```
 */
export type TimedVariant = {
  /** Variant id. */
  variant: string;
  /** Its median time, ms. */
  ms: number;
};

const timedVariant = exactly<TimedVariant>()(
  z.strictObject({ variant: z.string().min(1).max(512), ms: nonNegative }),
);

/**
 * The best variant of a backend over a size range, from the tuning sweep.
 *
 * @example
 * ```ts
 * import type { Tuning } from "./schema.ts";
 * function best(t: Tuning) { return t.best.variant; }
 * ```
 */
export type Tuning = {
  /** Op name from the catalog. */
  op: string;
  /** Element type. */
  dtype: Dtype;
  /** Backend the variants ran on. */
  backend: Backend;
  /** Where the data lived. */
  residency: Residency;
  /** Smallest size of the range, op axis units. */
  sizeMin: number;
  /** Largest size of the range, op axis units. */
  sizeMax: number;
  /** Op axis unit. */
  unit: string;
  /** The fastest variant. */
  best: TimedVariant;
  /** The second fastest, or null when only one variant ran. */
  runnerUp: TimedVariant | null;
  /** Where the choice came from. */
  tag: ProvenanceTag;
};

/** The best variant of a backend over a size range, from the tuning sweep. */
export const TuningSchema: z.ZodType<Tuning> = exactly<Tuning>()(z.strictObject({
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
}));

/**
 * Machine-wide figures of a report: synchronisation, transfer, compile and peak rates.
 *
 * @example
 * ```ts
 * import type { SystemFigures } from "./schema.ts";
 * function upload(s: SystemFigures) { return s.uploadGBps.value; }
 * ```
 */
export type SystemFigures = {
  /** One WebGPU submit-and-wait round trip, ms. */
  dispatchRoundTripMs: Figure;
  /** Marginal cost of one more dispatch in a submission, µs. */
  perDispatchUs: Figure;
  /**
   * Host time to record one dispatch with its pipeline and bind group into a compute pass, µs.
   * Absent in reports calibrated before gpucal measured it.
   */
  encodePerDispatchUs?: Figure | undefined;
  /**
   * One WebGPU submit whose result the host reads back, ms: a trivial dispatch, a copy of its
   * 4-byte result to a mappable buffer, `mapAsync` and the read, as a decode step reads its token.
   * Absent in reports calibrated before gpucal measured it.
   */
  readbackRoundTripMs?: Figure | undefined;
  /** Host-to-GPU transfer rate, GB/s. */
  uploadGBps: Figure;
  /** GPU-to-host transfer rate, GB/s. */
  readbackGBps: Figure;
  /** GPU buffer-to-buffer copy rate, GB/s. */
  copyGBps: Figure;
  /** Pipeline compile time, ms. */
  compileMs: Figure;
  /** Peak compute rate per dtype, GFLOP/s. */
  peakGflops: Partial<Record<Dtype, Figure>>;
  /** Peak memory rate per backend, GB/s. */
  peakGbps: Partial<Record<Backend, Figure>>;
};

/** Machine-wide figures: synchronisation, transfer, compile and peak rates. */
export const SystemSchema: z.ZodType<SystemFigures> = exactly<SystemFigures>()(z.strictObject({
  dispatchRoundTripMs: FigureSchema,
  perDispatchUs: FigureSchema,
  encodePerDispatchUs: FigureSchema.optional(),
  readbackRoundTripMs: FigureSchema.optional(),
  uploadGBps: FigureSchema,
  readbackGBps: FigureSchema,
  copyGBps: FigureSchema,
  compileMs: FigureSchema,
  peakGflops: z.partialRecord(DtypeSchema, FigureSchema),
  peakGbps: z.partialRecord(BackendSchema, FigureSchema),
}));

/**
 * One row of the seeds' threshold table: where SIMD beats scalar and the GPU beats the CPU.
 *
 * @example
 * ```ts
 * import type { Threshold } from "./schema.ts";
 * function gpu(t: Threshold) { return t.gpuAbove.value; }
 * ```
 */
export type Threshold = {
  /** The complexity class the op stands for. */
  complexity: Complexity;
  /** Op name from the catalog. */
  op: string;
  /** Element type. */
  dtype: Dtype;
  /** Where the data lived. */
  residency: Residency;
  /** Size above which WebAssembly SIMD beats scalar JS. */
  simdAbove: Figure;
  /** Size above which WebGPU beats the fastest CPU backend. */
  gpuAbove: Figure;
};

/** One row of the seeds' threshold table: where SIMD beats scalar and the GPU beats the CPU. */
export const ThresholdSchema: z.ZodType<Threshold> = exactly<Threshold>()(z.strictObject({
  complexity: ComplexitySchema,
  op: name,
  dtype: DtypeSchema,
  residency: ResidencySchema,
  simdAbove: FigureSchema,
  gpuAbove: FigureSchema,
}));

/**
 * Any JSON value.
 *
 * @example
 * ```ts
 * import type { JsonValue } from "./schema.ts";
 * const v: JsonValue = { layers: [1, 2], note: null };
 * ```
 */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * An end-to-end check of the cost models against a measured LLM decode rate.
 *
 * @example
 * ```ts
 * import type { LlmValidation } from "./schema.ts";
 * function err(v: LlmValidation) { return v.error; }
 * ```
 */
export type LlmValidation = {
  /** Model name. */
  model: string;
  /** Weight quantisation, e.g. `"q4"`. */
  quant: string;
  /** Tokens per second measured by running the decode. */
  measuredTokensPerSec: number;
  /** Tokens per second the cost models estimate. */
  estimatedTokensPerSec: number;
  /** Relative error of the estimate, signed. */
  error: number;
  /**
   * Where the estimate said the rate should lie, with probability `level`
   * (`estimateTokensPerSec().decodeInterval`): slowest and fastest tokens/s. Absent from reports
   * made before gpucal stated it, and for an estimate that has none.
   */
  estimatedInterval?: EstimateInterval;
  /** Free-form details of the check. */
  details?: Record<string, JsonValue>;
};

/**
 * A stated-level range of an estimated rate.
 *
 * @example
 * ```ts
 * import type { EstimateInterval } from "./schema.ts";
 * const i: EstimateInterval = { level: 0.9, tokensPerSec: [31.4, 53.0] };
 * ```
 */
export type EstimateInterval = {
  /** The probability the range is stated for. */
  level: number;
  /** Slowest and fastest rate of the range, tokens/s. */
  tokensPerSec: [number, number];
};

/** {@linkcode EstimateInterval}. */
export const EstimateIntervalSchema: z.ZodType<EstimateInterval> = named(
  exactly<EstimateInterval>()(z.strictObject({
    level: z.number().gt(0).lt(1),
    tokensPerSec: z.tuple([nonNegative, nonNegative]),
  })),
  "EstimateInterval",
  "A stated-level range of an estimated rate",
);

/** An end-to-end check of the cost models against a measured LLM decode rate. */
export const LlmValidationSchema: z.ZodType<LlmValidation> = exactly<LlmValidation>()(
  z.strictObject({
    model: name,
    quant: z.string().min(1).max(64),
    measuredTokensPerSec: nonNegative,
    estimatedTokensPerSec: nonNegative,
    error: finite,
    estimatedInterval: EstimateIntervalSchema.exactOptional(),
    details: boundedRecord(
      z.string().max(MAX.name),
      named(z.json(), "JsonValue", "Any JSON value"),
      MAX.details,
    ).exactOptional(),
  }),
);

/**
 * One drift probe: when it was taken and each backend's median time of the probe case.
 *
 * @example
 * ```ts
 * import type { StabilityProbe } from "./schema.ts";
 * const p: StabilityProbe = { atS: 0, ms: { wasm: 0.21, webgpu: 11.4 } };
 * ```
 */
export type StabilityProbe = {
  /** Seconds since the run started. */
  atS: number;
  /** Median time of the probe case per backend, ms. */
  ms: Partial<Record<Backend, number>>;
  /**
   * Median time of a host reference timed just before, ms: eight independent chains of arithmetic
   * in registers, none of gpucal's code (`calibrate/host_reference.ts`). Absent in reports
   * written before it was recorded.
   */
  hostMs?: number;
  /**
   * Median time of the host's memory reference timed just before, ms: a sum over 32 MiB of
   * doubles, none of gpucal's code (`stream` of `calibrate/host_reference.ts`). Absent in reports
   * written before it was recorded.
   */
  hostStreamMs?: number;
};

/** One drift probe: when it was taken and each backend's median time of the probe case. */
export const StabilityProbeSchema: z.ZodType<StabilityProbe> = exactly<StabilityProbe>()(
  z.strictObject({
    atS: nonNegative,
    ms: z.partialRecord(BackendSchema, nonNegative),
    hostMs: z.number().positive().exactOptional(),
    hostStreamMs: z.number().positive().exactOptional(),
  }),
);

/**
 * An earlier calibration of the same machine (same fingerprint), as a later report remembers it:
 * when it ran and each backend's median probe time then.
 *
 * @example
 * ```ts
 * import type { EarlierRun } from "./schema.ts";
 * const r: EarlierRun = { date: "2026-11-24T19:42:45.055Z", medianMs: { wasm: 0.0093 } };
 * ```
 */
export type EarlierRun = {
  /** When that run's report was written (its `provenance.date`). */
  date: string;
  /** Per backend, the median of that run's probe times, ms. */
  medianMs: Partial<Record<Backend, number>>;
  /** Per backend, that run's drift within itself (its `driftSigma`); absent in older reports. */
  driftSigma?: Partial<Record<Backend, number>>;
};

/** An earlier calibration of the same machine: when it ran and its median probe times. */
export const EarlierRunSchema: z.ZodType<EarlierRun> = exactly<EarlierRun>()(
  z.strictObject({
    date: z.iso.datetime({ offset: true }),
    medianMs: z.partialRecord(BackendSchema, z.number().positive()),
    driftSigma: z.partialRecord(BackendSchema, nonNegative).exactOptional(),
  }),
);

/**
 * How well one backend (in one residency) repeats its own times.
 *
 * @example
 * ```ts
 * import type { RepeatabilityGroup } from "./schema.ts";
 * function tight(g: RepeatabilityGroup) { return g.within5 > 0.9; }
 * ```
 */
export type RepeatabilityGroup = {
  /** The backend. */
  backend: Backend;
  /** Where its data lived. */
  residency: Residency;
  /** Cases measured in at least two windows. */
  cases: number;
  /** Their (case, window) times, each compared with its case's median over the windows. */
  times: number;
  /** Share of the times within ±5 % of their case's median. */
  within5: number;
  /** Share within ±10 %. */
  within10: number;
  /** Share within ±15 %. */
  within15: number;
  /** 1.4826 × the median absolute deviation of ln(time) from its case's median. */
  sigmaLn: number;
};

/**
 * How well one backend (in one residency) repeats its own times: fixed cases measured in several
 * windows minutes apart (`deno task noise`, `calibrate/stability.ts`).
 */
export const RepeatabilityGroupSchema: z.ZodType<RepeatabilityGroup> = exactly<
  RepeatabilityGroup
>()(z.strictObject({
  backend: BackendSchema,
  residency: ResidencySchema,
  cases: count,
  times: count,
  within5: share,
  within10: share,
  within15: share,
  sigmaLn: nonNegative,
}));

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
export type RepeatabilityInfo = {
  /** Number of windows the cases were measured in. */
  windows: number;
  /** Seconds between windows. */
  gapS: number;
  /** One group per backend and residency. */
  groups: RepeatabilityGroup[];
};

/** The repeatability of every backend over windows some time apart. */
export const RepeatabilitySchema: z.ZodType<RepeatabilityInfo> = named(
  exactly<RepeatabilityInfo>()(z.strictObject({
    windows: z.int().positive(),
    gapS: nonNegative,
    groups: z.array(RepeatabilityGroupSchema).max(MAX.repeatabilityGroups),
  })),
  "Repeatability",
  "Per backend and residency, the share of repeated times within ±5/10/15 % of their case's median over windows gapS seconds apart, and the robust standard deviation of ln(time)",
);

/**
 * The machine's drift during the run: a fixed small case measured on every backend at the start,
 * after every op and at the end (`calibrate/stability.ts`).
 *
 * @example
 * ```ts
 * import type { StabilityInfo } from "./schema.ts";
 * function wasmDrift(s: StabilityInfo) { return s.driftSigma.wasm ?? null; }
 * ```
 */
export type StabilityInfo = {
  /** Op of the probe case. */
  op: string;
  /** Element type of the probe case. */
  dtype: Dtype;
  /** Shape of the probe case. */
  shape: Shape;
  /** Where the probe's data lived. */
  residency: Residency;
  /** The probes, in time order. */
  probes: StabilityProbe[];
  /** Per backend, the standard deviation of ln(probe time); 0.1 is about 10 %. */
  driftSigma: Partial<Record<Backend, number>>;
  /**
   * The same for the host reference timed beside the probes (`probes[].hostMs`): how far the
   * machine itself moved during the run, with none of gpucal's code. Absent without three host
   * times.
   */
  hostDriftSigma?: number;
  /**
   * The same for the host's memory reference (`probes[].hostStreamMs`): how far the speed of
   * memory moved during the run, which work that streams its operands from memory (on the CPU,
   * or on a software adapter) moves with. Absent without three such times.
   */
  memoryDriftSigma?: number;
  /** Repeatability over windows some time apart, when measured. */
  repeatability?: RepeatabilityInfo;
  /**
   * Earlier calibrations of this machine, oldest first, carried over from the report this run
   * replaced; absent on a machine's first run.
   */
  earlierRuns?: EarlierRun[];
  /**
   * Per backend, the spread of ln(median probe time) between consecutive runs, this one and the
   * earlier ones (√(Σ Δ² / 2(n − 1)), oldest first): how far another calibration (or a program run
   * later) of this machine moves as a whole, which drift within one run does not show. Present
   * from three runs on.
   */
  betweenRunSigma?: Partial<Record<Backend, number>>;
};

/** The machine's drift during the run (`calibrate/stability.ts`). */
export const StabilitySchema: z.ZodType<StabilityInfo> = named(
  exactly<StabilityInfo>()(z.strictObject({
    op: name,
    dtype: DtypeSchema,
    shape: ShapeSchema,
    residency: ResidencySchema,
    probes: z.array(StabilityProbeSchema).max(MAX.probes),
    driftSigma: z.partialRecord(BackendSchema, nonNegative),
    hostDriftSigma: nonNegative.exactOptional(),
    memoryDriftSigma: nonNegative.exactOptional(),
    repeatability: RepeatabilitySchema.exactOptional(),
    earlierRuns: z.array(EarlierRunSchema).max(MAX.earlierRuns).exactOptional(),
    betweenRunSigma: z.partialRecord(BackendSchema, nonNegative).exactOptional(),
  })),
  "Stability",
  "Run-to-run drift: probe times of one fixed case per backend over the run, and per backend the standard deviation of ln(probe time) (driftSigma; 0.1 is about 10 %); the same for a host reference without gpucal's code timed beside each probe (hostMs, hostDriftSigma) and for a sum over 32 MiB, the memory's speed (hostStreamMs, memoryDriftSigma); the median probe times of earlier calibrations of this machine and, from three runs on, the spread of ln(median probe time) between consecutive runs, √(Σ Δ² / 2(n − 1)) (betweenRunSigma)",
);

/**
 * The gpucal build that wrote a report.
 *
 * @example
 * ```ts
 * import type { GpucalInfo } from "./schema.ts";
 * const g: GpucalInfo = { version: "0.1.0", commit: null };
 * ```
 */
export type GpucalInfo = {
  /** gpucal's version. */
  version: string;
  /** Git commit of the checkout, or null when unknown. */
  commit: string | null;
};

/** The gpucal build that wrote the report. */
export const GpucalInfoSchema: z.ZodType<GpucalInfo> = exactly<GpucalInfo>()(z.strictObject({
  version: z.string().min(1).max(64),
  commit: z.string().regex(/^[0-9a-f]{7,64}$/).nullable(),
}));

/**
 * A calibration mode: `quick` (about 50 s here), `default` (a 5-minute budget here, a complete
 * report) or `thorough` (every size, budget and pass, about half an hour here).
 *
 * @example
 * ```ts
 * import type { CalibrationMode } from "./schema.ts";
 * const m: CalibrationMode = "default";
 * ```
 */
export type CalibrationMode = "quick" | "default" | "thorough";

/**
 * Why a calibration stopped.
 *
 * @example
 * ```ts
 * import type { StopReason } from "./schema.ts";
 * const r: StopReason = "budget";
 * ```
 */
export type StopReason = "finished" | "budget" | "interrupted" | "error";

/**
 * How, when and how completely a report was produced.
 *
 * @example
 * ```ts
 * import type { ReportProvenance } from "./schema.ts";
 * function finished(p: ReportProvenance) { return p.complete; }
 * ```
 */
export type ReportProvenance = {
  /** When the run started, ISO 8601 with offset. */
  date: string;
  /** `Deno.version.deno` of the run. */
  denoVersion: string;
  /** The command line. */
  command: string[];
  /** How long the run took, s. */
  durationS: number;
  /** True when every planned measurement ran. */
  complete: boolean;
  /** Why the run stopped. */
  stopReason: StopReason;
  /** The time budget, s, or null without one. */
  budgetS: number | null;
  /** True for a quick run. */
  quick: boolean;
  /** The calibration mode. Absent in reports calibrated before gpucal had modes. */
  mode?: CalibrationMode | undefined;
  /** True when the run's machine was too busy for its figures to be trusted. */
  noisy: boolean;
  /** Warnings of the run. */
  warnings: string[];
  /** The partial report the run resumed, or null. */
  resumedFrom: string | null;
  /**
   * `GLIBC_TUNABLES` the calibration ran with, null when unset. gpucal's tasks set
   * `glibc.malloc.hugetlb=1`; a program's large WebGPU uploads match the report's with it. Absent
   * in reports made before gpucal recorded it.
   */
  glibcTunables?: string | null | undefined;
  /**
   * The environment variables that change what the GPU driver or WebGPU does (`LP_NUM_THREADS`,
   * `MESA_*`, `VK_*`, `DENO_WEBGPU_*`, … `calibrate/machine.ts`) set for the run, by name; `{}`
   * when none was. Absent when not recorded (denied, or a report made before gpucal recorded it).
   */
  driverEnv?: Record<string, string> | undefined;
  /**
   * The date (`provenance.date`) of the report this run replaced and pooled its measurements with
   * (`calibrate/pool.ts`); absent when the run's measurements are its own.
   */
  pooledWith?: string | undefined;
};

/** How, when and how completely the report was produced. */
export const ReportProvenanceSchema: z.ZodType<ReportProvenance> = exactly<ReportProvenance>()(
  z.strictObject({
    date: z.iso.datetime({ offset: true }),
    denoVersion: z.string().min(1).max(64),
    command: z.array(text).max(MAX.command),
    durationS: nonNegative,
    complete: z.boolean(),
    stopReason: z.enum(["finished", "budget", "interrupted", "error"]),
    budgetS: nonNegative.nullable(),
    quick: z.boolean(),
    mode: z.enum(["quick", "default", "thorough"]).optional(),
    noisy: z.boolean(),
    warnings: z.array(text).max(MAX.warnings),
    resumedFrom: text.nullable(),
    glibcTunables: z.string().max(1024).nullable().optional(),
    driverEnv: boundedRecord(z.string().regex(/^[A-Z][A-Z0-9_]{0,127}$/), z.string().max(1024), 64)
      .optional(),
    pooledWith: z.iso.datetime({ offset: true }).optional(),
  }),
);

/**
 * The host a report was measured on.
 *
 * @example
 * ```ts
 * import type { MachineInfo } from "./schema.ts";
 * function cores(m: MachineInfo) { return m.cores; }
 * ```
 */
export type MachineInfo = {
  /** CPU model name. */
  cpuModel: string;
  /** Logical cores. */
  cores: number;
  /** Memory, GiB. */
  memoryGiB: number;
  /** `Deno.build.os`. */
  os: string;
  /** OS release. */
  osRelease: string;
  /** `Deno.build.arch`. */
  arch: string;
};

/** The host the report was measured on. */
export const MachineSchema: z.ZodType<MachineInfo> = exactly<MachineInfo>()(z.strictObject({
  cpuModel: z.string().max(256),
  cores: z.int().positive(),
  memoryGiB: nonNegative,
  os: name,
  osRelease: z.string().max(256),
  arch: name,
}));

/**
 * Native graphics APIs wgpu can sit on.
 *
 * @example
 * ```ts
 * import type { GpuApi } from "./schema.ts";
 * const api: GpuApi = "vulkan";
 * ```
 */
export type GpuApi = "vulkan" | "gl" | "metal" | "dx12" | "unknown";

/**
 * The WebGPU adapter of a report.
 *
 * @example
 * ```ts
 * import type { AdapterInfo } from "./schema.ts";
 * function isSoftware(a: AdapterInfo | null) { return a?.software ?? false; }
 * ```
 */
export type AdapterInfo = {
  /** Driver's name for the device; may be empty. */
  description: string;
  /** Vendor as the adapter reports it. */
  vendor: string;
  /** Architecture as the adapter reports it. */
  architecture: string;
  /** Device as the adapter reports it. */
  device: string;
  /** The graphics API underneath wgpu. */
  backend: GpuApi;
  /** `env`: read from `DENO_WEBGPU_BACKEND`; `inferred`: guessed from the OS and the features. */
  backendSource: "env" | "inferred";
  /** True for CPU rasterisers and fallback adapters. */
  software: boolean;
  /** Every adapter feature, sorted. */
  features: string[];
  /** The adapter limits that bound gpucal's kernels. */
  limits: Record<string, number>;
};

/** The WebGPU adapter, or null when there was none. */
export const AdapterSchema: z.ZodType<AdapterInfo> = exactly<AdapterInfo>()(z.strictObject({
  description: z.string().max(256),
  vendor: z.string().max(256),
  architecture: z.string().max(256),
  device: z.string().max(256),
  backend: z.enum(["vulkan", "metal", "dx12", "gl", "unknown"]),
  backendSource: z.enum(["env", "inferred"]),
  software: z.boolean(),
  features: z.array(name).max(MAX.features),
  limits: boundedRecord(z.string().min(1).max(MAX.name), finite, MAX.limits),
}));

/**
 * The LLM section of a report.
 *
 * @example
 * ```ts
 * import type { LlmSection } from "./schema.ts";
 * const none: LlmSection = { validations: [] };
 * ```
 */
export type LlmSection = {
  /** End-to-end checks of the cost models against measured decode rates. */
  validations: LlmValidation[];
  /** What a decode step costs beyond its kernels, measured on a synthetic decode none checks. */
  stepProbe?: DecodeStepProbe | null;
};

/**
 * What a decode step costs beyond the sum of its kernels timed one at a time, measured on a
 * synthetic decode of a model the validations do not check (`decode/step_probe.ts`): the GPU
 * time of its launches chained in decode order against the same launches grouped so each
 * kernel's run back to back (as the sweep times them), and the host's part of a synchronised
 * step (recording, submit, readback) at two launch counts.
 *
 * @example
 * ```ts
 * import type { DecodeStepProbe } from "./schema.ts";
 * const f = (p: DecodeStepProbe) => p.chainFactor.value;
 * ```
 */
export type DecodeStepProbe = {
  /** The synthetic decode timed, for people. */
  model: string;
  /** Launches of its whole step. */
  dispatches: number;
  /** GPU time of the step in decode order over the same launches grouped by kernel (×). */
  chainFactor: Figure;
  /** Host time of a synchronised step that launches nothing more: the intercept, ms. */
  hostFixedMs: Figure;
  /** Host time each launch adds to a synchronised step: the slope, µs. */
  hostPerDispatchUs: Figure;
};

/** {@linkcode DecodeStepProbe}. */
export const DecodeStepProbeSchema: z.ZodType<DecodeStepProbe> = named(
  exactly<DecodeStepProbe>()(z.strictObject({
    model: text,
    dispatches: count,
    chainFactor: FigureSchema,
    hostFixedMs: FigureSchema,
    hostPerDispatchUs: FigureSchema,
  })),
  "DecodeStepProbe",
  "What a decode step costs beyond its kernels, measured on a synthetic decode",
);

/**
 * A calibration report, schema version 1.
 *
 * @example
 * ```ts
 * import type { Report } from "./schema.ts";
 * function roundTripMs(r: Report) { return r.system.dispatchRoundTripMs.value; }
 * ```
 */
export type Report = {
  /** The report format version. */
  schemaVersion: typeof SCHEMA_VERSION;
  /** The gpucal build that wrote it. */
  gpucal: GpucalInfo;
  /** How, when and how completely it was produced. */
  provenance: ReportProvenance;
  /** The host. */
  machine: MachineInfo;
  /** The WebGPU adapter, or null when there was none. */
  adapter: AdapterInfo | null;
  /** Hash of the machine and adapter, 16 hex digits. */
  fingerprint: string;
  /** File name stem of the report. */
  slug: string;
  /** Every measurement of the run. */
  measurements: Measurement[];
  /** Cost models fitted to the measurements. */
  fits: CostFit[];
  /** Sizes where one backend starts beating another. */
  crossovers: Crossover[];
  /** Best variants per size range. */
  tuning: Tuning[];
  /** Machine-wide figures. */
  system: SystemFigures;
  /** The threshold table. */
  thresholds: Threshold[];
  /** The run's drift, when probed. */
  stability?: StabilityInfo;
  /** LLM decode validations, when run. */
  llm?: LlmSection | null;
};

/** A calibration report, schema version 1. */
export const ReportSchema: z.ZodType<Report> = exactly<Report>()(z.strictObject({
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
  llm: exactly<LlmSection>()(
    z.strictObject({
      validations: z.array(LlmValidationSchema).max(MAX.validations),
      stepProbe: DecodeStepProbeSchema.nullable().exactOptional(),
    }),
  ).nullable().exactOptional(),
}));

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
