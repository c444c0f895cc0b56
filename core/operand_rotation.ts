/**
 * How gpucal's runners hold a run's operands (CPU runs, and WebGPU device-resident ones), which the
 * models need to know: where a series changes regime by construction, not by the hardware alone
 * (`calibrate/runners/_cpu.ts` and `calibrate/runners/webgpu.ts` rotate the copies;
 * `models/_index.ts` never interpolates a correction across the switch).
 *
 * @example
 * ```ts
 * import { COLD_SPAN_BYTES, STREAMED_FROM_BYTES } from "./operand_rotation.ts";
 * console.log(STREAMED_FROM_BYTES / 2 ** 20, COLD_SPAN_BYTES / 2 ** 20); // 4 256
 * ```
 *
 * @module
 */

/**
 * Runs that move fewer bytes than this rotate through a few copies of their operands (two on a
 * CPU: at most 8 MiB together, which one thread of the 2-vCPU VMs measured here keeps in its
 * caches; four, up to 16 MiB, it often did not); runs from this size up rotate through copies
 * spanning {@linkcode COLD_SPAN_BYTES}, so every run streams its operands from memory.
 *
 * Between the two lies the share of a last-level cache that other guests also use: these VMs
 * (480 MiB of L3 on the host) kept 27–64 MiB of a guest's data there by the host's state, read
 * it at ~30 GB/s on one thread and ~15 from memory. Copies spanning 16–80 MB (the old 64 MiB
 * target, four copies at most) left wasm gemv f32 from 1500² up at 9–12 or 20–26 GB/s by the
 * sample, run and host: 3000² at 11–25 GB/s on one thread and 19–52 on two, in one process.
 * Spanning 256 MiB, every size from 1024² up ran at 9–12 and 16–22.
 */
export const STREAMED_FROM_BYTES = 4 * 1024 * 1024;

/**
 * Bytes the operand copies of a run from {@linkcode STREAMED_FROM_BYTES} up span together, at
 * least: beyond any guest's share of the host's last-level cache, so each run reads from memory.
 */
export const COLD_SPAN_BYTES = 256 * 2 ** 20;
