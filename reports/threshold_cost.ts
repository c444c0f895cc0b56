/**
 * What a moved crossover costs: a threshold is a decision boundary, so its move matters by how
 * much slower the backend it now picks is, at the sizes where the two thresholds disagree. Two
 * backends within a few percent of each other over a wide range (wasm and wasm-mt on a busy
 * 2-core machine) cross at a size that noise moves anywhere in that range, yet choosing by either
 * threshold costs those few percent. A GPU crossover that moved 2× picks a backend several times
 * slower between the two sizes.
 *
 * Pure: it reads the measured medians both reports contain.
 *
 * @module
 */
import { bestPerSize } from "../calibrate/analyze.ts";
import { type Backend, CPU_BACKENDS } from "../kernels/types.ts";
import type { Crossover, Report } from "../core/schema.ts";

/**
 * The largest slowdown of deciding by one report's threshold, judged on the other report's
 * measured medians at the sizes where the two thresholds pick different backends.
 *
 * @example
 * ```ts
 * import type { ChoiceCost } from "./threshold_cost.ts";
 * const c: ChoiceCost = { cost: 0.04, size: 91, measuredIn: "current", sizes: 3 };
 * ```
 */
export interface ChoiceCost {
  /**
   * `t(other threshold's pick) / t(own threshold's pick) - 1`, at worst; 0 when never slower.
   * With a noise model, only sizes where it exceeds the two runs' disagreement count.
   */
  readonly cost: number;
  /** The size of the worst case, op axis units (null when `cost` is 0). */
  readonly size: number | null;
  /** Whose measurements showed the worst case. */
  readonly measuredIn: "baseline" | "current" | null;
  /** Measured sizes, in both reports together, where the two thresholds disagree. */
  readonly sizes: number;
  /** Of those, the ones whose cost is within the noise of the two runs' medians there. */
  readonly withinNoise?: number;
}

/**
 * One run's σ of ln time of a backend's measured point at a size (see `HostFrame.pointNoise` in
 * `backend_shift.ts`), for the crossover's op, dtype and residency.
 *
 * @example
 * ```ts
 * import type { PointNoise } from "./threshold_cost.ts";
 * const flat: PointNoise = () => 0.1;
 * ```
 */
export type PointNoise = (backend: Backend, size: number) => number;

/** z of the 95 % test a cost must pass against the runs' noise. */
const Z95 = 1.96;

/**
 * The two sides of a pair as its name orders them (`wasm→wasm-mt`: wasm, then wasm-mt); the CPU
 * side of `cpu→webgpu` is the fastest CPU backend. A report's `from` and `to` may be either way
 * round (a backend can win below a crossover, the other above), so choices are named by side.
 *
 * @param c A crossover.
 * @returns The backends of its first side, then of its second.
 * @example
 * ```ts ignore
 * import { sides } from "./threshold_cost.ts";
 * const [first, second] = sides(crossover); // wasm→wasm-mt: [["wasm"], ["wasm-mt"]]
 * ```
 */
export function sides(c: Crossover): readonly [readonly Backend[], readonly Backend[]] {
  if (c.pair === "cpu→webgpu") return [CPU_BACKENDS, ["webgpu"]];
  const [first, second] = c.pair.split("→") as [Backend, Backend];
  return [[first], [second]];
}

/**
 * One side of a crossover's pair at one measured size: the best median (ms per run) and its
 * relative 95 % half-width.
 *
 * @example
 * ```ts
 * import type { SideTime } from "./threshold_cost.ts";
 * const t: SideTime = { ms: 1.2, relCi: 0.03, backend: "wasm" };
 * ```
 */
export interface SideTime {
  readonly ms: number;
  readonly relCi: number;
  /** The backend the time is of (the fastest CPU backend, for the CPU side of `cpu→webgpu`). */
  readonly backend: Backend;
}

/**
 * Per measured size of a report where both sides of a crossover's pair were measured, each
 * side's best median: the pair's first side (as its name orders it: `wasm→wasm-mt`: wasm) then
 * its second; the CPU side of `cpu→webgpu` is the fastest CPU backend at that size.
 *
 * @param report The report whose measurements are read.
 * @param c One of its crossovers.
 * @returns Sizes in ascending order, each with both sides' times.
 * @example
 * ```ts ignore
 * import { pairTimes } from "./threshold_cost.ts";
 * for (const [size, [first, second]] of pairTimes(report, crossover)) console.log(size, first.ms / second.ms);
 * ```
 */
