/**
 * TF.js as a peer in `deno task bench`: its matmul and add on its `webgpu` backend (its own device
 * on the same adapter) and on its `wasm` backend (XNNPACK), each result checked against gpucal's
 * float64 reference before timing, and timed with gpucal's statistics, so the bench prints
 * gpucal/TF.js ratios from one run. Bench only: nothing reachable from mod.ts imports this module.
 *
 * @module
 */
import * as tf from "npm:@tensorflow/tfjs-core@4.22.0";
import "npm:@tensorflow/tfjs-backend-webgpu@4.22.0";
import { getThreadsCount, setWasmPaths } from "npm:@tensorflow/tfjs-backend-wasm@4.22.0";
import { DEFAULT_STOPPING, type StoppingRule, stopReason, summarize } from "../core/stats.ts";
import { verifyOutput } from "../calibrate/verify.ts";
import { seededRng } from "../kernels/_random.ts";
import { add } from "../kernels/elementwise/mod.ts";
import { matmul } from "../kernels/matmul/mod.ts";
import { formatShape, type OpSpec, type Residency, type Shape } from "../kernels/types.ts";
import {
  formatRate,
  PEER_BACKENDS,
  type PeerBackend,
  type PeerBackendStatus,
  type PeerMeasurement,
  type PeerRow,
  type TfjsReport,
} from "./peers.ts";

/** The sizes each peer op is measured at, in the op's axis units (a subset of the bench's). */
export const PEER_SIZES: Readonly<Record<string, readonly number[]>> = {
  matmul: [256, 512, 1024],
  add: [1 << 20, 1 << 24],
};

const PEER_OPS: readonly OpSpec[] = [matmul, add];

/** Device-resident batches aim at this long, as in calibrate/measure.ts, so one sync is small. */
const RESIDENT_BATCH_MS = 100;
/** Most calls in one device-resident batch, as in calibrate/measure.ts. */
const MAX_RESIDENT_REPS = 256;
/** A call this long is its own device-resident batch: one sync is then under 1.1 % of it. */
const LONG_CALL_MS = 1000;
/** Other batches aim at this long, as in calibrate/measure.ts, well above timer resolution. */
const MIN_BATCH_MS = 2;
/** Matmuls up to this many multiply-adds are checked in full; larger ones on sampled rows. */
const FULL_CHECK_MACS = 1 << 24;
/** Rows of a large matmul checked against the float64 reference (first, last and between). */
const CHECKED_ROWS = 16;
/** A non-square shape checked on each backend first, so a transposed operand cannot pass. */
const SMALL_MATMUL: Shape = { m: 67, k: 45, n: 83 };

const WASM_PACKAGE = "npm:@tensorflow/tfjs-backend-wasm@4.22.0";

/**
 * Options of {@linkcode benchTfjs}.
 *
 * @example
 * ```ts
 * import type { BenchTfjsOptions } from "./tfjs.ts";
 * const quick: BenchTfjsOptions = { ops: ["matmul"], backends: ["wasm"], stopping: { budgetMs: 300 } };
 * ```
 */
export interface BenchTfjsOptions {
  /** Op names to measure (others are ignored); `matmul` and `add` when absent. */
  readonly ops?: readonly string[];
  /** Backends to measure (others are ignored); both when absent. */
  readonly backends?: readonly string[];
  /** Overrides of gpucal's default stopping rule, per case. */
  readonly stopping?: Partial<StoppingRule>;
  /** Seed of the random operands. */
  readonly seed?: number;
  /** Told each result and each backend's status as they come; silent when absent. */
  readonly log?: (line: string) => void;
}

interface PeerCase {
  readonly output: () => Promise<Float32Array>;
  readonly batch: (reps: number) => Promise<void>;
  readonly dispose: () => void;
}

