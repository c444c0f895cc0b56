/**
 * The machine's speed state at each moment of a run, read from its drift probes, and each window
 * of a measurement brought to the run's usual level by it.
 *
 * On a 2-vCPU AMD EPYC VM the whole machine ran ×1.35–1.5 slower for stretches of 10 to 80 s that
 * came and went unprompted (js, one-thread wasm and lavapipe's probes together, while a register
 * loop timed beside them stayed put), about a third of a calibration's time. A job's grid takes
 * 20–60 s, its backends interleaved, so such a stretch moved a whole job: in one calibration the
 * probes read js ×1.34 slow from 320 to 400 s, which softmax f32 and add f32 were measured in, and
 * a `bench:regret` truth taken right after found softmax 35 % and add 26 % faster than predicted
 * on js (median over their held-out sizes), on every backend alike, while the ops measured in the
 * usual state held within a few per cent. No window can see this in its own samples: a slow
 * stretch is slow throughout, and its confidence interval is as tight as any.
 *
 * The probes can: a probe measures one fixed case per backend, so its time against the run's
 * median probe time is the state the machine was in. Where one-thread js's and wasm's probes on
 * both sides of a window's moment read the machine more than {@linkcode STATE_DEADBAND} away from
 * its usual level, the CPU window is scaled to the usual level before its case's windows are
 * pooled; the measurement records by how much (`machineState`). Probes are taken inside jobs for
 * that (`CalibrationPlan.stateProbeEveryS`). Read again with the windows and probes of three
 * calibrations (scored against the `bench:regret` truth taken after each), the held-out
 * predictions of all backends within ±10 % went from 43.4, 46.7 and 62.9 % to 45.5, 54.2 and
 * 63.7 %, and within ±25 % from 77.0, 81.2 and 88.3 % to 81.1, 81.7 and 87.5 %.
 *
 * ```ts
 * import { machineStateAt } from "./machine_state.ts";
 * const probes = [0, 10, 20, 30, 40].map((atS, i) => ({
 *   atS,
 *   ms: { js: i === 2 || i === 3 ? 0.056 : 0.041, wasm: i === 2 || i === 3 ? 0.0125 : 0.009 },
 * }));
 * console.log(machineStateAt(probes, 25)?.toFixed(2)); // "0.32"
 * console.log(machineStateAt(probes, 15)); // 0
 * ```
 *
 * @module
 */
import type { Backend } from "../kernels/types.ts";
import type { Measurement } from "../core/schema.ts";
import { median } from "../core/stats.ts";
import { pooledResult, type WindowSamples } from "./measure.ts";
import type { StabilityProbe } from "./stability.ts";

/**
 * A state within this of the run's usual level (ln) is taken as the usual level: one probe of a
 * ~10–50 µs case scatters by 3–10 % in a steady state, and scaling every window by that scatter
 * would add it to every measurement; the slow stretches this corrects are 30–40 % away.
 */
export const STATE_DEADBAND = 0.12;

/** Fewest probes of a backend from which its usual level, and so a state, is read. */
const MIN_STATE_PROBES = 5;

/**
 * The probes the machine's state is read from: one thread of js and of wasm, whose probes are the
 * steadiest (two-thread wasm's 10 µs probe waits on a worker's wake-up and scatters by 20 %).
 */
const STATE_BACKENDS: readonly Backend[] = ["js", "wasm"];

/**
 * The backends brought to the usual level: the CPU's. WebGPU is left as measured: its
 * end-to-end time is mostly the ~11 ms synchronisation, which slow stretches did not move, and
 * its predictions beyond the measured end-to-end sizes follow the device-resident curve, so the
 * two must move together or not at all. On the AMD EPYC VM, scaling lavapipe's device-resident
 * windows by its own probe or by the CPU's state left its held-out predictions no better (58–67 %
 * within ±25 % either way against 60–67 % as measured, two truths).
 */
const LEVELLED: ReadonlySet<Backend> = new Set(["js", "wasm", "wasm-mt"]);

