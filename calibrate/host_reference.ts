/**
 * The host's own speed, without gpucal: fixed workloads that touch none of gpucal's runners,
 * timed as a median of a few runs. When these move as much as a backend's cases do, the machine
 * moved, not gpucal; when they hold still while a backend moves, the noise is the backend's or
 * gpucal's own. The noise bench times all of them beside its cases; calibrate's drift probes time
 * `throughput` before each probe of the backends (`stability.probes[].hostMs`), so a report tells
 * the machine's moves from its backends'.
 *
 * - `scalar`: one dependent floating-point chain in registers: the core's clock. It waits on
 *   each result, so it leaves most of the core's execution units idle and barely notices a
 *   neighbour using them.
 * - `throughput`: eight independent chains in registers, keeping more of the core's execution
 *   units busy, as kernels do. On a 2-vCPU AMD EPYC VM, in one 150 s run, it ran 1.8–2.85 ms and
 *   a cache-resident sum 0.37–0.65 ms, moving together, while `scalar` stayed within ×1.1 but for
 *   single outliers: no steal time, no load, and nothing on the VM's other core could do it (a
 *   busy loop there changed neither). That is the pattern of a physical core shared with another
 *   guest, which a dependent chain does not see.
 * - `stream`: a sum over 32 MiB of doubles: the memory system's speed. It is one dependent chain
 *   of adds: on the AMD EPYC VM 3.0 ms a run (11 GB/s), about what the adds' latency allows, so
 *   it may not see the memory slow down.
 * - `cached`: an elementwise add of two 1 MiB f32 arrays into a third (3 MiB, in the last-level
 *   cache, past a core's own): a typed-array loop as a js kernel is, without gpucal. On the AMD
 *   EPYC VM the machine's slow stretches (×1.35–1.5, seconds to minutes) slowed such loops and
 *   left the register loops and the 32 MiB sum alone: in ten windows 3 s apart, gpucal's js add,
 *   gemv and dot ran ×1.4 slower in three consecutive ones, and a plain add of 3 × 4 MiB timed in
 *   the same process right after them ran ×1.4 slower in exactly those three. The states change
 *   within seconds, though: in `deno task noise` (four windows 20 s apart) this reference repeated
 *   within ±10 % in 50 % of its times, and dividing js's and wasm's times by it, timed before their
 *   op, left them further from their medians (js 72 → 47 % within ±10 %), so the noise bench
 *   prints it beside the others and divides by `throughput` still.
 *
 * @module
 */
import { median } from "../core/stats.ts";

/** The host reference workloads. */
export const HOST_REFERENCES = ["scalar", "throughput", "stream", "cached"] as const;

/** One host reference workload. */
export type HostReference = typeof HOST_REFERENCES[number];

/** Timed runs per reference measurement; the median is kept. */
const RUNS = 7;
/** Iterations of the scalar loop per run (about 10 ms on a 2020s server core). */
const SCALAR_ITERATIONS = 4e6;
/** Iterations of the throughput loop per run, each advancing eight chains (about 10 ms too). */
const THROUGHPUT_ITERATIONS = 2e6;
/** Doubles the stream reference sums per run: 32 MiB, beyond a VM's share of the last-level cache. */
const STREAM_DOUBLES = 4 << 20;

/** Elements of each array the cached reference adds (three arrays: 3 MiB). */
const CACHED_ELEMENTS = 1 << 18;
/** Passes of the cached add per run (about 5 ms). */
const CACHED_PASSES = 24;

let streamBuffer: Float64Array | null = null;
let cachedArrays: [Float32Array, Float32Array, Float32Array] | null = null;

function scalarRun(): number {
  let x = 1.5;
  for (let i = 0; i < SCALAR_ITERATIONS; i++) x = x * 0.999999 + 1e-7 * i;
  return x;
}

function throughputRun(): number {
  let [a, b, c, d, e, f, g, h] = [1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2];
  for (let i = 0; i < THROUGHPUT_ITERATIONS; i++) {
    const step = 1e-7 * i;
    a = a * 0.999999 + step;
    b = b * 0.999999 + step;
    c = c * 0.999999 + step;
    d = d * 0.999999 + step;
    e = e * 0.999999 + step;
    f = f * 0.999999 + step;
    g = g * 0.999999 + step;
    h = h * 0.999999 + step;
  }
  return a + b + c + d + e + f + g + h;
}

function streamRun(): number {
  if (!streamBuffer) {
    streamBuffer = new Float64Array(STREAM_DOUBLES);
    for (let i = 0; i < STREAM_DOUBLES; i++) streamBuffer[i] = Math.random();
  }
  let s = 0;
  for (let i = 0; i < STREAM_DOUBLES; i++) s += streamBuffer[i]!;
  return s;
}

function cachedRun(): number {
  if (!cachedArrays) {
    const operand = () => Float32Array.from({ length: CACHED_ELEMENTS }, () => Math.random());
    cachedArrays = [operand(), operand(), new Float32Array(CACHED_ELEMENTS)];
  }
  const [a, b, c] = cachedArrays;
  for (let pass = 0; pass < CACHED_PASSES; pass++) {
    for (let i = 0; i < CACHED_ELEMENTS; i++) c[i] = a[i]! + b[i]!;
  }
  return c[CACHED_ELEMENTS - 1]!;
}

/** Each reference's run. */
const RUNS_OF: Readonly<Record<HostReference, () => number>> = {
  scalar: scalarRun,
  throughput: throughputRun,
  stream: streamRun,
  cached: cachedRun,
};

/** Keeps the loops' results observable, so no run is optimised away. */
let sink = 0;

/**
 * Times one host reference: the median ms of {@linkcode RUNS} runs after one untimed run.
 *
 * @param reference Which workload.
 * @returns Median ms per run.
 * @example
 * ```ts
 * import { timeHostReference } from "./host_reference.ts";
 * console.log(timeHostReference("scalar") > 0); // true
 * ```
 */
export function timeHostReference(reference: HostReference): number {
  const run = RUNS_OF[reference];
  sink += run();
  const ms: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const start = performance.now();
    sink += run();
    ms.push(performance.now() - start);
  }
  if (Number.isNaN(sink)) throw new Error("unreachable: host reference produced NaN");
  return median(ms);
}
