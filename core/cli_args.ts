/**
 * Shared command-line plumbing: strict flag parsing whose errors name the flag and exit with
 * code 2, and list/number/enum flag readers.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { OpSpec, Shape } from "../kernels/types.ts";

/**
 * A command-line mistake: the message names the flag and says what is accepted. CLIs print it
 * with their usage line and exit with code 2.
 *
 * @example
 * ```ts
 * import { UsageError } from "./cli_args.ts";
 * const e = new UsageError('Unknown flag "--fast": see --help');
 * console.log(e.name); // "UsageError"
 * ```
 */
export class UsageError extends Error {
  /** @param message What is wrong and what to do. */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * Parses `args` strictly: unknown flags and missing values become a {@linkcode UsageError}.
 *
 * @param args The arguments (without the program name).
 * @param options The flags, as for `node:util` `parseArgs`.
 * @returns The parsed flag values and positionals.
 * @throws {UsageError} on an unknown flag, a missing value, or a stray positional.
 * @example
 * ```ts
 * import { parseFlags } from "./cli_args.ts";
 * const { values } = parseFlags(["--quick"], { quick: { type: "boolean" } });
 * console.log(values.quick); // true
 * ```
 */
export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(
  args: readonly string[],
  options: T,
  allowPositionals = false,
): ReturnType<typeof parseArgs<{ options: T; allowPositionals: boolean; strict: true }>> {
  try {
    return parseArgs({ args: [...args], options, allowPositionals, strict: true });
  } catch (e) {
    const message = e instanceof Error ? e.message.replace(/\. To specify.*$/s, "") : String(e);
    throw new UsageError(`${message.replace(/\.$/, "")}: see --help`);
  }
}

/**
 * Reads a comma-separated list flag and checks every item against the allowed values.
 *
 * @param flag The flag's name, for messages (e.g. `"--backends"`).
 * @param value The raw value, or undefined when the flag is absent.
 * @param allowed The accepted items.
 * @returns The items, or undefined when the flag is absent.
 * @throws {UsageError} naming the flag and the bad item.
 * @example
 * ```ts
 * import { listFlag } from "./cli_args.ts";
 * console.log(listFlag("--dtypes", "f32,f16", ["f32", "f16"])); // ["f32", "f16"]
 * ```
 */
export function listFlag<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  if (items.length === 0) throw new UsageError(`${flag} needs at least one value`);
  for (const item of items) {
    if (!allowed.includes(item as T)) {
      throw new UsageError(`${flag}: "${item}" is not one of ${allowed.join(", ")}`);
    }
  }
  return items as T[];
}

/**
 * Reads a positive number flag, with an optional unit suffix `s` (seconds) or `%`.
 *
 * @param flag The flag's name, for messages.
 * @param value The raw value, or undefined when absent.
 * @returns The number, or undefined when absent.
 * @throws {UsageError} when the value is not a positive finite number.
 * @example
 * ```ts
 * import { positiveNumberFlag } from "./cli_args.ts";
 * console.log(positiveNumberFlag("--budget", "90s")); // 90
 * ```
 */
export function positiveNumberFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value.replace(/(s|%)$/, ""));
  if (!Number.isFinite(n) || n <= 0) {
    throw new UsageError(`${flag} must be a positive number, got "${value}"`);
  }
  return n;
}

/**
 * The end of a command line's `main` for a failure: a {@linkcode UsageError} is printed with the
 * usage line and becomes exit code 2; anything else is rethrown.
 *
 * @param error What was thrown.
 * @param usage The command's one-line usage, e.g. `"Usage: deno task check --baseline A --current B"`.
 * @returns 2, for a usage error.
 * @throws {unknown} `error` itself when it is not a usage error.
 * @example
 * ```ts
 * import { usageFailure, UsageError } from "./cli_args.ts";
 * const code = usageFailure(new UsageError("--out is required"), "Usage: x --out P");
 * console.log(code); // 2
 * ```
 */
export function usageFailure(error: unknown, usage: string): number {
  if (!(error instanceof UsageError)) throw error;
  console.error(`error: ${error.message}\n\n${usage} (see --help)`);
  return 2;
}

/**
 * The end of a bench's `main` for a failure: a {@linkcode UsageError} becomes one line on stderr
 * and exit code 2 (a bench has no usage line to repeat: `--help` describes it); anything else is
 * rethrown.
 *
 * @param error What was thrown.
 * @returns 2, for a usage error.
 * @throws {unknown} `error` itself when it is not a usage error.
 * @example
 * ```ts
 * import { oneLineFailure, UsageError } from "./cli_args.ts";
 * console.log(oneLineFailure(new UsageError("--rounds must be an integer"))); // 2
 * ```
 */
export function oneLineFailure(error: unknown): number {
  if (!(error instanceof UsageError)) throw error;
  console.error(`error: ${error.message}`);
  return 2;
}

/**
 * Reads a shape written as `formatShape` (`kernels/types.ts`) writes it: positive integers joined
 * by `x`, in its op's dimension order, each exact in a double (a safe integer).
 *
 * @param op The op whose dims give the order.
 * @param text The shape as text, e.g. `3x5000x300` for a matmul (m x k x n).
 * @returns The shape.
 * @throws {RangeError} saying what the text should have been.
 * @example
 * ```ts
 * import { parseShape } from "./cli_args.ts";
 * import { matmul } from "../kernels/matmul/mod.ts";
 * console.log(parseShape(matmul, "2x3x4")); // { m: 2, k: 3, n: 4 }
 * ```
 */
export function parseShape(op: Pick<OpSpec, "dims" | "name">, text: string): Shape {
  const values = text.split("x").map((v) => (v.trim() === "" ? NaN : Number(v)));
  if (values.length !== op.dims.length || values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new RangeError(
      `"${text}" is not ${op.dims.length} positive integers joined by "x" (${
        op.dims.join("x")
      } for ${op.name})`,
    );
  }
  const unsafe = values.findIndex((v) => !Number.isSafeInteger(v));
  if (unsafe >= 0) {
    throw new RangeError(
      `"${op.dims[unsafe]}" is ${values[unsafe]}; pass a positive integer up to ` +
        `${Number.MAX_SAFE_INTEGER}`,
    );
  }
  return Object.fromEntries(op.dims.map((d, i) => [d, values[i]!]));
}
