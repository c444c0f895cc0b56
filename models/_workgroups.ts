/**
 * Private: how long a WebGPU dispatch lasts on a CPU adapter (lavapipe, llvmpipe, SwiftShader,
 * WARP), whose threads run its workgroups, each workgroup on one thread. The sweep's sizes fill
 * every thread, and its fit prices work spread evenly over them; a dispatch of fewer or unequal
 * workgroups cannot end before its largest workgroup does on one thread. Its time is the longer of
 * the two, the even share and the largest workgroup: a critical path, with no order of the
 * threads assumed. A thread running alone runs faster than each of several at once (they share
 * the caches and memory), by what the report's host gemvs measured ({@linkcode threadContention}).
 *
 * Measured on lavapipe (2 threads, 2-vCPU AMD EPYC VM), device-resident f32 gemv, five rounds in
 * one process (`measureMany()`). The variant summing 8 rows in each of 32 invocations (256 rows a
 * workgroup), 768 columns: 128 rows 0.109 ms, 256 rows 0.204, 384 rows 0.190, 512 rows 0.235, 640
 * rows 0.293, 768 rows 0.348, 1024 rows 0.465. One workgroup is half the rows of two and takes as
 * long; three took ×1.48 two, as an even share says (×1.5), not ×2 as workgroups taken in turns by
 * two threads would. The variant summing 16 rows in each of 16 invocations, 1536 columns: 64, 128,
 * 192 and 256 rows (one workgroup) 0.108, 0.194, 0.300 and 0.363 ms, by their rows; 288–448 rows (a
 * workgroup and part of one) 0.371–0.395, the largest workgroup's time; 512 rows 0.434, 768 rows
 * 0.715, 1024 rows 0.858. One workgroup alone ran ×1.15 (768 columns) and ×1.20 (1536) faster a row
 * than each of two at once. Beside the LLM check's decode, the one-workgroup 256 × 768 took
 * ×1.1–2.9 (median ×1.8) what the sweep's even sizes said, in fifteen calibrations (0.17–0.45 ms
 * against 0.11–0.18).
 *
 * The workgroups' work is the kernel's layout: gemv's workgroup sums `rpw` × `rpi` rows
 * (`kernels/gemv/webgpu.ts`), its last one the rows left; a spec test holds the two together. It
 * is written here, not as a hook of the kernel, because a change to `kernels/` is a change of
 * measuring code, and reports measured before it could no longer pool with new runs.
 *
 * ```ts
 * import { dispatchSpanLn, workgroupWorkOf } from "./_workgroups.ts";
 * const rows = workgroupWorkOf("gemv")!({ rows: 300, cols: 768 }, { tpr: 1, rpw: 32, rpi: 8 });
 * console.log(rows); // [256, 44]
 * console.log(Math.exp(dispatchSpanLn(rows, 2)).toFixed(2)); // "1.71"
 * ```
 *
 * @module
 */
import type { Report } from "../core/schema.ts";
import { median } from "../core/stats.ts";
import type { Shape, Variant } from "../kernels/types.ts";

/** Each workgroup's rows in a gemv dispatch: `rpw` × `rpi` rows a workgroup, the last the rest. */
function gemvWorkgroupRows(shape: Shape, variant: Variant): number[] {
  const rows = shape.rows;
  const perGroup = Number(variant.rpw) * Number(variant.rpi ?? 1);
  if (!Number.isInteger(rows) || rows! < 1 || !Number.isInteger(perGroup) || perGroup < 1) {
    throw new RangeError(`no gemv workgroups for ${JSON.stringify({ shape, variant })}`);
  }
  const full = Math.floor(rows! / perGroup);
  const rest = rows! - full * perGroup;
  return [...Array<number>(full).fill(perGroup), ...(rest === 0 ? [] : [rest])];
}

/** The ops whose WebGPU workgroups can take unequal work, with each workgroup's work. */
const WORKGROUP_WORK: Readonly<Record<string, (shape: Shape, variant: Variant) => number[]>> = {
  gemv: gemvWorkgroupRows,
};

/**
 * How to find each workgroup's work in `op`'s WebGPU dispatch (any unit, alike across them, from a
 * shape and the variant's parameters), or null for an op whose workgroups gpucal takes to share
 * work evenly.
 *
 * @param op The op's name.
 * @returns The op's workgroups' work by shape and variant, or null.
 * @example
 * ```ts
 * import { workgroupWorkOf } from "./_workgroups.ts";
 * const gemv = workgroupWorkOf("gemv")!;
 * console.log(gemv({ rows: 512, cols: 64 }, { tpr: 1, rpw: 16, rpi: 16 })); // [256, 256]
 * console.log(workgroupWorkOf("add")); // null
 * ```
 */