/**
 * Measures TF.js matmul (n = 256, 512, 1024) and add (1M, 16M elements), f32, on its `webgpu`
 * backend (device-resident: many calls then one read; end-to-end: upload, call and read per
 * call) and its `wasm` backend (calls on operands already in wasm memory, as gpucal's wasm
 * runner does). A backend that cannot initialise is reported with the reason and skipped. Each
 * backend is removed again at the end and its GPU device destroyed.
 *
 * @param options Which ops and backends, the stopping rule, the seed, a logger.
 * @returns Backend statuses and one row per case.
 * @example
 * ```ts ignore
 * import { benchTfjs } from "./tfjs.ts";
 * const report = await benchTfjs({ ops: ["add"], backends: ["wasm"], log: console.error });
 * console.log(report.backends[0]?.detail);
 * ```
 */
export async function benchTfjs(options: BenchTfjsOptions = {}): Promise<TfjsReport> {
  const rule: StoppingRule = { ...DEFAULT_STOPPING, ...options.stopping };
  const log = options.log ?? (() => {});
  const ops = PEER_OPS.filter((o) => !options.ops || options.ops.includes(o.name));
  const backends = PEER_BACKENDS.filter((b) => !options.backends || options.backends.includes(b));
  const statuses: PeerBackendStatus[] = [];
  const rows: PeerRow[] = [];
  let seed = options.seed ?? 0x7f4a7c15;
  for (const backend of backends) {
    const factory = tf.findBackendFactory(backend);
    let status: PeerBackendStatus;
    try {
      status = { backend, ready: true, detail: await activate(backend) };
    } catch (e) {
      status = { backend, ready: false, detail: errorText(e) };
    }
    statuses.push(status);
    log(
      `TF.js ${backend}: ${status.ready ? status.detail : `cannot initialise: ${status.detail}`}`,
    );
    if (!status.ready) continue;
    try {
      const small = await check(matmul, SMALL_MATMUL, backend, "end-to-end", seed++);
      log(`TF.js ${backend} matmul ${formatShape(matmul, SMALL_MATMUL)}: ${small}`);
      for (const op of ops) {
        for (const size of PEER_SIZES[op.name] ?? []) {
          const residencies: Residency[] = backend === "webgpu"
            ? ["device-resident", "end-to-end"]
            : ["end-to-end"];
          for (const residency of residencies) {
            const shape = op.axis.shape(size);
            const result = await measureCase(op, shape, backend, residency, seed++, rule);
            const row: PeerRow = {
              op: op.name,
              dtype: "f32",
              size,
              shape: formatShape(op, shape),
              backend,
              residency,
              result,
            };
            rows.push(row);
            log(
              `TF.js ${op.name} f32 ${row.shape} ${backend} ${residency}: ${describe(op, result)}`,
            );
          }
        }
      }
    } finally {
      deactivate(backend, factory);
    }
  }
  return { tfjsVersion: tf.version_core, backends: statuses, rows };
}

function describe(op: OpSpec, r: PeerMeasurement): string {
  if (r.state !== "ok") return `FAILED ${r.error}`;
  return `${formatRate(op.name, op.name === "matmul" ? r.gflops : r.gbps)}  (${
    r.wall.median.toPrecision(3)
  } ms ±${(r.wall.relCi * 100).toFixed(1)} %, ${r.reps}/batch, checked ${r.checked})`;
}

