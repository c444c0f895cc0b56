/**
 * The gpucal checkout a calibration runs from, as git tells it: its commit, and whether the code
 * that decides a measured time (the kernels, the runners and the measuring loop:
 * {@linkcode MEASURING_CODE}) is the code of another commit. Two runs pool only when it is
 * (`calibrate/pool.ts`): a commit that changed a report's schema, a model or a command measures
 * the same times as its parent, and one that changed a kernel does not.
 *
 * Needs `--allow-run=git`; without it, or from a URL or a directory without git, nothing is known.
 *
 * ```ts ignore
 * import { gitCheckout } from "./checkout.ts";
 * const checkout = await gitCheckout();
 * console.log(checkout.commit, await checkout.measuresAs("54fb2b1"));
 * ```
 *
 * @module
 */

/**
 * The files and folders, from the gpucal root, whose code decides what a measurement times: every
 * module `calibrate/measure.ts` and the runners run (tests/checkout_test.ts walks their imports to
 * keep the list whole), and the task flags and the locked npm versions (V8 flags, the wasm
 * assembler).
 */
export const MEASURING_CODE: readonly string[] = [
  "kernels",
  "calibrate/runners",
  "calibrate/measure.ts",
  "calibrate/runner.ts",
  "calibrate/device.ts",
  "calibrate/sampled.ts",
  "calibrate/verify.ts",
  "calibrate/wasm_schedule.ts",
  "core/operand_rotation.ts",
  "core/stats.ts",
  "deno.json",
  "deno.lock",
];

/**
 * A gpucal checkout.
 *
 * @example
 * ```ts
 * import type { Checkout } from "./checkout.ts";
 * const scripted: Checkout = { commit: "c0ffee0", measuresAs: (c) => Promise.resolve(c === "c0ffee0") };
 * ```
 */
export interface Checkout {
  /** The commit checked out, or null when unknown. */
  readonly commit: string | null;
  /**
   * Whether this checkout's {@linkcode MEASURING_CODE}, uncommitted changes included, is
   * `commit`'s; null when git cannot tell (no git, no permission, a commit it does not have).
   */
  measuresAs(commit: string): Promise<boolean | null>;
}

/**
 * The checkout gpucal runs from (or the git work tree at `root`), asked through git.
 *
 * @param root The checkout's root directory; gpucal's own by default.
 * @returns The checkout.
 * @example
 * ```ts ignore
 * import { gitCheckout } from "./checkout.ts";
 * console.log((await gitCheckout()).commit?.length); // 40
 * ```
 */
export async function gitCheckout(root: URL = new URL("..", import.meta.url)): Promise<Checkout> {
  const git = (args: readonly string[]) => gitIn(root, args);
  const head = (await git(["rev-parse", "HEAD"]))?.stdout.trim() ?? "";
  return {
    commit: COMMIT.test(head) ? head : null,
    measuresAs: async (commit) => {
      if (!COMMIT.test(commit)) return null;
      // Exit 0: the working tree's measuring code is the commit's; 1: it differs; else unknown.
      const diff = await git(["diff", "--quiet", commit, "--", ...MEASURING_CODE]);
      return diff === null || diff.code > 1 ? null : diff.code === 0;
    },
  };
}

/** A commit as git names it in full or abbreviated. */
const COMMIT = /^[0-9a-f]{7,64}$/;

/** What `git args` printed and its exit code, in `dir`; null when it could not run. */
async function gitIn(
  dir: URL,
  args: readonly string[],
): Promise<{ code: number; stdout: string } | null> {
  if (dir.protocol !== "file:") return null;
  try {
    const out = await new Deno.Command("git", {
      args: [...args],
      cwd: dir,
      stdout: "piped",
      stderr: "null",
    }).output();
    return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
  } catch {
    return null;
  }
}
