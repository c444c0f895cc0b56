/**
 * What the schema cannot say about a report: physically possible values (positive times and
 * rates, intervals whose low end is not above their high end), shapes in their op's own
 * dimensions within sane bounds, and an adapter consistent with the measurements. A report
 * failing these is invalid; one naming an op this gpucal does not know is only warned about,
 * since a newer gpucal may have added it.
 *
 * @module
 */
import { OPS } from "../kernels/catalog.ts";
import {
  type Backend,
  CPU_BACKENDS,
  formatShape,
  type OpSpec,
  type Shape,
} from "../kernels/types.ts";
import { formatPath } from "./_issues.ts";
import type { ReportIssue } from "./error.ts";
import type { Figure, Report, StabilityInfo } from "../core/schema.ts";

/** Largest value a shape's dimension may have: far beyond any memory, short of overflowing work. */
export const MAX_DIMENSION = 2 ** 32;

/**
 * What {@linkcode semanticIssues} found.
 *
 * @example
 * ```ts
 * import type { SemanticIssues } from "./_semantic.ts";
 * function ok(s: SemanticIssues) { return s.errors.length === 0; }
 * ```
 */
export interface SemanticIssues {
  /** Values no measurement can produce: the report is invalid. */
  readonly errors: ReportIssue[];
  /** What this gpucal ignores (an unknown op): worth saying, not refusing. */
  readonly warnings: ReportIssue[];
}

const OPS_BY_NAME: ReadonlyMap<string, OpSpec> = new Map(OPS.map((o) => [o.name, o]));

/** The path of `key` inside `path`: `shape.m`, `peakGbps["wasm-mt"]`. */
function child(path: string, key: string): string {
  const inner = formatPath([key]);
  return inner.startsWith("[") ? `${path}${inner}` : `${path}.${inner}`;
}

/** A short number for messages: 3 significant digits. */
function num(x: number): string {
  return Number.isInteger(x) && Math.abs(x) < 1e6 ? String(x) : x.toPrecision(3);
}

class Findings implements SemanticIssues {
  readonly errors: ReportIssue[] = [];
  readonly warnings: ReportIssue[] = [];
  readonly #unknownOps = new Set<string>();

  error(path: string, message: string): void {
    this.errors.push({ path, message });
  }

  /** The op of a row, or null after warning (once per name) that it is unknown. */
  op(name: string, path: string): OpSpec | null {
    const op = OPS_BY_NAME.get(name);
    if (op !== undefined) return op;
    if (!this.#unknownOps.has(name)) {
      this.#unknownOps.add(name);
      this.warnings.push({
        path,
        message: `is ${JSON.stringify(name)}, an op this gpucal does not know (${
          [...OPS_BY_NAME.keys()].join(", ")
        }); its rows are ignored`,
      });
    }
    return null;
  }

  positive(path: string, value: number, why: string): void {
    if (!(value > 0)) this.error(path, `is ${value}: ${why}; expected a number > 0`);
  }

  interval(path: string, [low, high]: readonly [number, number]): void {
    if (low > high) {
      this.error(
        path,
        `is [${num(low)}, ${num(high)}]: its low end is above its high end; expected [low, high]`,
      );
    }
  }

  figure(path: string, f: Figure, why: string, allowZero = false): void {
    if (f.value !== null && (allowZero ? f.value < 0 : !(f.value > 0))) {
      this.error(
        `${path}.value`,
        `is ${f.value}: ${why}; expected a number ${allowZero ? ">=" : ">"} 0`,
      );
    }
    if (f.ci !== undefined) this.interval(`${path}.ci`, f.ci);
  }
}

/**
 * Checks what the schema cannot: physically possible values, shapes in their op's own dimensions,
 * and an adapter consistent with the measurements.
 *
 * @param report A report that passed the schema.
 * @returns Errors (the report is invalid) and warnings, each naming its field.
 * @example
 * ```ts
 * import { semanticIssues } from "./_semantic.ts";
 * import type { Report } from "../core/schema.ts";
 * function firstError(report: Report) { return semanticIssues(report).errors[0]?.path ?? null; }
 * ```
 */
export function semanticIssues(report: Report): SemanticIssues {
  const found = new Findings();
  checkMeasurements(report, found);
  checkFits(report, found);
  checkCrossovers(report, found);
  checkTuning(report, found);
  checkThresholds(report, found);
  checkSystem(report, found);
  checkLlm(report, found);
  if (report.stability !== undefined) checkStability(report.stability, found);
  checkAdapter(report, found);
  return found;
}

