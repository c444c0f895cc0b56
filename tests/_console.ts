/**
 * Test helper: runs a command-line `main` with `console.log` and `console.error` captured.
 *
 * @module
 */

/** What a CLI run printed, and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/**
 * Runs `fn` (a CLI's `main(args)`) with console output captured, restoring the console after.
 *
 * @param fn Runs the command and returns its exit code.
 * @returns The exit code, standard output and standard error, lines joined by "\n".
 * @example
 * ```ts ignore
 * import { main } from "../reports/check_cli.ts";
 * const { code, out } = await captureCli(() => main(["--help"]));
 * ```
 */
export async function captureCli(fn: () => Promise<number>): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  console.log = (...a: unknown[]) => out.push(a.join(" "));
  console.error = (...a: unknown[]) => err.push(a.join(" "));
  try {
    return { code: await fn(), out: out.join("\n"), err: err.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}
