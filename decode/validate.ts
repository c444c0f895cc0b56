/**
 * Checks the tokens/sec estimate against a real decode: the synthetic WebGPU decode of
 * `decode.ts` is measured for small models, the estimate is computed from the same report's
 * rates for the same workload, and the two are set side by side in the report's
 * `llm.validations` shape.
 *
 * @module
 */
import type { Dtype } from "../kernels/types.ts";
import { gemvWebGpu } from "../kernels/gemv/webgpu.ts";
import type { GpuHandle } from "../calibrate/device.ts";
import type { RunnerSource } from "../calibrate/measure.ts";
import { STREAMED_SPAN_BYTES, type WebGpuRunnerOptions } from "../calibrate/runners/webgpu.ts";
import { getOp } from "../kernels/catalog.ts";
import type { LlmValidation, Report } from "../core/schema.ts";
import { median } from "../core/stats.ts";
import {
  type DecodeMeasurement,
  type DecodeQuant,
  measureDecode,
  parseVariantId,
  softmaxLanes,
} from "./decode.ts";
import { AlongsideKernels } from "./_alongside.ts";
import { type DecodePricing, kernelsKey, pricedAlike } from "./_sample_match.ts";
import { predictTime } from "../models/predict.ts";
import {
  estimateTokensPerSec,
  type KernelEstimate,
  type TokensPerSecEstimate,
} from "../models/llm/estimate.ts";
import { getPreset, type ModelSpec } from "../models/llm/presets.ts";
import { ratesFromReport, type ReportRates } from "../models/llm/rates.ts";

/**
 * Options of {@linkcode validateDecode}.
 *
 * @example
 * ```ts
 * import type { ValidateOptions } from "./validate.ts";
 * const o: ValidateOptions = { models: ["tiny-16m"], quants: ["int4"], tokens: 4, context: 32 };
 * ```
 */
export interface ValidateOptions {
  /** Preset names; default `tiny-16m` and `tiny-64m`. */
  readonly models?: readonly string[];
  /** Weight formats; default f32 and int4. */
  readonly quants?: readonly DecodeQuant[];
  /** Timed tokens per decode; default 16. */
  readonly tokens?: number;
  /**
   * Decodes per model × quant, interleaved (every pair once, then again); default 3. Their
   * per-token times are pooled, so the median spans the whole validation, not one moment.
   */
  readonly repeats?: number;
  /** KV cache length; default 64. */
  readonly context?: number;
  /**
   * Time the whole validation may take, ms. The first round of decodes always runs; another
   * starts only while the longest round so far still fits in what is left. Default: no limit.
   */
  readonly budgetMs?: number;
  /** Told before each decode starts. */
  readonly onStart?: (model: string, quant: DecodeQuant) => void;
  /**
   * Time each estimate's kernels alongside its decodes (one window just before and one just after
   * each of them) and estimate from those figures; the sweep's estimate is kept in the details.
   * Default true.
   */
  readonly alongside?: boolean;
  /** Sampling budget of each kernel in each alongside window, ms; default 150. */
  readonly kernelBudgetMs?: number;
  /** Where the alongside measurement gets its WebGPU runner; by default one on `gpu`. */
  readonly runners?: RunnerSource;
  /**
   * Rounds of decodes after the bracketed ones, without windows around them (a round of the four
   * pairs took ~2.5 s here, a bracketed one ~40 s): each starts only while the longest so far
   * still fits in the budget. Default 0.
   */
  readonly bareRounds?: number;
  /**
   * Decodes measured earlier in the run ({@linkcode sampleDecodes}): a pair's measured rate pools
   * those that ran the kernels its final decode runs, so the rate spans the run, not its last
   * minute. Default none.
   */
  readonly earlier?: readonly DecodeSample[];
}

/**
 * A decode measured before the validation by {@linkcode sampleDecodes}, with the kernels it ran.
 *
 * @example
 * ```ts
 * import type { DecodeSample } from "./validate.ts";
 * const ms = (s: DecodeSample) => s.run.medianMs;
 * ```
 */