function checkShape(path: string, op: OpSpec, shape: Shape, found: Findings): boolean {
  let ok = true;
  for (const dim of op.dims) {
    if (!Object.hasOwn(shape, dim)) {
      found.error(path, `has no "${dim}"; ${op.name} takes ${op.dims.join(", ")}`);
      ok = false;
    }
  }
  for (const [dim, value] of Object.entries(shape)) {
    const where = child(path, dim);
    if (!op.dims.includes(dim)) {
      found.error(
        where,
        `is not a dimension of ${op.name} (it takes ${op.dims.join(", ")}); remove it`,
      );
      ok = false;
    } else if (value > MAX_DIMENSION) {
      found.error(where, `is ${value}, above the ${MAX_DIMENSION} a dimension may be`);
      ok = false;
    }
  }
  return ok;
}

function checkMeasurements(report: Report, found: Findings): void {
  report.measurements.forEach((m, i) => {
    const path = `measurements[${i}]`;
    const op = found.op(m.op, `${path}.op`);
    if (op === null) return;
    if (checkShape(`${path}.shape`, op, m.shape, found)) {
      const size = op.axis.size(m.shape);
      if (!(Math.abs(size - m.size) <= 1e-9 * Math.max(1, size))) {
        found.error(
          `${path}.size`,
          `is ${num(m.size)}, but its shape ${formatShape(op, m.shape)} is size ${
            num(size)
          } (${op.axis.unit}); they must agree`,
        );
      }
    }
    if (m.state !== "ok") return;
    found.positive(`${path}.wall.median`, m.wall.median, "a run takes time");
  });
}

function checkFits(report: Report, found: Findings): void {
  report.fits.forEach((f, i) => {
    const path = `fits[${i}]`;
    found.op(f.op, `${path}.op`);
    if (f.t0Us < 0) {
      found.error(
        `${path}.t0Us`,
        `is ${f.t0Us}: a fixed cost cannot be negative; expected a number >= 0`,
      );
    }
    for (const key of ["gflops", "gbps"] as const) {
      const rate = f[key];
      if (rate !== null) {
        found.positive(
          `${path}.${key}`,
          rate,
          "a rate of 0 makes every time infinite (null says the data cannot identify it)",
        );
      }
    }
    // Neither rate is a fit of its own: a series whose time is its fixed cost over the whole
    // measured range (a WebGPU end-to-end series under its ~11 ms synchronisation) fits t0 alone;
    // then t0 is the whole time and must be positive.
    if (f.gflops === null && f.gbps === null && !(f.t0Us > 0)) {
      found.error(path, "has neither gflops nor gbps and no fixed time: it predicts 0 ms");
    }
    found.positive(`${path}.sizeRange[0]`, f.sizeRange[0], "sizes start at 1");
    found.interval(`${path}.sizeRange`, f.sizeRange);
  });
}

const CPU: ReadonlySet<Backend> = new Set(CPU_BACKENDS);

function checkCrossovers(report: Report, found: Findings): void {
  report.crossovers.forEach((c, i) => {
    const path = `crossovers[${i}]`;
    found.op(c.op, `${path}.op`);
    if (c.ci !== null) found.interval(`${path}.ci`, c.ci);
    if (c.driftCi !== undefined) found.interval(`${path}.driftCi`, c.driftCi);
    const pair = new Set([c.from, c.to]);
    const matches = c.pair === "cpu→webgpu"
      ? pair.has("webgpu") && (CPU.has(c.from) || CPU.has(c.to))
      : c.pair.split("→").every((b) => pair.has(b as typeof c.from));
    if (c.from === c.to) {
      found.error(`${path}.to`, `is "${c.to}", as is "from"; a crossover is between two backends`);
    } else if (!matches) {
      found.error(
        `${path}.pair`,
        `is "${c.pair}", but the crossover is between "${c.from}" and "${c.to}"; they must agree`,
      );
    }
  });
}

function checkTuning(report: Report, found: Findings): void {
  report.tuning.forEach((t, i) => {
    const path = `tuning[${i}]`;
    found.op(t.op, `${path}.op`);
    if (t.sizeMin > t.sizeMax) {
      found.error(`${path}.sizeMin`, `is ${num(t.sizeMin)}, above sizeMax ${num(t.sizeMax)}`);
    }
    found.positive(`${path}.best.ms`, t.best.ms, "a run takes time");
    if (t.runnerUp !== null) {
      found.positive(`${path}.runnerUp.ms`, t.runnerUp.ms, "a run takes time");
    }
  });
}

