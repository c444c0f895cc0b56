/**
 * A/B in one job: two runtimes, two checkouts or two environments measured side by side,
 * alternating in rounds, and judged per backend from the rounds' paired differences. On a noisy
 * runner a stored baseline was measured minutes or days ago under another load; here the two
 * sides of a round are measured seconds apart (A then B, then B then A, so a steady drift
 * cancels) and the rounds themselves say how much the difference varies. Pure: measuring is
 * `ab_cli.ts`'s.
 *
 * @example
 * ```ts
 * import { abCases, judgeAb } from "./ab.ts";
 * const cases = abCases(["wasm"], ["add"]);
 * const rounds = [1, 2, 3].map(() => ({ a: cases.map(() => 1), b: cases.map(() => 1.5) }));
 * console.log(judgeAb(cases, rounds, 0.1).backends[0]?.regressed); // true
 * ```
 *
 * @module
 */
import { textTable } from "../core/format.ts";
import type { Backend, Dtype, Residency, Shape } from "../kernels/types.ts";

/**
 * One case both sides measure.
 *
 * @example
 * ```ts
 * import type { AbCase } from "./ab.ts";
 * const c: AbCase = { op: "add", shape: { n: 1 << 21 }, dtype: "f32", backend: "wasm", residency: "end-to-end", label: "add f32 at 2097152" };
 * ```
 */
export interface AbCase {
  readonly op: string;
  readonly shape: Shape;
  readonly dtype: Dtype;
  readonly backend: Backend;
  readonly residency: Residency;
  /** How the case is named in the output (the backend is implied). */
  readonly label: string;
}

/**
 * One round: each case's median ms per run on side A and on side B (null when it could not be
 * measured), in the order of the cases.
 *
 * @example
 * ```ts
 * import type { AbRound } from "./ab.ts";
 * const r: AbRound = { a: [1.0, 2.0], b: [1.1, null] };
 * ```
 */
export interface AbRound {
  readonly a: readonly (number | null)[];
  readonly b: readonly (number | null)[];
}

/**
 * The verdict on one backend.
 *
 * @example
 * ```ts
 * import type { AbBackend } from "./ab.ts";
 * const slower = (v: AbBackend) => v.regressed;
 * ```
 */
export interface AbBackend {
  readonly backend: Backend;
  /** B's time over A's, less 1 (positive: B is slower), the geometric mean over rounds. */
  readonly change: number;
  /** 99 % interval of `change`, from the spread between rounds (Student's t). */
  readonly ci: readonly [number, number];
  /** Rounds in which every case of the backend was measured on both sides. */
  readonly rounds: number;
  /** The change exceeds the tolerance and the interval excludes no change. */
  readonly beyondNoise: boolean;
  /** Beyond noise and B slower. */
  readonly regressed: boolean;
  /** Each case's change (geometric mean over rounds), as the verdict's evidence. */
  readonly cases: readonly { readonly label: string; readonly change: number }[];
  readonly note: string;
}

/**
 * The outcome of {@linkcode judgeAb}.
 *
 * @example
 * ```ts
 * import type { AbResult } from "./ab.ts";
 * const exitCode = (r: AbResult) => (r.regressed ? 1 : 0);
 * ```
 */
export interface AbResult {
  readonly backends: readonly AbBackend[];
  readonly regressed: boolean;
  readonly rounds: number;
  readonly tolerance: number;
}

/**
 * Per op, a size whose time is the backend's work, not a call's fixed cost, and which many-core
 * kernels split across threads (lavapipe's, wasm-mt's workers): a millisecond or more on a 2-core
 * VM, so that every round stays a few seconds per backend and side.
 */
const SIZES: Readonly<Record<string, readonly number[]>> = {
  matmul: [192],
  add: [1 << 20],
};

/** Two-sided 99 % quantiles of Student's t for 1–30 degrees of freedom. */
const T99 = [
  63.657,
  9.925,
  5.841,
  4.604,
  4.032,
  3.707,
  3.499,
  3.355,
  3.25,
  3.169,
  3.106,
  3.055,
  3.012,
  2.977,
  2.947,
  2.921,
  2.898,
  2.878,
  2.861,
  2.845,
  2.831,
  2.819,
  2.807,
  2.797,
  2.787,
  2.779,
  2.771,
  2.763,
  2.756,
  2.75,
];

