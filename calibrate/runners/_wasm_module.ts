/**
 * Assembles WAT to a compiled `WebAssembly.Module` at run time, so gpucal builds from source on a
 * fresh machine with no build step. Modules are cached by their WAT text.
 *
 * @module
 */
// Library code imports npm packages by full specifier, so it works without this deno.json.
// deno-lint-ignore no-import-prefix
import wabtInit from "npm:wabt@1.0.39";
import { UnsupportedError } from "../runner.ts";

/** Wasm proposals kernels may use: all are in WebAssembly 3.0 and shipped by V8. */
const FEATURES = { simd: true, threads: true, relaxed_simd: true, multi_memory: true } as const;

let wabt: ReturnType<typeof wabtInit> | undefined;
const cache = new Map<string, Promise<WebAssembly.Module>>();

// One relaxed-SIMD instruction, to tell "this engine lacks it" from a bug in a kernel.
const RELAXED_PROBE = `(module (func (result v128)
  (f32x4.relaxed_madd (v128.const i32x4 0 0 0 0) (v128.const i32x4 0 0 0 0) (v128.const i32x4 0 0 0 0))))`;

/**
 * The compiled module for `wat`, and how long getting it took.
 *
 * @param wat Module text (SIMD, threads, relaxed SIMD and multi-memory allowed).
 * @returns The module and the milliseconds spent assembling and compiling (near 0 when cached).
 * @throws {UnsupportedError} when the text uses relaxed SIMD and this engine lacks it.
 * @throws {Error} from the assembler or compiler when the text is invalid.
 * @example
 * ```ts
 * import { compileWat } from "./_wasm_module.ts";
 * const { module } = await compileWat("(module (func (export \"run\")))");
 * console.log(WebAssembly.Module.exports(module)[0]?.name); // "run"
 * ```
 */
export async function compileWat(wat: string): Promise<{ module: WebAssembly.Module; ms: number }> {
  const start = performance.now();
  let pending = cache.get(wat);
  if (!pending) {
    pending = assemble(wat);
    cache.set(wat, pending);
    // A failed compile must not poison the cache for a later, fixed attempt.
    pending.catch(() => cache.delete(wat));
  }
  const module = await pending;
  return { module, ms: performance.now() - start };
}

async function toBinary(wat: string): Promise<Uint8Array<ArrayBuffer>> {
  wabt ??= wabtInit();
  const parsed = (await wabt).parseWat("kernel.wat", wat, FEATURES);
  try {
    return parsed.toBinary({}).buffer as Uint8Array<ArrayBuffer>;
  } finally {
    parsed.destroy();
  }
}

async function assemble(wat: string): Promise<WebAssembly.Module> {
  const binary = await toBinary(wat);
  try {
    return await WebAssembly.compile(binary);
  } catch (error) {
    if (wat.includes("relaxed_") && !WebAssembly.validate(await toBinary(RELAXED_PROBE))) {
      throw new UnsupportedError(
        "This engine lacks WebAssembly relaxed SIMD: use a variant with fma=false",
      );
    }
    throw error;
  }
}
