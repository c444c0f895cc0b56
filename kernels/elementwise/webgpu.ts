/**
 * WGSL elementwise ops (`add`, `mul`, `fma`), f32 and f16, in two layouts:
 *
 * - `ept` 1, 4 or 16: one invocation per 1, 4 (one vec4) or 16 (four vec4s) elements, 64 or
 *   256 invocations a workgroup.
 * - `ept` 256 or 1024 (team runs): each team of {@linkcode TEAM} neighbouring invocations owns
 *   one contiguous run of TEAM × `ept` elements and walks it together, lane `l` taking vec4s `l`,
 *   `l + TEAM`, ..., {@linkcode UNROLL} of them per loop trip, so the hot loop has no per-element
 *   tail test; the first team shares the few vec4s past the last whole block of TEAM × UNROLL
 *   vec4s, and invocation 0 the final partial vec4. The grid grows with n, a workgroup per
 *   `wg` × `ept` elements.
 *
 * Both use a 2D dispatch so 2^26 elements fit under the 65535 workgroups-per-dimension limit.
 *
 * Why team runs are faster on llvmpipe (Mesa's CPU driver, behind lavapipe): a workgroup runs as
 * SIMD groups of 8 lanes (AVX2), one after another, each running its invocations' code to the
 * end, and every storage-buffer access is a loop over the 8 lanes with a scalar load or store
 * and a bounds test per component. The per-access cost is fixed, so what a layout can win is
 * everything around it: tens of thousands of one-vec4 workgroups each pay a thread-pool
 * hand-off, and a GPU-style grid-stride loop makes one SIMD group stride across the whole array
 * before the next starts (a new page per step: TLB and prefetcher misses, about 5× slower
 * here). A team walking its own contiguous run streams memory like a CPU loop. On a real GPU the
 * same code is a coalesced kernel with fewer, longer-lived invocations.
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
import { ELEMENTWISE_ARITY, type ElementwiseKind } from "./_kind.ts";

/** WebGPU's guaranteed minimum of maxComputeWorkgroupsPerDimension: wider grids fold into y. */
const MAX_GROUPS_X = 65535;
/** Invocations that walk one run of memory together: llvmpipe's SIMD width with AVX2. */
const TEAM = 8;
/** Team-wide vec4 steps per loop trip in a team run. */
const UNROLL = 4;

type Ept = 1 | 4 | 16 | 256 | 1024;

function params(variant: Variant): { wg: number; ept: Ept } {
  const { wg, ept } = variant;
  if (wg !== 64 && wg !== 256) {
    throw new RangeError(`Elementwise variant wg is ${JSON.stringify(wg)}: use 64 or 256`);
  }
  if (ept !== 1 && ept !== 4 && ept !== 16 && ept !== 256 && ept !== 1024) {
    throw new RangeError(
      `Elementwise variant ept is ${JSON.stringify(ept)}: use 1, 4, 16, 256 or 1024`,
    );
  }
  return { wg, ept };
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
 * @returns The implementation, variants `{ wg: 64 | 256, ept: 1 | 4 | 16 | 256 | 1024 }`,
 *   fastest on llvmpipe first.
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
      { wg: 256, ept: 1024 },
      { wg: 64, ept: 1024 },
      { wg: 256, ept: 256 },
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
      const { wg, ept } = params(variant);
      const groups = Math.ceil(Math.ceil(n / ept) / wg);
      const x = Math.min(groups, MAX_GROUPS_X);
      return {
        code: ept >= 256
          ? teamShader(kind, arity, dtype, wg, ept)
          : shader(kind, arity, dtype, wg, ept),
        workgroups: [x, Math.ceil(groups / x), 1],
        uniforms: new Uint32Array([n, 0, 0, 0]),
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
 * Team runs: team `t` owns whole blocks (TEAM × UNROLL vec4s) `[t·per, (t+1)·per)`, `per` =
 * `ept` / (4 · UNROLL) blocks; the first team then shares the vec4s past the last whole block,
 * and invocation 0 does the final partial vec4.
 *
 * The tail is shared, not left to invocation 0, because llvmpipe ran a loop of one active lane
 * pathologically slowly: with invocation 0 alone walking the < 32 tail vec4s, one dispatch at
 * n = 1000 took 14–18 ms of GPU time (timestamp queries) against 0.05 ms at n = 1152, where
 * there is no tail; shared by the team's 8 lanes it takes as long as no tail at all.
 */
function teamShader(
  kind: ElementwiseKind,
  arity: number,
  dtype: Dtype,
  wg: number,
  ept: number,
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
  const per = ept / (4 * UNROLL);
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
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let whole = params.n / 4u;
  let blocks = whole / ${block}u;
  let t = (wid.y * groups.x + wid.x) * ${wg}u + lid;
  let team = t / ${TEAM}u;
  let end = min(team * ${per}u + ${per}u, blocks) * ${block}u;
  for (var i = min(team * ${per}u, blocks) * ${block}u + t % ${TEAM}u; i < end; i += ${block}u) {
${steps.join("\n")}
  }
  if (t < ${TEAM}u) {
    for (var i = blocks * ${block}u + t; i < whole; i += ${TEAM}u) { out[i] = ${whole("i")}; }
    if (t == 0u) {
      for (var j = 0u; j < params.n - whole * 4u; j++) { out[whole][j] = ${lane("whole")}; }
    }
  }
}
`;
}
