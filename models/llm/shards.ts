/**
 * How a parallel plan splits a model over devices: what each device holds, reads per decode
 * step and launches. Shared by the estimate (time) and the planner (memory).
 *
 * - Tensor parallel over p devices: every matrix (embedding and lm head by vocabulary) is split
 *   p ways, norm gains are replicated, query heads split p ways, KV heads split p ways (and
 *   replicated when there are fewer than p). Every device runs every kernel on its slice.
 * - Pipeline parallel: consecutive layers per stage; the embedding table on the first stage, the
 *   final norm and lm head on the last (a tied table is held again there when that is another
 *   device).
 *
 * @module
 */
import { KERNELS_PER_LAYER, MODEL_KERNELS } from "./decode_kernels.ts";
import type { Interconnect } from "./comm.ts";
import {
  type MemoryBreakdown,
  memoryBreakdown,
  type MemoryOptions,
  positiveInteger,
  type Quant,
} from "./memory.ts";
import { type ModelSpec, paramBreakdown } from "./presets.ts";

/**
 * How a model is spread over devices.
 *
 * @example
 * ```ts
 * import type { ParallelPlan } from "./shards.ts";
 * const tp: ParallelPlan = { strategy: "tensor-parallel", ways: 2, interconnect: { kind: "nvlink", gbps: 300 } };
 * const pp: ParallelPlan = { strategy: "pipeline-parallel", layersPerStage: [16, 16], interconnect: { kind: "pcie", gbps: 25 } };
 * ```
 */
export type ParallelPlan =
  | { readonly strategy: "none" }
  | {
    readonly strategy: "tensor-parallel";
    /** Devices the model is split over. */
    readonly ways: number;
    readonly interconnect: Interconnect;
  }
  | {
    readonly strategy: "pipeline-parallel";
    /** Layers of each stage, first to last; one device per stage. */
    readonly layersPerStage: readonly number[];
    readonly interconnect: Interconnect;
  };

/**
 * Names of the strategies.
 *
 * @example
 * ```ts
 * import type { Strategy } from "./shards.ts";
 * const s: Strategy = "pipeline-parallel";
 * ```
 */
export type Strategy = ParallelPlan["strategy"];

/**
 * One device's part of a plan.
 *
 * @example
 * ```ts
 * import { shardSlices } from "./shards.ts";
 * import { getPreset } from "./presets.ts";
 * const [s] = shardSlices(getPreset("tiny-16m"), { strategy: "none" });
 * console.log(s?.layerCount); // 4
 * ```
 */
export interface ShardSlice {
  /** Position in the plan (stage or tensor rank). */
  readonly index: number;
  /** First layer this device runs. */
  readonly firstLayer: number;
  /** Layers this device runs. */
  readonly layerCount: number;
  /** Parameters stored on the device. */
  readonly heldParams: number;
  /** Parameters read per decode step (the embedding lookup's single row is left out). */
  readonly streamedParams: number;
  /** KV heads cached per layer. */
  readonly kvHeads: number;
  /** Query heads computed per layer. */
  readonly heads: number;
  /** Kernel launches per decode step. */
  readonly kernels: number;
}

/**
 * The per-device slices of a plan.
 *
 * @param model The model.
 * @param plan The plan.
 * @returns One slice per device, in plan order.
 * @throws {RangeError} when the split is impossible: tensor-parallel ways not dividing the heads,
 *   stages not covering the layers.
 * @example
 * ```ts
 * import { shardSlices } from "./shards.ts";
 * import { getPreset } from "./presets.ts";
 * const s = shardSlices(getPreset("llama-3-8b"), {
 *   strategy: "pipeline-parallel", layersPerStage: [16, 16], interconnect: { kind: "pcie", gbps: 25 },
 * });
 * console.log(s.map((x) => x.firstLayer)); // [0, 16]
 * ```
 */
