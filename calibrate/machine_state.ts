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
 * median probe time is the state the machine was in. The state at a window's moment is read from
 * one-thread js's and wasm's probes on either side (in ln, linearly), and a CPU window taken
 * where it was more than {@linkcode STATE_DEADBAND} from the usual level is scaled to the usual
 * level before its case's windows are pooled; the measurement records by how much
 * (`machineState`). Probes are taken inside jobs for that (`CalibrationPlan.stateProbeEveryS`).
 * Read again with the probes of two such calibrations (every 20–60 s, between jobs only), the
 * CPU backends' held-out predictions within ±25 % of a truth taken after each went from 81.2 to
 * 84.2 % and from 77.0 to 79.5 % of all backends, within ±10 % from 46.7 to 56.2 % and 43.4 to
 * 44.7 %.
 *
 * ```ts
 * import { machineStateAt } from "./machine_state.ts";
 * const probes = [0, 10, 20, 30, 40].map((atS, i) => ({
 *   atS,
 *   ms: { js: i === 2 ? 0.056 : 0.041, wasm: i === 2 ? 0.0125 : 0.009 },
 * }));
 * console.log(machineStateAt(probes, 20)?.toFixed(2)); // "0.32"
 * console.log(machineStateAt(probes, 40)); // 0
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
 * The machine's speed state at `atS`: the mean over one-thread js and wasm of ln(probe time / the
 * run's median probe time), each read linearly between the probes on either side (the nearest
 * one's before the first or after the last), 0 within {@linkcode STATE_DEADBAND}; null when
 * neither has {@linkcode MIN_STATE_PROBES} probes.
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
  const states = STATE_BACKENDS.flatMap((b) => {
    const s = backendStateAt(probes, b, atS);
    return s === null ? [] : [s];
  });
  if (states.length === 0) return null;
  const state = states.reduce((a, b) => a + b, 0) / states.length;
  return Math.abs(state) < STATE_DEADBAND ? 0 : state;
}

/** One backend's ln(probe time / its median) at `atS`, or null with too few probes. */
function backendStateAt(
  probes: readonly StabilityProbe[],
  backend: Backend,
  atS: number,
): number | null {
  const series = probes.flatMap((p) => {
    const ms = p.ms[backend];
    return ms !== undefined && ms > 0 ? [{ atS: p.atS, ln: Math.log(ms) }] : [];
  });
  if (series.length < MIN_STATE_PROBES) return null;
  const usual = median(series.map((p) => p.ln));
  const after = series.findIndex((p) => p.atS >= atS);
  const ln = after === -1
    ? series.at(-1)!.ln
    : after === 0
    ? series[0]!.ln
    : between(series[after - 1]!, series[after]!, atS);
  return ln - usual;
}

function between(a: { atS: number; ln: number }, b: { atS: number; ln: number }, atS: number) {
  const span = b.atS - a.atS;
  return span <= 0 ? (a.ln + b.ln) / 2 : a.ln + (b.ln - a.ln) * (atS - a.atS) / span;
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
