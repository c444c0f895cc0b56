/**
 * The synthetic decode's non-gemv kernels as programs of the one WebGPU engine
 * (`calibrate/runners/gpu.ts`): WGSL, a cache key naming every constant baked in, the bindings in
 * order (the WGSL's declarations are written from the same list), the workgroup size and the
 * dispatch for a step. The projections run the catalog's gemv (`kernels/gemv/webgpu.ts`).
 * Model dimensions are constants in the WGSL; the position and the attended length arrive in the
 * `Step` uniform, written once per token.
 *
 * @module
 */
import type { GpuBinding, GpuProgram } from "../calibrate/runners/gpu.ts";

/**
 * The dimensions the decode shaders are specialised for.
 *
 * @example
 * ```ts
 * import type { DecodeDims } from "./_decode_wgsl.ts";
 * const d: DecodeDims = { hidden: 512, heads: 8, kvHeads: 2, headDim: 64, context: 64, intermediate: 1536, vocab: 4096 };
 * ```
 */
export interface DecodeDims {
  readonly hidden: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** Capacity of the KV cache and of each head's row of scores. */
  readonly context: number;
  readonly intermediate: number;
  readonly vocab: number;
}

/**
 * A decode kernel: a program with its declared bindings, its workgroup size and the workgroups a
 * step dispatches when it attends to `n` positions (most ignore `n`).
 *
 * @example
 * ```ts
 * import { residualProgram } from "./_decode_wgsl.ts";
 * const p = residualProgram(512);
 * console.log(p.bindings, p.workgroupSize, p.workgroups(1)); // ["read_write", "read"] [64, 1, 1] [8, 1, 1]
 * ```
 */
export interface DecodeProgram extends GpuProgram {
  /** Invocations of one workgroup, as the WGSL's `@workgroup_size`. */
  readonly workgroupSize: readonly [number, number, number];
  /** Workgroups to dispatch for a step attending to `n` = position + 1 cached positions. */
  workgroups(n: number): readonly [number, number, number];
}

/** Invocations per workgroup of the one-workgroup reductions (norm, argmax). */
export const REDUCE_WG = 256;
/** Invocations per workgroup of the elementwise and per-row kernels. */
export const LANE_WG = 64;

const STEP = "struct Step { pos: u32, n: u32, pad0: u32, pad1: u32 }";
const STEP_VAR: Var = ["step", "uniform", "Step"];

/** One binding: its WGSL name, how it is bound and its WGSL type. */
type Var = readonly [name: string, binding: GpuBinding, type: string];

const ACCESS: Readonly<Record<GpuBinding, string>> = {
  read: "storage, read",
  read_write: "storage, read_write",
  uniform: "uniform",
};

const one = (): [number, number, number] => [1, 1, 1];
const lanes = (n: number) => (): [number, number, number] => [Math.ceil(n / LANE_WG), 1, 1];

/** A program whose binding declarations and binding list come from the same `vars`. */
function decodeProgram(parts: {
  readonly key: string;
  readonly vars: readonly Var[];
  readonly size: number;
  /** Module-scope WGSL before the bindings (structs, workgroup variables). */
  readonly preamble?: string;
  /** The entry point, from `fn main(`. */
  readonly main: string;
  readonly workgroups: (n: number) => readonly [number, number, number];
}): DecodeProgram {
  const declarations = parts.vars.map(([name, binding, type], i) =>
    `@group(0) @binding(${i}) var<${ACCESS[binding]}> ${name}: ${type};`
  );
  return {
    key: parts.key,
    bindings: parts.vars.map(([, binding]) => binding),
    workgroupSize: [parts.size, 1, 1],
    workgroups: parts.workgroups,
    code: `${parts.preamble ? `${parts.preamble}\n` : ""}${declarations.join("\n")}
@compute @workgroup_size(${parts.size})
${parts.main}`,
  };
}

function tree(op: (a: string, b: string) => string, size: number): string {
  return `  for (var k = ${size / 2}u; k > 0u; k >>= 1u) {
    if (l.x < k) { red[l.x] = ${op("red[l.x]", "red[l.x + k]")}; }
    workgroupBarrier();
  }`;
}

/**
 * Embedding lookup: x = row `token[0]` of the table (f32, or q4 with per-32 scales).
 *
 * @param d Dimensions.
 * @param q4 Whether the table is q4.
 * @returns The program; bindings table, [scales,] token, x.
 * @example
 * ```ts
 * import { embedProgram } from "./_decode_wgsl.ts";
 * const d = { hidden: 64, heads: 1, kvHeads: 1, headDim: 64, context: 8, intermediate: 64, vocab: 16 };
 * console.log(embedProgram(d, false).key); // "embed|q4=false|h=64"
 * ```
 */