export interface DecodeSample {
  readonly run: DecodeMeasurement;
  /** The pair and the variants it ran: pooled only with a validation whose decode runs the same. */
  readonly kernels: string;
  /** When it started, ms on `performance.now()`'s clock. */
  readonly atMs: number;
}

/**
 * Timed tokens per decode, and decodes per pair. The machine's speed moves over tens of seconds
 * (tiny-16m f32 decoded at 35.8, 45.2 and 66 ms per token median in three decodes here), so the
 * tokens are spread over three interleaved decodes rather than taken in one: the median then
 * describes the machine over the whole validation, as the sweep's medians do over the sweep.
 */
const DEFAULT_TOKENS = 16;
const DEFAULT_REPEATS = 3;
/**
 * Sampling budget of each kernel in each alongside window, ms. A window of the 13 kernels of a
 * tiny model then takes ~2 s, about as long as the decode it brackets; GPU timestamps make each
 * kernel's figure exact to a few percent in that time.
 */
const KERNEL_BUDGET_MS = 150;

const DTYPE: Readonly<Record<DecodeQuant, Dtype>> = { f32: "f32", int4: "q4" };

/**
 * Measures the synthetic decode and estimates it from the report, for every model × quant.
 *
 * The estimate prices each kernel of the step from the report's cost models; each projection of
 * the decode then runs the gemv variant its prediction describes (when that variant suits the
 * shape; otherwise the decode's default, said in the details), so the estimate and the
 * measurement are of the same kernels. The estimate uses the decode's f32 KV cache and batch 1.
 *
 * @param gpu An open WebGPU device (left open).
 * @param report The report whose rates are validated.
 * @param opts Models, quants, tokens, decodes per pair, context.
 * @returns One validation per model × quant: measured and estimated tokens/s, error =
 *   estimated / measured − 1, and details (per-token times, the estimate's terms, kernels and
 *   sources).
 * @throws {MissingCalibrationError} when the report lacks a WebGPU figure the estimate needs.
 * @example
 * ```ts ignore
 * import { openGpu } from "../calibrate/device.ts";
 * import { loadReport } from "../reports/load.ts";
 * import { validateDecode } from "./validate.ts";
 * const gpu = await openGpu();
 * if (gpu) {
 *   const v = await validateDecode(gpu, await loadReport("/tmp/r.json"), { models: ["tiny-16m"] });
 *   console.log(v.map((x) => `${x.model} ${x.quant} ${x.error.toFixed(2)}`));
 *   gpu.device.destroy();
 * }
 * ```
 */
export async function validateDecode(
  gpu: GpuHandle,
  report: Report,
  opts: ValidateOptions = {},
): Promise<LlmValidation[]> {
  const tokens = opts.tokens ?? DEFAULT_TOKENS;
  const startedMs = performance.now();
  const repeats = opts.repeats ?? DEFAULT_REPEATS;
  if (!Number.isInteger(repeats) || repeats < 1) {
    throw new RangeError(`"repeats" must be a positive integer, got ${repeats}; pass e.g. 3`);
  }
  const bareRounds = opts.bareRounds ?? 0;
  if (!Number.isInteger(bareRounds) || bareRounds < 0) {
    throw new RangeError(
      `"bareRounds" must be a non-negative integer, got ${bareRounds}; pass e.g. 4`,
    );
  }
  const deadlineMs = startedMs + (opts.budgetMs ?? Infinity);
  if (!(opts.budgetMs === undefined || opts.budgetMs > 0)) {
    throw new RangeError(`"budgetMs" must be positive, got ${opts.budgetMs}; pass e.g. 90000`);
  }
  const { models, quants, rates, estimateOpts } = validationSetup(report, opts);
  const context = estimateOpts.context;
  // Each decode is bracketed by two windows of its own kernels, one just before and one just
  // after it: the machine's speed moves within seconds here (one validation decoded tiny-16m
  // int4 at 43.8, 33.6 and 25.6 ms per token), so a window minutes or even a round away
  // describes another machine, and one on a single side misses a change during the decode.
  const sourceFor = opts.alongside === false || !rates.kernelTime
    ? null
    : opts.runners
    ? () => opts.runners!
    : await webGpuSources(gpu);
  const plans = planDecodes(models, quants, rates, estimateOpts, sourceFor, opts);
  await runDecodes(gpu, plans, { tokens, context, repeats, bareRounds, deadlineMs }, opts);
  const earlier = opts.earlier ?? [];
  return plans.map((plan) =>
    validationOf(plan, rates, estimateOpts, earlierOf(plan, earlier, pricingOf(plan, report)))
  );
}

