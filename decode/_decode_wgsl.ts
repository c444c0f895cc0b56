/**
 * WGSL of the synthetic decode's non-gemv kernels (the projections reuse the gemv kernel of
 * `kernels/gemv/webgpu.ts`). Model dimensions are baked in as constants, so each key folds them
 * in; the position and the attended length arrive in the `Step` uniform, written once per token.
 *
 * @module
 */

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
 * A decode shader: its source and a cache key naming every constant baked into it.
 *
 * @example
 * ```ts
 * import type { DecodeShader } from "./_decode_wgsl.ts";
 * const s: DecodeShader = { code: "...", key: "residual|n=512" };
 * ```
 */
export interface DecodeShader {
  readonly code: string;
  readonly key: string;
}

/** Invocations per workgroup of the one-workgroup reductions (norm, argmax). */
export const REDUCE_WG = 256;
/** Invocations per workgroup of the elementwise and per-row kernels. */
export const LANE_WG = 64;

const STEP = "struct Step { pos: u32, n: u32, pad0: u32, pad1: u32 }";

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
 * @returns The shader; bindings table, [scales,] token, x.
 * @example
 * ```ts
 * import { embedShader } from "./_decode_wgsl.ts";
 * console.log(embedShader({ hidden: 64, heads: 1, kvHeads: 1, headDim: 64, context: 8, intermediate: 64, vocab: 16 }, false).key);
 * ```
 */
export function embedShader(d: DecodeDims, q4: boolean): DecodeShader {
  const h = d.hidden;
  const read = q4
    ? `let b = token[0] * ${h / 2}u + i / 2u;
  let byte = (table[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
  let nib = select(byte >> 4u, byte & 15u, (i & 1u) == 0u);
  x[i] = (f32(nib) - 8.0) * scales[token[0] * ${h / 32}u + i / 32u];`
    : `x[i] = table[token[0] * ${h}u + i];`;
  const bindings = q4
    ? ["table: array<u32>", "scales: array<f32>", "token: array<u32>"]
    : ["table: array<f32>", "token: array<u32>"];
  return {
    key: `embed|q4=${q4}|h=${h}`,
    code: `${bindings.map((b, i) => `@group(0) @binding(${i}) var<storage, read> ${b};`).join("\n")}
@group(0) @binding(${bindings.length}) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(${LANE_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if (i >= ${h}u) { return; }
  ${read}
}
`,
  };
}

/**
 * RMSNorm in one workgroup: xn = x / sqrt(mean(x²) + 1e-5) · gain.
 *
 * @param n Length of x.
 * @returns The shader; bindings x, gain, xn.
 * @example
 * ```ts
 * import { rmsNormShader } from "./_decode_wgsl.ts";
 * console.log(rmsNormShader(512).key); // "rmsnorm|n=512"
 * ```
 */
export function rmsNormShader(n: number): DecodeShader {
  return {
    key: `rmsnorm|n=${n}`,
    code: `@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> gain: array<f32>;
@group(0) @binding(2) var<storage, read_write> xn: array<f32>;
var<workgroup> red: array<f32, ${REDUCE_WG}>;
@compute @workgroup_size(${REDUCE_WG})
fn main(@builtin(local_invocation_id) l: vec3<u32>) {
  var s = 0.0;
  for (var i = l.x; i < ${n}u; i += ${REDUCE_WG}u) { let v = x[i]; s += v * v; }
  red[l.x] = s;
  workgroupBarrier();
${tree((a, b) => `${a} + ${b}`, REDUCE_WG)}
  let inv = inverseSqrt(red[0] / ${n}.0 + 1e-5);
  for (var i = l.x; i < ${n}u; i += ${REDUCE_WG}u) { xn[i] = x[i] * inv * gain[i]; }
}
`,
  };
}

/**
 * RoPE (rotate-half pairing, base 10000) at `step.pos`: q in place, k into the K cache row.
 *
 * @param d Dimensions.
 * @returns The shader; bindings q, k, kcache, step.
 * @example
 * ```ts
 * import { ropeShader } from "./_decode_wgsl.ts";
 * console.log(ropeShader({ hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 }).key);
 * ```
 */
