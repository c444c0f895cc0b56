/**
 * WGSL matmul, f32 and f16, in three families:
 *
 * - `naive`: one output per invocation, an 8×8 or 16×16 workgroup.
 * - `tiled`: the textbook shared-memory tile (workgroup = tile×tile, K in steps of the tile).
 * - `reg`: each invocation computes a `tm`×`tn` block of C in registers, in a `wg`×`wgy`
 *   workgroup; `vec4` reads B as `vec4` (needs n % 4 == 0), `kt` > 0 stages `kt`-deep slices of
 *   A and B through workgroup memory, 0 reads them straight from storage; `avec4` (with `kt` 0)
 *   also reads A as `vec4` along k (needs k % 4 == 0), one load feeding four k steps.
 *
 * Why the big `reg` blocks lead the list on llvmpipe (lavapipe), a CPU pretending to be a GPU:
 * it runs 8 invocations as the 8 lanes of one SIMD vector, and inside a loop (the k loop) it
 * cannot load a storage or workgroup value once for all lanes: every load is a scalar loop over
 * the lanes with an exec-mask test, and a bounds test per component. A loaded component costs
 * several scalar instructions; a multiply-add costs one vector instruction for 8 lanes. The rate
 * thus follows multiply-adds per loaded component, tm·tn / (tm + tn) per k step: 2 for a 4×4
 * block, 5.3 for 16×8, 8 for 16×16 (past that, accumulators spill to the stack and the gain
 * stops). `vec4` loads share one lane loop among four components. Workgroup memory does not
 * help: its reads are lane loops too, and its barriers switch coroutines. Measured here (Mesa
 * 22.3, 2-core Xeon, n = 1024) the 16×8 and 16×16 blocks with vec4 A and B did about 3× the 4×4
 * vec4 block's work per CPU second; the 4×4 block ran ~8× faster than `naive`, the 16×16 shared
 * tile slower.
 *
 * f16 variants carry `acc`: `f32` converts each operand and accumulates in f32, `f16` stays in f16.
 *
 * @module
 */
import type { Dtype, Shape, Variant, WebGpuImpl, WgslProgram } from "../types.ts";

/** Largest `tm`: 32 rows of accumulators already spill the CPU's registers to the stack. */
const MAX_TM = 32;

type Family = "naive" | "tiled" | "reg";

interface Params {
  readonly family: Family;
  /** Workgroup edge (naive), width (reg, also its height without `wgy`) or tile edge (tiled). */
  readonly wg: number;
  /** Workgroup height of `reg` (defaults to `wg`). */
  readonly wgy: number;
  readonly tm: number;
  readonly tn: number;
  readonly vec4: boolean;
  readonly kt: number;
  /** Read A as vec4 along k (needs k % 4 == 0, kt == 0). */
  readonly avec4: boolean;
  readonly acc: "f32" | "f16";
}

// Fastest first on lavapipe (quick calibration takes the first runnable one): the big vec4
// blocks need k % 4 == 0 and n % 4 == 0; the 16×8 block without vec4 runs every shape and f32 or
// f16 (about 2× the 4×4 block's rate at n = 1023 here), so a shape the vec4 blocks cannot run
// falls to it. The rest trade generality (vec4 needs n % 4 == 0, avec4 k % 4 == 0, acc=f16 f16
// operands) for speed.
const VARIANTS: readonly Variant[] = [
  { algo: "reg", wg: 8, wgy: 4, tm: 16, tn: 16, vec4: true, kt: 0, avec4: true },
  { algo: "reg", wg: 8, wgy: 4, tm: 16, tn: 8, vec4: true, kt: 0, avec4: true },
  { algo: "reg", wg: 8, tm: 16, tn: 8, vec4: true, kt: 0, avec4: true },
  { algo: "reg", wg: 8, tm: 8, tn: 8, vec4: true, kt: 0, avec4: true },
  { algo: "reg", wg: 8, wgy: 4, tm: 16, tn: 8, vec4: false, kt: 0 },
  { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: false, kt: 0 },
  { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: true, kt: 0 },
  { algo: "reg", wg: 8, tm: 4, tn: 8, vec4: true, kt: 0 },
  { algo: "reg", wg: 8, tm: 8, tn: 4, vec4: true, kt: 0 },
  { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: true, kt: 0, avec4: true },
  { algo: "reg", wg: 8, tm: 4, tn: 8, vec4: true, kt: 0, avec4: true },
  { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: true, kt: 0, acc: "f16" },
  { algo: "reg", wg: 8, tm: 2, tn: 2, vec4: false, kt: 0 },
  { algo: "reg", wg: 16, tm: 4, tn: 4, vec4: true, kt: 0 },
  { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: true, kt: 16 },
  { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: true, kt: 32 },
  { algo: "naive", wg: 8 },
  { algo: "naive", wg: 16 },
  { algo: "tiled", wg: 16 },
  { algo: "tiled", wg: 8 },
];