/**
 * One decode of every model × quant with the variants the report's estimate describes now, kept
 * for {@linkcode validateDecode}'s `earlier`: a calibration samples the decode through its run
 * (once the ops the estimate rests on are measured), so the measured rate and the sweep's fits
 * describe the same minutes of a machine whose speed moves.
 *
 * @param gpu An open WebGPU device (left open).
 * @param report The report so far.
 * @param opts Models, quants, tokens, context (as {@linkcode validateDecode}'s).
 * @returns One sample per pair.
 * @throws {MissingCalibrationError} while the report lacks a WebGPU figure the estimate needs.
 * @example
 * ```ts ignore
 * import { openGpu } from "../calibrate/device.ts";
 * import { loadReport } from "../reports/load.ts";
 * import { sampleDecodes, validateDecode } from "./validate.ts";
 * const gpu = await openGpu();
 * if (gpu) {
 *   const report = await loadReport("/tmp/r.json");
 *   const earlier = await sampleDecodes(gpu, report, { models: ["tiny-16m"] });
 *   console.log((await validateDecode(gpu, report, { models: ["tiny-16m"], earlier }))[0]?.error);
 * }
 * ```
 */
export async function sampleDecodes(
  gpu: GpuHandle,
  report: Report,
  opts: Pick<ValidateOptions, "models" | "quants" | "tokens" | "context"> = {},
): Promise<DecodeSample[]> {
  const { models, quants, rates, estimateOpts } = validationSetup(report, opts);
  const plans = planDecodes(models, quants, rates, estimateOpts, null, {});
  const samples: DecodeSample[] = [];
  for (const plan of plans) {
    const atMs = performance.now();
    const run = await decodeOnce(gpu, plan, opts.tokens ?? DEFAULT_TOKENS, estimateOpts.context);
    samples.push({ run, kernels: plan.kernels, atMs });
  }
  return samples;
}

/** The models, quants, report rates and estimate options of a validation. */
function validationSetup(
  report: Report,
  opts: Pick<ValidateOptions, "models" | "quants" | "context">,
) {
  const quants = opts.quants ?? ["f32", "int4"];
  const rates = ratesFromReport(report, {
    backend: "webgpu",
    require: quants.map((q) => DTYPE[q]),
  });
  const estimateOpts: EstimateOpts = { context: opts.context ?? 64, batch: 1, kvDtype: "f32" };
  return {
    models: (opts.models ?? ["tiny-16m", "tiny-64m"]).map(getPreset),
    quants,
    rates,
    estimateOpts,
  };
}

/** One decode of a plan's pair with its variants. */
function decodeOnce(
  gpu: GpuHandle,
  plan: DecodePlan,
  tokens: number,
  context: number,
): Promise<DecodeMeasurement> {
  return measureDecode(gpu, plan.model, plan.quant, {
    tokens,
    context,
    gemvVariants: plan.variants,
    ...(plan.softmax === undefined ? {} : { softmaxVariant: plan.softmax }),
  });
}

/** One (model, quant) of a validation: its estimate, the variants to decode with, its results. */
type DecodePlan = ReturnType<typeof planDecodes>[number];

/** The estimate options every validation uses. */
type EstimateOpts = { readonly context: number; readonly batch: 1; readonly kvDtype: "f32" };