export function embedProgram(d: DecodeDims, q4: boolean): DecodeProgram {
  const h = d.hidden;
  const read = q4
    ? `let b = token[0] * ${h / 2}u + i / 2u;
  let byte = (table[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
  let nib = select(byte >> 4u, byte & 15u, (i & 1u) == 0u);
  x[i] = (f32(nib) - 8.0) * scales[token[0] * ${h / 32}u + i / 32u];`
    : `x[i] = table[token[0] * ${h}u + i];`;
  const table: readonly Var[] = q4
    ? [["table", "read", "array<u32>"], ["scales", "read", "array<f32>"]]
    : [["table", "read", "array<f32>"]];
  return decodeProgram({
    key: `embed|q4=${q4}|h=${h}`,
    vars: [...table, ["token", "read", "array<u32>"], ["x", "read_write", "array<f32>"]],
    size: LANE_WG,
    main: `fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if (i >= ${h}u) { return; }
  ${read}
}
`,
    workgroups: lanes(h),
  });
}

/**
 * RMSNorm in one workgroup: xn = x / sqrt(mean(x²) + 1e-5) · gain.
 *
 * @param n Length of x.
 * @returns The program; bindings x, gain, xn.
 * @example
 * ```ts
 * import { rmsNormProgram } from "./_decode_wgsl.ts";
 * console.log(rmsNormProgram(512).key); // "rmsnorm|n=512"
 * ```
 */
export function rmsNormProgram(n: number): DecodeProgram {
  return decodeProgram({
    key: `rmsnorm|n=${n}`,
    vars: [["x", "read", "array<f32>"], ["gain", "read", "array<f32>"], [
      "xn",
      "read_write",
      "array<f32>",
    ]],
    size: REDUCE_WG,
    preamble: `var<workgroup> red: array<f32, ${REDUCE_WG}>;`,
    main: `fn main(@builtin(local_invocation_id) l: vec3<u32>) {
  var s = 0.0;
  for (var i = l.x; i < ${n}u; i += ${REDUCE_WG}u) { let v = x[i]; s += v * v; }
  red[l.x] = s;
  workgroupBarrier();
${tree((a, b) => `${a} + ${b}`, REDUCE_WG)}
  let inv = inverseSqrt(red[0] / ${n}.0 + 1e-5);
  for (var i = l.x; i < ${n}u; i += ${REDUCE_WG}u) { xn[i] = x[i] * inv * gain[i]; }
}
`,
    workgroups: one,
  });
}

/**
 * RoPE (rotate-half pairing, base 10000) at `step.pos`: q in place, k into the K cache row.
 *
 * @param d Dimensions.
 * @returns The program; bindings q, k, kcache, step.
 * @example
 * ```ts
 * import { ropeProgram } from "./_decode_wgsl.ts";
 * const d = { hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 };
 * console.log(ropeProgram(d).key); // "rope|h=2|kv=1|hd=32"
 * ```
 */
export function ropeProgram(d: DecodeDims): DecodeProgram {
  const half = d.headDim / 2;
  const kvd = d.kvHeads * d.headDim;
  return decodeProgram({
    key: `rope|h=${d.heads}|kv=${d.kvHeads}|hd=${d.headDim}`,
    vars: [
      ["q", "read_write", "array<f32>"],
      ["k", "read", "array<f32>"],
      ["kcache", "read_write", "array<f32>"],
      STEP_VAR,
    ],
    size: LANE_WG,
    preamble: STEP,
    main: `fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let idx = g.x;
  if (idx >= ${(d.heads + d.kvHeads) * half}u) { return; }
  let h = idx / ${half}u;
  let i = idx % ${half}u;
  let angle = f32(step.pos) * pow(10000.0, -2.0 * f32(i) / ${d.headDim}.0);
  let c = cos(angle);
  let s = sin(angle);
  if (h < ${d.heads}u) {
    let b = h * ${d.headDim}u + i;
    let x0 = q[b];
    let x1 = q[b + ${half}u];
    q[b] = x0 * c - x1 * s;
    q[b + ${half}u] = x0 * s + x1 * c;
  } else {
    let b = (h - ${d.heads}u) * ${d.headDim}u + i;
    let x0 = k[b];
    let x1 = k[b + ${half}u];
    let o = step.pos * ${kvd}u + b;
    kcache[o] = x0 * c - x1 * s;
    kcache[o + ${half}u] = x0 * s + x1 * c;
  }
}
`,
    workgroups: lanes((d.heads + d.kvHeads) * half),
  });
}