function params(variant: Variant): Params {
  const family = variant.algo;
  if (family !== "naive" && family !== "tiled" && family !== "reg") {
    throw new RangeError(
      `Unknown matmul variant algo "${String(family)}": use "naive", "tiled" or "reg"`,
    );
  }
  const int = (name: string, fallback: number) => {
    const v = variant[name] ?? fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
      throw new RangeError(
        `Matmul variant "${name}" is ${JSON.stringify(v)}: use a non-negative integer`,
      );
    }
    return v;
  };
  const acc = variant.acc ?? "f32";
  if (acc !== "f32" && acc !== "f16") {
    throw new RangeError(`Matmul variant acc is ${JSON.stringify(acc)}: use "f32" or "f16"`);
  }
  const p: Params = {
    family,
    wg: int("wg", 8),
    wgy: family === "reg" ? int("wgy", int("wg", 8)) : int("wg", 8),
    tm: family === "reg" ? int("tm", 4) : 1,
    tn: family === "reg" ? int("tn", 4) : 1,
    vec4: family === "reg" && variant.vec4 === true,
    kt: family === "reg" ? int("kt", 0) : 0,
    avec4: family === "reg" && variant.avec4 === true,
    acc,
  };
  if (p.family === "reg" && ![1, 2, 4, 8, 12, 16].includes(p.tn)) {
    throw new RangeError(`Matmul variant tn is ${p.tn}: use 1, 2, 4, 8, 12 or 16`);
  }
  if (p.family === "reg" && (p.tm < 1 || p.tm > MAX_TM)) {
    throw new RangeError(`Matmul variant tm is ${p.tm}: use 1 to ${MAX_TM}`);
  }
  if (p.wg < 1 || p.wgy < 1) {
    throw new RangeError(`Matmul variant workgroup is ${p.wg}×${p.wgy}: use sides of at least 1`);
  }
  if (p.avec4 && p.kt !== 0) {
    throw new RangeError(`Matmul avec4 variants need kt=0, got kt=${p.kt}`);
  }
  if (p.vec4 && p.tn % 4 !== 0) {
    throw new RangeError(`Matmul vec4 variants need tn % 4 == 0, got tn=${p.tn}`);
  }
  return p;
}

/** The output rows and columns one workgroup computes. */
function outputTile(p: Params): { rows: number; cols: number } {
  return {
    rows: p.family === "reg" ? p.wgy * p.tm : p.wg,
    cols: p.family === "reg" ? p.wg * p.tn : p.wg,
  };
}

/**
 * The share of whole tiles a dimension fills: 1 under one tile (a few rows of a decode are
 * priced by their invocation blocks, {@linkcode blockCovered}), else `d` over the tiles it needs.
 */
function covered(d: number, tile: number): number {
  return d < tile ? 1 : d / (Math.ceil(d / tile) * tile);
}

/**
 * Rows and columns an invocation's arithmetic comes in, along a dimension under one tile: a
 * register block without workgroup memory returns when its first row or column lies past the
 * output and else computes its whole `tm × tn` block (its rows and columns clamped to the last);
 * a kernel staging slices through workgroup memory keeps every invocation for the barriers, so
 * the whole tile computes; the plain loop computes one output per invocation.
 */
function blockStep(p: Params): { rows: number; cols: number } {
  if (p.family === "reg" && p.kt === 0) return { rows: p.tm, cols: p.tn };
  return p.family === "naive" ? { rows: 1, cols: 1 } : outputTile(p);
}

/** The share of an invocation block's arithmetic a dimension under one tile uses; 1 past it. */
function blockCovered(d: number, tile: number, step: number): number {
  return d >= tile ? 1 : d / (Math.ceil(d / step) * step);
}