/** Per (model, quant): the report-only estimate, the decode's variants and its alongside kernels. */
function planDecodes(
  models: readonly ModelSpec[],
  quants: readonly DecodeQuant[],
  rates: ReportRates,
  estimateOpts: EstimateOpts,
  sourceFor: ((options?: WebGpuRunnerOptions) => RunnerSource) | null,
  opts: ValidateOptions,
) {
  const runners = sourceFor?.() ?? null;
  return models.flatMap((model) =>
    quants.map((quant) => {
      const estimate = estimateTokensPerSec(model, quant, rates, estimateOpts);
      const projections = projectionVariants(estimate.kernels, DTYPE[quant], rates, model);
      const softmax = softmaxVariant(estimate.kernels);
      // A decode reads each layer's weights once per token: between two uses of a weight it
      // streams all the others. Timed with three operand copies, a 512×512 int4 projection
      // stayed in L2 and ran 20–27 % faster than with its weights as cold as the decode's.
      const weightSpanBytes = weightSpan(estimate.kernels);
      const alongside = runners && new AlongsideKernels(estimate.kernels, runners, {
        budgetMs: opts.kernelBudgetMs ?? KERNEL_BUDGET_MS,
        weightRunners: sourceFor!({ rotationSpanBytes: weightSpanBytes }),
      });
      return {
        model,
        quant,
        estimate,
        softmax,
        alongside,
        ...projections,
        // What the decode runs: the softmax's lanes, not the id that names them.
        kernels: kernelsKey(model.name, quant, projections.variants, softmaxLanes(softmax)),
        weightSpanBytes,
        /** The decodes bracketed by alongside windows. */
        runs: [] as DecodeMeasurement[],
        /** The two alongside windows around each decode of `runs`, in decode order. */
        brackets: [] as [number, number][],
        /** The decodes after the bracketed rounds, without windows. */
        bare: [] as DecodeMeasurement[],
      };
    })
  );
}

/**
 * Runs every plan's decodes `repeats` times, round-robin, each bracketed by its kernel windows,
 * then `bareRounds` times without windows; a round after the first starts only when the longest
 * round of its kind so far ends before `deadlineMs`.
 */
async function runDecodes(
  gpu: GpuHandle,
  plans: readonly DecodePlan[],
  { tokens, context, repeats, bareRounds, deadlineMs }: {
    tokens: number;
    context: number;
    repeats: number;
    bareRounds: number;
    deadlineMs: number;
  },
  opts: ValidateOptions,
): Promise<void> {
  const bracketed = async (plan: DecodePlan) => {
    const before = await plan.alongside?.measureWindow();
    opts.onStart?.(plan.model.name, plan.quant);
    plan.runs.push(await decodeOnce(gpu, plan, tokens, context));
    const after = await plan.alongside?.measureWindow();
    if (before !== undefined && after !== undefined) plan.brackets.push([before, after]);
  };
  const bare = async (plan: DecodePlan) => {
    opts.onStart?.(plan.model.name, plan.quant);
    plan.bare.push(await decodeOnce(gpu, plan, tokens, context));
  };
  await roundsWithin(plans, repeats, deadlineMs, bracketed, true);
  await roundsWithin(plans, bareRounds, deadlineMs, bare, false);
}

/**
 * Up to `rounds` rounds of `decode` over every plan; one starts only when the longest so far ends
 * before `deadlineMs`, except the first when `firstAlways`.
 */
async function roundsWithin(
  plans: readonly DecodePlan[],
  rounds: number,
  deadlineMs: number,
  decode: (plan: DecodePlan) => Promise<void>,
  firstAlways: boolean,
): Promise<void> {
  let longestRoundMs = 0;
  for (let r = 0; r < rounds; r++) {
    const roundStartMs = performance.now();
    if ((r > 0 || !firstAlways) && roundStartMs + longestRoundMs > deadlineMs) break;
    for (const plan of plans) await decode(plan);
    longestRoundMs = Math.max(longestRoundMs, performance.now() - roundStartMs);
  }
}

/**
 * The earlier samples of a plan's pair that ran its decode (its kernels, or projection variants
 * the report prices alike: `_sample_match.ts`), how many of them ran other variants, and how many
 * others were left out.
 */
