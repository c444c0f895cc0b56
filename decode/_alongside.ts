/**
 * Kernel figures measured alongside a decode: every kernel the estimate priced, timed on the same
 * device in windows interleaved with the decodes, so that the estimate and the decode it is checked
 * against see the machine in the same state. On a shared or software adapter the device's speed
 * moves by tens of percent between minutes; a sweep taken earlier carries that drift into the
 * comparison, and this takes it out, leaving what the validation is for: whether the sum of the
 * measured kernels, their launches and the sync predicts the decode.
 *
 * @module
 */
import { getOp } from "../kernels/catalog.ts";
import { type Dtype, formatShape, type Shape } from "../kernels/types.ts";
import { measureMany, type RunnerSource } from "../calibrate/measure.ts";
import type { MeasureOk, MeasureRequest } from "../core/result.ts";
import { median } from "../core/stats.ts";
import type { KernelEstimate, KernelTime, KernelTimeModel } from "../models/llm/estimate.ts";

/**
 * Time per launch of one measured kernel, ms: the GPU timestamps' median when the adapter gave one
 * per sample (they exclude the ~11 ms sync a wall-clock device-resident sample subtracts, and so
 * the noise of that subtraction), else the wall-clock median.
 *
 * @param m A device-resident measurement.
 * @returns Its time per launch and which clock it came from.
 * @example
 * ```ts
 * import { launchMs } from "./_alongside.ts";
 * const stats = { n: 3, median: 2, p10: 2, p90: 2, mad: 0, min: 2, max: 2, ciHalfWidth: 0, relCi: 0 };
 * console.log(launchMs({ wall: stats, gpu: { ...stats, median: 1.5 } })); // { ms: 1.5, clock: "GPU timestamps" }
 * ```
 */
export function launchMs(
  m: Pick<MeasureOk, "wall" | "gpu">,
): { ms: number; clock: "GPU timestamps" | "wall clock" } {
  const gpu = m.gpu;
  return gpu && gpu.n === m.wall.n && gpu.median > 0
    ? { ms: gpu.median, clock: "GPU timestamps" }
    : { ms: m.wall.median, clock: "wall clock" };
}

function key(op: string, shape: Shape, dtype: Dtype): string {
  return `${op}|${Object.entries(shape).map(([k, v]) => `${k}=${v}`).join(",")}|${dtype}`;
}

/**
 * Collects, over several windows, the time per launch of every kernel the estimates priced, each at
 * its own shape (a projection's true rows × cols, not the square the sweep's model prices it as)
 * and in the variant the estimate chose.
 *
 * @example
 * ```ts ignore
 * const alongside = new AlongsideKernels(estimates.flatMap((e) => e.kernels), runners);
 * for (let r = 0; r < 3; r++) {
 *   await alongside.measureWindow();
 *   // … one decode per model …
 * }
 * const rates2 = { ...rates, kernelTime: alongside.model(rates.kernelTime!) };
 * ```
 */
export class AlongsideKernels {
  /** The kernels to time, each group on its own runners. */
  readonly #groups: { requests: MeasureRequest[]; runners: RunnerSource }[];
  /** Per kernel: its time in each window that timed it, with that window's index. */
  readonly #windows = new Map<
    string,
    { times: { window: number; ms: number }[]; clock: string; variant: string }
  >();
  #taken = 0;
  readonly #failures = new Map<string, string>();
  readonly #budgetMs: number;

  /**
   * @param kernels The kernels the estimates priced (duplicates are measured once).
   * @param runners Where the WebGPU runner comes from.
   * @param options `budgetMs`: sampling budget of each kernel in each window, ms (300).
   *   `weightRunners`: where the kernels that read weights are timed instead, e.g. a runner
   *   whose operands rotate through as many bytes as the decode streams per token.
   */
  constructor(
    kernels: readonly KernelEstimate[],
    runners: RunnerSource,
    options: { readonly budgetMs?: number; readonly weightRunners?: RunnerSource } = {},
  ) {
    this.#budgetMs = options.budgetMs ?? 300;
    const rest = { requests: [] as MeasureRequest[], runners };
    const weights = options.weightRunners && options.weightRunners !== runners
      ? { requests: [] as MeasureRequest[], runners: options.weightRunners }
      : rest;
    this.#groups = weights === rest ? [rest] : [weights, rest];
    const seen = new Set<string>();
    for (const k of kernels) {
      const id = key(k.op, k.shape, k.dtype);
      if (seen.has(id)) continue;
      seen.add(id);
      (k.reads === "weights" ? weights : rest).requests.push({
        op: k.op,
        shape: k.shape,
        dtype: k.dtype,
        backend: "webgpu",
        residency: "device-resident",
        ...(k.variant === "default" ? {} : { variant: k.variant }),
      });
    }
  }

  /** Kernels measured. */
  get size(): number {
    return this.#groups.reduce((n, g) => n + g.requests.length, 0);
  }

  /**
   * Measures every kernel once more (one window); a kernel that fails is left to the sweep.
   *
   * @returns The window's index (0 for the first), for {@linkcode model}'s `windows`.
   */
  async measureWindow(): Promise<number> {
    const index = this.#taken++;
    for (const { requests, runners } of this.#groups) {
      const results = await measureMany(requests, {
        runners,
        stopping: { budgetMs: this.#budgetMs, minSamples: 5 },
      });
      results.forEach((r, i) => {
        const req = requests[i]!;
        const id = key(req.op, req.shape, req.dtype);
        if (r.state !== "ok") {
          this.#failures.set(id, r.state === "failed" ? r.error : r.reason);
          return;
        }
        const { ms, clock } = launchMs(r);
        const w = this.#windows.get(id) ?? { times: [], clock, variant: r.variant };
        w.times.push({ window: index, ms });
        this.#windows.set(id, w);
      });
    }
    return index;
  }

  /**
   * A kernel time model answering from these measurements (the median over windows, its interval
   * the windows' range), and from `fallback` for a kernel that was not measured.
   *
   * @param fallback The sweep's model.
   * @param windows Only these windows (indices from {@linkcode measureWindow}); a kernel none of
   *   them timed answers from all its windows. All windows when absent.
   * @returns The model.
   */
  model(fallback: KernelTimeModel, windows?: readonly number[]): KernelTimeModel {
    return (request) => {
      const shape = request.shape;
      const w = this.#windows.get(key(request.op, shape, request.dtype));
      const picked = w?.times.filter((t) => windows?.includes(t.window) ?? true) ?? [];
      const ms = (picked.length > 0 ? picked : w?.times ?? []).map((t) => t.ms);
      if (!w || ms.length === 0) {
        const t = fallback(request);
        const why = this.#failures.get(key(request.op, shape, request.dtype));
        return why ? { ...t, source: `not measured alongside (${why}): ${t.source}` } : t;
      }
      const time: KernelTime = {
        ms: median(ms),
        interval: [Math.min(...ms), Math.max(...ms)],
        tag: "measured",
        variant: w.variant,
        gpuOnly: w.clock === "GPU timestamps",
        source:
          `measured alongside the decode: ${request.op} ${
            formatShape(getOp(request.op), shape)
          } ${request.dtype} webgpu device-resident, median of ${ms.length} window(s) ` +
          `(${w.clock})`,
      };
      return time;
    };
  }

  /** Per kernel, the window medians, ms (for the report's details). */
  windows(): Record<string, number[]> {
    return Object.fromEntries(
      [...this.#windows].map(([id, w]) => [id, w.times.map((t) => Math.round(t.ms * 1e4) / 1e4)]),
    );
  }
}