export function workgroupWorkOf(
  op: string,
): ((shape: Shape, variant: Variant) => number[]) | null {
  return WORKGROUP_WORK[op] ?? null;
}

/**
 * ln of how much longer a dispatch lasts on `threads` threads than an even share of its work: its
 * largest workgroup runs on one thread, so the dispatch lasts at least that long, less by how much
 * faster one thread runs alone than each of all of them at once (`contention`,
 * {@linkcode threadContention}).
 *
 * @param work Each workgroup's work.
 * @param threads The adapter's threads.
 * @param contention How much slower each thread runs when all run than one alone, 1 to `threads`.
 * @returns ln(max(1, largest workgroup / (even share × contention))); 0 without work or with one
 *   thread.
 * @example
 * ```ts
 * import { dispatchSpanLn } from "./_workgroups.ts";
 * console.log(Math.exp(dispatchSpanLn([256], 2))); // 2
 * console.log(Math.exp(dispatchSpanLn([256], 2, 1.25))); // 1.6
 * console.log(dispatchSpanLn([256, 256, 256], 2)); // 0
 * ```
 */
export function dispatchSpanLn(work: readonly number[], threads: number, contention = 1): number {
  const total = work.reduce((a, b) => a + b, 0);
  if (!(threads > 1) || !(total > 0)) return 0;
  const slower = Math.min(Math.max(contention, 1), threads);
  return Math.max(0, Math.log(Math.max(...work) * threads / (total * slower)));
}

/**
 * Least one-thread time of a host gemv for its all-core time beside it to count as contention,
 * ms: below it, waking the threads weighs in (wasm-mt f32 102² took ×4 wasm's time).
 */
const CONTENTION_FROM_MS = 0.1;

/**
 * How much slower each of the host's threads runs a gemv when all of them run at once than one
 * runs it alone, from the report's own runs: the median over its f32 gemv shapes timed on both
 * wasm (one thread) and wasm-mt (every core) of cores × the wasm-mt time / the wasm time (each
 * backend's fastest variant there), at 1 to
 * `cores`; 1 without such shapes. A CPU adapter's threads share the same caches and memory. On the
 * 2-vCPU AMD EPYC VM the report's shapes gave ×1.14 (×0.96–1.30 by shape), and lavapipe's own
 * one-workgroup gemvs ran ×1.15–1.20 faster a row than each of two workgroups at once, in one
 * process.
 *
 * @param report The report.
 * @returns The contention, 1 to the report's cores.
 * @example
 * ```ts
 * import { threadContention } from "./_workgroups.ts";
 * import { syntheticReport } from "../tests/_fixtures.ts";
 * console.log(threadContention(syntheticReport()) >= 1); // true
 * ```
 */
export function threadContention(report: Report): number {
  const cores = report.machine.cores;
  const byShape = new Map<string, { one?: number; all?: number }>();
  for (const m of report.measurements) {
    if (m.state !== "ok" || m.op !== "gemv" || m.dtype !== "f32") continue;
    if (m.backend !== "wasm" && m.backend !== "wasm-mt") continue;
    const key = JSON.stringify(m.shape);
    const times = byShape.get(key) ?? {};
    const side = m.backend === "wasm" ? "one" : "all";
    // Each side's fastest variant: the kernel a program would run there.
    times[side] = Math.min(times[side] ?? Infinity, m.wall.median);
    byShape.set(key, times);
  }
  const ratios = [...byShape.values()]
    .filter((t) => t.one !== undefined && t.all !== undefined && t.one >= CONTENTION_FROM_MS)
    .map((t) => cores * t.all! / t.one!);
  if (ratios.length === 0 || !(cores > 1)) return 1;
  return Math.min(Math.max(median(ratios), 1), cores);
}

/**
 * The threads a software adapter runs workgroups on: Mesa's `LP_NUM_THREADS` where the run set it
 * (llvmpipe and lavapipe read it), else one per core; null for a hardware adapter.
 *
 * @param report The report.
 * @returns The adapter's threads, or null.
 * @example
 * ```ts
 * import { adapterThreads } from "./_workgroups.ts";
 * import { syntheticReport } from "../tests/_fixtures.ts";
 * const r = syntheticReport();
 * console.log(adapterThreads({ ...r, adapter: { ...r.adapter!, software: false } })); // null
 * ```
 */
export function adapterThreads(report: Report): number | null {
  if (report.adapter?.software !== true) return null;
  const set = Number(report.provenance.driverEnv?.LP_NUM_THREADS);
  return Number.isInteger(set) && set >= 1 ? set : report.machine.cores;
}
