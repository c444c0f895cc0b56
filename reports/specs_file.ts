/**
 * The vendor peak figures file, `reports/specs.json` (written by `deno task specs:import`): its
 * schema, reading it, and finding the entry of a report's adapter, so the report page can set
 * the datasheet's peaks beside the measured ones.
 *
 * @example
 * ```ts
 * import { specForAdapter } from "./specs_file.ts";
 * const specs = { "GeForce RTX 3080": { fp32Tflops: 29.8, fp16Tflops: 29.8, memoryGBps: 760, source: "s" } };
 * console.log(specForAdapter(specs, { description: "NVIDIA GeForce RTX 3080", device: "" })?.model); // "GeForce RTX 3080"
 * ```
 *
 * @module
 */
// deno-lint-ignore no-import-prefix
import { z } from "npm:zod@4.6.7";

const rateOrNull = z.number().nonnegative().nullable();

/**
 * The specs file: when it was generated and model → vendor peak figures.
 *
 * @example
 * ```ts
 * import { SpecsFileSchema } from "./specs_file.ts";
 * console.log(SpecsFileSchema.safeParse({ generated: "2026-01-01T00:00:00Z", specs: {} }).success); // true
 * ```
 */
export const SpecsFileSchema = z.strictObject({
  generated: z.iso.datetime({ offset: true }),
  specs: z.record(
    z.string().min(1).max(256),
    z.strictObject({
      fp32Tflops: rateOrNull,
      fp16Tflops: rateOrNull,
      memoryGBps: rateOrNull,
      source: z.string().max(4096),
    }),
  ),
});

/**
 * The parsed specs file.
 *
 * @example
 * ```ts
 * import type { SpecsFile } from "./specs_file.ts";
 * const f: SpecsFile = { generated: "2026-01-01T00:00:00Z", specs: {} };
 * ```
 */
export type SpecsFile = z.infer<typeof SpecsFileSchema>;

/**
 * One model's figures, with its name.
 *
 * @example
 * ```ts
 * import type { SpecEntry } from "./specs_file.ts";
 * const e: SpecEntry = { model: "X", fp32Tflops: 1, fp16Tflops: null, memoryGBps: 100, source: "s" };
 * ```
 */
export type SpecEntry = SpecsFile["specs"][string] & { readonly model: string };

/** The specs file is a few hundred models; anything much larger is not one. */
const MAX_SPECS_BYTES = 8 * 1024 * 1024;

/**
 * Reads and validates a specs file.
 *
 * @param path The file, e.g. `reports/specs.json`.
 * @returns The file, or null when it does not exist.
 * @throws {TypeError} naming the file and the first invalid field, or when it is too large.
 * @example
 * ```ts ignore
 * import { readSpecsFile } from "./specs_file.ts";
 * console.log(Object.keys((await readSpecsFile("reports/specs.json"))?.specs ?? {}).length);
 * ```
 */
export async function readSpecsFile(path: string): Promise<SpecsFile | null> {
  let text: string;
  try {
    if ((await Deno.stat(path)).size > MAX_SPECS_BYTES) {
      throw new TypeError(`Cannot read "${path}": larger than ${MAX_SPECS_BYTES} bytes`);
    }
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new TypeError(
      `Cannot read "${path}": not valid JSON (${e instanceof Error ? e.message : e})`,
    );
  }
  const parsed = SpecsFileSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new TypeError(
      `Cannot read "${path}": "${first?.path.join(".") ?? ""}" ${first?.message ?? "is invalid"}`,
    );
  }
  return parsed.data;
}

/** Words an adapter's name carries that a datasheet's model name leaves out. */
const VENDOR_WORDS = new Set(["nvidia", "amd", "ati", "intel", "apple", "qualcomm", "arm"]);

function normalise(name: string): string {
  return name.toLowerCase().replace(/\((r|tm)\)|®|™/g, " ").replace(/[^a-z0-9]+/g, " ").trim()
    .split(" ").filter((w, i) => !(i === 0 && VENDOR_WORDS.has(w))).join(" ");
}

/**
 * The specs entry of an adapter: the model whose name is the adapter's description (or device
 * name) once the vendor's name and (R)/(TM) marks are dropped. An exact match only, so an
 * "RTX 3080 Ti" is never given an "RTX 3080"'s figures.
 *
 * @param specs The specs file's model map.
 * @param adapter The report's adapter names.
 * @returns The entry, or null when the file does not list the adapter.
 * @example
 * ```ts
 * import { specForAdapter } from "./specs_file.ts";
 * const specs = { "Radeon RX 7900 XTX": { fp32Tflops: 61, fp16Tflops: 122, memoryGBps: 960, source: "s" } };
 * console.log(specForAdapter(specs, { description: "AMD Radeon RX 7900 XTX", device: "" }) !== null); // true
 * console.log(specForAdapter(specs, { description: "llvmpipe (LLVM 15.0.6, 256 bits)", device: "" })); // null
 * ```
 */
export function specForAdapter(
  specs: SpecsFile["specs"],
  adapter: { readonly description: string; readonly device: string },
): SpecEntry | null {
  const names = new Set(
    [adapter.description, adapter.device].map(normalise).filter((n) => n !== ""),
  );
  for (const [model, figures] of Object.entries(specs)) {
    if (names.has(normalise(model))) return { model, ...figures };
  }
  return null;
}