export function ropeShader(d: DecodeDims): DecodeShader {
  const half = d.headDim / 2;
  const kvd = d.kvHeads * d.headDim;
  return {
    key: `rope|h=${d.heads}|kv=${d.kvHeads}|hd=${d.headDim}`,
    code: `${STEP}
@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read_write> kcache: array<f32>;
@group(0) @binding(3) var<uniform> step: Step;
@compute @workgroup_size(${LANE_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
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
  };
}

/**
 * Attention scores: scores[h, t] = q_h · K[t, kv(h)] / sqrt(headDim) for t < step.n; the grid
 * is (ceil(n / 64), heads).
 *
 * @param d Dimensions.
 * @returns The shader; bindings q, kcache, scores, step.
 * @example
 * ```ts
 * import { scoresShader } from "./_decode_wgsl.ts";
 * console.log(scoresShader({ hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 }).key);
 * ```
 */
export function scoresShader(d: DecodeDims): DecodeShader {
  const hd4 = d.headDim / 4;
  const kvd4 = d.kvHeads * hd4;
  return {
    key: `scores|h=${d.heads}|kv=${d.kvHeads}|hd=${d.headDim}|ctx=${d.context}`,
    code: `${STEP}
@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> kcache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> scores: array<f32>;
@group(0) @binding(3) var<uniform> step: Step;
@compute @workgroup_size(${LANE_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
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
  };
}

/**
 * Softmax of each head's first step.n scores, in place; one workgroup of `wg` lanes per head
 * (the catalog softmax's `wg`, so the decode can run the variant an estimate priced).
 *
 * @param d Dimensions.
 * @param wg Lanes per workgroup.
 * @returns The shader; bindings scores, step.
 * @example
 * ```ts
 * import { softmaxShader } from "./_decode_wgsl.ts";
 * console.log(softmaxShader({ hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 }).key);
 * ```
 */
export function softmaxShader(d: DecodeDims, wg: 64 | 256 = LANE_WG): DecodeShader {
  return {
    key: `softmax|ctx=${d.context}|wg=${wg}`,
    code: `${STEP}
@group(0) @binding(0) var<storage, read_write> scores: array<f32>;
@group(0) @binding(1) var<uniform> step: Step;
var<workgroup> red: array<f32, ${wg}>;
@compute @workgroup_size(${wg})
fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {
  let b = w.x * ${d.context}u;
  let n = step.n;
  var m = -3.4e38;
  for (var i = l.x; i < n; i += ${wg}u) { m = max(m, scores[b + i]); }
  red[l.x] = m;
  workgroupBarrier();
${tree((a, c) => `max(${a}, ${c})`, LANE_WG)}
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
${tree((a, c) => `${a} + ${c}`, LANE_WG)}
  let inv = 1.0 / red[0];
  for (var i = l.x; i < n; i += ${wg}u) { scores[b + i] *= inv; }
}
`,
  };
}

/**
 * Attention values: attn[h, e] = Σ_t scores[h, t] · V[t, kv(h), e] over t < step.n.
 *
 * @param d Dimensions.
 * @returns The shader; bindings scores, vcache, attn, step.
 * @example
 * ```ts
 * import { valuesShader } from "./_decode_wgsl.ts";
 * console.log(valuesShader({ hidden: 64, heads: 2, kvHeads: 1, headDim: 32, context: 8, intermediate: 64, vocab: 16 }).key);
 * ```
 */
export function valuesShader(d: DecodeDims): DecodeShader {
  const kvd = d.kvHeads * d.headDim;
  return {
    key: `values|h=${d.heads}|kv=${d.kvHeads}|hd=${d.headDim}|ctx=${d.context}`,
    code: `${STEP}
@group(0) @binding(0) var<storage, read> scores: array<f32>;
@group(0) @binding(1) var<storage, read> vcache: array<f32>;
@group(0) @binding(2) var<storage, read_write> attn: array<f32>;
@group(0) @binding(3) var<uniform> step: Step;
@compute @workgroup_size(${LANE_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
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
  };
}

/**
 * Residual add: x += out.
 *
 * @param n Length.
 * @returns The shader; bindings x, out.
 * @example
 * ```ts
 * import { residualShader } from "./_decode_wgsl.ts";
 * console.log(residualShader(512).key); // "residual|n=512"
 * ```
 */
export function residualShader(n: number): DecodeShader {
  return {
    key: `residual|n=${n}`,
    code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> o: array<f32>;
@compute @workgroup_size(${LANE_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < ${n}u) { x[g.x] += o[g.x]; }
}
`,
  };
}

/**
 * Gated activation: gate = SiLU(gate) · up.
 *
 * @param n Length (the intermediate width).
 * @returns The shader; bindings gate, up.
 * @example
 * ```ts
 * import { siluMulShader } from "./_decode_wgsl.ts";
 * console.log(siluMulShader(1536).key); // "silu_mul|n=1536"
 * ```
 */
export function siluMulShader(n: number): DecodeShader {
  return {
    key: `silu_mul|n=${n}`,
    code: `@group(0) @binding(0) var<storage, read_write> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@compute @workgroup_size(${LANE_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < ${n}u) { let v = gate[g.x]; gate[g.x] = v / (1.0 + exp(-v)) * up[g.x]; }
}
`,
  };
}

/**
 * Greedy next token in one workgroup: the lowest index of the largest logit, or 0xffffffff when
 * any logit is infinite or NaN (a broken decode must not pass for a token).
 *
 * @param vocab Number of logits.
 * @returns The shader; bindings logits, token.
 * @example
 * ```ts
 * import { argmaxShader } from "./_decode_wgsl.ts";
 * console.log(argmaxShader(4096).key); // "argmax|n=4096"
 * ```
 */
export function argmaxShader(vocab: number): DecodeShader {
  return {
    key: `argmax|n=${vocab}`,
    code: `@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> token: array<u32>;
var<workgroup> bv: array<f32, ${REDUCE_WG}>;
var<workgroup> bi: array<u32, ${REDUCE_WG}>;
var<workgroup> bad: atomic<u32>;
@compute @workgroup_size(${REDUCE_WG})
fn main(@builtin(local_invocation_id) l: vec3<u32>) {
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
  };
}
