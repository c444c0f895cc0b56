/**
 * WGSL gemv for f32, f16, q8 and q4. A workgroup is `tpr` × `rpw` invocations: `rpw` × `rpi`
 * rows, each summed by `tpr` invocations striding along it and combined by a tree reduction in
 * workgroup memory (`tpr: 1` is one invocation per `rpi` rows, no reduction). With `u` > 1 an invocation takes `u`
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
 * With `rpi` > 1 (rows per invocation, `tpr: 1`) an invocation sums `rpi` whole rows at once:
 * each chunk of x is loaded once and used for `rpi` rows, and there is no workgroup reduction.
 * This is the fast layout on llvmpipe (Mesa's CPU driver, behind lavapipe), where every
 * storage-buffer access is a loop over the 8 SIMD lanes with a scalar load and a bounds test per
 * component: loading x once per 8 rows instead of once per row nearly halves the accesses per
 * weight for f32 (1.125 instead of 2 per weight) and cuts q4's, whose x loads outnumber its
 * weight-word loads 8 to 1, by about four; a tree reduction in workgroup memory adds barriers,
 * which llvmpipe runs as coroutine switches. Its rows are read as `vec4` whatever cols: when a
 * row does not start on a vec4 boundary (cols % 4 != 0) each vec4 is funnel-shifted from the
 * previous load and the next, and the lanes past the row's end multiply x's zero padding. For
 * q8/q4 the group scale is loaded once per group of 32 weights where the row has whole groups,
 * and when every group is whole (cols % 32 == 0) a group's words come as `vec4<u32>` loads,
 * which pay the per-lane part of an access once per four words.
 *
 * No index goes past a buffer's end: `vec4` views reach at most into the runner's zero padding
 * of the last 16 bytes (W's funnel-shifted loads are clamped to its last vec4), and x's lanes
 * past cols are zero or masked out, so W's lanes past a row's end, which belong to the next row
 * or the padding, add nothing.
 *
 * @module
 */
import {
  type Dtype,
  QUANT_GROUP_SIZE,
  type Shape,
  type Variant,
  type WebGpuImpl,
  type WgslProgram,
} from "../types.ts";
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
  /** Rows summed by one invocation (only with `tpr: 1`). */
  readonly rpi: number;
}

