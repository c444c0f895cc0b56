/**
 * A case's window times divided by a host reference timed at the same moment of each window: what
 * is left of their spread is the backend's own, since a host that slows down slows the reference
 * too. On a 2-vCPU VM whose cores the host shares with other guests, every CPU backend moved
 * ×1.3–1.6 between windows 20 s apart while a register-only dependent loop held; a loop that keeps
 * the core's execution units as busy as a kernel does (`throughput` in `calibrate/host_reference.ts`) moved
 * with them. Pure: the noise bench measures, this divides.
 *
 * @example
 * ```ts
 * import { againstReference } from "./_against_host.ts";
 * const rows = againstReference(
 *   [{ case: "sum", moment: "before sum", ms: [1.0, 1.5] }],
 *   new Map([["before sum", [4.0, 6.0]]]),
 * );
 * console.log(rows[0]!.ms); // [ 0.25, 0.25 ]: the host slowed ×1.5, the case with it
 * ```
 *
 * @module
 */

/** A case's window medians and the moment of the window its reference was timed at. */
export interface MomentTimes {
  readonly case: string;
  /** The key of the reference timed beside it (e.g. `before sum`). */
  readonly moment: string;
  /** Per window: the median ms, or null when the window has none. */
  readonly ms: readonly (number | null)[];
}

/**
 * Each case's times as ratios to the reference timed at its moment of the same window.
 *
 * @param cases The cases' window medians.
 * @param reference Per moment, the reference's ms in each window (null: not timed).
 * @returns The cases with `ms` replaced by the ratios (null where either side is missing).
 * @example
 * ```ts
 * import { againstReference } from "./_against_host.ts";
 * const [row] = againstReference([{ case: "add", moment: "m", ms: [2, null] }], new Map());
 * console.log(row!.ms); // [ null, null ]: no reference at that moment
 * ```
 */
export function againstReference<C extends MomentTimes>(
  cases: readonly C[],
  reference: ReadonlyMap<string, readonly (number | null)[]>,
): (C & { ms: (number | null)[] })[] {
  return cases.map((c) => {
    const ref = reference.get(c.moment);
    const ms = c.ms.map((t, window) => {
      const r = ref?.[window] ?? null;
      return t === null || r === null || !(r > 0) ? null : t / r;
    });
    return { ...c, ms };
  });
}
