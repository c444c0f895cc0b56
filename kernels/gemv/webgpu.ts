/**
 * WGSL gemv for f32, f16, q8 and q4. A workgroup is `tpr` × `rpw` invocations: `rpw` rows, each
 * summed by `tpr` invocations striding along it and combined by a tree reduction in workgroup
 * memory (`tpr: 1` is one invocation per row, no reduction). With `u` > 1 an invocation takes `u`
 * consecutive chunks per loop trip, unrolled, which amortises the per-trip loop and bounds-check
 * overhead that dominates on llvmpipe (a CPU pretending to be a GPU).
 *
 * - f32/f16: `vec4` reads W and x as `vec4` (needs cols % 4 == 0), otherwise scalars; f16 has
 *   `acc: "f32"` (convert, accumulate in f32) and `acc: "f16"` (f16 arithmetic throughout).
 * - q8/q4: W is read as `u32` words (4 int8 or 8 int4 weights), x as `vec4<f32>`. A row that
 *   does not start on a word boundary (cols % 4 != 0 for q8, ceil(cols / 2) % 4 != 0 for q4) gets
 *   each word funnel-shifted from two; lanes past the row's end are zeroed in x, so any shape runs.
 *   `unpack: "builtin"` uses `unpack4xI8`/`unpack4xU8` (WGSL `packed_4x8_integer_dot_product`),
 *   `unpack: "bits"` shifts and sign-extends by hand.
 *
 * W and x are never indexed past their logical end, except that `vec4` views of x reach into the
 * runner's zero padding of the last 16 bytes, whose lanes are masked out.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WebGpuImpl, WgslProgram } from "../types.ts";
import { gemvDims, groupsPerRow, q4RowBytes } from "./_layout.ts";

/** Workgroup counts past this go to a second dispatch dimension (WebGPU's guaranteed minimum). */
const MAX_GROUPS = 65535;
/** The WGSL language feature that provides `unpack4xI8` and `unpack4xU8`. */
const PACKED_FEATURE = "packed_4x8_integer_dot_product";

interface Params {
  readonly tpr: number;
  readonly rpw: number;
  readonly vec4: boolean;
  readonly acc: "f32" | "f16";
  readonly unpack: "builtin" | "bits";
  /** Consecutive chunks an invocation takes per loop trip (unrolled). */
  readonly u: number;
}

const VARIANTS: readonly Variant[] = [
  { tpr: 32, rpw: 4, vec4: true, u: 4 },
  { tpr: 64, rpw: 1, vec4: true, u: 4 },
  { tpr: 64, rpw: 1, vec4: true },
  { tpr: 32, rpw: 4, vec4: true },
  { tpr: 128, rpw: 1, vec4: true },
  { tpr: 1, rpw: 64, vec4: true },
  { tpr: 64, rpw: 1, vec4: false },
  { tpr: 1, rpw: 64, vec4: false },
  { tpr: 32, rpw: 4, vec4: true, u: 4, acc: "f16" },
  { tpr: 64, rpw: 1, vec4: true, acc: "f16" },
  { tpr: 32, rpw: 4, vec4: true, u: 4, unpack: "bits" },
  { tpr: 64, rpw: 1, vec4: true, unpack: "bits" },
];

function params(variant: Variant): Params {
  const { tpr, rpw } = variant;
  const pow2 = (v: unknown): v is number =>
    typeof v === "number" && Number.isInteger(v) && v >= 1 && (v & (v - 1)) === 0;
  if (!pow2(tpr) || !pow2(rpw) || tpr * rpw > 256) {
    throw new RangeError(
      `Invalid gemv webgpu variant ${JSON.stringify(variant)}: ` +
        "tpr and rpw must be powers of two with tpr × rpw <= 256",
    );
  }
  const acc = variant.acc ?? "f32";
  if (acc !== "f32" && acc !== "f16") {
    throw new RangeError(`gemv variant acc is ${JSON.stringify(acc)}: use "f32" or "f16"`);
  }
  const unpack = variant.unpack ?? "builtin";
  if (unpack !== "builtin" && unpack !== "bits") {
    throw new RangeError(
      `gemv variant unpack is ${JSON.stringify(unpack)}: use "builtin" or "bits"`,
    );
  }
  const u = variant.u ?? 1;
  if (u !== 1 && u !== 2 && u !== 4 && u !== 8) {
    throw new RangeError(`gemv variant u is ${JSON.stringify(u)}: use 1, 2, 4 or 8`);
  }
  return { tpr, rpw, vec4: variant.vec4 === true, acc, unpack, u };
}

function hasPackedBuiltins(): boolean {
  // Not in Deno's GPU typings yet; absent on the GL backend, whose WGSL lacks the builtins.
  const nav = globalThis.navigator as
    | { gpu?: { wgslLanguageFeatures?: ReadonlySet<string> } }
    | undefined;
  const features = nav?.gpu?.wgslLanguageFeatures;
  return features?.has(PACKED_FEATURE) ?? false;
}