function earlierOf(
  plan: DecodePlan,
  earlier: readonly DecodeSample[],
  pricing: DecodePricing,
): { runs: DecodeMeasurement[]; spanS: number | null; otherKernels: number; alike: number } {
  const pair = earlier.filter((e) => e.run.model === plan.model.name && e.run.quant === plan.quant);
  const mine = {
    model: plan.model.name,
    quant: plan.quant,
    variants: plan.variants,
    lanes: softmaxLanes(plan.softmax),
  };
  const exact = pair.filter((e) => e.kernels === plan.kernels);
  const alike = pair.filter((e) =>
    e.kernels !== plan.kernels && pricedAlike(e.kernels, mine, pricing)
  );
  const same = [...exact, ...alike].sort((a, b) => a.atMs - b.atMs);
  const firstMs = Math.min(...same.map((e) => e.atMs));
  return {
    runs: same.map((e) => e.run),
    spanS: same.length === 0 ? null : Math.round((performance.now() - firstMs) / 1000),
    otherKernels: pair.length - same.length,
    alike: alike.length,
  };
}

/**
 * How `report` prices a plan's decode: each projection's launches a step, its device-resident
 * time at a gemv variant the report measured for its dtype (null for another), the step's
 * estimated time.
 */
function pricingOf(plan: DecodePlan, report: Report): DecodePricing {
  const projections = plan.estimate.kernels.filter((k) => k.op === "gemv" && k.standIn === null);
  const measured = (dtype: Dtype, variant: string) =>
    report.measurements.some((m) =>
      m.state === "ok" && m.op === "gemv" && m.dtype === dtype && m.backend === "webgpu" &&
      m.residency === "device-resident" && m.variant === variant
    );
  return {
    launches: new Map(projections.map((k) => [k.name, k.launches])),
    price: (name, variant) => {
      const k = projections.find((p) => p.name === name);
      if (k === undefined || !measured(k.dtype, variant)) return null;
      try {
        return predictTime(report, {
          op: "gemv",
          shape: k.shape,
          dtype: k.dtype,
          backend: "webgpu",
          residency: "device-resident",
          variant,
        }).ms;
      } catch {
        return null;
      }
    },
    stepMs: plan.estimate.perTokenMs.totalMs,
  };
}

