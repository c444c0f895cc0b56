/**
 * Private: which decodes sampled through a calibration measured the decode its validation prices.
 * A sample names the kernels it ran (`kernelsKey`: the pair, each projection's gemv variant and the
 * softmax's lanes). One that ran exactly the validation's kernels counts; so does one whose
 * projections ran other variants that the report prices, all told, within
 * {@linkcode SAME_DECODE_SHARE} of the validation's step time: two gemv variants a few percent
 * apart trade places when a noisy point is measured again late in the run (a calibration here
 * kept 0 of 4 samples of one pair for that), and the decode they ran is the same one within
 * that share, against a measured decode that moves ×1.3–1.9 from run to run.
 *
 * ```ts
 * import { kernelsKey, pricedAlike } from "./_sample_match.ts";
 * const mine = { q_proj: "rpi=16", o_proj: "rpi=16" };
 * const key = kernelsKey("tiny-16m", "f32", { q_proj: "rpi=4", o_proj: "rpi=16" }, 64);
 * const launches = new Map([["q_proj", 4], ["o_proj", 4]]);
 * const price = (_name: string, variant: string) => (variant === "rpi=4" ? 0.21 : 0.2);
 * console.log(pricedAlike(key, { model: "tiny-16m", quant: "f32", variants: mine, lanes: 64 }, {
 *   launches, price, stepMs: 27,
 * })); // true: 4 × 0.01 ms of 27 ms
 * ```
 *
 * @module
 */

/**
 * Largest share of the validation's estimated step time by which the report may price a sample's
 * kernels apart from the validation's for the sample to count.
 */
export const SAME_DECODE_SHARE = 0.02;

/** What a decode ran: its pair, each projection's gemv variant, the softmax's lanes. */
export interface DecodeKernels {
  readonly model: string;
  readonly quant: string;
  /** Per projection kernel name, its gemv variant id. */
  readonly variants: Readonly<Record<string, string>>;
  readonly lanes: number;
}

/**
 * The key a decode's kernels are recorded under.
 *
 * @param model The model's name.
 * @param quant The weights' format.
 * @param variants Per projection kernel name, its gemv variant id.
 * @param lanes The softmax's lanes.
 * @returns The key.
 * @example
 * ```ts
 * import { kernelsKey } from "./_sample_match.ts";
 * console.log(kernelsKey("tiny-16m", "int4", { q_proj: "rpi=8" }, 64));
 * // '["tiny-16m","int4",{"q_proj":"rpi=8"},64]'
 * ```
 */
export function kernelsKey(
  model: string,
  quant: string,
  variants: Readonly<Record<string, string>>,
  lanes: number,
): string {
  return JSON.stringify([model, quant, variants, lanes]);
}

/**
 * How the report prices the validation's decode: per projection, its launches a step, a price of a
 * projection at a variant (ms a launch; null when the report cannot price that variant), and the
 * estimated step time.
 */
export interface DecodePricing {
  readonly launches: ReadonlyMap<string, number>;
  readonly price: (name: string, variant: string) => number | null;
  readonly stepMs: number;
}

/**
 * Whether a sample recorded under `key` ran the decode `mine` describes, as the report prices it:
 * the same pair and softmax lanes, the same projections, and the variants that differ priced
 * within {@linkcode SAME_DECODE_SHARE} of the step time in all.
 *
 * @param key The sample's kernels key ({@linkcode kernelsKey}).
 * @param mine The validation's kernels.
 * @param pricing How the report prices them.
 * @returns True when the sample counts.
 * @example
 * ```ts
 * import { pricedAlike } from "./_sample_match.ts";
 * const mine = { model: "m", quant: "f32", variants: {}, lanes: 64 };
 * const pricing = { launches: new Map(), price: () => null, stepMs: 10 };
 * console.log(pricedAlike("not json", mine, pricing)); // false
 * ```
 */
export function pricedAlike(key: string, mine: DecodeKernels, pricing: DecodePricing): boolean {
  const theirs = parseKey(key);
  if (theirs === null) return false;
  if (theirs.model !== mine.model || theirs.quant !== mine.quant) return false;
  if (theirs.lanes !== mine.lanes) return false;
  const names = Object.keys(mine.variants);
  if (!sameNames(names, Object.keys(theirs.variants))) return false;
  let apartMs = 0;
  for (const name of names) {
    const a = mine.variants[name]!;
    const b = theirs.variants[name]!;
    if (a === b) continue;
    const pa = pricing.price(name, a);
    const pb = pricing.price(name, b);
    const launches = pricing.launches.get(name);
    if (pa === null || pb === null || launches === undefined) return false;
    apartMs += launches * (pb - pa);
  }
  return Math.abs(apartMs) <= SAME_DECODE_SHARE * pricing.stepMs;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((n) => b.includes(n));
}

function parseKey(key: string): DecodeKernels | null {
  let value: unknown;
  try {
    value = JSON.parse(key);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 4) return null;
  const [model, quant, variants, lanes] = value;
  if (typeof model !== "string" || typeof quant !== "string" || typeof lanes !== "number") {
    return null;
  }
  if (typeof variants !== "object" || variants === null || Array.isArray(variants)) return null;
  const entries = Object.entries(variants);
  if (!entries.every(([, v]) => typeof v === "string")) return null;
  return { model, quant, variants: Object.fromEntries(entries) as Record<string, string>, lanes };
}