function dims(shape: Shape): { m: number; k: number; n: number } {
  const { m, k, n } = shape;
  if (!m || !k || !n) throw new RangeError(`matmul needs m, k and n, got ${JSON.stringify(shape)}`);
  return { m, k, n };
}

/**
 * The WebGPU matmul: C[M×N] = A[M×K]·B[K×N], row-major, dims in a uniform block, any shape.
 *
 * @example
 * ```ts
 * import { matmulWebGpu } from "./webgpu.ts";
 * const v = { algo: "reg", wg: 8, tm: 4, tn: 4, vec4: false, kt: 0 };
 * console.log(matmulWebGpu.unsupported!({ m: 33, k: 7, n: 7 }, "f32", v)); // null
 * const p = matmulWebGpu.program({ m: 33, k: 7, n: 64 }, "f32", v);
 * console.log(p.workgroups); // [2, 2, 1]
 * const big = matmulWebGpu.variants[0]!; // 16×16 blocks in an 8×4 workgroup, vec4 A and B
 * console.log(matmulWebGpu.program({ m: 256, k: 256, n: 256 }, "f32", big).workgroups); // [2, 4, 1]
 * // 260 rows need five tiles of 64, 260 columns three of 128: 260² of 320 × 384 outputs.
 * console.log(matmulWebGpu.utilisation!({ m: 260, k: 260, n: 260 }, big).toFixed(2)); // "0.55"
 * // One row of a decode: the invocation holding it still computes its block's 16 rows.
 * console.log(matmulWebGpu.blockUtilisation!({ m: 1, k: 1024, n: 1024 }, big)); // 0.0625
 * ```
 */
export const matmulWebGpu: WebGpuImpl = {
  variants: VARIANTS,
  features: { f16: ["shader-f16"] },
  unsupported(shape: Shape, dtype: Dtype, variant: Variant): string | null {
    const p = params(variant);
    const { k, n } = dims(shape);
    if (dtype !== "f32" && dtype !== "f16") {
      return `WebGPU matmul has no ${dtype} kernel: use f32 or f16`;
    }
    if (p.acc === "f16" && dtype !== "f16") {
      return `acc=f16 accumulates f16 operands only, got ${dtype}`;
    }
    if (p.vec4 && n % 4 !== 0) return `vec4 loads of B need n % 4 == 0, got n=${n}`;
    if (p.avec4 && k % 4 !== 0) return `vec4 loads of A need k % 4 == 0, got k=${k}`;
    return null;
  },
  utilisation(shape: Shape, variant: Variant): number {
    const { rows, cols } = outputTile(params(variant));
    const { m, n } = dims(shape);
    return covered(m, rows) * covered(n, cols);
  },
  blockUtilisation(shape: Shape, variant: Variant): number {
    const p = params(variant);
    const tile = outputTile(p);
    const step = blockStep(p);
    const { m, n } = dims(shape);
    return blockCovered(m, tile.rows, step.rows) * blockCovered(n, tile.cols, step.cols);
  },
  program(shape: Shape, dtype: Dtype, variant: Variant): WgslProgram {
    const p = params(variant);
    const { m, k, n } = dims(shape);
    const { rows, cols } = outputTile(p);
    const gx = Math.ceil(n / cols);
    const gy = Math.ceil(m / rows);
    const accType = dtype === "f16" ? p.acc : "f32";
    const key =
      `matmul|${dtype}|${p.family}|wg=${p.wg}|wgy=${p.wgy}|tm=${p.tm}|tn=${p.tn}|vec4=${p.vec4}|kt=${p.kt}|avec4=${p.avec4}|acc=${accType}`;
    const code = p.family === "naive"
      ? naive(dtype, accType, p.wg)
      : p.family === "tiled"
      ? tiled(dtype, accType, p.wg)
      : registerBlocked(dtype, accType, p);
    return { code, workgroups: [gx, gy, 1], uniforms: new Uint32Array([m, k, n, 0]), key };
  },
};

function header(dtype: Dtype, vec4B: boolean, vec4A = false): string {
  const t = dtype === "f16" ? "f16" : "f32";
  return `${dtype === "f16" ? "enable f16;\n" : ""}
struct Dims { m: u32, k: u32, n: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> a: array<${vec4A ? `vec4<${t}>` : t}>;
@group(0) @binding(1) var<storage, read> b: array<${vec4B ? `vec4<${t}>` : t}>;
@group(0) @binding(2) var<storage, read_write> c: array<${t}>;
@group(0) @binding(3) var<uniform> dims: Dims;
`;
}