/** A plan's validation: the measured decode against the report-only estimate, with diagnostics. */
function validationOf(
  plan: DecodePlan,
  rates: ReportRates,
  estimateOpts: EstimateOpts,
  earlier: ReturnType<typeof earlierOf>,
): LlmValidation {
  const round = (v: number) => Math.round(v * 100) / 100;
  const {
    model,
    quant,
    estimate: sweep,
    alongside,
    unusable,
    softmax,
    runs,
    brackets,
    bare,
    weightSpanBytes,
  } = plan;
  const first = runs[0]!;
  // Every decode of the pair counts alike: those sampled through the run, the bracketed ones and
  // the bare ones at the end.
  const decodes = [...earlier.runs, ...runs, ...bare];
  const perTokenMs = decodes.flatMap((m) => m.perTokenMs);
  const medianMs = median(perTokenMs);
  const measuredTokensPerSec = 1000 / medianMs;
  // The headline is what a user gets: the estimate from the report's figures alone. The one
  // priced from kernels timed alongside the decodes is a diagnostic of the estimate's
  // composition (both see the machine in the same seconds), kept beside it.
  const estimate = sweep;
  const diagnostic: TokensPerSecEstimate | null = alongside
    ? estimateTokensPerSec(
      model,
      quant,
      { ...rates, kernelTime: alongside.model(rates.kernelTime!) },
      estimateOpts,
    )
    : null;
  const error = (e: TokensPerSecEstimate) => e.decodeTokensPerSec / measuredTokensPerSec - 1;
  // Each decode against the estimate from the two windows around it: the machine's speed in
  // those seconds, not the median moment of the whole validation.
  const perDecode = alongside
    ? runs.map((run, i) => {
      const paired = estimateTokensPerSec(
        model,
        quant,
        { ...rates, kernelTime: alongside.model(rates.kernelTime!, brackets[i]) },
        estimateOpts,
      ).decodeTokensPerSec;
      return {
        measuredTokensPerSec: round(1000 / run.medianMs),
        estimatedTokensPerSec: round(paired),
        error: Math.round((paired * run.medianMs / 1000 - 1) * 1e4) / 1e4,
      };
    })
    : [];
  return {
    model: model.name,
    quant,
    measuredTokensPerSec,
    estimatedTokensPerSec: estimate.decodeTokensPerSec,
    error: error(estimate),
    ...intervalOf(estimate),
    details: {
      device: rates.name,
      estimateFrom: "the report's figures alone (what `deno task estimate` and " +
        "estimateTokensPerSec() give)",
      ...(alongside && diagnostic
        ? {
          alongsideEstimate: {
            tokensPerSec: round(diagnostic.decodeTokensPerSec),
            error: Math.round(error(diagnostic) * 1e4) / 1e4,
            totalMs: round(diagnostic.perTokenMs.totalMs),
            sources: [...diagnostic.sources],
            from: `the estimate's kernels timed alongside the decodes (${alongside.size} ` +
              `kernels, one window just before and one just after each of the ${runs.length} ` +
              `decodes; those that read weights with their operands rotated through ${
                (weightSpanBytes / 2 ** 20).toFixed(1)
              } MiB, as cold as the decode leaves them)`,
          },
        }
        : {}),
      context: estimateOpts.context,
      tokens: perTokenMs.length,
      decodes: decodes.length,
      decodesThroughRun: earlier.runs.length,
      ...(earlier.spanS === null ? {} : { decodeSpanS: earlier.spanS }),
      ...(earlier.otherKernels > 0 ? { decodesWithOtherKernelsLeftOut: earlier.otherKernels } : {}),
      ...(earlier.alike > 0 ? { decodesWithVariantsPricedAlike: earlier.alike } : {}),
      warmup: first.warmup,
      kvDtype: first.kvDtype,
      gemvVariant: first.gemvVariant,
      gemvVariantSource: unusable.length === 0
        ? "the variants the estimate's gemv predictions describe"
        : `the estimate's variants, except ${unusable.join(", ")} (the decode's default there)`,
      softmaxVariant: softmax ??
        "wg=64 (the decode's default: the estimate's is not f32 with 64 or 256 lanes)",
      measuredMedianMs: round(medianMs),
      measuredDecodeMedianMs: decodes.map((m) => round(m.medianMs)),
      measuredPerTokenMs: perTokenMs.map(round),
      measuredEncodeMs: round(median(decodes.map((m) => m.encodeMedianMs))),
      ...gpuSplit(decodes, round),
      dispatchesPerToken: first.dispatchesPerToken,
      weightBytes: first.weightBytes,
      estimateMethod: estimate.perTokenMs.method,
      estimatedMs: {
        weightsStream: round(estimate.perTokenMs.weightsStreamMs),
        matmul: round(estimate.perTokenMs.matmulMs),
        kvRead: round(estimate.perTokenMs.kvReadMs),
        dispatch: round(estimate.perTokenMs.dispatchMs),
        encode: round(estimate.perTokenMs.encodeMs),
        sync: round(estimate.perTokenMs.syncMs),
        total: round(estimate.perTokenMs.totalMs),
      },
      estimatedKernelsPerStep: estimate.kernelsPerStep,
      estimatedKernelMs: Object.fromEntries(
        estimate.kernels.map((k) => [`${k.name} ×${k.launches}`, Math.round(k.ms * 1000) / 1000]),
      ),
      estimateTag: estimate.tag,
      ...(alongside
        ? {
          alongsideWindowMs: alongside.windows(),
          perDecode,
          perDecodeMedianError: median(perDecode.map((d) => d.error)),
        }
        : {}),
      sources: [...estimate.sources],
    },
  };
}

/**
 * The decodes' per-token time split by their GPU timestamps: the median GPU time of a token's
 * pass (what the estimate's kernel terms price) and the median of each token's wall time less
 * its GPU time (what the sync term prices). Empty without timestamps.
 */