function checkThresholds(report: Report, found: Findings): void {
  report.thresholds.forEach((t, i) => {
    const path = `thresholds[${i}]`;
    found.op(t.op, `${path}.op`);
    found.figure(`${path}.simdAbove`, t.simdAbove, "a size cannot be negative", true);
    found.figure(`${path}.gpuAbove`, t.gpuAbove, "a size cannot be negative", true);
  });
}

function checkSystem(report: Report, found: Findings): void {
  const s = report.system;
  const why = "a time or rate a machine measured is positive";
  for (
    const key of [
      "dispatchRoundTripMs",
      "perDispatchUs",
      "encodePerDispatchUs",
      "uploadGBps",
      "readbackGBps",
      "copyGBps",
      "compileMs",
    ] as const
  ) {
    const f = s[key];
    if (f !== undefined) found.figure(`system.${key}`, f, why);
  }
  for (const [key, f] of Object.entries(s.peakGflops)) {
    if (f !== undefined) found.figure(`system.peakGflops.${key}`, f, why);
  }
  for (const [key, f] of Object.entries(s.peakGbps)) {
    if (f !== undefined) found.figure(child("system.peakGbps", key), f, why);
  }
}

function checkLlm(report: Report, found: Findings): void {
  report.llm?.validations.forEach((v, i) => {
    const path = `llm.validations[${i}]`;
    found.positive(`${path}.measuredTokensPerSec`, v.measuredTokensPerSec, "a decode that ran");
    found.positive(`${path}.estimatedTokensPerSec`, v.estimatedTokensPerSec, "an estimate");
    const range = v.estimatedInterval?.tokensPerSec;
    if (
      range &&
      !(range[0] > 0 && range[0] <= v.estimatedTokensPerSec && v.estimatedTokensPerSec <= range[1])
    ) {
      found.error(
        `${path}.estimatedInterval.tokensPerSec`,
        `[${range.join(", ")}] must be positive and hold the estimate (${v.estimatedTokensPerSec})`,
      );
    }
  });
  const probe = report.llm?.stepProbe;
  if (!probe) return;
  const path = "llm.stepProbe";
  found.positive(`${path}.dispatches`, probe.dispatches, "a step launches kernels");
  found.figure(`${path}.chainFactor`, probe.chainFactor, "a ratio of two times");
  found.figure(`${path}.hostFixedMs`, probe.hostFixedMs, "a synchronised step takes time");
  found.figure(`${path}.hostPerDispatchUs`, probe.hostPerDispatchUs, "a launch's host time", true);
}

function checkStability(stability: StabilityInfo, found: Findings): void {
  const op = found.op(stability.op, "stability.op");
  if (op !== null) checkShape("stability.shape", op, stability.shape, found);
  stability.probes.forEach((p, i) => {
    for (const [backend, ms] of Object.entries(p.ms)) {
      const path = child(`stability.probes[${i}].ms`, backend);
      found.positive(path, ms, "a run takes time");
    }
  });
}

/** The first row index whose row matches, as a path, or null. */
function firstRow<T>(rows: readonly T[], name: string, test: (row: T) => boolean): string | null {
  const i = rows.findIndex(test);
  return i < 0 ? null : `${name}[${i}]`;
}

function checkAdapter(report: Report, found: Findings): void {
  if (report.adapter === null) {
    const ran = firstRow(
      report.measurements,
      "measurements",
      (m) => m.backend === "webgpu" && m.state !== "unsupported",
    ) ?? firstRow(report.fits, "fits", (f) => f.backend === "webgpu") ??
      firstRow(report.tuning, "tuning", (t) => t.backend === "webgpu") ??
      (report.system.peakGbps.webgpu?.value != null ? "system.peakGbps.webgpu" : null) ??
      (report.system.dispatchRoundTripMs.value !== null ? "system.dispatchRoundTripMs" : null);
    if (ran !== null) {
      found.error(
        "adapter",
        `is null (a CPU-only report), but ${ran} is WebGPU data; a report with WebGPU data names its adapter`,
      );
    }
    return;
  }
  if (!report.adapter.features.includes("shader-f16")) {
    const f16 = firstRow(
      report.measurements,
      "measurements",
      (m) => m.backend === "webgpu" && m.dtype === "f16" && m.state === "ok",
    );
    if (f16 !== null) {
      found.error(
        "adapter.features",
        `lacks "shader-f16", but ${f16} is an f16 WebGPU measurement that ran; the adapter cannot have run it`,
      );
    }
  }
}