export function pairTimes(
  report: Report,
  c: Crossover,
): Map<number, readonly [SideTime, SideTime]> {
  const best = (backends: readonly Backend[]) => {
    const out = new Map<number, SideTime>();
    for (const b of backends) {
      for (const m of bestPerSize(report.measurements, c.op, c.dtype, b, c.residency)) {
        const prior = out.get(m.size);
        if (prior === undefined || m.wall.median < prior.ms) {
          out.set(m.size, { ms: m.wall.median, relCi: m.wall.relCi, backend: b });
        }
      }
    }
    return out;
  };
  const [firstSide, secondSide] = sides(c);
  const second = best(secondSide);
  const both = new Map<number, readonly [SideTime, SideTime]>();
  for (const [size, t] of [...best(firstSide)].sort(([a], [b]) => a - b)) {
    const other = second.get(size);
    if (other !== undefined) both.set(size, [t, other]);
  }
  return both;
}

/**
 * A report's rule "pick the pair's second side at this size": its `to` side above its threshold;
 * without one (the curves never cross in range), whichever side its own measurements show faster
 * at most sizes.
 */
function rule(c: Crossover, times: ReadonlyMap<number, readonly [SideTime, SideTime]>) {
  if (c.size !== null) {
    const threshold = c.size;
    const secondAbove = sides(c)[1].includes(c.to);
    return (size: number) => (size >= threshold) === secondAbove;
  }
  const wins = [...times.values()].filter(([first, second]) => second.ms < first.ms).length;
  const always = wins * 2 > times.size;
  return () => always;
}

/**
 * The cost of a crossover's move between two reports: on each report's measurements, how much
 * slower the other report's threshold would choose, at worst. Null when no measured size of
 * either report lies between the two thresholds (nothing to judge the move on).
 *
 * Given the runs' noise, a disputed size counts only where the cost exceeds it: ln(1 + cost) over
 * 1.96 × the σ of the ln ratio of the two backends' times in one run (their σ in quadrature).
 * At sizes of a few elements, where a call's fixed cost carries the time, two runs of a shared
 * machine were seen to disagree 2× about which backend is faster.
 *
 * @param baseline The baseline report.
 * @param base The baseline's crossover.
 * @param current The current report.
 * @param cur The current report's crossover of the same op, dtype, residency and pair.
 * @param noise One run's σ of ln time of a backend's point at a size; none: every size counts.
 * @returns The worst slowdown and where it was measured, or null.
 * @example
 * ```ts ignore
 * import { thresholdChoiceCost } from "./threshold_cost.ts";
 * const cost = thresholdChoiceCost(baseline, b, current, c);
 * if (cost !== null && cost.cost <= 0.1) console.log("the move does not change choices by much");
 * ```
 */
export function thresholdChoiceCost(
  baseline: Report,
  base: Crossover,
  current: Report,
  cur: Crossover,
  noise?: PointNoise,
): ChoiceCost | null {
  let worst: ChoiceCost = { cost: 0, size: null, measuredIn: null, sizes: 0 };
  let disputed = 0;
  let withinNoise = 0;
  const judge = (own: Report, ownC: Crossover, otherC: Crossover, name: "baseline" | "current") => {
    const times = pairTimes(own, ownC);
    const ownPick = rule(ownC, times);
    const otherPick = rule(otherC, pairTimes(name === "current" ? baseline : current, otherC));
    for (const [size, [first, second]] of times) {
      const mine = ownPick(size);
      if (mine === otherPick(size)) continue;
      disputed++;
      // The other threshold picks the side this report's threshold does not.
      const cost = Math.max(0, (mine ? first.ms / second.ms : second.ms / first.ms) - 1);
      const sigma = noise ? Math.hypot(noise(first.backend, size), noise(second.backend, size)) : 0;
      if (Math.log(1 + cost) <= Z95 * sigma) {
        withinNoise++;
        continue;
      }
      if (cost > worst.cost) worst = { cost, size, measuredIn: name, sizes: 0 };
    }
  };
  judge(current, cur, base, "current");
  judge(baseline, base, cur, "baseline");
  if (disputed === 0) return null;
  return { ...worst, sizes: disputed, ...(noise ? { withinNoise } : {}) };
}