/** Makes `backend` TF.js's current backend and says what runs. */
async function activate(backend: PeerBackend): Promise<string> {
  if (backend === "webgpu") {
    const gpu = (globalThis.navigator as { gpu?: GPU } | undefined)?.gpu;
    if (!gpu) throw new Error("navigator.gpu is missing");
    // The same request TF.js makes, only to name the adapter it will get.
    const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
    if (!adapter) throw new Error("requestAdapter() returned null");
    if (!(await tf.setBackend("webgpu"))) {
      throw new Error('tf.setBackend("webgpu") returned false (TF.js warned why above)');
    }
    return `its own device on ${adapter.info.description || "an unnamed adapter"}`;
  }
  // The package's main file sits next to its .wasm binaries in Deno's npm cache; TF.js reads
  // them with fetch() on a file: URL, which --allow-read covers.
  setWasmPaths(new URL("./", import.meta.resolve(WASM_PACKAGE)).href, true);
  const simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT") === true;
  const threads = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT") === true;
  if (!(await tf.setBackend("wasm"))) {
    throw new Error('tf.setBackend("wasm") returned false (TF.js warned why above)');
  }
  const binary = simd && threads
    ? "tfjs-backend-wasm-threaded-simd.wasm"
    : simd
    ? "tfjs-backend-wasm-simd.wasm"
    : "tfjs-backend-wasm.wasm";
  const why = !threads && tf.env().getBool("IS_NODE")
    ? " (TF.js turns threads off when IS_NODE, and Deno's process global makes it true)"
    : "";
  return `XNNPACK, ${binary}, SIMD ${simd ? "on" : "off"}, ` +
    `multithread ${threads ? "on" : "off"}${why}, ${getThreadsCount()} thread(s)`;
}

/** Removes the backend (destroying TF.js's GPU device) and registers its factory again. */
function deactivate(backend: PeerBackend, factory: ReturnType<typeof tf.findBackendFactory>) {
  const instance = tf.engine().registry[backend] as { device?: GPUDevice } | undefined;
  tf.removeBackend(backend);
  instance?.device?.destroy();
  // TF.js's own registration priorities: webgpu 3, wasm 2.
  if (factory) tf.registerBackend(backend, factory, backend === "webgpu" ? 3 : 2);
}

/** Runs one case once and checks it against the float64 reference; returns what was checked. */
async function check(
  op: OpSpec,
  shape: Shape,
  backend: PeerBackend,
  residency: Residency,
  seed: number,
): Promise<string> {
  const inputs = op.inputs(shape, "f32", seededRng(seed));
  const arrays = inputs.arrays as readonly Float32Array[];
  const peer = openCase(op, shape, arrays, backend, residency);
  try {
    return verify(op, shape, arrays, await peer.output()).checked;
  } finally {
    peer.dispose();
  }
}

async function measureCase(
  op: OpSpec,
  shape: Shape,
  backend: PeerBackend,
  residency: Residency,
  seed: number,
  rule: StoppingRule,
): Promise<PeerMeasurement> {
  let peer: PeerCase | undefined;
  try {
    const arrays = op.inputs(shape, "f32", seededRng(seed)).arrays as readonly Float32Array[];
    peer = openCase(op, shape, arrays, backend, residency);
    const { maxRelError, checked } = verify(op, shape, arrays, await peer.output());
    const first = performance.now();
    await peer.batch(1);
    const perCall = Math.max(performance.now() - first, 1e-4);
    const reps = residency === "device-resident"
      ? perCall >= LONG_CALL_MS
        ? 1
        : Math.min(MAX_RESIDENT_REPS, Math.max(4, Math.ceil(RESIDENT_BATCH_MS / perCall)))
      : Math.max(1, Math.ceil(MIN_BATCH_MS / perCall));
    const samples: number[] = [];
    let elapsedMs = 0;
    do {
      const started = performance.now();
      await peer.batch(reps);
      const ms = performance.now() - started;
      elapsedMs += ms;
      samples.push(ms / reps);
    } while (stopReason(samples, elapsedMs, rule) === null);
    const wall = summarize(samples);
    const seconds = wall.median / 1000;
    return {
      state: "ok",
      wall,
      reps,
      gflops: op.flops(shape) / seconds / 1e9,
      gbps: op.bytes(shape, "f32") / seconds / 1e9,
      maxRelError,
      checked,
      noisy: wall.relCi > rule.targetRelCi,
    };
  } catch (e) {
    return { state: "failed", error: errorText(e) };
  } finally {
    peer?.dispose();
  }
}

/**
 * Checks TF.js's output against gpucal's float64 reference, in full where that is cheap and on
 * sampled rows of a large matmul (a full 1024³ reference takes seconds in JS).
 *
 * @throws {RangeError} when the output is wrong, so the case is reported failed and not timed.
 */
