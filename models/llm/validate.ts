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
import { estimateTokensPerSec } from "./estimate.ts";
import { getPreset } from "./presets.ts";
import { ratesFromReport } from "./rates.ts";

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
  /** Timed tokens per decode; default 6. */
  readonly tokens?: number;
  /** KV cache length; default 64. */
  readonly context?: number;
  /** Told before each decode starts. */
  readonly onStart?: (model: string, quant: DecodeQuant) => void;
}

const DTYPE: Readonly<Record<DecodeQuant, Dtype>> = { f32: "f32", int4: "q4" };

/**
 * Measures the synthetic decode and estimates it from the report, for every model × quant.
 *
 * The decode runs the gemv variant behind the report's gemv figure when it suits the decode's
 * shapes, so the estimate and the measurement describe the same kernel; the estimate uses the
 * decode's f32 KV cache and batch 1.
 *
 * @param gpu An open WebGPU device (left open).
 * @param report The report whose rates are validated.
 * @param opts Models, quants, tokens, context.
 * @returns One validation per model × quant: measured and estimated tokens/s, error =
 *   estimated / measured − 1, and details (per-token times, the estimate's terms and sources).
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
  const tokens = opts.tokens ?? 6;
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
      const reported = rates.gemvVariants[dtype];
      const usable = reported !== undefined &&
        gemvWebGpu.unsupported?.(
            { rows: model.hidden, cols: model.hidden },
            dtype,
            parseVariantId(reported),
          ) === null;
      const measured = await measureDecode(gpu, model, quant, {
        tokens,
        context,
        ...(usable ? { gemvVariant: reported } : {}),
      });
      const estimate = estimateTokensPerSec(model, quant, rates, {
        context,
        batch: 1,
        kvDtype: "f32",
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
          gemvVariantSource: usable
            ? "the variant behind the report's gemv figure"
            : "the decode's default (the report's variant does not suit these shapes)",
          measuredMedianMs: round(measured.medianMs),
          measuredPerTokenMs: measured.perTokenMs.map(round),
          dispatchesPerToken: measured.dispatchesPerToken,
          weightBytes: measured.weightBytes,
          estimatedMs: {
            weightsStream: round(estimate.perTokenMs.weightsStreamMs),
            matmul: round(estimate.perTokenMs.matmulMs),
            kvRead: round(estimate.perTokenMs.kvReadMs),
            dispatch: round(estimate.perTokenMs.dispatchMs),
            sync: round(estimate.perTokenMs.syncMs),
            total: round(estimate.perTokenMs.totalMs),
          },
          estimatedKernelsPerStep: estimate.kernelsPerStep,
          sources: [...estimate.sources],
        },
      });
    }
  }
  return out;
}
