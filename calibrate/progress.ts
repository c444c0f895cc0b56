/**
 * Progress of a long calibration, for people and programs: a one-line bar with ETA on a TTY,
 * plain lines otherwise, JSON lines with `--json`.
 *
 * @module
 */

/**
 * One step of a calibration run.
 *
 * @example
 * ```ts
 * import type { ProgressEvent } from "./progress.ts";
 * const e: ProgressEvent = { kind: "phase", phase: "sweep matmul f32", done: 3, total: 40, elapsedS: 12 };
 * ```
 */
export type ProgressEvent =
  | { kind: "phase"; phase: string; done: number; total: number; elapsedS: number; etaS?: number }
  | {
    kind: "measured";
    label: string;
    state: "ok" | "failed" | "unsupported";
    detail: string;
    done: number;
    total: number;
    elapsedS: number;
    /** Seconds left by the run's time plan; absent without one (the pace is used instead). */
    etaS?: number;
  }
  | { kind: "saved"; path: string; complete: boolean; measurements: number; elapsedS: number }
  | { kind: "warning"; message: string; elapsedS: number };

/**
 * Seconds left, from the pace so far; null until there is a pace to go by.
 *
 * @param done Steps done.
 * @param total Steps planned.
 * @param elapsedS Seconds so far.
 * @returns Estimated seconds left, or null.
 * @example
 * ```ts
 * import { etaSeconds } from "./progress.ts";
 * console.log(etaSeconds(10, 40, 20)); // 60
 * ```
 */
export function etaSeconds(done: number, total: number, elapsedS: number): number | null {
  if (done <= 0 || total <= done) return done >= total && total > 0 ? 0 : null;
  return (elapsedS / done) * (total - done);
}

/**
 * Formats seconds as `1m05s` or `42s`.
 *
 * @param s Seconds.
 * @returns The text.
 * @example
 * ```ts
 * import { formatDuration } from "./progress.ts";
 * console.log(formatDuration(65)); // "1m05s"
 * ```
 */
export function formatDuration(s: number): string {
  const t = Math.max(0, Math.round(s));
  if (t < 60) return `${t}s`;
  return `${Math.floor(t / 60)}m${String(t % 60).padStart(2, "0")}s`;
}

/**
 * A progress bar line: `[#####.....]  12/40  ETA 1m05s  matmul f32 webgpu 512`.
 *
 * @param done Steps done.
 * @param total Steps planned.
 * @param elapsedS Seconds so far.
 * @param label What is running.
 * @param width Bar width in characters.
 * @param plannedEtaS Seconds left by the run's time plan; the pace so far when absent.
 * @returns The line (no newline).
 * @example
 * ```ts
 * import { progressLine } from "./progress.ts";
 * console.log(progressLine(5, 10, 10, "add", 10)); // "[#####.....]  5/10  ETA 10s  add"
 * ```
 */
export function progressLine(
  done: number,
  total: number,
  elapsedS: number,
  label: string,
  width = 24,
  plannedEtaS?: number,
): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 0;
  const filled = Math.round(fraction * width);
  const eta = plannedEtaS ?? etaSeconds(done, total, elapsedS);
  const etaText = eta === null ? "ETA ?" : `ETA ${formatDuration(eta)}`;
  return `[${"#".repeat(filled)}${
    ".".repeat(width - filled)
  }]  ${done}/${total}  ${etaText}  ${label}`;
}

/**
 * Where progress goes: `tty` (a redrawn bar on stderr), `plain` (one line per step on stderr) or
 * `json` (one JSON object per line on stdout).
 *
 * @param mode The output mode.
 * @param write Where text goes (stderr by default; stdout for json).
 * @returns A function taking events.
 * @example
 * ```ts
 * import { progressPrinter } from "./progress.ts";
 * const lines: string[] = [];
 * const print = progressPrinter("json", (s) => lines.push(s));
 * print({ kind: "warning", message: "noisy", elapsedS: 1 });
 * console.log(JSON.parse(lines[0]!).kind); // "warning"
 * ```
 */
export function progressPrinter(
  mode: "tty" | "plain" | "json",
  write?: (text: string) => void,
): (event: ProgressEvent) => void {
  const encoder = new TextEncoder();
  const out = write ??
    ((text: string) =>
      (mode === "json" ? Deno.stdout : Deno.stderr).writeSync(encoder.encode(text)));
  if (mode === "json") return (e) => out(JSON.stringify(e) + "\n");
  if (mode === "plain") {
    return (e) => {
      if (e.kind === "measured") {
        const eta = e.etaS === undefined ? "" : ` ETA ${formatDuration(e.etaS)}`;
        out(`[${e.done}/${e.total} ${formatDuration(e.elapsedS)}${eta}] ${e.label}: ${e.detail}\n`);
      } else if (e.kind === "phase") out(`== ${e.phase}\n`);
      else if (e.kind === "saved") out(`saved ${e.path} (${e.measurements} measurements)\n`);
      else out(`warning: ${e.message}\n`);
    };
  }
  const columns = (() => {
    try {
      return Deno.consoleSize().columns;
    } catch {
      return 100;
    }
  })();
  return (e) => {
    if (e.kind === "measured" || e.kind === "phase") {
      const label = e.kind === "measured" ? `${e.label}: ${e.detail}` : e.phase;
      const line = progressLine(e.done, e.total, e.elapsedS, label, 24, e.etaS);
      out(`\r\x1b[2K${line.slice(0, columns - 1)}`);
    } else if (e.kind === "saved") {
      out(`\r\x1b[2Ksaved ${e.path} (${e.measurements} measurements)\n`);
    } else out(`\r\x1b[2Kwarning: ${e.message}\n`);
  };
}
