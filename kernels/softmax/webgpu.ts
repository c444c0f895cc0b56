/**
 * WGSL softmax: one workgroup per row. Threads stride over the row's columns (neighbours read
 * neighbouring elements), and two shared-memory tree reductions give the row's max and its sum of
 * exps; the last pass computes each exp again and writes it scaled, so the row is read three
 * times and written once.
 *
 * `acc` is the arithmetic type for f16 rows: `f32` (widened on load) or `f16` (native). A
 * row's sum of exps can reach `cols`, so f16 arithmetic is only offered up to
 * {@linkcode F16_ACC_MAX_COLS} columns, where its rounding still meets the op's tolerance.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WebGpuImpl, WgslProgram } from "../types.ts";

/** Most columns for `acc: "f16"`: beyond, thread partials of ~cols/wg exps lose too many bits. */
export const F16_ACC_MAX_COLS = 4096;

/** WebGPU's guaranteed minimum of maxComputeWorkgroupsPerDimension: more rows fold into y. */
const MAX_GROUPS_X = 65535;

interface Params {
  readonly wg: 64 | 256;
  readonly acc: "f32" | "f16";
}

function params(variant: Variant): Params {
  const { wg, acc } = variant;
  if (wg !== 64 && wg !== 256) {
    throw new RangeError(`Softmax variant wg is ${JSON.stringify(wg)}: use 64 or 256`);
  }
  if (acc !== "f32" && acc !== "f16") {
    throw new RangeError(`Softmax variant acc is ${JSON.stringify(acc)}: use "f32" or "f16"`);
  }
  return { wg, acc };
}

function dims(shape: Shape): { rows: number; cols: number } {
  const { rows, cols } = shape;
  if (!rows || !cols) {
    throw new RangeError(`Softmax needs rows and cols >= 1, got ${JSON.stringify(shape)}`);
  }
  return { rows, cols };
}

function shader(dtype: "f32" | "f16", p: Params): string {
  const t = dtype;
  const a = dtype === "f16" ? p.acc : "f32";
  return `${dtype === "f16" ? "enable f16;" : ""}
struct Dims { rows: u32, cols: u32, groupsX: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> x: array<${t}>;
@group(0) @binding(1) var<storage, read_write> out: array<${t}>;
@group(0) @binding(2) var<uniform> dims: Dims;

const WG = ${p.wg}u;
var<workgroup> red: array<${a}, WG>;

fn reduceMax(lid: u32, v: ${a}) -> ${a} {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduceSum(lid: u32, v: ${a}) -> ${a} {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red[lid] = red[lid] + red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(${p.wg})
fn main(@builtin(workgroup_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = gid.y * dims.groupsX + gid.x;
  if (row >= dims.rows) { return; }
  let base = row * dims.cols;
  var m = ${a}(x[base]);
  for (var c = lid; c < dims.cols; c += WG) { m = max(m, ${a}(x[base + c])); }
  m = reduceMax(lid, m);
  var s = ${a}(0);
  for (var c = lid; c < dims.cols; c += WG) { s += exp(${a}(x[base + c]) - m); }
  let inv = ${a}(1) / reduceSum(lid, s);
  for (var c = lid; c < dims.cols; c += WG) {
    out[base + c] = ${t}(exp(${a}(x[base + c]) - m) * inv);
  }
}`;
}

/**
 * The WebGPU softmax: variants `{ wg: 64 | 256, acc: "f32" | "f16" }`, one workgroup per row.
 *
 * @example
 * ```ts
 * import { softmaxWebGpu } from "./webgpu.ts";
 * const p = softmaxWebGpu.program({ rows: 32, cols: 4096 }, "f32", { wg: 256, acc: "f32" });
 * console.log(p.workgroups); // [ 32, 1, 1 ]
 * ```
 */
export const softmaxWebGpu: WebGpuImpl = {
  variants: [
    { wg: 256, acc: "f32" },
    { wg: 64, acc: "f32" },
    { wg: 256, acc: "f16" },
    { wg: 64, acc: "f16" },
  ],
  features: { f16: ["shader-f16"] },
  unsupported(shape: Shape, dtype: Dtype, variant: Variant): string | null {
    const { acc } = params(variant);
    const { cols } = dims(shape);
    if (dtype !== "f32" && dtype !== "f16") {
      return `WebGPU softmax has no ${dtype} kernel: use f32 or f16`;
    }
    if (acc === "f16" && dtype !== "f16") {
      return "WebGPU softmax with acc=f16 needs f16 operands: use acc=f32 for f32";
    }
    if (acc === "f16" && cols > F16_ACC_MAX_COLS) {
      return `WebGPU softmax with acc=f16 is limited to ${F16_ACC_MAX_COLS} columns, got ${cols}: use acc=f32`;
    }
    return null;
  },
  program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram {
    const { rows, cols } = dims(shape);
    const p = params(variant);
    if (dtype !== "f32" && dtype !== "f16") {
      throw new RangeError(`WebGPU softmax has no ${dtype} kernel: use f32 or f16`);
    }
    const x = Math.min(rows, MAX_GROUPS_X);
    return {
      code: shader(dtype, p),
      workgroups: [x, Math.ceil(rows / x), 1],
      uniforms: new Uint32Array([rows, cols, x, 0]),
      key: `softmax|${dtype}|wg=${p.wg}|acc=${dtype === "f16" ? p.acc : "f32"}`,
    };
  },
};
