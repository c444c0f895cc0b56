/**
 * WGSL `sum` and `dot` in one dispatch: every thread accumulates `ept` elements per round (as
 * vec4 loads `wg` apart, so a workgroup's loads are contiguous) over a grid-stride loop, the
 * workgroup folds its threads in shared memory, and the last workgroup to finish folds the
 * per-workgroup partials.
 *
 * The partials and a finish counter live in the program's scratch buffer (`scratchBytes`), all
 * accessed atomically; the last workgroup resets the counter, so the buffer is ready for the next
 * run. WGSL atomics are relaxed, so seeing the counter does not formally promise seeing the other
 * workgroups' partials; every implementation we know orders them, and verification would catch
 * one that does not (the result would be wrong, reported failed, never timed).
 *
 * `acc` is the arithmetic type: `f32` (f16 operands widened on load, the usual choice) or `f16`
 * (native half arithmetic, for f16 operands only).
 *
 * @module
 */
import type { Dtype, Shape, Variant, WebGpuImpl, WgslProgram } from "../types.ts";

interface Params {
  readonly wg: 64 | 256;
  readonly ept: 4 | 8 | 16;
  readonly acc: "f32" | "f16";
  /** Most workgroups per dispatch: 4096 fills any GPU; 256 amortises barriers on CPU drivers. */
  readonly groups: 256 | 4096;
}

function params(variant: Variant): Params {
  const { wg, ept, acc, groups } = variant;
  if (wg !== 64 && wg !== 256) {
    throw new RangeError(`Reduction variant wg is ${JSON.stringify(wg)}: use 64 or 256`);
  }
  if (ept !== 4 && ept !== 8 && ept !== 16) {
    throw new RangeError(`Reduction variant ept is ${JSON.stringify(ept)}: use 4, 8 or 16`);
  }
  if (acc !== "f32" && acc !== "f16") {
    throw new RangeError(`Reduction variant acc is ${JSON.stringify(acc)}: use "f32" or "f16"`);
  }
  if (groups !== 256 && groups !== 4096) {
    throw new RangeError(`Reduction variant groups is ${JSON.stringify(groups)}: use 256 or 4096`);
  }
  return { wg, ept, acc, groups };
}

/**
 * Most terms one f16 accumulator lane may add in sequence: past ~256, a lane's running sum grows
 * so large next to each term that f16 rounding errors exceed the op's tolerance (measured: 1024
 * terms gave 1.3e-2 at n = 2^26).
 */
export const F16_MAX_LANE_TERMS = 256;

function groupCount(n: number, p: Params): number {
  return Math.min(p.groups, Math.max(1, Math.ceil(Math.floor(n / 4) / (p.wg * p.ept / 4))));
}

/** Terms each vec4 lane of a thread adds sequentially before the workgroup fold. */
function laneTerms(n: number, p: Params): number {
  return Math.ceil(Math.floor(n / 4) / (groupCount(n, p) * p.wg * p.ept / 4)) * (p.ept / 4);
}