/**
 * The machine's speed state at `atS`, where the probes on both sides of it agree: per side the
 * mean over one-thread js and wasm of ln(probe time / the run's median probe time); when both
 * sides read the machine more than {@linkcode STATE_DEADBAND} away from usual in the same
 * direction, the nearer of the two, else 0. A stretch one probe saw alone may have lasted a
 * second: the machine flickered between its states within 1–3 s as often as it stayed for 20–80
 * s (probes 0.8 s apart read ×1.7 and ×1.0), and reading the state linearly between probes 15 s
 * apart scaled windows that ran at the usual speed (held-out predictions within ±25 % fell from
 * 88.3 to 86.2 % of a truth). Null when neither js nor wasm has {@linkcode MIN_STATE_PROBES}
 * probes.
 *
 * @param probes The run's probes, in time order.
 * @param atS Seconds since the run began (the probes' clock).
 * @returns ln of how much slower than usual the machine ran then, or null.
 * @example
 * ```ts
 * import { machineStateAt } from "./machine_state.ts";
 * const probes = [0, 10, 20, 30, 40].map((atS) => ({ atS, ms: { wasm: 0.009 } }));
 * console.log(machineStateAt(probes, 15)); // 0
 * console.log(machineStateAt(probes.slice(0, 2), 15)); // null
 * ```
 */
export function machineStateAt(probes: readonly StabilityProbe[], atS: number): number | null {
  const sides = STATE_BACKENDS.flatMap((b) => {
    const s = backendSidesAt(probes, b, atS);
    return s === null ? [] : [s];
  });
  if (sides.length === 0) return null;
  const mean = (xs: readonly (number | null)[]) =>
    xs.some((x) => x === null) ? 0 : xs.reduce((a: number, b) => a + b!, 0) / xs.length;
  const before = mean(sides.map((s) => s.before));
  const after = mean(sides.map((s) => s.after));
  if (before * after <= 0) return 0;
  const nearer = Math.abs(before) < Math.abs(after) ? before : after;
  return Math.abs(nearer) < STATE_DEADBAND ? 0 : nearer;
}

/**
 * One backend's ln(probe time / its median) at the last probe at or before `atS` and the first at
 * or after it (null past either end), or null with too few probes.
 */
function backendSidesAt(
  probes: readonly StabilityProbe[],
  backend: Backend,
  atS: number,
): { before: number | null; after: number | null } | null {
  const series = probes.flatMap((p) => {
    const ms = p.ms[backend];
    return ms !== undefined && ms > 0 ? [{ atS: p.atS, ln: Math.log(ms) }] : [];
  });
  if (series.length < MIN_STATE_PROBES) return null;
  const usual = median(series.map((p) => p.ln));
  const before = series.findLast((p) => p.atS <= atS);
  const after = series.find((p) => p.atS >= atS);
  return {
    before: before === undefined ? null : before.ln - usual,
    after: after === undefined ? null : after.ln - usual,
  };
}

/**
 * A measurement at the run's usual level: each of its windows that carries its moment (`atS`)
 * divided by the machine's state then ({@linkcode machineStateAt}), the windows pooled again, and
 * `machineState` set to ln(median as measured / median returned). Returned as it is when no window
 * was taken away from the usual level, when the state is unknown (too few probes), for WebGPU,
 * and when it has no windows of this run (a resumed run's earlier cases).
 *
 * @param m The measurement as pooled from its windows.
 * @param windows Its windows, the first included.
 * @param probes The run's probes, in time order.
 * @returns The measurement at the usual level.
 * @example
 * ```ts ignore
 * const report = atUsualLevel(m, state.windowsOf.get(measurementKey(m)) ?? [], probes);
 * ```
 */
export function atUsualLevel(
  m: Measurement,
  windows: readonly WindowSamples[],
  probes: readonly StabilityProbe[],
): Measurement {
  if (m.state !== "ok" || windows.length === 0 || !LEVELLED.has(m.backend)) return m;
  const states = windows.map((w) => w.atS === undefined ? 0 : machineStateAt(probes, w.atS) ?? 0);
  if (states.every((s) => s === 0)) return m;
  const scaled = windows.map((w, i) => {
    const f = Math.exp(-states[i]!);
    return { ...w, wall: w.wall.map((t) => t * f), gpu: w.gpu.map((t) => t * f) };
  });
  const measured = pooledResult(m, windows).wall.median;
  const pooled = pooledResult(m, scaled);
  return {
    ...pooled,
    size: m.size,
    seq: m.seq,
    ...(m.offAxis ? { offAxis: true as const } : {}),
    machineState: Math.round(1e4 * Math.log(measured / pooled.wall.median)) / 1e4,
  };
}