/**
 * The ops {@linkcode abCases} knows sizes for.
 *
 * @example
 * ```ts
 * import { AB_OPS } from "./ab.ts";
 * console.log(AB_OPS.join(",")); // "matmul,add"
 * ```
 */
export const AB_OPS: readonly string[] = Object.keys(SIZES);

/**
 * The cases of an A/B run: per backend and op, a size where the work carries the time; WebGPU
 * device-resident (the kernels, without the ~11 ms synchronisation of an end-to-end run).
 *
 * @param backends The backends to compare.
 * @param ops Ops among {@linkcode AB_OPS}.
 * @returns The cases, grouped by backend.
 * @throws {RangeError} For an op without A/B sizes.
 * @example
 * ```ts
 * import { abCases } from "./ab.ts";
 * console.log(abCases(["webgpu"], ["matmul"]).map((c) => c.label));
 * // ["matmul f32 device-resident at 192"]
 * ```
 */
export function abCases(backends: readonly Backend[], ops: readonly string[]): AbCase[] {
  return backends.flatMap((backend) =>
    ops.flatMap((op) => {
      const sizes = SIZES[op];
      if (sizes === undefined) {
        throw new RangeError(`No A/B sizes for op "${op}": use one of ${AB_OPS.join(", ")}`);
      }
      const residency: Residency = backend === "webgpu" ? "device-resident" : "end-to-end";
      return sizes.map((n) => ({
        op,
        shape: op === "matmul" ? { m: n, k: n, n } : { n },
        dtype: "f32" as const,
        backend,
        residency,
        label: `${op} f32 ${residency} at ${n}`,
      }));
    })
  );
}

function percent(x: number): string {
  return `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} %`;
}

function mean(xs: readonly number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}

/** Per round with every case measured on both sides, the mean ln(B / A) over the cases. */
function roundChanges(indices: readonly number[], rounds: readonly AbRound[]): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const d = indices.map((i) => {
      const [a, b] = [r.a[i], r.b[i]];
      return a != null && b != null && a > 0 && b > 0 ? Math.log(b / a) : null;
    });
    if (d.every((x) => x !== null)) out.push(mean(d as number[]));
  }
  return out;
}

function judgeBackend(
  backend: Backend,
  cases: readonly AbCase[],
  indices: readonly number[],
  rounds: readonly AbRound[],
  tolerance: number,
): AbBackend | null {
  const changes = roundChanges(indices, rounds);
  if (changes.length < 2) return null;
  const m = mean(changes);
  const sd = Math.sqrt(changes.reduce((s, x) => s + (x - m) ** 2, 0) / (changes.length - 1));
  const half = (T99[changes.length - 2] ?? 2.576) * sd / Math.sqrt(changes.length);
  const change = Math.exp(m) - 1;
  const ci = [Math.exp(m - half) - 1, Math.exp(m + half) - 1] as const;
  const beyondNoise = Math.abs(m) > half && Math.abs(change) > tolerance;
  const perCase = indices.map((i) => {
    const d = rounds.flatMap((r) => {
      const [a, b] = [r.a[i], r.b[i]];
      return a != null && b != null && a > 0 && b > 0 ? [Math.log(b / a)] : [];
    });
    return { label: cases[i]!.label, change: Math.exp(mean(d)) - 1 };
  });
  const verdict = beyondNoise
    ? `B ${m > 0 ? "slower" : "faster"} beyond noise`
    : Math.abs(change) <= tolerance
    ? `within the ${percent(tolerance).slice(1)} tolerance`
    : "within noise";
  return {
    backend,
    change,
    ci,
    rounds: changes.length,
    beyondNoise,
    regressed: beyondNoise && m > 0,
    cases: perCase,
    note: `${percent(change)} over ${changes.length} rounds, 99 % interval [${percent(ci[0])}, ${
      percent(ci[1])
    }]: ${verdict}; ${perCase.map((c) => `${c.label} ${percent(c.change)}`).join(", ")}`,
  };
}

