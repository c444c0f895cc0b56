/**
 * Private: calls a scalar kernel's loops so that V8 compiles them on their own, never inlined
 * into a caller left at a lower tier.
 *
 * V8's Maglev tier inlines a small function whose call site has only ever seen that function.
 * The first js kernel a process times is such a callee: Maglev compiles the wrapper that calls
 * it (or the runner's timing loop) with the kernel's loop inside, and that code runs the loop at
 * Maglev's speed for the rest of the process, while the same loop compiled alone is tiered up to
 * TurboFan on-stack. js `add` n = 77 777 ran 0.130 ms as a process's first kernel and 0.057 ms
 * once any other kernel had run first (a call site that has seen two callees inlines neither);
 * matmul 128³ 4.41 against 2.29 ms. A call through {@linkcode outOfLine}, whose one call site is
 * made megamorphic when this module loads, is never inlined by any tier, so a kernel runs at
 * the same speed whatever ran before it in the process, with or without `--no-maglev`.
 *
 * ```ts
 * import { outOfLine } from "./_out_of_line.ts";
 * const add = (a: number, b: number) => a + b;
 * console.log(outOfLine(add, 2, 3)); // 5
 * ```
 *
 * @module
 */

/**
 * Calls `loop` with `args` through a call site that no JIT tier inlines.
 *
 * @param loop A kernel's loop function.
 * @param args Its arguments.
 * @returns What `loop` returns.
 * @example
 * ```ts
 * import { outOfLine } from "./_out_of_line.ts";
 * const sum = (a: Float32Array) => a.reduce((s, x) => s + x, 0);
 * console.log(outOfLine(sum, Float32Array.of(1, 2, 3))); // 6
 * ```
 */
export function outOfLine<A extends unknown[], R>(loop: (...args: A) => R, ...args: A): R {
  return loop(...args);
}

/**
 * Distinct functions, more than V8's polymorphic call feedback holds (4): a call site that has
 * seen them all is megamorphic, a state it never leaves.
 */
const UNRELATED_CALLEES: readonly (() => number)[] = [
  () => 0,
  () => 1,
  () => 2,
  () => 3,
  () => 4,
  () => 5,
];
/** Rounds over those callees: more calls than V8 waits for before it allocates feedback (8). */
const PRIMING_ROUNDS = 16;

/**
 * Makes {@linkcode outOfLine}'s call site megamorphic. Runs when this module loads; the js runner
 * calls it again before each case, in case V8 flushed the function's feedback since.
 *
 * @example
 * ```ts
 * import { primeOutOfLine } from "./_out_of_line.ts";
 * primeOutOfLine();
 * ```
 */
export function primeOutOfLine(): void {
  for (let r = 0; r < PRIMING_ROUNDS; r++) {
    for (const callee of UNRELATED_CALLEES) outOfLine(callee);
  }
}

primeOutOfLine();