function verify(
  op: OpSpec,
  shape: Shape,
  arrays: readonly Float32Array[],
  out: Float32Array,
): { maxRelError: number; checked: string } {
  const tolerance = op.tolerance(shape, "f32");
  const { m = 0, k = 0, n = 0 } = shape;
  if (op.name !== "matmul" || m * k * n <= FULL_CHECK_MACS) {
    const v = verifyOutput(
      out,
      op.reference(shape, "f32", { arrays, outputLength: out.length }),
      tolerance,
    );
    if (!v.ok) throw new RangeError(`TF.js gave a wrong answer: ${v.message ?? ""}`);
    return { maxRelError: v.maxRelError, checked: "full" };
  }
  const [a, b] = arrays;
  const rows = Array.from(
    { length: CHECKED_ROWS },
    (_, i) => Math.round(i * (m - 1) / (CHECKED_ROWS - 1)),
  );
  const got = new Float32Array(rows.length * n);
  const ref = new Float64Array(rows.length * n);
  rows.forEach((row, r) => {
    got.set(out.subarray(row * n, row * n + n), r * n);
    for (let p = 0; p < k; p++) {
      const x = a![row * k + p]!;
      for (let j = 0; j < n; j++) ref[r * n + j]! += x * b![p * n + j]!;
    }
  });
  const v = verifyOutput(got, ref, tolerance);
  if (!v.ok) throw new RangeError(`TF.js gave a wrong answer on sampled rows: ${v.message ?? ""}`);
  return { maxRelError: v.maxRelError, checked: `${rows.length} rows` };
}

function openCase(
  op: OpSpec,
  shape: Shape,
  arrays: readonly Float32Array[],
  backend: PeerBackend,
  residency: Residency,
): PeerCase {
  const [a, b] = arrays;
  if (!a || !b) throw new RangeError(`${op.name} needs two operands, got ${arrays.length}`);
  const { m = 0, k = 0, n = 0 } = shape;
  const operands = (): [tf.Tensor, tf.Tensor] =>
    op.name === "matmul"
      ? [tf.tensor2d(a, [m, k]), tf.tensor2d(b, [k, n])]
      : [tf.tensor1d(a), tf.tensor1d(b)];
  const call = (x: tf.Tensor, y: tf.Tensor) =>
    op.name === "matmul" ? tf.matMul(x, y) : tf.add(x, y);

  if (backend === "webgpu" && residency === "end-to-end") {
    // Upload, call and read back on every call, as gpucal's webgpu end-to-end runs do.
    const once = async () => {
      const [x, y] = operands();
      const out = call(x, y);
      try {
        return await out.data() as Float32Array;
      } finally {
        tf.dispose([x, y, out]);
      }
    };
    return {
      output: once,
      batch: async (reps) => {
        for (let r = 0; r < reps; r++) await once();
      },
      dispose: () => {},
    };
  }
  const [x, y] = operands();
  return {
    output: async () => {
      const out = call(x, y);
      try {
        return await out.data() as Float32Array;
      } finally {
        out.dispose();
      }
    },
    // webgpu: the calls queue on the device and one read of the last output waits for them all;
    // wasm: each call computes before it returns, as gpucal's wasm runs do.
    batch: backend === "webgpu"
      ? async (reps) => {
        let last: tf.Tensor | undefined;
        for (let r = 0; r < reps; r++) {
          last?.dispose();
          last = call(x, y);
        }
        try {
          await last?.data();
        } finally {
          last?.dispose();
        }
      }
      : (reps) => {
        for (let r = 0; r < reps; r++) call(x, y).dispose();
        return Promise.resolve();
      },
    dispose: () => tf.dispose([x, y]),
  };
}

function errorText(e: unknown): string {
  return e instanceof Error
    ? e.message
    : typeof e === "object" && e && "message" in e
    ? String((e as { message: unknown }).message)
    : String(e);
}
