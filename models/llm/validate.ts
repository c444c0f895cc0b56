/**
 * Checks the tokens/sec estimate against a real decode: the synthetic WebGPU decode of
 * `decode.ts` is measured for small models, the estimate is computed from the same report's
 * rates for the same workload, and the two are set side by side in the report's
 * `llm.validations` shape.
 *
 * @module
 */
import type { Dtype } from "../../kernels/types.ts";
import { gemvWebGpu } from "../../kernels/gemv/webgpu.ts";
import type { GpuHandle } from "../../calibrate/device.ts";
import type { LlmValidation, Report } from "../../reports/schema.ts";
import { type DecodeQuant, measureDecode, parseVariantId } from "./decode.ts";
import { estimateTokensPerSec, type KernelEstimate } from "./estimate.ts";
import { getPreset, type ModelSpec } from "./presets.ts";
import { ratesFromReport, type ReportRates } from "./rates.ts";

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
  /** Timed tokens per decode; default 32. */
  readonly tokens?: number;
  /** KV cache length; default 64. */
  readonly context?: number;
  /** Told before each decode starts. */
  readonly onStart?: (model: string, quant: DecodeQuant) => void;
}

/**
 * Timed tokens: per-token times on a shared machine spread widely within one decode (tiny-16m f32
 * here: p10–p90 of 34–45 ms in one decode, 36–65 ms in the next), so the median needs a few dozen
 * of them; tiny-64m f32 still decodes 32 in about five seconds.
 */
const DEFAULT_TOKENS = 32;

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
 * @param opts Models, quants, tokens, context.
 * @returns One validation per model × quant: measured and estimated tokens/s, error =
 *   estimated / measured − 1, and details (per-token times, the estimate's terms, kernels and
 *   sources).
 * @throws {MissingCalibrationError} when the report lacks a WebGPU figure the estimate needs.
 * @example
 * ```ts ignore
 * import { openGpu } from "../../calibrate/device.ts";
 * import { loadReport } from "../../reports/load.ts";
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
  gpu: Pick<GpuHandle, "device">,
  report: Report,
  opts: ValidateOptions = {},
): Promise<LlmValidation[]> {
  const models = (opts.models ?? ["tiny-16m", "tiny-64m"]).map(getPreset);
  const quants = opts.quants ?? ["f32", "int4"];
  const tokens = opts.tokens ?? DEFAULT_TOKENS;
  const context = opts.context ?? 64;
  const rates = ratesFromReport(report, {
    backend: "webgpu",
    require: quants.map((q) => DTYPE[q]),
  });
  const out: LlmValidation[] = [];
  for (const model of models) {
    for (const quant of quants) {
      opts.onStart?.(model.name, quant);
      const dtype = DTYPE[quant];
      const estimate = estimateTokensPerSec(model, quant, rates, {
        context,
        batch: 1,
        kvDtype: "f32",
      });
      const { variants, unusable } = projectionVariants(estimate.kernels, dtype, rates, model);
      const measured = await measureDecode(gpu, model, quant, {
        tokens,
        context,
        gemvVariants: variants,
      });
      const round = (v: number) => Math.round(v * 100) / 100;
      out.push({
        model: model.name,
        quant,
        measuredTokensPerSec: measured.tokensPerSec,
        estimatedTokensPerSec: estimate.decodeTokensPerSec,
        error: estimate.decodeTokensPerSec / measured.tokensPerSec - 1,
        details: {
          device: rates.name,
          context,
          tokens,
          warmup: measured.warmup,
          kvDtype: measured.kvDtype,
          gemvVariant: measured.gemvVariant,
          gemvVariantSource: unusable.length === 0
            ? "the variants the estimate's gemv predictions describe"
            : `the estimate's variants, except ${unusable.join(", ")} (the decode's default there)`,
          measuredMedianMs: round(measured.medianMs),
          measuredPerTokenMs: measured.perTokenMs.map(round),
          measuredEncodeMs: round(measured.encodeMedianMs),
          dispatchesPerToken: measured.dispatchesPerToken,
          weightBytes: measured.weightBytes,
          estimateMethod: estimate.perTokenMs.method,
          estimatedMs: {
            weightsStream: round(estimate.perTokenMs.weightsStreamMs),
            matmul: round(estimate.perTokenMs.matmulMs),
            kvRead: round(estimate.perTokenMs.kvReadMs),
            dispatch: round(estimate.perTokenMs.dispatchMs),
            sync: round(estimate.perTokenMs.syncMs),
            total: round(estimate.perTokenMs.totalMs),
          },
          estimatedKernelsPerStep: estimate.kernelsPerStep,
          estimatedKernelMs: Object.fromEntries(
            estimate.kernels.map((
              k,
            ) => [`${k.name} ×${k.launches}`, Math.round(k.ms * 1000) / 1000]),
          ),
          estimateTag: estimate.tag,
          sources: [...estimate.sources],
        },
      });
    }
  }
  return out;
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
