/**
 * `deno task bench`: every op × backend × dtype at three sizes (best variant of each backend,
 * verified before timing), the WebGPU system figures, and TF.js on the same adapter in the same
 * run unless `--no-peers` is given. Speed goals live here, never in tests.
 *
 * @module
 */
import { listFlag, oneLineFailure, parseFlags, UsageError } from "../core/cli_args.ts";
import { type GpuHandle, openGpu } from "../calibrate/device.ts";
import { measureMany, type RunnerSource } from "../calibrate/measure.ts";
import type { MeasureOk, MeasureResult } from "../core/result.ts";
import type { Runner } from "../calibrate/runner.ts";
import { openRunner } from "../calibrate/runners/mod.ts";
import { createWebGpuRunner } from "../calibrate/runners/webgpu.ts";
import { formatFigure, textTable } from "../core/format.ts";
import { measureSystem } from "../calibrate/system.ts";
import { OPS } from "../kernels/catalog.ts";
import { peerColumns, ratioLines, type TfjsReport } from "./peers.ts";
import {
  type Backend,
  BACKENDS,
  type Dtype,
  DTYPES,
  formatShape,
  implOf,
  type OpSpec,
  type Residency,
  variantId,
} from "../kernels/types.ts";

const HELP = `Usage: deno task bench [options]

Measures every op on every backend and dtype at three sizes (best variant per backend), plus
WebGPU dispatch, transfer and compile figures. Rates are comparable within one run only.

Options:
  --ops LIST        Ops (default: all): ${OPS.map((o) => o.name).join(",")}
  --backends LIST   Backends (default: all): ${BACKENDS.join(",")}
  --dtypes LIST     Dtypes (default: all): ${DTYPES.join(",")}
  --peers           Also measure TF.js matmul and add (f32, webgpu and wasm) and print
                    gpucal/TF.js ratios (the default)
  --no-peers        Skip TF.js
  --json            Print results as JSON on stdout
  -h, --help        Show this help`;

/** The three sizes each op is benchmarked at, in its axis units. */
const BENCH_SIZES: Readonly<Record<string, readonly number[]>> = {
  matmul: [256, 512, 1024],
  gemv: [1024, 2048, 4096],
  add: [1 << 16, 1 << 20, 1 << 24],
  mul: [1 << 16, 1 << 20, 1 << 24],
  fma: [1 << 16, 1 << 20, 1 << 24],
  sum: [1 << 16, 1 << 20, 1 << 24],
  dot: [1 << 16, 1 << 20, 1 << 24],
};

/** A case predicted to take longer than this per run is skipped (scalar JS matmul at 1024). */
const MAX_RUN_MS = 1500;
const STOPPING = { budgetMs: 1500, minSamples: 5 };
const SEARCH_STOPPING = { budgetMs: 300, minSamples: 3, targetRelCi: 0.05 };

function sizesOf(op: OpSpec): readonly number[] {
  const fixed = BENCH_SIZES[op.name];
  if (fixed) return fixed;
  const hi = Math.min(op.axis.max, 1 << 20);
  return [Math.max(op.axis.min, Math.round(hi / 256)), Math.round(hi / 16), hi];
}

function rate(op: OpSpec, m: MeasureOk): string {
  return op.complexity === "matrix" && op.name === "matmul"
    ? `${m.gflops.toFixed(2)} GFLOP/s`
    : `${m.gbps.toFixed(2)} GB/s`;
}

const chosenVariants = new Map<string, string>();

/**
 * The best variant of a backend for an op and dtype, ranked once at the op's middle bench size
 * (device-resident on WebGPU: the kernel is what variants change) and reused at every size; the
 * first declared variant when none ran there (each size then reports its own failure).
 */
async function chooseVariant(
  op: OpSpec,
  dtype: Dtype,
  backend: Backend,
  source: RunnerSource,
): Promise<string> {
  const key = `${op.name}|${dtype}|${backend}`;
  const known = chosenVariants.get(key);
  if (known !== undefined) return known;
  const variants = implOf(op, backend)?.variants ?? [];
  let chosen = variantId(variants[0] ?? {});
  if (variants.length > 1) {
    const sizes = sizesOf(op);
    const shape = op.axis.shape(sizes[Math.floor(sizes.length / 2)]!);
    const residency: Residency = backend === "webgpu" ? "device-resident" : "end-to-end";
    const search = await measureMany(
      variants.map((v) => ({ op: op.name, shape, dtype, backend, variant: v, residency })),
      { runners: source, stopping: SEARCH_STOPPING },
    );
    const ranked = search.filter((r): r is MeasureOk => r.state === "ok")
      .sort((a, b) => a.wall.median - b.wall.median);
    chosen = ranked[0]?.variant ?? chosen;
  }
  chosenVariants.set(key, chosen);
  return chosen;
}