/**
 * Attention scores: scores[h, t] = q_h · K[t, kv(h)] / sqrt(headDim) for t < step.n; the grid
 * is (ceil(n / 64), heads).
 *
 * @param d Dimensions.
 * @returns The program; bindings q, kcache, scores, step.
 * @example
 * ```ts
 * import { scoresProgram } from "./_decode_wgsl.ts";
 * const d = { hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 };
 * console.log(scoresProgram(d).workgroups(65)); // [2, 2, 1]
 * ```
 */
export function scoresProgram(d: DecodeDims): DecodeProgram {
  const hd4 = d.headDim / 4;
  const kvd4 = d.kvHeads * hd4;
  return decodeProgram({
    key: `scores|h=${d.heads}|kv=${d.kvHeads}|hd=${d.headDim}|ctx=${d.context}`,
    vars: [
      ["q", "read", "array<vec4<f32>>"],
      ["kcache", "read", "array<vec4<f32>>"],
      ["scores", "read_write", "array<f32>"],
      STEP_VAR,
    ],
    size: LANE_WG,
    preamble: STEP,
    main: `fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let t = g.x;
  let h = g.y;
  if (t >= step.n) { return; }
  let qb = h * ${hd4}u;
  let kb = t * ${kvd4}u + (h / ${d.heads / d.kvHeads}u) * ${hd4}u;
  var s = 0.0;
  for (var j = 0u; j < ${hd4}u; j++) { s += dot(q[qb + j], kcache[kb + j]); }
  scores[h * ${d.context}u + t] = s * ${1 / Math.sqrt(d.headDim)};
}
`,
    workgroups: (n) => [Math.ceil(n / LANE_WG), d.heads, 1],
  });
}

/**
 * Softmax of each head's first step.n scores, in place; one workgroup of `wg` lanes per head
 * (the catalog softmax's `wg`, so the decode can run the variant an estimate priced).
 *
 * @param d Dimensions.
 * @param wg Lanes per workgroup.
 * @returns The program; bindings scores, step.
 * @example
 * ```ts
 * import { softmaxProgram } from "./_decode_wgsl.ts";
 * const d = { hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 };
 * console.log(softmaxProgram(d, 256).key); // "softmax|ctx=8|wg=256"
 * ```
 */
export function softmaxProgram(d: DecodeDims, wg: 64 | 256 = LANE_WG): DecodeProgram {
  return decodeProgram({
    key: `softmax|ctx=${d.context}|wg=${wg}`,
    vars: [["scores", "read_write", "array<f32>"], STEP_VAR],
    size: wg,
    preamble: `${STEP}\nvar<workgroup> red: array<f32, ${wg}>;`,
    main:
      `fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
  let b = w.x * ${d.context}u;
  let n = step.n;
  var m = -3.4e38;
  for (var i = l.x; i < n; i += ${wg}u) { m = max(m, scores[b + i]); }
  red[l.x] = m;
  workgroupBarrier();
${tree((a, c) => `max(${a}, ${c})`, wg)}
  let top = red[0];
  workgroupBarrier();
  var s = 0.0;
  for (var i = l.x; i < n; i += ${wg}u) {
    let e = exp(scores[b + i] - top);
    scores[b + i] = e;
    s += e;
  }
  red[l.x] = s;
  workgroupBarrier();
${tree((a, c) => `${a} + ${c}`, wg)}
  let inv = 1.0 / red[0];
  for (var i = l.x; i < n; i += ${wg}u) { scores[b + i] *= inv; }
}
`,
    workgroups: () => [d.heads, 1, 1],
  });
}

/**
 * Attention values: attn[h, e] = Σ_t scores[h, t] · V[t, kv(h), e] over t < step.n.
 *
 * @param d Dimensions.
 * @returns The program; bindings scores, vcache, attn, step.
 * @example
 * ```ts
 * import { valuesProgram } from "./_decode_wgsl.ts";
 * const d = { hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 };
 * console.log(valuesProgram(d).bindings); // ["read", "read", "read_write", "uniform"]
 * ```
 */
