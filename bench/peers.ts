/**
 * What the bench's TF.js peer measured and how it lines up with gpucal's rows: the result types,
 * the two table cells a peer adds, and one ratio sentence per comparable case. Free of TF.js
 * itself, so the bench loads TF.js (bench/tfjs.ts) only when peers are measured.
 *
 * @module
 */
import type { SampleStats } from "../core/result.ts";
import type { Residency } from "../kernels/types.ts";

/** The TF.js backends measured as peers, named as gpucal names the backend they compare with. */
export const PEER_BACKENDS = ["webgpu", "wasm"] as const;
/** A TF.js backend measured as a peer. */
export type PeerBackend = typeof PEER_BACKENDS[number];

/**
 * Whether a TF.js backend came up, and what exactly ran.
 *
 * @example
 * ```ts
 * import type { PeerBackendStatus } from "./peers.ts";
 * const s: PeerBackendStatus = { backend: "wasm", ready: false, detail: "No .wasm binary" };
 * ```
 */
export interface PeerBackendStatus {
  readonly backend: PeerBackend;
  readonly ready: boolean;
  /** What ran (adapter, SIMD, threads), or why the backend could not initialise. */
  readonly detail: string;
}

/**
 * One verified, timed TF.js case, or why it failed (a wrong answer is never timed).
 *
 * @example
 * ```ts
 * import type { PeerMeasurement } from "./peers.ts";
 * function ms(m: PeerMeasurement) { return m.state === "ok" ? m.wall.median : NaN; }
 * ```
 */
export type PeerMeasurement =
  | {
    readonly state: "ok";
    /** Wall-clock time per call, ms. */
    readonly wall: SampleStats;
    /** Calls per timed batch. */
    readonly reps: number;
    readonly gflops: number;
    readonly gbps: number;
    /** Largest error against the float64 reference, relative to its largest magnitude. */
    readonly maxRelError: number;
    /** `"full"` or `"16 rows"`: how much of the output was checked. */
    readonly checked: string;
    /** True when the confidence target was not reached within the budget. */
    readonly noisy: boolean;
  }
  | { readonly state: "failed"; readonly error: string };

/**
 * A TF.js result, keyed like the bench's rows so the two can be matched.
 *
 * @example
 * ```ts
 * import type { PeerRow } from "./peers.ts";
 * function key(r: PeerRow) { return `${r.op} ${r.shape} ${r.backend} ${r.residency}`; }
 * ```
 */
export interface PeerRow {
  readonly op: string;
  readonly dtype: "f32";
  /** Size along the op's axis (n of a square matmul, elements of add). */
  readonly size: number;
  /** The shape as the bench formats it. */
  readonly shape: string;
  readonly backend: PeerBackend;
  readonly residency: Residency;
  readonly result: PeerMeasurement;
}

/**
 * Everything the TF.js peer (`benchTfjs` in bench/tfjs.ts) measured.
 *
 * @example
 * ```ts
 * import type { TfjsReport } from "./peers.ts";
 * function okRows(r: TfjsReport) { return r.rows.filter((row) => row.result.state === "ok"); }
 * ```
 */
export interface TfjsReport {
  readonly tfjsVersion: string;
  readonly backends: readonly PeerBackendStatus[];
  readonly rows: readonly PeerRow[];
}

/**
 * A bench row as {@linkcode peerColumns} and {@linkcode ratioLines} read it: gpucal's result for
 * one op, dtype, shape, backend and residency.
 *
 * @example
 * ```ts
 * import type { ComparableRow } from "./peers.ts";
 * const r: ComparableRow = {
 *   op: "add", dtype: "f32", shape: "1048576", backend: "wasm", residency: "end-to-end",
 *   result: { state: "ok", gflops: 0.5, gbps: 6 },
 * };
 * ```
 */
export interface ComparableRow {
  readonly op: string;
  readonly dtype: string;
  readonly shape: string;
  readonly backend: string;
  readonly residency: string;
  readonly result: { readonly state: string; readonly gflops?: number; readonly gbps?: number };
}