function quantized(dtype: Dtype): dtype is "q8" | "q4" {
  return dtype === "q8" || dtype === "q4";
}

/**
 * The WebGPU gemv. Uniforms: rows, cols, workgroups along x (a second dimension takes the rest).
 *
 * @example
 * ```ts
 * import { gemvWebGpu } from "./webgpu.ts";
 * const p = gemvWebGpu.program({ rows: 100, cols: 64 }, "f32", { tpr: 32, rpw: 4, vec4: true });
 * console.log(p.workgroups); // [25, 1, 1]
 * ```
 */
export const gemvWebGpu: WebGpuImpl = {
  variants: VARIANTS,
  features: { f16: ["shader-f16"] },
  unsupported(shape: Shape, dtype: Dtype, variant: Variant): string | null {
    const p = params(variant);
    const { cols } = gemvDims(shape);
    if (p.acc === "f16" && dtype !== "f16") {
      return `acc=f16 is f16 arithmetic on f16 operands, got ${dtype}`;
    }
    if (quantized(dtype)) {
      if (!p.vec4) {
        return `${dtype} weights are always read as u32 words: vec4=false is f32/f16 only`;
      }
      if (p.unpack === "builtin" && !hasPackedBuiltins()) {
        return `This WGSL lacks "${PACKED_FEATURE}" (unpack4xI8): use unpack=bits`;
      }
    } else {
      if (p.unpack !== "builtin") return `unpack=${p.unpack} is for q8/q4 weights, got ${dtype}`;
      if (p.vec4 && cols % 4 !== 0) return `vec4 loads need cols % 4 == 0, got cols=${cols}`;
    }
    return null;
  },
  program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram {
    const p = params(variant);
    const { rows, cols } = gemvDims(shape);
    const total = Math.ceil(rows / p.rpw);
    const gx = Math.min(total, MAX_GROUPS);
    const gy = Math.ceil(total / gx);
    if (gy > MAX_GROUPS) {
      throw new RangeError(
        `gemv with ${rows} rows needs ${total} workgroups: use more rows per workgroup`,
      );
    }
    const b = quantized(dtype) ? quantizedBody(dtype, cols, p) : floatBody(dtype, p);
    const { bindings, layout } = b;
    const acc = dtype === "f16" ? p.acc : "f32";
    const out = dtype === "f16" ? "f16" : "f32";
    const n = bindings.length;
    const code = `${dtype === "f16" ? "enable f16;\n" : ""}
struct Dims { rows: u32, cols: u32, groupsX: u32, pad: u32 }
${bindings.map((b, i) => `@group(0) @binding(${i}) var<storage, read> ${b};`).join("\n")}
@group(0) @binding(${n}) var<storage, read_write> y: array<${out}>;
@group(0) @binding(${n + 1}) var<uniform> dims: Dims;
${p.tpr > 1 ? `var<workgroup> red: array<${acc}, ${p.tpr * p.rpw}>;` : ""}

@compute @workgroup_size(${p.tpr}, ${p.rpw})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let row = (wid.y * dims.groupsX + wid.x) * ${p.rpw}u + lid.y;
  var acc = ${acc}(0);
  if (row < dims.rows) {
${rowLoop(b, p)}
  }
${reduction(p, out)}
}
`;
    const key =
      `gemv|${dtype}|tpr=${p.tpr}|rpw=${p.rpw}|vec4=${p.vec4}|acc=${acc}|unpack=${p.unpack}|u=${p.u}|${layout}`;
    return { code, workgroups: [gx, gy, 1], uniforms: new Uint32Array([rows, cols, gx, 0]), key };
  },
};

/** Combines the `tpr` partial sums of each row and writes y. */
function reduction(p: Params, out: string): string {
  if (p.tpr === 1) return `  if (row < dims.rows) { y[row] = ${out}(acc); }`;
  const steps: string[] = [];
  for (let s = p.tpr / 2; s >= 1; s /= 2) {
    steps.push(`  if (lid.x < ${s}u) { red[i] += red[i + ${s}u]; }\n  workgroupBarrier();`);
  }
  return `  let i = lid.y * ${p.tpr}u + lid.x;
  red[i] = acc;
  workgroupBarrier();
${steps.join("\n")}
  if (lid.x == 0u && row < dims.rows) { y[row] = ${out}(red[i]); }`;
}

interface Body {
  readonly bindings: readonly string[];
  /** What of the shape the code depends on, for the cache key. */
  readonly layout: string;
  /** Statements run once per row before the loop. */
  readonly setup: string;
  /** Number of chunks in a row (a WGSL u32 expression). */
  readonly count: string;
  /** Statements adding chunk `j` (a `u32` in scope) of the row to `acc`. */
  readonly step: string;
}

