/**
 * `deno task check:ab`: measures two sides (runtimes, checkouts or environments) alternately in
 * one job and fails when B is slower than A beyond noise on some backend. The method that
 * survives a noisy runner: the two sides of a round run seconds apart, in alternating order, and
 * the rounds measure their own spread, so no baseline from another day and another load is
 * needed.
 *
 * @module
 */
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath as fromFileUrl, pathToFileURL } from "node:url";
import { listFlag, parseFlags, UsageError, usageFailure } from "../core/cli_args.ts";
import { type Backend, BACKENDS } from "../kernels/types.ts";
import { lines } from "./_lines.ts";
import { AB_OPS, type AbCase, abCases, type AbRound, formatAb, judgeAb } from "./ab.ts";
import { toleranceFlag } from "./check_cli.ts";
import { COMPARISON_FORMATS, type ComparisonFormat } from "./compare_format.ts";

const USAGE =
  "Usage: deno task check:ab [--a DIR] [--b DIR] [--a-deno PATH] [--b-deno PATH] [--a-env K=V,...] [--b-env K=V,...] [--rounds 8] [--backends LIST] [--ops matmul,add] [--tolerance 10%] [--format text|markdown|json]";

const HELP = `${USAGE}

Measures side A and side B alternately, in rounds (A then B, then B then A, ...), each side in
its own process with its own runtime, checkout and environment, and judges each backend from
the rounds' paired differences: per round the mean ln(B / A) over the backend's cases, over the
rounds a 99 % Student's t interval. B slower beyond the tolerance with the interval above zero
is a regression. Cases: matmul n = 192 and add 2^20 elements, f32, per backend (WebGPU
device-resident); a round takes a few seconds per backend and side.

Sides (each defaults to this checkout, "deno" on PATH, the current environment):
  --a DIR, --b DIR           gpucal checkouts to measure (each side imports DIR/mod.ts)
  --a-deno PATH, --b-deno PATH
                             Deno executables (the task may run "deno" only: to compare with
                             another executable, run reports/ab_cli.ts with --allow-run for it)
  --a-env K=V,...            Environment variables added on one side, e.g.
  --b-env K=V,...            --b-env LP_NUM_THREADS=1 (lavapipe on one thread)

Options:
  --rounds N                 Rounds after one discarded warm-up round (default 12)
  --backends LIST            Backends (default: all): ${BACKENDS.join(",")}
  --ops LIST                 Ops (default: ${AB_OPS.join(",")})
  --tolerance X              Relative change that counts, 10% or 0.1 (default 10%)
  --format F                 text (default), markdown (for a job summary) or json
  -h, --help                 Show this help

Exit codes: 0 B is not slower beyond noise, 1 B is slower (or B failed to run), 2 bad flags or
side A failed to run.`;

/** One side of the comparison. */
interface Side {
  readonly name: "A" | "B";
  readonly dir: string;
  readonly deno: string;
  readonly env: Readonly<Record<string, string>>;
}

function envFlag(flag: string, value: string | undefined): Record<string, string> {
  if (value === undefined) return {};
  const env: Record<string, string> = {};
  for (const pair of value.split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`${flag}: "${pair}" is not KEY=VALUE`);
    env[pair.slice(0, eq).trim()] = pair.slice(eq + 1);
  }
  return env;
}

function roundsFlag(value: string | undefined): number {
  if (value === undefined) return 12;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 2 || n > 100) {
    throw new UsageError(`--rounds must be a whole number from 2 to 100, got "${value}"`);
  }
  return n;
}

function formatFlag(value: string | undefined): ComparisonFormat {
  const format = COMPARISON_FORMATS.find((f) => f === (value ?? "text"));
  if (format === undefined) {
    throw new UsageError(`--format: "${value}" is not one of ${COMPARISON_FORMATS.join(", ")}`);
  }
  return format;
}

async function checkoutFlag(flag: string, value: string | undefined): Promise<string> {
  const here = fromFileUrl(new URL("..", import.meta.url));
  const dir = value === undefined ? here : isAbsolute(value) ? value : resolve(value);
  try {
    await Deno.stat(join(dir, "mod.ts"));
  } catch {
    throw new UsageError(`${flag}: "${dir}" has no mod.ts: give a gpucal checkout`);
  }
  return dir;
}

function label(side: Side): string {
  const env = Object.entries(side.env).map(([k, v]) => `${k}=${v} `).join("");
  return `${env}${side.deno} ${side.dir}`;
}

/** A side's worker that could not start or stopped answering. */
class SideFailure extends Error {
  readonly side: Side;
  constructor(side: Side, message: string) {
    super(message);
    this.name = "SideFailure";
    this.side = side;
  }
}

/** One side's long-lived worker process (`ab_worker.ts`), measuring on request. */
class SideProcess {
  readonly side: Side;
  readonly #child: Deno.ChildProcess;
  readonly #replies: AsyncGenerator<string>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #stderr = "";

  private constructor(side: Side, child: Deno.ChildProcess) {
    this.side = side;
    this.#child = child;
    this.#replies = lines(child.stdout);
    this.#writer = child.stdin.getWriter();
    (async () => {
      for await (const line of lines(child.stderr)) {
        this.#stderr = `${this.#stderr}${line}\n`.slice(-2000);
      }
    })();
  }

