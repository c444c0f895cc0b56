/**
 * Private to `bench:adaptive` and its replay: the one parser of their command lines. Both take
 * the loop's length, scenarios, budget, reports folder and `--json`; the bench takes one `--seed`,
 * the replay a recording (`--from`), a list of `--seeds` and `--detail`.
 *
 * @module
 */
import { parseFlags, UsageError } from "../core/cli_args.ts";
import { ADAPTIVE_DEFAULTS } from "../models/adaptive.ts";
import { type ScenarioName, SCENARIOS } from "./_adaptive_loop.ts";

/** Calls per scenario when `--calls` is absent. */
export const DEFAULT_CALLS = 10000;
/** Fewest calls per scenario of a real loop: a few cycles of probes over every pair. */
const MIN_BENCH_CALLS = 200;

/**
 * Which tool's flags to read: `bench:adaptive` or its replay.
 *
 * @example
 * ```ts
 * import type { LoopTool } from "./_adaptive_options.ts";
 * const tool: LoopTool = "replay";
 * ```
 */
export type LoopTool = "bench" | "replay";

/**
 * What `bench:adaptive` and its replay were asked to do.
 *
 * @example
 * ```ts
 * import type { LoopOptions } from "./_adaptive_options.ts";
 * const o: LoopOptions = {
 *   calls: 2000, scenarios: ["c"], budget: 0.03, seeds: [1], reportsDir: "reports",
 *   json: false, from: null, detail: false,
 * };
 * ```
 */
export interface LoopOptions {
  readonly calls: number;
  readonly scenarios: readonly ScenarioName[];
  /** The selector's explorationBudget. */
  readonly budget: number;
  /** The bench's `--seed` (one), or the replay's `--seeds`. */
  readonly seeds: readonly number[];
  readonly reportsDir: string;
  readonly json: boolean;
  /** The replay's recording; null for the bench. */
  readonly from: string | null;
  /** The replay's `--detail`; false for the bench. */
  readonly detail: boolean;
}

/**
 * Reads the command line of `bench:adaptive` (`tool` "bench") or of its replay.
 *
 * @param args The arguments.
 * @param tool Which tool's flags are accepted.
 * @returns The options, or "help" when `-h`/`--help` was given.
 * @throws {UsageError} on an unknown flag or a value out of range.
 * @example
 * ```ts
 * import { parseLoopOptions } from "./_adaptive_options.ts";
 * const o = parseLoopOptions(["--calls", "400", "--scenarios", "a,c"], "bench");
 * console.log(o !== "help" && o.scenarios); // ["a", "c"]
 * ```
 */
export function parseLoopOptions(args: readonly string[], tool: LoopTool): LoopOptions | "help" {
  const { values } = parseFlags(
    args,
    {
      calls: { type: "string" },
      scenarios: { type: "string" },
      budget: { type: "string" },
      reports: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      ...(tool === "bench" ? { seed: { type: "string" } } : {
        from: { type: "string" },
        seeds: { type: "string" },
        detail: { type: "boolean" },
      }),
    } as const,
  );
  const flags = values as Record<string, string | boolean | undefined>;
  if (flags.help) return "help";
  const text = (name: string) => flags[name] as string | undefined;
  if (tool === "replay" && text("from") === undefined) {
    throw new UsageError("--from is required: pass a recording");
  }
  const minCalls = tool === "bench" ? MIN_BENCH_CALLS : 2;
  const calls = text("calls") === undefined ? DEFAULT_CALLS : Number(text("calls"));
  if (!Number.isSafeInteger(calls) || calls < minCalls) {
    throw new UsageError(`--calls must be an integer ≥ ${minCalls}, got "${text("calls")}"`);
  }
  const scenarios = (text("scenarios") ?? "a,b,c").split(",").map((s) => s.trim());
  for (const s of scenarios) {
    if (!SCENARIOS.includes(s as ScenarioName)) {
      throw new UsageError(`--scenarios takes a, b and c, got "${s}"`);
    }
  }
  const budget = text("budget") === undefined
    ? ADAPTIVE_DEFAULTS.explorationBudget
    : Number(text("budget"));
  if (!(budget >= 0 && budget <= 1)) {
    throw new UsageError(`--budget must be a share in [0, 1], got "${text("budget")}"`);
  }
  const seedFlag = tool === "bench" ? "seed" : "seeds";
  const seeds = (text(seedFlag) ?? "1").split(",").map((s) => Number(s.trim()));
  if (seeds.some((s) => !Number.isSafeInteger(s)) || (tool === "bench" && seeds.length !== 1)) {
    throw new UsageError(
      `--${seedFlag} must be ${tool === "bench" ? "an integer" : "integers"}, got "${
        text(seedFlag)
      }"`,
    );
  }
  return {
    calls,
    scenarios: scenarios as ScenarioName[],
    budget,
    seeds,
    reportsDir: text("reports") ?? "reports",
    json: flags.json === true,
    from: text("from") ?? null,
    detail: flags.detail === true,
  };
}