/**
 * What a crossover's move costs when no measured size of either report lies between the two
 * thresholds: both fall between the same two measured sizes, where each report interpolates the
 * ratio of the pair's times log-linearly in the size. Choosing by the other threshold picks the
 * slower side only between the two, and is at worst `exp(|slope| × |ln(t₂ / t₁)|) − 1` there, for
 * the steeper of the two reports' slopes of ln(ratio) against ln(size) across that bracket.
 *
 * @param baseline The baseline report.
 * @param base The baseline's crossover.
 * @param current The current report.
 * @param cur The current report's crossover of the same op, dtype, residency and pair.
 * @returns The worst slowdown, the bracket it lies in and how the pair's ratio moved at its ends;
 * null unless both thresholds are known and lie between the same two sizes both reports measured.
 * @example
 * ```ts ignore
 * import { interpolatedChoiceCost } from "./threshold_cost.ts";
 * const c = interpolatedChoiceCost(baseline, b, current, c);
 * if (c !== null) console.log(`between ${c.between[0]} and ${c.between[1]}: at most ${(c.cost * 100).toFixed(1)} %`);
 * ```
 */
export function interpolatedChoiceCost(
  baseline: Report,
  base: Crossover,
  current: Report,
  cur: Crossover,
): BracketCost | null {
  if (base.size === null || cur.size === null || !(base.size > 0 && cur.size > 0)) return null;
  const [lo, hi] = [Math.min(base.size, cur.size), Math.max(base.size, cur.size)];
  const ends: (readonly [number, SideTime, SideTime])[][] = [];
  for (const [report, c] of [[baseline, base], [current, cur]] as const) {
    const sizes = [...pairTimes(report, c)];
    const above = sizes.findIndex(([size]) => size >= lo);
    if (above <= 0 || sizes[above]![0] < hi) return null;
    ends.push([sizes[above - 1]!, sizes[above]!].map(([size, [f, g]]) => [size, f, g] as const));
  }
  const [before, after] = ends as [(readonly [number, SideTime, SideTime])[], typeof ends[0]];
  if (before[0]![0] !== after[0]![0] || before[1]![0] !== after[1]![0]) return null;
  const lnRatio = ([, f, g]: readonly [number, SideTime, SideTime]) => Math.log(g.ms / f.ms);
  const slope = (e: typeof before) =>
    Math.abs(lnRatio(e[1]!) - lnRatio(e[0]!)) / Math.log(e[1]![0] / e[0]![0]);
  return {
    cost: Math.exp(Math.max(slope(before), slope(after)) * Math.log(hi / lo)) - 1,
    between: [before[0]![0], before[1]![0]],
    ends: before.map((b, i) => ({
      size: b[0],
      change: lnRatio(after[i]!) - lnRatio(b),
      backends: [b[1].backend, b[2].backend] as const,
    })),
  };
}

/**
 * What {@linkcode interpolatedChoiceCost} gives.
 *
 * @example
 * ```ts
 * import type { BracketCost } from "./threshold_cost.ts";
 * const c: BracketCost = {
 *   cost: 0.04,
 *   between: [48, 111],
 *   ends: [
 *     { size: 48, change: 0.1, backends: ["wasm", "wasm-mt"] },
 *     { size: 111, change: 0.05, backends: ["wasm", "wasm-mt"] },
 *   ],
 * };
 * ```
 */
export interface BracketCost {
  /** The worst slowdown of choosing by the other threshold. */
  readonly cost: number;
  /** The two measured sizes both thresholds lie between. */
  readonly between: readonly [number, number];
  /**
   * At each of the two sizes, how the ln ratio of the pair's times (second side over first)
   * changed from the baseline to the current report, and the backends timed there.
   */
  readonly ends: readonly {
    readonly size: number;
    readonly change: number;
    readonly backends: readonly [Backend, Backend];
  }[];
}