interface Row {
  op: string;
  dtype: Dtype;
  shape: string;
  backend: Backend;
  residency: Residency;
  result: MeasureResult | { state: "skipped"; reason: string };
}

/** What to bench, from the command line. */
interface BenchArgs {
  readonly ops: OpSpec[];
  readonly backends: Backend[];
  readonly dtypes: Dtype[];
  readonly json: boolean;
  readonly withPeers: boolean;
}

/** The command line's choices, or the exit code when it asked for help or was wrong. */
function parseBenchArgs(args: string[]): BenchArgs | number {
  try {
    const { values } = parseFlags(args, {
      ops: { type: "string" },
      backends: { type: "string" },
      dtypes: { type: "string" },
      json: { type: "boolean" },
      peers: { type: "boolean" },
      "no-peers": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    const opNames = listFlag("--ops", values.ops, OPS.map((o) => o.name));
    const ops = OPS.filter((o) => !opNames || opNames.includes(o.name));
    const backends = listFlag("--backends", values.backends, BACKENDS) ?? [...BACKENDS];
    const dtypes = listFlag("--dtypes", values.dtypes, DTYPES) ?? [...DTYPES];
    const json = values.json ?? false;
    if (values.peers && values["no-peers"]) {
      throw new UsageError("Give --peers or --no-peers, not both");
    }
    return { ops, backends, dtypes, json, withPeers: !values["no-peers"] };
  } catch (e) {
    return oneLineFailure(e);
  }
}

/** Runners opened on first use, one per backend, and closed together. */
interface Runners {
  readonly source: RunnerSource;
  readonly close: () => Promise<void>;
}

function openRunners(gpu: GpuHandle | null): Runners {
  const runners = new Map<Backend, Promise<Runner | string>>();
  return {
    source: (b) => {
      let r = runners.get(b);
      if (!r) {
        r = b === "webgpu"
          ? Promise.resolve(gpu ? createWebGpuRunner(gpu) : "No WebGPU adapter on this machine")
          : openRunner(b);
        runners.set(b, r);
      }
      return r;
    },
    close: async () => {
      for (const r of runners.values()) {
        const runner = await r;
        if (typeof runner !== "string") await runner.close();
      }
    },
  };
}

/** Measures and prints the WebGPU system figures. */
async function printSystem(gpu: GpuHandle, json: boolean, log: (s: string) => void) {
  log(`adapter: ${gpu.info.description} via ${gpu.info.backend}`);
  const sys = await measureSystem(gpu);
  const lines = [
    `sync round trip  ${formatFigure(sys.dispatchRoundTripMs)}`,
    `per dispatch     ${formatFigure(sys.perDispatchUs)}`,
    `upload           ${formatFigure(sys.uploadGBps)}`,
    `readback         ${formatFigure(sys.readbackGBps)}`,
    `device copy      ${formatFigure(sys.copyGBps)}`,
    `compile          ${formatFigure(sys.compileMs)}`,
  ];
  if (json) console.log(JSON.stringify({ kind: "system", ...sys }));
  else console.log(["WebGPU system figures:", ...lines.map((l) => `  ${l}`), ""].join("\n"));
}

/** One result's progress line. */
function resultLine(op: OpSpec, row: Row, r: MeasureResult): string {
  return `${op.name} ${row.dtype} ${row.shape} ${row.backend} ${row.residency}: ${
    r.state === "ok"
      ? `${rate(op, r)}  (${r.variant}, ${r.wall.median.toPrecision(3)} ms ±${
        (r.wall.relCi * 100).toFixed(1)
      } %)`
      : r.state === "failed"
      ? `FAILED ${r.error}`
      : `unsupported: ${r.reason}`
  }`;
}

/**
 * Measures one op and dtype at its bench sizes on every backend and residency, in rows. A case
 * whose time, scaled from the same backend's last size, would pass {@linkcode MAX_RUN_MS} is
 * skipped.
 */
async function benchOp(
  op: OpSpec,
  dtype: Dtype,
  backends: readonly Backend[],
  source: RunnerSource,
  log: (s: string) => void,
): Promise<Row[]> {
  const rows: Row[] = [];
  const lastMs = new Map<string, { work: number; ms: number }>();
  for (const size of sizesOf(op)) {
    const shape = op.axis.shape(size);
    const work = Math.max(op.flops(shape), op.bytes(shape, dtype));
    for (const backend of backends) {
      if (!implOf(op, backend)) continue;
      const residencies: Residency[] = backend === "webgpu"
        ? ["device-resident", "end-to-end"]
        : ["end-to-end"];
      for (const residency of residencies) {
        const key = `${backend}|${residency}`;
        const last = lastMs.get(key);
        const row = { op: op.name, dtype, shape: formatShape(op, shape), backend, residency };
        if (last && last.ms * work / last.work > MAX_RUN_MS) {
          const reason = `~${(last.ms * work / last.work / 1000).toFixed(1)} s per run`;
          rows.push({ ...row, result: { state: "skipped", reason } });
          continue;
        }
        const variant = await chooseVariant(op, dtype, backend, source);
        const result = (await measureMany(
          [{ op: op.name, shape, dtype, backend, variant, residency }],
          { runners: source, stopping: STOPPING },
        ))[0]!;
        if (result.state === "ok") lastMs.set(key, { work, ms: result.wall.median });
        const measured = { ...row, result };
        rows.push(measured);
        log(resultLine(op, measured, result));
      }
    }
  }
  return rows;
}

/** A row's cells in the results table (without the peers' columns). */
function rowCells(row: Row): string[] {
  const { op, dtype, shape, backend, residency, result: r } = row;
  const spec = OPS.find((o) => o.name === op)!;
  return r.state === "ok"
    ? [
      op,
      dtype,
      shape,
      backend,
      residency,
      rate(spec, r),
      r.wall.median.toPrecision(3),
      `${(r.wall.relCi * 100).toFixed(1)} %`,
      r.variant,
    ]
    : [
      op,
      dtype,
      shape,
      backend,
      residency,
      r.state,
      "",
      "",
      r.state === "failed" ? r.error.slice(0, 60) : r.reason.slice(0, 60),
    ];
}

/** Prints the results: JSON lines, or a table and the gpucal/TF.js ratios. */
function printResults(rows: readonly Row[], peers: TfjsReport | null, json: boolean): void {
  if (json) {
    console.log(JSON.stringify({ kind: "results", rows }));
    if (peers) console.log(JSON.stringify({ kind: "peers", ...peers }));
    return;
  }
  console.log(textTable(
    ["op", "dtype", "shape", "backend", "residency", "rate", "median ms", "±CI", "variant"]
      .concat(peers ? ["TF.js", "gpucal/TF.js"] : []),
    rows.map((row) => peers ? rowCells(row).concat(peerColumns(row, peers)) : rowCells(row)),
  ));
  const ratios = peers ? ratioLines(rows, peers) : [];
  if (peers && ratios.length > 0) {
    console.log(`\ngpucal vs TF.js ${peers.tfjsVersion} (same run):`);
    for (const line of ratios) console.log(`  ${line}`);
  }
}

async function main(args: string[]): Promise<number> {
  const parsed = parseBenchArgs(args);
  if (typeof parsed === "number") return parsed;
  const { ops, backends, dtypes, json, withPeers } = parsed;
  const gpu = backends.includes("webgpu") ? await openGpu() : null;
  const runners = openRunners(gpu);
  const log = (s: string) => json || console.error(s);
  const rows: Row[] = [];
  try {
    if (gpu) await printSystem(gpu, json, log);
    for (const op of ops) {
      for (const dtype of op.dtypes.filter((d) => dtypes.includes(d))) {
        rows.push(...await benchOp(op, dtype, backends, runners.source, log));
      }
    }
  } finally {
    await runners.close();
    gpu?.device.destroy();
  }
  // After gpucal's device is gone, so the two never hold the adapter at once.
  const peers = withPeers && dtypes.includes("f32") ? await measurePeers(ops, backends, log) : null;
  printResults(rows, peers, json);
  return 0;
}

/** TF.js measured on this machine, or null (saying why) when it cannot be loaded. */
async function measurePeers(
  ops: readonly OpSpec[],
  backends: readonly Backend[],
  log: (s: string) => void,
): Promise<TfjsReport | null> {
  try {
    // Imported here so that --no-peers never loads TF.js.
    const { benchTfjs } = await import("./tfjs.ts");
    return await benchTfjs({ ops: ops.map((o) => o.name), backends, stopping: STOPPING, log });
  } catch (e) {
    log(`TF.js peers skipped: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
