/**
 * The decode step probe: what a decode step costs beyond the sum of its kernels, measured on a
 * synthetic decode of a model the validations never check ({@linkcode PROBE_MODEL}), so the
 * report-only tokens/s estimate can price it for any model.
 *
 * The sweep times each kernel alone, its launches back to back. A decode chains them, each
 * kernel reading what the one before wrote. On lavapipe, in one process, a step of tiny-16m in
 * decode order took 1.05–1.10× the GPU time of the same launches grouped by kernel, and tiny-64m
 * 1.04–1.16× (f32, four rounds each); across eight calibrations the validated decodes took a
 * median 1.11× the GPU time of their kernels timed alone beside them (32 decodes, 0.64–1.45×). The host's part of a synchronised step — recording
 * the launches, submitting, reading the token back — grew with the launches too: 0.6–1.7 ms more
 * than the one-launch round trip at 68 launches, 1.2–2.1 ms at 132, in 52 validated decodes.
 *
 * So the probe times, in rounds, one step three ways: in decode order, grouped by kernel (each
 * kernel's launches across the layers back to back, as the sweep runs them), and the first
 * layer's launches alone. GPU timestamps split each step's GPU time from the host's.
 * - `chainFactor`: the decode order's GPU time over the grouped order's, the median over rounds
 *   and weight formats (f32, int4).
 * - `hostFixedMs` and `hostPerDispatchUs`: the host's part (wall time less GPU time) of the whole
 *   step and of the first layer alone, a line through the two.
 *
 * Every step is a real one first: the probe's decode is checked against its float64 reference
 * before anything is timed, and a decode that does not match leaves the figures null with why.
 *
 * @module
 */
import type { GpuHandle } from "../calibrate/device.ts";
import { GpuResources, Readback, TimestampQueries } from "../calibrate/runners/gpu.ts";
import type { DecodeStepProbe, Figure } from "../core/schema.ts";
import { medianFigure, summarize } from "../core/stats.ts";
import { defineModel, type ModelSpec } from "../models/llm/presets.ts";
import { KERNELS_PER_LAYER, MODEL_KERNELS } from "../models/llm/decode_kernels.ts";
import {
  buildValidated,
  checkDecodeStep,
  type DecodeQuant,
  defaultVariant,
  STEP_READBACK_BYTES,
  timeStep,
} from "./decode.ts";
import type { DecodeGraph, Dispatch } from "./graph.ts";

/**
 * The model the probe decodes: a decoder of the tiny presets' structure (four layers of 16
 * launches and four launches around them) at widths none of them has, 7.8 M parameters.
 *
 * @example
 * ```ts
 * import { PROBE_MODEL } from "./step_probe.ts";
 * console.log(PROBE_MODEL.hidden); // 384
 * ```
 */
export const PROBE_MODEL: ModelSpec = defineModel({
  name: "step-probe-8m",
  layers: 4,
  hidden: 384,
  intermediate: 1024,
  heads: 6,
  kvHeads: 2,
  headDim: 64,
  vocab: 2048,
  tiedEmbeddings: false,
  qkvBias: false,
});

/** Weight formats the probe decodes; its factor is the median over both. */
const QUANTS: readonly DecodeQuant[] = ["f32", "int4"];
/** KV cache length, and the position every timed step decodes. */
const CONTEXT = 64;
const POSITION = 40;
/** Rounds, and steps of each order per round. */
const DEFAULT_ROUNDS = 6;
const STEPS_PER_ROUND = 3;
/** Launches of the `layer` order: the model's first kernels and the first layer's. */
const LAYER_LAUNCHES = MODEL_KERNELS.filter((k) => k.stage === "first").length +
  KERNELS_PER_LAYER.length;

/** How a probed step ran its launches. */
export type StepOrder = "chain" | "grouped" | "layer";

/**
 * One timed step of the probe.
 *
 * @example
 * ```ts
 * import type { StepSample } from "./step_probe.ts";
 * const s: StepSample = { quant: "f32", round: 0, order: "chain", wallMs: 25.1, gpuMs: 12.3 };
 * ```
 */
export interface StepSample {
  readonly quant: DecodeQuant;
  readonly round: number;
  readonly order: StepOrder;
  /** From the first recorded command to the token read back. */
  readonly wallMs: number;
  /** The pass's GPU time, from its timestamps. */
  readonly gpuMs: number;
}

/**
 * Options of {@linkcode measureStepProbe}.
 *
 * @example
 * ```ts
 * import type { StepProbeOptions } from "./step_probe.ts";
 * const o: StepProbeOptions = { rounds: 4 };
 * ```
 */