function naive(dtype: Dtype, acc: string, wg: number): string {
  const t = dtype === "f16" ? "f16" : "f32";
  return `${header(dtype, false)}
@compute @workgroup_size(${wg}, ${wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let col = gid.x;
  let row = gid.y;
  if (row >= dims.m || col >= dims.n) { return; }
  var sum = ${acc}(0);
  for (var p = 0u; p < dims.k; p++) {
    sum += ${acc}(a[row * dims.k + p]) * ${acc}(b[p * dims.n + col]);
  }
  c[row * dims.n + col] = ${t}(sum);
}
`;
}

function tiled(dtype: Dtype, acc: string, tile: number): string {
  const t = dtype === "f16" ? "f16" : "f32";
  return `${header(dtype, false)}
var<workgroup> tileA: array<${acc}, ${tile * tile}>;
var<workgroup> tileB: array<${acc}, ${tile * tile}>;

@compute @workgroup_size(${tile}, ${tile})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let col = gid.x;
  let row = gid.y;
  var sum = ${acc}(0);
  for (var p0 = 0u; p0 < dims.k; p0 += ${tile}u) {
    let ak = p0 + lid.x;
    let bk = p0 + lid.y;
    tileA[lid.y * ${tile}u + lid.x] = select(${acc}(0), ${acc}(a[row * dims.k + ak]), row < dims.m && ak < dims.k);
    tileB[lid.y * ${tile}u + lid.x] = select(${acc}(0), ${acc}(b[bk * dims.n + col]), bk < dims.k && col < dims.n);
    workgroupBarrier();
    for (var p = 0u; p < ${tile}u; p++) {
      sum += tileA[lid.y * ${tile}u + p] * tileB[p * ${tile}u + lid.x];
    }
    workgroupBarrier();
  }
  if (row < dims.m && col < dims.n) { c[row * dims.n + col] = ${t}(sum); }
}
`;
}

/**
 * Register-blocked kernel text. The unrolled loops are written out here in TypeScript, so the
 * shader compiler sees straight-line code with every accumulator a named `vecW` variable.
 */