export function shardSlices(model: ModelSpec, plan: ParallelPlan): ShardSlice[] {
  const pb = paramBreakdown(model);
  const layerKernels = KERNELS_PER_LAYER.length;
  const headTable = model.tiedEmbeddings ? pb.embedding : pb.lmHead;
  const norms = model.layers * pb.normsPerLayer + pb.finalNorm;
  const matrices = model.layers * (pb.attentionPerLayer + pb.mlpPerLayer);
  if (plan.strategy === "none") {
    return [{
      index: 0,
      firstLayer: 0,
      layerCount: model.layers,
      heldParams: pb.total,
      streamedParams: matrices + norms + headTable,
      kvHeads: model.kvHeads,
      heads: model.heads,
      kernels: model.layers * layerKernels + MODEL_KERNELS.length,
    }];
  }
  if (plan.strategy === "tensor-parallel") {
    const p = positiveInteger("ways", plan.ways);
    if (model.heads % p !== 0) {
      throw new RangeError(
        `Cannot split "${model.name}" tensor-parallel ${p} ways: its ${model.heads} attention ` +
          `heads do not divide evenly; use a device count that divides ${model.heads}`,
      );
    }
    return Array.from({ length: p }, (_, index) => ({
      index,
      firstLayer: 0,
      layerCount: model.layers,
      heldParams: (pb.embedding + matrices + pb.lmHead) / p + norms,
      streamedParams: (matrices + headTable) / p + norms,
      kvHeads: Math.ceil(model.kvHeads / p),
      heads: model.heads / p,
      kernels: model.layers * layerKernels + MODEL_KERNELS.length,
    }));
  }
  const stages = plan.layersPerStage;
  const total = stages.reduce((a, b) => a + b, 0);
  if (
    stages.length === 0 || stages.some((n) => !Number.isInteger(n) || n <= 0) ||
    total !== model.layers
  ) {
    throw new RangeError(
      `Pipeline stages [${stages.join(", ")}] must be positive layer counts summing to ` +
        `"${model.name}"'s ${model.layers} layers`,
    );
  }
  const firstKernels = MODEL_KERNELS.filter((k) => k.stage === "first").length;
  const lastKernels = MODEL_KERNELS.length - firstKernels;
  let firstLayer = 0;
  return stages.map((layerCount, index) => {
    const first = index === 0;
    const last = index === stages.length - 1;
    const layerParams = layerCount * pb.perLayer;
    const headHeld = model.tiedEmbeddings && first ? 0 : headTable;
    const slice: ShardSlice = {
      index,
      firstLayer,
      layerCount,
      heldParams: layerParams + (first ? pb.embedding : 0) + (last ? pb.finalNorm + headHeld : 0),
      streamedParams: layerParams + (last ? pb.finalNorm + headTable : 0),
      kvHeads: model.kvHeads,
      heads: model.heads,
      kernels: layerCount * layerKernels + (first ? firstKernels : 0) + (last ? lastKernels : 0),
    };
    firstLayer += layerCount;
    return slice;
  });
}

/**
 * Memory one device of a plan needs: its weights and KV cache slice, and the full activation
 * buffers (every device allocates them whole, an upper bound for tensor-parallel slices).
 *
 * @param model The model.
 * @param quant The weight quantization.
 * @param slice The device's slice, from {@linkcode shardSlices}.
 * @param opts Context, batch and KV dtype.
 * @returns The device's memory breakdown.
 * @throws {RangeError} when context or batch is not a positive integer.
 * @example
 * ```ts
 * import { shardMemory, shardSlices } from "./shards.ts";
 * import { getPreset } from "./presets.ts";
 * const m = getPreset("tiny-16m");
 * const [s] = shardSlices(m, { strategy: "none" });
 * console.log(shardMemory(m, "f32", s!, { context: 64, batch: 1 }).weightsBytes); // 65030144
 * ```
 */
export function shardMemory(
  model: ModelSpec,
  quant: Quant,
  slice: ShardSlice,
  opts: MemoryOptions,
): MemoryBreakdown {
  return memoryBreakdown(model, quant, opts, {
    params: slice.heldParams,
    layers: slice.layerCount,
    kvHeads: slice.kvHeads,
  });
}