export interface StepProbeOptions {
  /** Rounds of the three orders per weight format; default 6. */
  readonly rounds?: number;
  /** Stops between steps; the figures are then from the rounds done. */
  readonly signal?: AbortSignal;
}

/**
 * Runs the probe on `gpu`. Without `timestamp-query` the step's GPU time cannot be told from the
 * host's, and every figure is null with that reason; so it is when the probe's decode does not
 * match its reference.
 *
 * @param gpu The open device (its buffers made here are destroyed here).
 * @param options Rounds and abort signal.
 * @returns The probe's figures.
 * @example
 * ```ts ignore
 * import { openGpu } from "../calibrate/device.ts";
 * import { measureStepProbe } from "./step_probe.ts";
 * const gpu = await openGpu();
 * if (gpu) console.log((await measureStepProbe(gpu)).chainFactor.value);
 * ```
 */
export async function measureStepProbe(
  gpu: Pick<GpuHandle, "device">,
  options: StepProbeOptions = {},
): Promise<DecodeStepProbe> {
  const dispatches = PROBE_MODEL.layers * KERNELS_PER_LAYER.length + MODEL_KERNELS.length;
  const unmeasured = (reason: string) =>
    stepProbeFromSamples([], dispatches, LAYER_LAUNCHES, reason);
  if (!gpu.device.features.has("timestamp-query")) {
    return unmeasured(
      "the adapter has no timestamp-query: a step's GPU time cannot be told from the host's",
    );
  }
  const graphs: DecodeGraph[] = [];
  const resources = new GpuResources(gpu.device);
  try {
    for (const quant of QUANTS) {
      const graph = await probeGraph(gpu.device, quant);
      graphs.push(graph);
      await checkDecodeStep(graph, PROBE_MODEL, quant, POSITION);
    }
    const samples = await timeRounds(graphs, resources, options);
    return stepProbeFromSamples(samples, dispatches, LAYER_LAUNCHES);
  } catch (e) {
    return unmeasured(`the probe's decode failed: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    for (const g of graphs) g.destroy();
    resources.destroy();
  }
}

function probeGraph(device: GPUDevice, quant: DecodeQuant): Promise<DecodeGraph> {
  const dtype = quant === "f32" ? "f32" : "q4";
  const variant = defaultVariant(dtype, { rows: PROBE_MODEL.hidden, cols: PROBE_MODEL.hidden });
  return buildValidated(device, PROBE_MODEL, {
    quant,
    context: CONTEXT,
    softmaxWg: 64,
    gemvVariant: () => variant,
  }, [POSITION]);
}

/**
 * The step's launches in the three orders: decode order, grouped by kernel (a stable sort by
 * name keeps each kernel's launches in layer order), and the model's first kernel with the
 * first layer.
 *
 * @param launches A step's launches in decode order.
 * @param layerLaunches Launches of the `layer` order (the first ones).
 * @returns Each order's launches.
 * @example
 * ```ts
 * import { probeOrders } from "./step_probe.ts";
 * import type { Dispatch } from "./graph.ts";
 * const d = (name: string) => ({ name }) as unknown as Dispatch;
 * const o = probeOrders([d("embed"), d("q"), d("add"), d("q"), d("add"), d("head")], 3);
 * console.log(o.grouped.map((x) => x.name).join(" ")); // "add add embed head q q"
 * ```
 */
export function probeOrders(
  launches: readonly Dispatch[],
  layerLaunches: number,
): Readonly<Record<StepOrder, readonly Dispatch[]>> {
  return {
    chain: launches,
    grouped: [...launches].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    layer: launches.slice(0, layerLaunches),
  };
}

/** Rounds of every graph's three orders, interleaved so a slow moment hits all of them. */
async function timeRounds(
  graphs: readonly DecodeGraph[],
  resources: GpuResources,
  options: StepProbeOptions,
): Promise<StepSample[]> {
  const readback = new Readback(resources, STEP_READBACK_BYTES, "step probe readback");
  const clock = TimestampQueries.create(resources)!;
  clock.reserve(1);
  const samples: StepSample[] = [];
  const rounds = options.rounds ?? DEFAULT_ROUNDS;
  for (let round = 0; round < rounds && !options.signal?.aborted; round++) {
    for (const [i, graph] of graphs.entries()) {
      const orders = probeOrders(graph.dispatches, LAYER_LAUNCHES);
      for (let step = 0; step < STEPS_PER_ROUND; step++) {
        for (const order of ["chain", "grouped", "layer"] as const) {
          const { ms, gpuMs } = await timeStep(graph, POSITION, orders[order], readback, clock);
          if (gpuMs !== null && gpuMs > 0) {
            samples.push({ quant: QUANTS[i]!, round, order, wallMs: ms, gpuMs });
          }
        }
      }
    }
  }
  return samples;
}

/**
 * The probe's figures from its samples (pure: testable without a GPU). With no samples of an
 * order a figure needs, that figure is null with `reason` (or the missing order).
 *
 * @param samples The timed steps.
 * @param dispatches Launches of the whole step.
 * @param layerDispatches Launches of the `layer` order's step.
 * @param reason Why there are no samples, when there are none.
 * @returns The figures.
 * @example
 * ```ts
 * import { stepProbeFromSamples } from "./step_probe.ts";
 * const s = (order: "chain" | "grouped" | "layer", wallMs: number, gpuMs: number) =>
 *   ({ quant: "f32" as const, round: 0, order, wallMs, gpuMs });
 * const p = stepProbeFromSamples([s("chain", 23, 11), s("grouped", 21, 10), s("layer", 15, 3)], 68, 17);
 * console.log(p.chainFactor.value, p.hostPerDispatchUs.value); // 1.1 ~19.6
 * ```
 */
export function stepProbeFromSamples(
  samples: readonly StepSample[],
  dispatches: number,
  layerDispatches: number,
  reason?: string,
): DecodeStepProbe {
  const model = `${PROBE_MODEL.name} (${PROBE_MODEL.layers} layers, hidden ${PROBE_MODEL.hidden}` +
    `, f32 and int4), step at position ${POSITION}`;
  const of = (order: StepOrder) => samples.filter((s) => s.order === order);
  const missing = (what: string, unit: string): Figure => ({
    value: null,
    unit,
    tag: "measured",
    reason: reason ?? `no ${what} step was timed`,
  });
  const ratios = chainRatios(samples);
  const chainFactor: Figure = ratios.length === 0
    ? missing("grouped and chained", "x")
    : medianFigure(
      ratios,
      "x",
      `GPU time of ${dispatches} launches in decode order over the same launches grouped by ` +
        `kernel, per round and weight format`,
    );
  const host = (order: StepOrder) => of(order).map((s) => s.wallMs - s.gpuMs);
  const whole = host("chain");
  const layer = host("layer");
  if (whole.length === 0 || layer.length === 0) {
    return {
      model,
      dispatches,
      chainFactor,
      hostFixedMs: missing("whole and one-layer", "ms"),
      hostPerDispatchUs: missing("whole and one-layer", "us"),
    };
  }
  const w = summarize(whole);
  const l = summarize(layer);
  const span = dispatches - layerDispatches;
  const slopeMs = Math.max(0, (w.median - l.median) / span);
  const slopeHalf = (w.ciHalfWidth + l.ciHalfWidth) / span;
  const fixedMs = l.median - slopeMs * layerDispatches;
  const line =
    `host time (wall less GPU) of synchronised steps: ${l.n} steps of ${layerDispatches} ` +
    `launches (median ${l.median.toFixed(3)} ms) and ${w.n} of ${dispatches} ` +
    `(${w.median.toFixed(3)} ms), a line through the two`;
  return {
    model,
    dispatches,
    chainFactor,
    hostFixedMs: {
      value: fixedMs,
      unit: "ms",
      tag: "fitted",
      ci: [
        fixedMs - l.ciHalfWidth - slopeHalf * layerDispatches,
        fixedMs + l.ciHalfWidth +
        slopeHalf * layerDispatches,
      ],
      source: `intercept of the ${line}`,
    },
    hostPerDispatchUs: {
      value: slopeMs * 1000,
      unit: "us",
      tag: "fitted",
      ci: [Math.max(0, slopeMs - slopeHalf) * 1000, (slopeMs + slopeHalf) * 1000],
      source: `slope of the ${line}`,
    },
  };
}

/** Per round and weight format: median chained GPU time over median grouped GPU time. */
function chainRatios(samples: readonly StepSample[]): number[] {
  const cells = new Map<string, { chain: number[]; grouped: number[] }>();
  for (const s of samples) {
    if (s.order === "layer") continue;
    const key = `${s.quant}|${s.round}`;
    const cell = cells.get(key) ?? cells.set(key, { chain: [], grouped: [] }).get(key)!;
    cell[s.order].push(s.gpuMs);
  }
  const ratios: number[] = [];
  for (const { chain, grouped } of cells.values()) {
    if (chain.length > 0 && grouped.length > 0) {
      ratios.push(summarize(chain).median / summarize(grouped).median);
    }
  }
  return ratios;
}