function registerBlocked(dtype: Dtype, acc: string, p: Params): string {
  const t = dtype === "f16" ? "f16" : "f32";
  const { tm, tn, wg, wgy, kt, vec4 } = p;
  const w = Math.min(tn, 4);
  const vw = w === 1 ? acc : `vec${w}<${acc}>`;
  const lanes = tn / w;
  const range = (count: number) => Array.from({ length: count }, (_, i) => i);
  const accs = range(tm).flatMap((i) => range(lanes).map((q) => `  var acc${i}_${q} = ${vw}(0);`));
  const rowsClamped = range(tm).map((i) => `  let r${i} = min(row0 + ${i}u, dims.m - 1u);`);

  // Reads of B at row `kRow`: column group `q` of this invocation's block, as a vecW of acc type.
  const bRead = (kRow: string, q: number): string => {
    if (vec4) return `${vw}(b[${kRow} * n4 + min(col4 + ${q}u, n4 - 1u)])`;
    if (w === 1) return `${acc}(b[${kRow} * dims.n + min(col0 + ${q}u, dims.n - 1u)])`;
    const parts = range(w).map((j) =>
      `${acc}(b[${kRow} * dims.n + min(col0 + ${q * w + j}u, dims.n - 1u)])`
    );
    return `${vw}(${parts.join(", ")})`;
  };
  const fmas = (aOf: (i: number) => string, bOf: (q: number) => string): string[] => [
    ...range(lanes).map((q) => `    let b${q} = ${bOf(q)};`),
    ...range(tm).map((i) => `    let a${i} = ${aOf(i)};`),
    ...range(tm).flatMap((i) => range(lanes).map((q) => `    acc${i}_${q} += a${i} * b${q};`)),
  ];

  const writes = range(tm).flatMap((i) =>
    range(tn).map((j) => {
      const q = Math.floor(j / w);
      const lane = w === 1 ? "" : `[${j % w}]`;
      return `  if (row0 + ${i}u < dims.m && col0 + ${j}u < dims.n) { c[(row0 + ${i}u) * dims.n + col0 + ${j}u] = ${t}(acc${i}_${q}${lane}); }`;
    })
  );

  const common = [
    `  let col0 = gid.x * ${tn}u;`,
    ...(vec4 ? [`  let n4 = dims.n / 4u;`, `  let col4 = gid.x * ${tn / 4}u;`] : []),
    `  let row0 = gid.y * ${tm}u;`,
    ...accs,
  ];

  if (kt === 0 && p.avec4) {
    // A as vec4 along k: one load feeds four k steps of every row.
    const steps = range(4).flatMap((s) => [
      ...range(lanes).map((q) => `    let b${s}_${q} = ${bRead(`(p4 * 4u + ${s}u)`, q)};`),
      ...range(tm).flatMap((i) =>
        range(lanes).map((q) => `    acc${i}_${q} += ${acc}(a${i}[${s}]) * b${s}_${q};`)
      ),
    ]);
    return `${header(dtype, vec4, true)}
@compute @workgroup_size(${wg}, ${wgy})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
${common.join("\n")}
  if (row0 >= dims.m || col0 >= dims.n) { return; }
${rowsClamped.join("\n")}
  let k4 = dims.k / 4u;
  for (var p4 = 0u; p4 < k4; p4++) {
${range(tm).map((i) => `    let a${i} = a[r${i} * k4 + p4];`).join("\n")}
${steps.join("\n")}
  }
${writes.join("\n")}
}
`;
  }

  if (kt === 0) {
    return `${header(dtype, vec4)}
@compute @workgroup_size(${wg}, ${wgy})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
${common.join("\n")}
  if (row0 >= dims.m || col0 >= dims.n) { return; }
${rowsClamped.join("\n")}
  for (var p = 0u; p < dims.k; p++) {
${fmas((i) => `${acc}(a[r${i} * dims.k + p])`, (q) => bRead("p", q)).join("\n")}
  }
${writes.join("\n")}
}
`;
  }

  // Workgroup-memory K slices: A as [rows][kt] scalars, B as [kt][cols / w] vectors.
  const rows = wgy * tm;
  const cols = wg * tn;
  const threads = wg * wgy;
  const aTile = rows * kt;
  const bTile = kt * (cols / w);
  const blockRow = `wid.y * ${rows}u`;
  const bLoad = vec4
    ? `select(${vw}(0), ${vw}(b[gk * n4 + min(gc4, n4 - 1u)]), gk < dims.k && gc4 < n4)`
    : w === 1
    ? `select(${acc}(0), ${acc}(b[gk * dims.n + min(gc, dims.n - 1u)]), gk < dims.k && gc < dims.n)`
    : `${vw}(${
      range(w).map((j) =>
        `select(${acc}(0), ${acc}(b[gk * dims.n + min(gc + ${j}u, dims.n - 1u)]), gk < dims.k && gc + ${j}u < dims.n)`
      ).join(", ")
    })`;
  return `${header(dtype, vec4)}
var<workgroup> tileA: array<${acc}, ${aTile}>;
var<workgroup> tileB: array<${vw}, ${bTile}>;

@compute @workgroup_size(${wg}, ${wgy})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
${common.join("\n")}
  let flat = lid.y * ${wg}u + lid.x;
  for (var k0 = 0u; k0 < dims.k; k0 += ${kt}u) {
    for (var e = flat; e < ${aTile}u; e += ${threads}u) {
      let gr = ${blockRow} + e / ${kt}u;
      let gk = k0 + e % ${kt}u;
      tileA[e] = select(${acc}(0), ${acc}(a[min(gr, dims.m - 1u) * dims.k + min(gk, dims.k - 1u)]), gr < dims.m && gk < dims.k);
    }
    for (var e = flat; e < ${bTile}u; e += ${threads}u) {
      let gk = k0 + e / ${cols / w}u;
      let gc4 = wid.x * ${cols / w}u + e % ${cols / w}u;
      let gc = gc4 * ${w}u;
      tileB[e] = ${bLoad};
    }
    workgroupBarrier();
    for (var p = 0u; p < ${kt}u; p++) {
${
    fmas((i) => `tileA[(lid.y * ${tm}u + ${i}u) * ${kt}u + p]`, (q) =>
      `tileB[p * ${cols / w}u + lid.x * ${lanes}u + ${q}u]`).join("\n")
  }
    }
    workgroupBarrier();
  }
${writes.join("\n")}
}
`;
}