function length(shape: Shape): number {
  const n = shape.n;
  if (!n) throw new RangeError(`Reductions need n >= 1, got ${JSON.stringify(shape)}`);
  return n;
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

function shader(dot: boolean, dtype: "f32" | "f16", p: Params): string {
  const t = dtype;
  const a = dtype === "f16" ? p.acc : "f32";
  const vectors = p.ept / 4;
  const out = dot ? 2 : 1;
  const term = dot ? `vec4<${a}>(a[i]) * vec4<${a}>(b[i])` : `vec4<${a}>(a[i])`;
  return `${dtype === "f16" ? "enable f16;" : ""}
struct Dims { n: u32, nfull: u32, groups: u32, rem: u32 }
@group(0) @binding(0) var<storage, read> a: array<vec4<${t}>>;
${dot ? `@group(0) @binding(1) var<storage, read> b: array<vec4<${t}>>;` : ""}
@group(0) @binding(${out}) var<storage, read_write> out: array<${t}>;
@group(0) @binding(${out + 1}) var<uniform> dims: Dims;
@group(0) @binding(${out + 2}) var<storage, read_write> scratch: array<atomic<u32>>;

const WG = ${p.wg}u;
var<workgroup> part: array<${a}, WG>;
var<workgroup> last: u32;

fn term(i: u32) -> vec4<${a}> { return ${term}; }

fn fold(lid: u32, v: ${a}) -> ${a} {
  part[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { part[lid] = part[lid] + part[lid + s]; }
    workgroupBarrier();
  }
  return part[0];
}

@compute @workgroup_size(${p.wg})
fn main(@builtin(workgroup_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  var acc = vec4<${a}>(0);
  let stride = dims.groups * WG * ${vectors}u;
  var i = gid.x * WG * ${vectors}u + lid;
  loop {
    if (i + ${vectors - 1}u * WG >= dims.nfull) { break; }
    ${range(vectors).map((v) => `acc += term(i + ${v}u * WG);`).join("\n    ")}
    i += stride;
  }
  ${
    range(vectors - 1).map((v) =>
      `if (i + ${v}u * WG < dims.nfull) { acc += term(i + ${v}u * WG); }`
    ).join("\n  ")
  }
  if (gid.x == 0u && lid == 0u && dims.rem != 0u) {
    let lanes = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(dims.rem);
    acc += select(vec4<${a}>(0), term(dims.nfull), lanes);
  }
  let total = fold(lid, (acc.x + acc.y) + (acc.z + acc.w));
  if (lid == 0u) {
    atomicStore(&scratch[1u + gid.x], bitcast<u32>(f32(total)));
  }
  storageBarrier();
  if (lid == 0u) {
    last = select(0u, 1u, atomicAdd(&scratch[0], 1u) == dims.groups - 1u);
  }
  if (workgroupUniformLoad(&last) == 1u) {
    var s = ${a}(0);
    for (var g = lid; g < dims.groups; g += WG) {
      s += ${a}(bitcast<f32>(atomicLoad(&scratch[1u + g])));
    }
    let folded = fold(lid, s);
    if (lid == 0u) {
      out[0] = ${t}(folded);
      atomicStore(&scratch[0], 0u);
    }
  }
}`;
}

function reductionWebGpu(dot: boolean): WebGpuImpl {
  const name = dot ? "dot" : "sum";
  const variants: Variant[] = [];
  for (const acc of ["f32", "f16"] as const) {
    for (const groups of [4096, 256] as const) {
      for (const wg of [256, 64] as const) {
        for (const ept of [16, 4] as const) variants.push({ wg, ept, acc, groups });
      }
    }
  }
  return {
    variants,
    features: { f16: ["shader-f16"] },
    unsupported(shape: Shape, dtype: Dtype, variant: Variant): string | null {
      const { acc } = params(variant);
      if (dtype !== "f32" && dtype !== "f16") {
        return `WebGPU ${name} has no ${dtype} kernel: use f32 or f16`;
      }
      if (dtype === "f32" && acc === "f16") {
        return `WebGPU ${name} with acc=f16 needs f16 operands: use acc=f32 for f32`;
      }
      const terms = laneTerms(length(shape), params(variant));
      if (acc === "f16" && terms > F16_MAX_LANE_TERMS) {
        return `WebGPU ${name} with acc=f16 would add ${terms} terms per f16 lane, over ` +
          `${F16_MAX_LANE_TERMS}: use acc=f32 or more groups`;
      }
      return null;
    },
    program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram {
      const n = length(shape);
      const p = params(variant);
      if (dtype !== "f32" && dtype !== "f16") {
        throw new RangeError(`WebGPU ${name} has no ${dtype} kernel: use f32 or f16`);
      }
      const nfull = Math.floor(n / 4);
      const groups = groupCount(n, p);
      return {
        code: shader(dot, dtype, p),
        workgroups: [groups, 1, 1],
        uniforms: new Uint32Array([n, nfull, groups, n % 4]),
        scratchBytes: 4 * (1 + groups),
        key: `${name}|${dtype}|wg=${p.wg}|ept=${p.ept}|acc=${dtype === "f16" ? p.acc : "f32"}`,
        // The group count is a uniform and sizes the scratch: it does not change the code.
      };
    },
  };
}

/**
 * The WebGPU `sum`: variants `{ wg: 64 | 256, ept: 4 | 16, acc: "f32" | "f16", groups: 256 | 4096 }`.
 *
 * @example
 * ```ts
 * import { sumWebGpu } from "./webgpu.ts";
 * const p = sumWebGpu.program({ n: 1 << 20 }, "f32", { wg: 256, ept: 16, acc: "f32", groups: 4096 });
 * console.log(p.workgroups, p.scratchBytes); // [ 256, 1, 1 ] 1028
 * ```
 */
export const sumWebGpu: WebGpuImpl = reductionWebGpu(false);

/**
 * The WebGPU `dot`: variants `{ wg: 64 | 256, ept: 4 | 16, acc: "f32" | "f16", groups: 256 | 4096 }`.
 *
 * @example
 * ```ts
 * import { dotWebGpu } from "./webgpu.ts";
 * const v = { wg: 64, ept: 4, acc: "f16", groups: 256 };
 * console.log(dotWebGpu.unsupported?.({ n: 8 }, "f32", v) !== null); // true
 * ```
 */
export const dotWebGpu: WebGpuImpl = reductionWebGpu(true);