/**
 * The row loop: invocation `lid.x` takes chunks `u` at a time, blocks of `u` interleaved across
 * the `tpr` invocations; full blocks run unrolled, the one partial block chunk by chunk.
 */
function rowLoop(b: Body, p: Params): string {
  const indent = (code: string, pad: string) => code.replace(/^/gm, pad);
  if (p.u === 1) {
    return `${b.setup}
    for (var j = lid.x; j < ${b.count}; j += ${p.tpr}u) {
${indent(b.step, "  ")}
    }`;
  }
  const unrolled = Array.from(
    { length: p.u },
    (_, t) =>
      `      {
        let j = j0 + ${t}u;
${indent(b.step, "    ")}
      }`,
  );
  return `${b.setup}
    let count = ${b.count};
    var j0 = lid.x * ${p.u}u;
    for (; j0 + ${p.u}u <= count; j0 += ${p.tpr * p.u}u) {
${unrolled.join("\n")}
    }
    for (var j = j0; j < min(j0 + ${p.u}u, count); j++) {
${indent(b.step, "  ")}
    }`;
}

function floatBody(dtype: Dtype, p: Params): Body {
  const t = dtype === "f16" ? "f16" : "f32";
  const acc = dtype === "f16" ? p.acc : "f32";
  if (!p.vec4) {
    return {
      bindings: [`w: array<${t}>`, `x: array<${t}>`],
      layout: "scalar",
      setup: "    let base = row * dims.cols;",
      count: "dims.cols",
      step: `    acc += ${acc}(w[base + j]) * ${acc}(x[j]);`,
    };
  }
  return {
    bindings: [`w: array<vec4<${t}>>`, `x: array<vec4<${t}>>`],
    layout: "vec4",
    setup: "    let base = row * (dims.cols / 4u);",
    count: "dims.cols / 4u",
    step: `    acc += dot(vec4<${acc}>(w[base + j]), vec4<${acc}>(x[j]));`,
  };
}

function quantizedBody(dtype: "q8" | "q4", cols: number, p: Params): Body {
  const perWord = dtype === "q8" ? 4 : 8;
  const rowBytes = dtype === "q8" ? cols : q4RowBytes(cols);
  const aligned = rowBytes % 4 === 0;
  const ragged = cols % perWord !== 0;
  const groups = groupsPerRow(cols);
  // Word j of the row, funnel-shifted from two words when the row starts mid-word.
  const word = aligned
    ? `    let word = w[row * ${rowBytes / 4}u + j];`
    : `    let b = row * ${rowBytes}u + 4u * j;
    let sh = (b & 3u) * 8u;
    let lo = w[b >> 2u];
    let hi = w[min((b >> 2u) + 1u, lastWord)];
    let word = select((lo >> sh) | (hi << (32u - sh)), lo, sh == 0u);`;
  const lanes = "vec4<u32>(0u, 1u, 2u, 3u)";
  const masked = (x: string, first: string) =>
    ragged
      ? `select(vec4<f32>(0.0), ${x}, vec4<u32>(${first}) + ${lanes} < vec4<u32>(dims.cols))`
      : x;
  let dot: string;
  if (dtype === "q8") {
    const q = p.unpack === "builtin"
      ? "vec4<f32>(unpack4xI8(word))"
      : "vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(word) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u))";
    dot = `    let xv = ${masked("x[j]", "4u * j")};
    acc += scales[srow + j / 8u] * dot(${q}, xv);`;
  } else {
    const [ev, od] = p.unpack === "builtin"
      ? [
        "vec4<f32>(unpack4xU8(word & 0x0f0f0f0fu))",
        "vec4<f32>(unpack4xU8((word >> 4u) & 0x0f0f0f0fu))",
      ]
      : [
        "vec4<f32>((vec4<u32>(word) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u))",
        "vec4<f32>((vec4<u32>(word) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u))",
      ];
    dot = `    let xa = ${masked("x[2u * j]", "8u * j")};
    let xb = ${masked(`x[min(2u * j + 1u, ${Math.ceil(cols / 4) - 1}u)]`, "8u * j + 4u")};
    let s = dot(${ev} - 8.0, vec4<f32>(xa.x, xa.z, xb.x, xb.z)) +
      dot(${od} - 8.0, vec4<f32>(xa.y, xa.w, xb.y, xb.w));
    acc += scales[srow + j / 4u] * s;`;
  }
  const lastWord = aligned ? "" : `    let lastWord = (dims.rows * ${rowBytes}u - 1u) >> 2u;\n`;
  return {
    bindings: ["w: array<u32>", "scales: array<f32>", "x: array<vec4<f32>>"],
    layout: `cols=${cols}`,
    setup: `${lastWord}    let srow = row * ${groups}u;`,
    count: `${Math.ceil(cols / perWord)}u`,
    step: `${word}\n${dot}`,
  };
}