  /** Starts the worker and waits until it has loaded the checkout. */
  static async start(side: Side): Promise<SideProcess> {
    const worker = fromFileUrl(new URL("./ab_worker.ts", import.meta.url));
    const config = join(side.dir, "deno.json");
    const hasConfig = await Deno.stat(config).then(() => true, () => false);
    const child = new Deno.Command(side.deno, {
      args: [
        "run",
        ...(hasConfig ? ["--config", config] : []),
        "--allow-read",
        "--allow-env",
        "--allow-sys=cpus",
        worker,
        pathToFileURL(join(side.dir, "mod.ts")).href,
      ],
      env: side.env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const process = new SideProcess(side, child);
    const first = await process.#next();
    if (first !== "ready") throw process.#failure(`did not start (${first ?? "no output"})`);
    return process;
  }

  async #next(): Promise<string | undefined> {
    const { value, done } = await this.#replies.next();
    return done ? undefined : value;
  }

  #failure(what: string): SideFailure {
    const tail = this.#stderr.trim().split("\n").slice(-3).join(" ");
    return new SideFailure(this.side, `${what}${tail ? `: ${tail}` : ""}`);
  }

  /** Measures the cases once; their medians (null where one failed). */
  async measure(cases: readonly AbCase[]): Promise<(number | null)[]> {
    const requests = cases.map(({ label: _, ...request }) => request);
    await this.#writer.write(new TextEncoder().encode(`${JSON.stringify(requests)}\n`));
    const reply = await this.#next();
    if (reply === undefined) throw this.#failure("stopped while measuring");
    return (JSON.parse(reply) as { ms: (number | null)[] }).ms;
  }

  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#child.status;
  }
}

/**
 * Measures the rounds: in each, every backend's cases on both sides, one side right after the
 * other, the order alternating between backends and rounds; the first round is a discarded
 * warm-up (compilation, caches).
 */
async function runRounds(
  sides: readonly [SideProcess, SideProcess],
  cases: readonly AbCase[],
  rounds: number,
): Promise<AbRound[]> {
  const backends = [...new Set(cases.map((c) => c.backend))];
  const out: AbRound[] = [];
  for (let r = 0; r <= rounds; r++) {
    const a: (number | null)[] = cases.map(() => null);
    const b: (number | null)[] = cases.map(() => null);
    for (const [j, backend] of backends.entries()) {
      const indices = cases.flatMap((c, i) => c.backend === backend ? [i] : []);
      const mine = indices.map((i) => cases[i]!);
      const order = (r + j) % 2 === 0 ? sides : [sides[1], sides[0]] as const;
      for (const side of order) {
        const ms = await side.measure(mine);
        const into = side === sides[0] ? a : b;
        indices.forEach((i, k) => into[i] = ms[k] ?? null);
      }
    }
    console.error(r === 0 ? "warm-up round done" : `round ${r}/${rounds} done`);
    if (r > 0) out.push({ a, b });
  }
  return out;
}

/**
 * Runs the A/B command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 B not slower beyond noise, 1 B slower or failing, 2 unusable input.
 * @example
 * ```ts ignore
 * import { main } from "./ab_cli.ts";
 * Deno.exit(await main(["--b-env", "LP_NUM_THREADS=1", "--backends", "webgpu"]));
 * ```
 */
export async function main(args: readonly string[]): Promise<number> {
  try {
    const { values } = parseFlags(args, {
      a: { type: "string" },
      b: { type: "string" },
      "a-deno": { type: "string" },
      "b-deno": { type: "string" },
      "a-env": { type: "string" },
      "b-env": { type: "string" },
      rounds: { type: "string" },
      backends: { type: "string" },
      ops: { type: "string" },
      tolerance: { type: "string" },
      format: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    const rounds = roundsFlag(values.rounds);
    const backends: readonly Backend[] = listFlag("--backends", values.backends, BACKENDS) ??
      BACKENDS;
    const ops = listFlag("--ops", values.ops, AB_OPS) ?? AB_OPS;
    const tolerance = toleranceFlag(values.tolerance) ?? 0.1;
    const format = formatFlag(values.format);
    const sides = [
      {
        name: "A",
        dir: await checkoutFlag("--a", values.a),
        deno: values["a-deno"] ?? "deno",
        env: envFlag("--a-env", values["a-env"]),
      },
      {
        name: "B",
        dir: await checkoutFlag("--b", values.b),
        deno: values["b-deno"] ?? "deno",
        env: envFlag("--b-env", values["b-env"]),
      },
    ] as const satisfies readonly [Side, Side];
    const cases = abCases(backends, ops);
    if (label(sides[0]) === label(sides[1])) {
      console.error("note: A and B are the same: this measures the A/B check's own noise");
    }
    const started: SideProcess[] = [];
    try {
      for (const side of sides) started.push(await SideProcess.start(side));
      const measured = await runRounds([started[0]!, started[1]!], cases, rounds);
      const result = judgeAb(cases, measured, tolerance);
      console.log(formatAb(result, format, { a: label(sides[0]), b: label(sides[1]) }));
      return result.regressed ? 1 : 0;
    } catch (e) {
      const failed = sides[started.length] ?? sides[1];
      console.error(
        `error: side ${failed.name} (${label(failed)}) failed: ${
          e instanceof Error ? e.message : e
        }`,
      );
      return failed.name === "A" ? 2 : 1;
    } finally {
      await Promise.all(started.map((p) => p.close()));
    }
  } catch (e) {
    return usageFailure(e, USAGE);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