const VARIANTS: readonly Variant[] = [
  { tpr: 1, rpw: 32, rpi: 8, vec4: true },
  { tpr: 1, rpw: 32, rpi: 8, vec4: true, unpack: "bits" },
  { tpr: 1, rpw: 64, rpi: 8, vec4: true },
  { tpr: 1, rpw: 16, rpi: 4, vec4: true },
  { tpr: 1, rpw: 16, rpi: 16, vec4: true },
  { tpr: 1, rpw: 32, rpi: 8, vec4: true, acc: "f16" },
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
  const rpi = variant.rpi ?? 1;
  if (rpi !== 1 && rpi !== 2 && rpi !== 4 && rpi !== 8 && rpi !== 16) {
    throw new RangeError(`gemv variant rpi is ${JSON.stringify(rpi)}: use 1, 2, 4, 8 or 16`);
  }
  if (rpi > 1 && (tpr !== 1 || u !== 1 || variant.vec4 !== true)) {
    throw new RangeError(
      `Invalid gemv webgpu variant ${JSON.stringify(variant)}: rpi > 1 needs tpr 1, u 1 and vec4`,
    );
  }
  return { tpr, rpw, vec4: variant.vec4 === true, acc, unpack, u, rpi };
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
      if (p.vec4 && p.rpi === 1 && cols % 4 !== 0) {
        return `vec4 loads need cols % 4 == 0, got cols=${cols}`;
      }
    }
    return null;
  },
  program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram {
    const p = params(variant);
    const { rows, cols } = gemvDims(shape);
    const total = Math.ceil(rows / (p.rpw * p.rpi));
    const gx = Math.min(total, MAX_GROUPS);
    const gy = Math.ceil(total / gx);
    if (gy > MAX_GROUPS) {
      throw new RangeError(
        `gemv with ${rows} rows needs ${total} workgroups: use more rows per workgroup`,
      );
    }
    const acc = dtype === "f16" ? p.acc : "f32";
    const out = dtype === "f16" ? "f16" : "f32";
    const uniforms = new Uint32Array([rows, cols, gx, 0]);
    const name =
      `gemv|${dtype}|tpr=${p.tpr}|rpw=${p.rpw}|vec4=${p.vec4}|acc=${acc}|unpack=${p.unpack}|u=${p.u}`;
    if (p.rpi > 1) {
      const r = quantized(dtype) ? quantizedRows(dtype, cols, p) : floatRows(dtype, cols, p);
      return {
        code: rowsShader(dtype, out, p, r),
        workgroups: [gx, gy, 1],
        uniforms,
        key: `${name}|rpi=${p.rpi}|${r.layout}`,
      };
    }
    const b = quantized(dtype) ? quantizedBody(dtype, cols, p) : floatBody(dtype, p);
    const { bindings, layout } = b;
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
    return { code, workgroups: [gx, gy, 1], uniforms, key: `${name}|${layout}` };
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

/** The four int8 weights of `word` as a vec4<f32>. */
function unpackQ8(p: Params, word: string): string {
  return p.unpack === "builtin"
    ? `vec4<f32>(unpack4xI8(${word}))`
    : `vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(${word}) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u))`;
}

/** The even and odd nibbles of `word` (weights 0, 2, 4, 6 and 1, 3, 5, 7), offset by 8. */
function unpackQ4(p: Params, word: string): [string, string] {
  return p.unpack === "builtin"
    ? [
      `vec4<f32>(unpack4xU8(${word} & 0x0f0f0f0fu))`,
      `vec4<f32>(unpack4xU8((${word} >> 4u) & 0x0f0f0f0fu))`,
    ]
    : [
      `vec4<f32>((vec4<u32>(${word}) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u))`,
      `vec4<f32>((vec4<u32>(${word}) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u))`,
    ];
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
    dot = `    let xv = ${masked("x[j]", "4u * j")};
    acc += scales[srow + j / 8u] * dot(${unpackQ8(p, "word")}, xv);`;
  } else {
    const [ev, od] = unpackQ4(p, "word");
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

/** What a rows-per-invocation kernel needs from its dtype. */
interface Rows {
  readonly bindings: readonly string[];
  /** What of the shape the code depends on, for the cache key. */
  readonly layout: string;
  /** Module-scope helper functions. */
  readonly helpers: string;
  /** Statements leaving row `k`'s sum in `acc${k}`, given `r${k}` (clamped row index) for each k. */
  readonly body: string;
}

/** Statement `f(k)` for every row k of an invocation, one per line. */
function perRow(p: Params, f: (k: number) => string): string {
  return Array.from({ length: p.rpi }, (_, k) => f(k)).join("\n");
}

function rowsShader(dtype: Dtype, out: string, p: Params, r: Rows): string {
  const n = r.bindings.length;
  return `${dtype === "f16" ? "enable f16;\n" : ""}
struct Dims { rows: u32, cols: u32, groupsX: u32, pad: u32 }
${r.bindings.map((b, i) => `@group(0) @binding(${i}) var<storage, read> ${b};`).join("\n")}
@group(0) @binding(${n}) var<storage, read_write> y: array<${out}>;
@group(0) @binding(${n + 1}) var<uniform> dims: Dims;
${r.helpers}
@compute @workgroup_size(${p.rpw})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let row0 = ((wid.y * dims.groupsX + wid.x) * ${p.rpw}u + lid) * ${p.rpi}u;
  if (row0 >= dims.rows) { return; }
${perRow(p, (k) => `  let r${k} = min(row0 + ${k}u, dims.rows - 1u);`)}
${r.body}
${perRow(p, (k) => `  if (row0 + ${k}u < dims.rows) { y[row0 + ${k}u] = ${out}(acc${k}); }`)}
}
`;
}

/**
 * f32/f16 rows as vec4s. A row starting mid-vec4 (cols % 4 != 0) keeps its previous load and
 * funnel-shifts each vec4 out of it and the next; x's zero padding cancels the lanes past the end.
 */
function floatRows(dtype: Dtype, cols: number, p: Params): Rows {
  const t = dtype === "f16" ? "f16" : "f32";
  const a = dtype === "f16" ? p.acc : "f32";
  const bindings = [`w: array<vec4<${t}>>`, `x: array<vec4<${t}>>`];
  const sums = perRow(p, (k) => `  let acc${k} = dot(s${k}, vec4<${a}>(1));`);
  if (cols % 4 === 0) {
    return {
      bindings,
      layout: "vec4",
      helpers: "",
      body: `  let c4 = dims.cols / 4u;
${perRow(p, (k) => `  let b${k} = r${k} * c4;\n  var s${k} = vec4<${a}>(0);`)}
  for (var j = 0u; j < c4; j++) {
    let xv = vec4<${a}>(x[j]);
${perRow(p, (k) => `    s${k} += vec4<${a}>(w[b${k} + j]) * xv;`)}
  }
${sums}`,
    };
  }
  return {
    bindings,
    layout: "funnel",
    helpers: `
/** Elements o..o+3 of the eight in lo, hi. */
fn funnel(lo: vec4<${t}>, hi: vec4<${t}>, o: u32) -> vec4<${t}> {
  let s1 = vec4<${t}>(lo.yzw, hi.x);
  let s2 = vec4<${t}>(lo.zw, hi.xy);
  let s3 = vec4<${t}>(lo.w, hi.xyz);
  return select(select(select(lo, s1, o == 1u), s2, o == 2u), s3, o == 3u);
}
`,
    body: `  let c4 = (dims.cols + 3u) / 4u;
  let last = (dims.rows * dims.cols + 3u) / 4u - 1u;
${
      perRow(p, (k) =>
        `  let b${k} = r${k} * dims.cols / 4u;
  let o${k} = r${k} * dims.cols % 4u;
  var lo${k} = w[b${k}];
  var s${k} = vec4<${a}>(0);`)
    }
  for (var j = 0u; j < c4; j++) {
    let xv = vec4<${a}>(x[j]);
${
      perRow(p, (k) =>
        `    let hi${k} = w[min(b${k} + j + 1u, last)];
    s${k} += vec4<${a}>(funnel(lo${k}, hi${k}, o${k})) * xv;
    lo${k} = hi${k};`)
    }
  }
${sums}`,
  };
}

/**
 * q8/q4 rows: x is loaded once per word for all the invocation's rows; over a row's whole groups
 * the scale is applied once per group, and the last, partial group masks x past the row's end.
 */
function quantizedRows(dtype: "q8" | "q4", cols: number, p: Params): Rows {
  const perWord = dtype === "q8" ? 4 : 8;
  const rowBytes = dtype === "q8" ? cols : q4RowBytes(cols);
  const aligned = rowBytes % 4 === 0;
  const groups = groupsPerRow(cols);
  const wordsPerGroup = QUANT_GROUP_SIZE / perWord;
  const words = Math.ceil(cols / perWord);
  const whole = Math.floor(cols / QUANT_GROUP_SIZE);
  const lastX = Math.ceil(cols / 4) - 1;
  // Rows of whole groups start on 16 bytes: a group's words come as vec4<u32>s, one load per 4.
  const wide = cols % QUANT_GROUP_SIZE === 0;
  const setup = perRow(
    p,
    (k) =>
      aligned
        ? `  let wb${k} = r${k} * ${
          rowBytes / (wide ? 16 : 4)
        }u;\n  let sr${k} = r${k} * ${groups}u;\n  var acc${k} = 0.0;`
        : `  let byte${k} = r${k} * ${rowBytes}u;
  let wb${k} = byte${k} >> 2u;
  let sh${k} = (byte${k} & 3u) * 8u;
  let sr${k} = r${k} * ${groups}u;
  var acc${k} = 0.0;`,
  );
  const scalarWord = (k: number, j: string) =>
    aligned
      ? `w[wb${k} + ${j}]`
      : `shifted(w[wb${k} + ${j}], w[min(wb${k} + ${j} + 1u, lastWord)], sh${k})`;
  const lanes = "vec4<u32>(0u, 1u, 2u, 3u)";
  const mask = (v: string, first: string, on: boolean) =>
    on ? `select(vec4<f32>(0.0), ${v}, vec4<u32>(${first}) + ${lanes} < vec4<u32>(${cols}u))` : v;
  // Statements adding word j of every row to t0.., x loaded once for all rows.
  const step = (j: string, masked: boolean, word: (k: number) => string) => {
    if (dtype === "q8") {
      return `    {
      let xv = ${mask(`x[${j}]`, `4u * (${j})`, masked)};
${perRow(p, (k) => `      t${k} += dot(${unpackQ8(p, word(k))}, xv);`)}
    }`;
    }
    return `    {
      let xa = ${mask(`x[2u * (${j})]`, `8u * (${j})`, masked)};
      let xb = ${mask(`x[min(2u * (${j}) + 1u, ${lastX}u)]`, `8u * (${j}) + 4u`, masked)};
      let xe = vec4<f32>(xa.x, xa.z, xb.x, xb.z);
      let xo = vec4<f32>(xa.y, xa.w, xb.y, xb.w);
${
      perRow(p, (k) => {
        const [ev, od] = unpackQ4(p, `wd${k}`);
        return `      let wd${k} = ${
          word(k)
        };\n      t${k} += dot(${ev} - 8.0, xe) + dot(${od} - 8.0, xo);`;
      })
    }
    }`;
  };
  const zero = perRow(p, (k) => `    var t${k} = 0.0;`);
  const vecs = wordsPerGroup / 4;
  const loads = !wide ? "" : perRow(
    p,
    (k) =>
      Array.from(
        { length: vecs },
        (_, v) => `    let wv${k}_${v} = w[wb${k} + g * ${vecs}u + ${v}u];`,
      ).join("\n"),
  );
  const groupWord = (i: number) => (k: number) =>
    wide ? `wv${k}_${i >> 2}.${"xyzw"[i & 3]}` : scalarWord(k, `g * ${wordsPerGroup}u + ${i}u`);
  const wholeGroups = whole === 0 ? "" : `  for (var g = 0u; g < ${whole}u; g++) {
${zero}
${loads}
${
    Array.from(
      { length: wordsPerGroup },
      (_, i) => step(`g * ${wordsPerGroup}u + ${i}u`, false, groupWord(i)),
    ).join("\n")
  }
${perRow(p, (k) => `    acc${k} += scales[sr${k} + g] * t${k};`)}
  }`;
  const first = whole * wordsPerGroup;
  const partial = first >= words ? "" : `  {
${zero}
    for (var j = ${first}u; j < ${words}u; j++) {
${step("j", true, (k) => scalarWord(k, "j"))}
    }
${perRow(p, (k) => `    acc${k} += scales[sr${k} + ${whole}u] * t${k};`)}
  }`;
  return {
    bindings: [
      `w: array<${wide ? "vec4<u32>" : "u32"}>`,
      "scales: array<f32>",
      "x: array<vec4<f32>>",
    ],
    layout: `cols=${cols}`,
    helpers: aligned ? "" : `
/** The word starting sh bits into lo, the rest from hi. */
fn shifted(lo: u32, hi: u32, sh: u32) -> u32 {
  return select((lo >> sh) | (hi << (32u - sh)), lo, sh == 0u);
}
`,
    body: `${aligned ? "" : `  let lastWord = (dims.rows * ${rowBytes}u - 1u) >> 2u;\n`}${setup}
${wholeGroups}
${partial}`,
  };
}
