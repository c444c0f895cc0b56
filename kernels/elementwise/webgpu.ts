/**
 * WGSL elementwise ops (`add`, `mul`, `fma`), f32 and f16, in two layouts:
 *
 * - `{ wg, ept }`: one invocation per 1, 4 (one vec4) or 16 (four vec4s) elements, 64 or 256
 *   invocations a workgroup, and a 2D dispatch so 2^26 elements fit under the 65535
 *   workgroups-per-dimension limit.
 * - `{ wg, ept: 4, groups }`: a fixed grid of `groups` workgroups whatever n. Each team of
 *   {@linkcode TEAM} neighbouring invocations owns one contiguous run of vec4s and walks it
 *   together, {@linkcode UNROLL} steps of a team's width per loop trip, so the hot loop has no
 *   per-element tail test; the remainder past the last whole block is done by invocation 0.
 *
 * Why the fixed grid is faster on llvmpipe (Mesa's CPU driver, behind lavapipe): a workgroup
 * runs as SIMD groups of 8 lanes (AVX2), one after another, each running its invocations' code
 * to the end, and every storage-buffer access is a loop over the 8 lanes with a scalar load or
 * store and a bounds test per component. The per-access cost is fixed, so what a layout can win
 * is everything around it: tens of thousands of workgroups each pay a thread-pool hand-off,
 * and a GPU-style grid-stride loop makes one SIMD group stride across the whole array before the
 * next starts (a new page per step: TLB and prefetcher misses, about 5× slower here). A team
 * walking its own contiguous run streams memory like a CPU loop, and a few workgroups per core
 * keep every thread busy. On a real GPU the same code is a coalesced persistent kernel.
 *
 * That fixed per-access cost, not memory, bounds every layout on llvmpipe: in Mesa 22.3 a lane's
 * access to one component is a compare, a branch and a scalar load or store, several
 * instructions per 4 bytes, where WebAssembly SIMD moves 16 bytes an instruction; wider views
 * (`mat4x4`, arrays of vec4) are split back into vec4 accesses and gain nothing.
 *
 * All variants view operands as `array<T>` or `array<vec4<T>>`; the runner zero-pads storage
 * buffers to 16 bytes, so the last, partial vec4 exists, and it is written lane by lane.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WebGpuImpl, WgslProgram } from "../types.ts";
import { ELEMENTWISE_ARITY, type ElementwiseKind } from "./mod.ts";

/** WebGPU's guaranteed minimum of maxComputeWorkgroupsPerDimension: wider grids fold into y. */
const MAX_GROUPS_X = 65535;
/** Invocations that walk one run of memory together: llvmpipe's SIMD width with AVX2. */
const TEAM = 8;
/** Team-wide steps per loop trip in the fixed-grid layout. */
const UNROLL = 4;

type Ept = 1 | 4 | 16;

interface Params {
  readonly wg: number;
  readonly ept: Ept;
  /** Fixed number of workgroups, or null for one invocation per `ept` elements. */
  readonly groups: number | null;
}

function params(variant: Variant): Params {
  const { wg, ept, groups } = variant;
  if (wg !== 64 && wg !== 256) {
    throw new RangeError(`Elementwise variant wg is ${JSON.stringify(wg)}: use 64 or 256`);
  }
  if (ept !== 1 && ept !== 4 && ept !== 16) {
    throw new RangeError(`Elementwise variant ept is ${JSON.stringify(ept)}: use 1, 4 or 16`);
  }
  if (groups === undefined) return { wg, ept, groups: null };
  if (typeof groups !== "number" || !Number.isInteger(groups) || groups < 1 || groups > 4096) {
    throw new RangeError(
      `Elementwise variant groups is ${JSON.stringify(groups)}: use an integer from 1 to 4096`,
    );
  }
  if (ept !== 4) {
    throw new RangeError(
      `Elementwise variant with groups has ept ${ept}: a fixed grid needs ept 4`,
    );
  }
  return { wg, ept, groups };
}

function expression(kind: ElementwiseKind, a: string, b: string, c: string): string {
  if (kind === "add") return `${a} + ${b}`;
  if (kind === "mul") return `${a} * ${b}`;
  return `fma(${a}, ${b}, ${c})`;
}

/**
 * The WebGPU implementation of an elementwise kind.
 *
 * @param kind `add`, `mul` or `fma`.
 * @returns The implementation, variants `{ wg: 64 | 256, ept: 1 | 4 | 16 }` and the fixed grids
 *   `{ wg, ept: 4, groups }`, fastest on llvmpipe first.
 * @example
 * ```ts
 * import { elementwiseWebGpu } from "./webgpu.ts";
 * const impl = elementwiseWebGpu("add");
 * const p = impl.program({ n: 1 << 24 }, "f32", { wg: 64, ept: 1 });
 * console.log(p.workgroups); // [65535, 5, 1]
 * ```
 */