/** What one case needs: a first output to verify, a timed batch, and cleanup. */
/**
 * The two table cells TF.js adds to a bench row: its rate, and gpucal's rate over it.
 *
 * @param row The bench row.
 * @param report What the TF.js peer measured.
 * @returns `[TF.js rate, ratio]`, empty strings when there is nothing to compare.
 * @example
 * ```ts
 * import { peerColumns } from "./peers.ts";
 * const cells = peerColumns(
 *   { op: "add", dtype: "f32", shape: "1048576", backend: "wasm", residency: "end-to-end", result: { state: "ok", gbps: 6 } },
 *   { tfjsVersion: "4.22.0", backends: [], rows: [] },
 * );
 * console.log(cells); // ["", ""]
 * ```
 */
export function peerColumns(row: ComparableRow, report: TfjsReport): [string, string] {
  const peer = findPeer(row, report);
  if (!peer) return ["", ""];
  if (peer.result.state !== "ok") return ["failed", ""];
  const ours = rateOf(row.op, row.result);
  const theirs = rateOf(row.op, peer.result);
  return [
    formatRate(row.op, theirs),
    ours === undefined || theirs === undefined ? "" : `${(ours / theirs).toFixed(2)}×`,
  ];
}

/**
 * One sentence per case both gpucal and TF.js measured, e.g. `gpucal webgpu matmul n=1024
 * device-resident: 14.2 GFLOP/s vs TF.js webgpu 8.1 GFLOP/s → 1.75× (±4 %)`. The ± combines
 * both medians' relative 95 % CI half-widths in quadrature.
 *
 * @param rows The bench rows.
 * @param report What the TF.js peer measured.
 * @returns The sentences, in the bench rows' order.
 * @example
 * ```ts
 * import { ratioLines } from "./peers.ts";
 * console.log(ratioLines([], { tfjsVersion: "4.22.0", backends: [], rows: [] })); // []
 * ```
 */
export function ratioLines(rows: readonly ComparableRow[], report: TfjsReport): string[] {
  const lines: string[] = [];
  for (const row of rows) {
    const peer = findPeer(row, report);
    if (!peer || peer.result.state !== "ok") continue;
    const ours = rateOf(row.op, row.result);
    const theirs = rateOf(row.op, peer.result);
    if (ours === undefined || theirs === undefined) continue;
    const relCi = (row.result as { wall?: SampleStats }).wall?.relCi;
    const spread = relCi === undefined
      ? ""
      : ` (±${(Math.hypot(relCi, peer.result.wall.relCi) * 100).toFixed(0)} %)`;
    lines.push(
      `gpucal ${row.backend} ${row.op} n=${peer.size} ${row.residency}: ${
        formatRate(row.op, ours)
      }` +
        ` vs TF.js ${peer.backend} ${formatRate(row.op, theirs)} → ${(ours / theirs).toFixed(2)}×` +
        spread,
    );
  }
  return lines;
}

function findPeer(row: ComparableRow, report: TfjsReport): PeerRow | undefined {
  return report.rows.find((p) =>
    p.op === row.op && p.dtype === row.dtype && p.shape === row.shape &&
    p.backend === row.backend && p.residency === row.residency
  );
}

/** GFLOP/s for matmul, GB/s otherwise: the same figures the bench table shows. */
function rateOf(op: string, r: ComparableRow["result"]): number | undefined {
  if (r.state !== "ok") return undefined;
  return op === "matmul" ? r.gflops : r.gbps;
}

/**
 * A rate as the bench prints it: GFLOP/s for matmul, GB/s for every other op.
 *
 * @param op The op's name.
 * @param value The rate (GFLOP/s for matmul, GB/s otherwise), or undefined.
 * @returns The text, empty for undefined.
 * @example
 * ```ts
 * import { formatRate } from "./peers.ts";
 * console.log(formatRate("matmul", 8.1)); // "8.10 GFLOP/s"
 * ```
 */
export function formatRate(op: string, value: number | undefined): string {
  if (value === undefined) return "";
  return op === "matmul" ? `${value.toFixed(2)} GFLOP/s` : `${value.toFixed(2)} GB/s`;
}