/**
 * Judges each backend from the rounds: per round, the mean ln(B / A) over the backend's cases;
 * over rounds, their mean with a 99 % Student's t interval from their spread. A backend moved
 * beyond noise when the change exceeds the tolerance and the interval excludes no change; B
 * slower is a regression. Rounds in which a case of the backend failed on either side are left
 * out; a backend with fewer than two complete rounds is not judged.
 *
 * @param cases The cases, as measured.
 * @param rounds The rounds.
 * @param tolerance Relative change that counts, e.g. 0.1.
 * @returns The verdict per backend and overall.
 * @example
 * ```ts
 * import { abCases, judgeAb } from "./ab.ts";
 * const cases = abCases(["js"], ["add"]);
 * const same = [0, 1, 2].map((i) => ({ a: cases.map(() => 1 + i / 10), b: cases.map(() => 1 + i / 10) }));
 * console.log(judgeAb(cases, same, 0.1).regressed); // false
 * ```
 */
export function judgeAb(
  cases: readonly AbCase[],
  rounds: readonly AbRound[],
  tolerance: number,
): AbResult {
  const byBackend = new Map<Backend, number[]>();
  cases.forEach((c, i) => byBackend.set(c.backend, [...(byBackend.get(c.backend) ?? []), i]));
  const backends = [...byBackend].map(([backend, indices]) =>
    judgeBackend(backend, cases, indices, rounds, tolerance)
  ).filter((b): b is AbBackend => b !== null);
  return {
    backends,
    regressed: backends.some((b) => b.regressed),
    rounds: rounds.length,
    tolerance,
  };
}

/**
 * Renders an A/B result as text or Markdown (a job summary), or JSON.
 *
 * @param result The result of {@linkcode judgeAb}.
 * @param format `"text"`, `"markdown"` or `"json"`.
 * @param labels How to name the two sides.
 * @returns The rendering, without a final newline.
 * @example
 * ```ts
 * import { formatAb } from "./ab.ts";
 * const r = { backends: [], regressed: false, rounds: 0, tolerance: 0.1 };
 * console.log(formatAb(r, "text", { a: "deno", b: "LP_NUM_THREADS=1 deno" }));
 * ```
 */
export function formatAb(
  result: AbResult,
  format: "text" | "markdown" | "json",
  labels: { readonly a: string; readonly b: string },
): string {
  if (format === "json") return JSON.stringify({ ...labels, ...result }, null, 2);
  const slower = result.backends.filter((b) => b.regressed).map((b) => b.backend);
  const head = slower.length > 0
    ? `B is slower than A beyond noise on ${slower.join(", ")}`
    : `No backend of B is slower than A beyond noise`;
  const rows = result.backends.map((b) => [
    b.backend,
    percent(b.change),
    `[${percent(b.ci[0])}, ${percent(b.ci[1])}]`,
    b.regressed ? "slower" : b.beyondNoise ? "faster" : "within noise",
    b.note,
  ]);
  const header = ["backend", "B vs A", "99% interval", "verdict", "note"];
  const tol = `tolerance ${(result.tolerance * 100).toFixed(0)} %`;
  if (format === "markdown") {
    return [
      `### ${result.regressed ? "❌" : "✅"} gpucal A/B check`,
      "",
      `**${head}** (${result.rounds} rounds, ${tol}).`,
      "",
      `A: \`${labels.a}\`; B: \`${labels.b}\`.`,
      "",
      `| ${header.join(" | ")} |`,
      `| ${header.map(() => "---").join(" | ")} |`,
      ...rows.map((r) => `| ${r.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`),
    ].join("\n");
  }
  return [
    `gpucal A/B: A = ${labels.a}; B = ${labels.b}`,
    `${result.regressed ? "REGRESSED" : "OK"}: ${head} (${result.rounds} rounds, ${tol})`,
    "",
    textTable(header, rows),
  ].join("\n");
}