function gpuSplit(
  runs: readonly DecodeMeasurement[],
  round: (v: number) => number,
): { measuredGpuMedianMs?: number; measuredSyncMedianMs?: number } {
  const gpu: number[] = [];
  const rest: number[] = [];
  for (const run of runs) {
    if (run.gpuPerTokenMs === null) return {};
    run.gpuPerTokenMs.forEach((g, i) => {
      gpu.push(g);
      rest.push(run.perTokenMs[i]! - g);
    });
  }
  return gpu.length === 0
    ? {}
    : { measuredGpuMedianMs: round(median(gpu)), measuredSyncMedianMs: round(median(rest)) };
}

/** The estimate's stated range, as a validation records it; nothing when it has none. */
function intervalOf(estimate: TokensPerSecEstimate): Pick<LlmValidation, "estimatedInterval"> {
  const { level, tokensPerSec } = estimate.decodeInterval;
  return tokensPerSec === null
    ? {}
    : { estimatedInterval: { level, tokensPerSec: [tokensPerSec[0], tokensPerSec[1]] } };
}

/**
 * The gemv variant of each projection as the estimate priced it, where the decode can run it
 * at that projection's shape; the names of the others.
 */
function projectionVariants(
  kernels: readonly KernelEstimate[],
  dtype: Dtype,
  rates: ReportRates,
  model: ModelSpec,
): { variants: Record<string, string>; unusable: string[] } {
  const variants: Record<string, string> = {};
  const unusable: string[] = [];
  const fallback = rates.gemvVariants[dtype];
  for (const k of kernels) {
    if (k.op !== "gemv" || k.dtype !== dtype || k.standIn !== null) continue;
    const usable = [k.variant, fallback].find((v) =>
      v !== undefined && v !== "default" &&
      gemvWebGpu.unsupported?.(k.shape, dtype, parseVariantId(v)) === null
    );
    if (usable !== undefined) variants[k.name] = usable;
    if (usable !== k.variant) unusable.push(`${k.name} (${model.name})`);
  }
  return { variants, unusable };
}

/**
 * The softmax variant the estimate priced, when the decode's attention softmax can run it (f32
 * accumulation, 64 or 256 lanes); otherwise undefined and the decode keeps its 64 lanes.
 */
function softmaxVariant(kernels: readonly KernelEstimate[]): string | undefined {
  const k = kernels.find((k) => k.op === "softmax" && k.standIn === null);
  if (k?.variant === undefined) return undefined;
  const { wg, acc } = parseVariantId(k.variant);
  return (wg === 64 || wg === 256) && (acc === undefined || acc === "f32") ? k.variant : undefined;
}

/** Makes WebGPU runner sources on `gpu` that leave the device open (the caller owns it). */
async function webGpuSources(
  gpu: GpuHandle,
): Promise<(options?: WebGpuRunnerOptions) => RunnerSource> {
  const { createWebGpuRunner } = await import("../calibrate/runners/webgpu.ts");
  return (options = {}) => {
    const runner = createWebGpuRunner(gpu, options);
    return (backend) =>
      Promise.resolve(backend === "webgpu" ? runner : `Only WebGPU is timed alongside the decode`);
  };
}

/**
 * Most bytes a weight kernel's window rotates through: the span the sweep's gemv rotates through
 * ({@linkcode STREAMED_SPAN_BYTES}, past the last-level caches of common CPUs and GPUs), so the
 * two time weights equally cold. Each window uploads every copy again: at 128 MiB, tiny-64m
 * f32's windows took 4–7 s each on lavapipe, most of a 100 s validation.
 */
const MAX_WEIGHT_SPAN_BYTES = STREAMED_SPAN_BYTES;

/**
 * Bytes of operands the decode streams per token through the kernels that read weights (at most
 * {@linkcode MAX_WEIGHT_SPAN_BYTES}): the reuse distance of each weight.
 */
function weightSpan(kernels: readonly KernelEstimate[]): number {
  let bytes = 0;
  for (const k of kernels) {
    if (k.reads === "weights") bytes += k.launches * getOp(k.op).bytes(k.shape, k.dtype);
  }
  return Math.min(bytes, MAX_WEIGHT_SPAN_BYTES);
}
