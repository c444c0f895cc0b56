/**
 * The host's own repeatability, without gpucal: two fixed workloads that touch none of gpucal's
 * runners, timed the way the noise bench times its cases (a median of a few runs), at the same
 * moments. When these move as much as a backend's cases do, the machine moved, not gpucal; when
 * they hold still while a backend moves, the noise is the backend's or gpucal's own.
 *
 * - `scalar`: a dependent floating-point loop in registers (no memory traffic): the core's speed.
 * - `stream`: a sum over 32 MiB of doubles: the memory system's speed.
 *
 * @module
 */
import { median } from "../core/stats.ts";

/** The host reference workloads. */
export const HOST_REFERENCES = ["scalar", "stream"] as const;

/** One host reference workload. */
export type HostReference = typeof HOST_REFERENCES[number];

/** Timed runs per reference measurement; the median is kept. */
const RUNS = 7;
/** Iterations of the scalar loop per run (about 10 ms on a 2020s server core). */
const SCALAR_ITERATIONS = 4e6;
/** Doubles the stream reference sums per run: 32 MiB, beyond a VM's share of the last-level cache. */
const STREAM_DOUBLES = 4 << 20;

let streamBuffer: Float64Array | null = null;

function scalarRun(): number {
  let x = 1.5;
  for (let i = 0; i < SCALAR_ITERATIONS; i++) x = x * 0.999999 + 1e-7 * i;
  return x;
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

/** Keeps the loops' results observable, so no run is optimised away. */
let sink = 0;

/**
 * Times one host reference: the median ms of {@linkcode RUNS} runs after one untimed run.
 *
 * @param reference Which workload.
 * @returns Median ms per run.
 * @example
 * ```ts
 * import { timeHostReference } from "./_host_reference.ts";
 * console.log(timeHostReference("scalar") > 0); // true
 * ```
 */
export function timeHostReference(reference: HostReference): number {
  const run = reference === "scalar" ? scalarRun : streamRun;
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