export function valuesProgram(d: DecodeDims): DecodeProgram {
  const kvd = d.kvHeads * d.headDim;
  return decodeProgram({
    key: `values|h=${d.heads}|kv=${d.kvHeads}|hd=${d.headDim}|ctx=${d.context}`,
    vars: [
      ["scores", "read", "array<f32>"],
      ["vcache", "read", "array<f32>"],
      ["attn", "read_write", "array<f32>"],
      STEP_VAR,
    ],
    size: LANE_WG,
    preamble: STEP,
    main: `fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let idx = g.x;
  if (idx >= ${d.heads * d.headDim}u) { return; }
  let h = idx / ${d.headDim}u;
  let vb = (h / ${d.heads / d.kvHeads}u) * ${d.headDim}u + idx % ${d.headDim}u;
  let sb = h * ${d.context}u;
  var s = 0.0;
  for (var t = 0u; t < step.n; t++) { s += scores[sb + t] * vcache[t * ${kvd}u + vb]; }
  attn[idx] = s;
}
`,
    workgroups: lanes(d.heads * d.headDim),
  });
}

/**
 * Residual add: x += out.
 *
 * @param n Length.
 * @returns The program; bindings x, out.
 * @example
 * ```ts
 * import { residualProgram } from "./_decode_wgsl.ts";
 * console.log(residualProgram(512).key); // "residual|n=512"
 * ```
 */
export function residualProgram(n: number): DecodeProgram {
  return decodeProgram({
    key: `residual|n=${n}`,
    vars: [["x", "read_write", "array<f32>"], ["o", "read", "array<f32>"]],
    size: LANE_WG,
    main: `fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < ${n}u) { x[g.x] += o[g.x]; }
}
`,
    workgroups: lanes(n),
  });
}

/**
 * Gated activation: gate = SiLU(gate) · up.
 *
 * @param n Length (the intermediate width).
 * @returns The program; bindings gate, up.
 * @example
 * ```ts
 * import { siluMulProgram } from "./_decode_wgsl.ts";
 * console.log(siluMulProgram(1536).key); // "silu_mul|n=1536"
 * ```
 */
export function siluMulProgram(n: number): DecodeProgram {
  return decodeProgram({
    key: `silu_mul|n=${n}`,
    vars: [["gate", "read_write", "array<f32>"], ["up", "read", "array<f32>"]],
    size: LANE_WG,
    main: `fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < ${n}u) { let v = gate[g.x]; gate[g.x] = v / (1.0 + exp(-v)) * up[g.x]; }
}
`,
    workgroups: lanes(n),
  });
}

/**
 * Greedy next token in one workgroup: the lowest index of the largest logit, or 0xffffffff when
 * any logit is infinite or NaN (a broken decode must not pass for a token).
 *
 * @param vocab Number of logits.
 * @returns The program; bindings logits, token.
 * @example
 * ```ts
 * import { argmaxProgram } from "./_decode_wgsl.ts";
 * console.log(argmaxProgram(4096).key); // "argmax|n=4096"
 * ```
 */
export function argmaxProgram(vocab: number): DecodeProgram {
  return decodeProgram({
    key: `argmax|n=${vocab}`,
    vars: [["logits", "read", "array<f32>"], ["token", "read_write", "array<u32>"]],
    size: REDUCE_WG,
    preamble: `var<workgroup> bv: array<f32, ${REDUCE_WG}>;
var<workgroup> bi: array<u32, ${REDUCE_WG}>;
var<workgroup> bad: atomic<u32>;`,
    main: `fn main(@builtin(local_invocation_id) l: vec3<u32>) {
  var best = -3.4e38;
  var at = 0xffffffffu;
  for (var i = l.x; i < ${vocab}u; i += ${REDUCE_WG}u) {
    let v = logits[i];
    // Exponent all ones: inf or NaN, which compilers may not compare faithfully.
    if ((bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u) { atomicOr(&bad, 1u); }
    if (v > best) { best = v; at = i; }
  }
  bv[l.x] = best;
  bi[l.x] = at;
  workgroupBarrier();
  for (var k = ${REDUCE_WG / 2}u; k > 0u; k >>= 1u) {
    if (l.x < k) {
      let ov = bv[l.x + k];
      let oi = bi[l.x + k];
      if (ov > bv[l.x] || (ov == bv[l.x] && oi < bi[l.x])) { bv[l.x] = ov; bi[l.x] = oi; }
    }
    workgroupBarrier();
  }
  let broken = atomicLoad(&bad);
  if (l.x == 0u) { token[0] = select(bi[0], 0xffffffffu, broken != 0u); }
}
`,
    workgroups: one,
  });
}
