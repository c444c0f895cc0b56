/**
 * WGSL elementwise ops (`add`, `mul`, `fma`), f32 and f16: 1, 4 (one vec4) or 16 (four vec4s)
 * elements per invocation, 64 or 256 invocations a workgroup, and a 2D dispatch so 2^26 elements
 * fit under the 65535 workgroups-per-dimension limit.
 *
 * Fewer, fuller workgroups matter on llvmpipe, where each workgroup has a fixed scheduling cost.
 * The vec4 variants view every operand as `array<vec4<T>>`; the runner zero-pads storage
 * buffers to 16 bytes, so the last, partial vec4 exists, and it is written lane by lane.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WebGpuImpl, WgslProgram } from "../types.ts";
import { ELEMENTWISE_ARITY, type ElementwiseKind } from "./mod.ts";

/** WebGPU's guaranteed minimum of maxComputeWorkgroupsPerDimension: wider grids fold into y. */
const MAX_GROUPS_X = 65535;

type Ept = 1 | 4 | 16;

function params(variant: Variant): { wg: number; ept: Ept } {
  const { wg, ept } = variant;
  if (wg !== 64 && wg !== 256) {
    throw new RangeError(`Elementwise variant wg is ${JSON.stringify(wg)}: use 64 or 256`);
  }
  if (ept !== 1 && ept !== 4 && ept !== 16) {
    throw new RangeError(`Elementwise variant ept is ${JSON.stringify(ept)}: use 1, 4 or 16`);
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
 * @returns The implementation, variants `{ wg: 64 | 256, ept: 1 | 4 | 16 }`.
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
        code: shader(kind, arity, dtype, wg, ept),
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