export function elementwiseWebGpu(kind: ElementwiseKind): WebGpuImpl {
  // Built here, not at module level: mod.ts calls this while the two modules are still loading.
  const arity = ELEMENTWISE_ARITY[kind];
  return {
    variants: [
      { wg: 256, ept: 4, groups: 16 },
      { wg: 64, ept: 4, groups: 64 },
      { wg: 256, ept: 4, groups: 64 },
      { wg: 256, ept: 4 },
      { wg: 64, ept: 4 },
      { wg: 256, ept: 16 },
      { wg: 64, ept: 16 },
      { wg: 256, ept: 1 },
      { wg: 64, ept: 1 },
    ],
    features: { f16: ["shader-f16"] },
    unsupported(_shape: Shape, dtype: Dtype, variant: Variant): string | null {
      params(variant);
      return dtype === "f32" || dtype === "f16"
        ? null
        : `WebGPU ${kind} has no ${dtype} kernel: use f32 or f16`;
    },
    program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram {
      const n = shape.n;
      if (!n) throw new RangeError(`Elementwise ops need n, got ${JSON.stringify(shape)}`);
      const p = params(variant);
      const uniforms = new Uint32Array([n, 0, 0, 0]);
      if (p.groups !== null) {
        return {
          code: fixedGridShader(kind, arity, dtype, p.wg, p.groups),
          workgroups: [p.groups, 1, 1],
          uniforms,
          key: `${kind}|${dtype}|wg=${p.wg}|ept=4|groups=${p.groups}`,
        };
      }
      const { wg, ept } = p;
      const groups = Math.ceil(Math.ceil(n / ept) / wg);
      const x = Math.min(groups, MAX_GROUPS_X);
      return {
        code: shader(kind, arity, dtype, wg, ept),
        workgroups: [x, Math.ceil(groups / x), 1],
        uniforms,
        key: `${kind}|${dtype}|wg=${wg}|ept=${ept}`,
      };
    },
  };
}

function shader(
  kind: ElementwiseKind,
  arity: number,
  dtype: Dtype,
  wg: number,
  ept: Ept,
): string {
  const t = dtype === "f16" ? "f16" : "f32";
  const element = ept === 1 ? t : `vec4<${t}>`;
  // An invocation takes `perThread` elements of its array, a workgroup's width apart, so the
  // invocations of a workgroup touch neighbouring elements at every step.
  const perThread = ept === 16 ? 4 : 1;
  const names = ["a", "b", "c"].slice(0, arity);
  const bindings = names.map((name, i) =>
    `@group(0) @binding(${i}) var<storage, read> ${name}: array<${element}>;`
  );
  const at = (suffix: string) => (name: string | undefined) => name ? `${name}${suffix}` : "";
  const whole = (i: string) =>
    expression(kind, ...names.map(at(`[${i}]`)) as [string, string, string]);
  const lane = (i: string) =>
    expression(kind, ...names.map(at(`[${i}][j]`)) as [string, string, string]);
  const body = ept === 1
    ? `  if (i < params.n) { out[i] = ${whole("i")}; }`
    : `  if (i * 4u + 4u <= params.n) {
    out[i] = ${whole("i")};
  } else if (i * 4u < params.n) {
    for (var j = 0u; j < params.n - i * 4u; j++) { out[i][j] = ${lane("i")}; }
  }`;
  return `${dtype === "f16" ? "enable f16;\n" : ""}
struct Params { n: u32, pad0: u32, pad1: u32, pad2: u32 }
${bindings.join("\n")}
@group(0) @binding(${arity}) var<storage, read_write> out: array<${element}>;
@group(0) @binding(${arity + 1}) var<uniform> params: Params;

fn one(i: u32) {
${body}
}

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let base = (wid.y * groups.x + wid.x) * ${wg * perThread}u + lid;
${Array.from({ length: perThread }, (_, s) => `  one(base + ${s * wg}u);`).join("\n")}
}
`;
}

/**
 * The fixed-grid layout: `groups` workgroups of `wg` invocations; each team of {@linkcode TEAM}
 * owns a contiguous run of whole blocks (TEAM × UNROLL vec4s), lane `l` taking vec4s `l`,
 * `l + TEAM`, ... of it; invocation 0 then does the vec4s past the last whole block and the
 * final partial vec4.
 */
function fixedGridShader(
  kind: ElementwiseKind,
  arity: number,
  dtype: Dtype,
  wg: number,
  groups: number,
): string {
  const t = dtype === "f16" ? "f16" : "f32";
  const names = ["a", "b", "c"].slice(0, arity);
  const bindings = names.map((name, i) =>
    `@group(0) @binding(${i}) var<storage, read> ${name}: array<vec4<${t}>>;`
  );
  const at = (suffix: string) => (name: string | undefined) => name ? `${name}${suffix}` : "";
  const whole = (i: string) =>
    expression(kind, ...names.map(at(`[${i}]`)) as [string, string, string]);
  const lane = (i: string) =>
    expression(kind, ...names.map(at(`[${i}][j]`)) as [string, string, string]);
  const block = TEAM * UNROLL;
  const teams = (wg * groups) / TEAM;
  const steps = Array.from(
    { length: UNROLL },
    (_, s) => `    { let k = i + ${s * TEAM}u; out[k] = ${whole("k")}; }`,
  );
  return `${dtype === "f16" ? "enable f16;\n" : ""}
struct Params { n: u32, pad0: u32, pad1: u32, pad2: u32 }
${bindings.join("\n")}
@group(0) @binding(${arity}) var<storage, read_write> out: array<vec4<${t}>>;
@group(0) @binding(${arity + 1}) var<uniform> params: Params;

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let whole = params.n / 4u;
  let blocks = whole / ${block}u;
  let t = wid.x * ${wg}u + lid;
  let team = t / ${TEAM}u;
  let per = (blocks + ${teams - 1}u) / ${teams}u;
  let end = min(team * per + per, blocks) * ${block}u;
  for (var i = min(team * per, blocks) * ${block}u + t % ${TEAM}u; i < end; i += ${block}u) {
${steps.join("\n")}
  }
  if (t == 0u) {
    for (var i = blocks * ${block}u; i < whole; i++) { out[i] = ${whole("i")}; }
    for (var j = 0u; j < params.n - whole * 4u; j++) { out[whole][j] = ${lane("whole")}; }
  }
}
`;
}
