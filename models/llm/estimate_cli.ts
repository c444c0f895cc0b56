/**
 * `deno task estimate`: prefill and decode tokens/s of an LLM on the devices of one or more
 * calibration reports, the sharding plan when one device is not enough, memory per device, and
 * which measured figure every number came from.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { formatMs, formatNumber } from "../../core/format.ts";
import { type Backend, BACKENDS } from "../../kernels/types.ts";
import { loadReport, ReportError } from "../../reports/load.ts";
import type { Interconnect } from "./comm.ts";
import type { DecodeInterval, TokensPerSecEstimate } from "./estimate.ts";
import { formatBytes, parseQuant, WEIGHT_DTYPE } from "./memory.ts";
import { getPreset } from "./presets.ts";
import { ratesFromReport, type ReportRates } from "./rates.ts";
import { hostInterconnect, planSharding, type ShardingPlan } from "./sharding.ts";

const HELP = `Usage: deno task estimate --report PATH [options]

Estimates an LLM's prefill and decode tokens/s from the measured rates of calibration reports, and
plans tensor- or pipeline-parallel sharding when the model needs more than one device.

Options:
  --report PATH        A calibration report (repeat for several kinds of device)
  --count N            Devices of the preceding --report's kind (default 1; repeat per report)
  --model NAME         Preset (default llama-3-8b): llama-3-8b, llama-2-7b, mistral-7b,
                       qwen2.5-0.5b, tiny-16m, tiny-64m
  --quant Q            Weight format: f32, f16, int8, int4 (default int4)
  --context N          Tokens in the KV cache (default 4096)
  --batch N            Sequences decoded together (default 1)
  --interconnect L     Link between devices, KIND:GBPS[:LATENCY_US], e.g. pcie:32 or nvlink:300:5
                       (default: through the host, from the report's readback and upload)
  --memory-gb N        Memory per device in GB (default: the host memory the report records)
  --backend B          Estimate on this backend of every report: webgpu, wasm, wasm-mt, js
                       (default: the one that streams gemv weights fastest)
  --json               Print the plan and estimate as JSON
  -h, --help           Show this help

Exit codes: 0 done, 2 bad flags, unusable report, missing figures or a model that fits nowhere.`;

class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

function positiveInt(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) {
    throw new UsageError(`${flag} must be a positive integer, got "${value}"`);
  }
  return n;
}

function parseInterconnect(value: string): Interconnect {
  const [kind, gbps, latency, ...rest] = value.split(":");
  const bw = Number(gbps);
  const lat = latency === undefined ? undefined : Number(latency);
  if (!kind || rest.length > 0 || !(bw > 0) || (lat !== undefined && !(lat >= 0))) {
    throw new UsageError(
      `--interconnect must be KIND:GBPS[:LATENCY_US] with positive GB/s, got "${value}"`,
    );
  }
  return { kind, gbps: bw, ...(lat !== undefined ? { latencyUs: lat } : {}), source: "given" };
}

/** The --backend flag's backend, or undefined to let each report choose. */
function parseBackend(value: string | undefined): Backend | undefined {
  if (value === undefined) return undefined;
  if (!(BACKENDS as readonly string[]).includes(value)) {
    throw new UsageError(`--backend must be one of ${BACKENDS.join(", ")}, got "${value}"`);
  }
  return value as Backend;
}

/** Pairs each --report with the --count after it (and before the next --report). */
function reportCounts(args: readonly string[]): { path: string; count: number }[] {
  const out: { path: string; count: number }[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [flag, inline] = a.includes("=") ? a.split(/=(.*)/s, 2) : [a, undefined];
    if (flag !== "--report" && flag !== "--count") continue;
    const value = inline ?? args[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    if (flag === "--report") out.push({ path: value, count: 1 });
    else {
      const last = out[out.length - 1];
      if (!last) throw new UsageError("--count must follow the --report it counts");
      last.count = positiveInt("--count", value, 1);
    }
  }
  return out;
}

/** A rate in three significant digits: no estimate is surer than that. */
const rate = (v: number): string => formatNumber(v);

function describe(
  plan: ShardingPlan,
  e: TokensPerSecEstimate,
  rates: readonly ReportRates[],
  link: Interconnect,
): string {
  const c = plan.chosen;
  const t = e.perTokenMs;
  const p = e.prefillMs;
  const lines = [
    `${e.model} ${e.quant} (KV ${e.kvDtype}), context ${e.context}, batch ${e.batch}`,
    "",
    `Plan: ${c.strategy} on ${c.devices.length} device(s): ${c.devices.join(", ")}`,
    `  ${plan.explanation}`,
    ...(c.devices.length > 1
      ? [`  interconnect ${link.kind} ${link.gbps} GB/s (${link.source ?? "given"})`]
      : []),
    "",
    "Memory per device:",
    ...e.memory.map((m, i) =>
      `  ${i}: ${m.device}: weights ${formatBytes(m.breakdown.weightsBytes)} + KV ${
        formatBytes(m.breakdown.kvCacheBytes)
      } + activations ${formatBytes(m.breakdown.activationsBytes)} = ${
        formatBytes(m.breakdown.totalBytes)
      }; ${m.fit.message}`
    ),
    "",
    `Prefill: ${rate(e.prefillTokensPerSec)} tokens/s (${e.promptTokens} prompt tokens in ${
      formatMs(p.totalMs)
    }: matmul ${formatMs(p.matmulMs)}, attention ${formatMs(p.attentionMs)}, dispatch ${
      formatMs(p.dispatchMs)
    }, sync ${formatMs(p.syncMs)}, comm ${formatMs(p.commMs)})`,
    `Decode:  ${rate(e.decodeTokensPerSec)} tokens/s (${
      formatMs(t.totalMs)
    } per step, ${t.bound}-bound, ${t.method}: ` +
    (t.method === "per-kernel"
      ? `projections ${formatMs(t.weightsStreamMs)}, matmul floor ${formatMs(t.matmulMs)}, ` +
        `attention ${formatMs(t.kvReadMs)}, other kernels ${formatMs(t.dispatchMs)} ` +
        `(${e.kernelsPerStep} kernels), `
      : `weights ${formatMs(t.weightsStreamMs)}, matmul ${formatMs(t.matmulMs)}, KV ${
        formatMs(t.kvReadMs)
      }, dispatch ${formatMs(t.dispatchMs)} (${e.kernelsPerStep} kernels), `) +
    `sync ${formatMs(t.syncMs)}, comm ${formatMs(t.commMs)})`,
    `         ${describeRange(e.decodeInterval, rate)}`,
    `Load:    ${formatMs(e.loadMs)} to upload the weights`,
    "",
    `From (${e.tag}):`,
    ...[...new Set(rates)].map((r) =>
      `  ${r.name}: backend ${r.backend} (${r.backendReason}); memory ${r.memorySource}`
    ),
    ...e.sources.map((s) => `  ${s}`),
  ];
  return lines.join("\n");
}

/** The decode's stated range in a line, or why the estimate has none. */
function describeRange(range: DecodeInterval, rate: (x: number) => string): string {
  if (range.tokensPerSec === null) return `no range: ${range.note}`;
  const [slow, fast] = range.tokensPerSec;
  return `${Math.round(range.level * 100)} % range ${rate(slow)}–${rate(fast)} tokens/s, from ` +
    range.note;
}

/**
 * Runs the estimate command line.
 *
 * @param args Flags (without the program name).
 * @returns The exit code: 0 done, 2 bad flags, unusable report, missing figures or no fit.
 * @example
 * ```ts ignore
 * import { main } from "./estimate_cli.ts";
 * Deno.exit(await main(["--report", "reports/my.json", "--model", "tiny-64m", "--quant", "f32"]));
 * ```
 */
export async function main(args: string[]): Promise<number> {
  try {
    let values;
    try {
      ({ values } = parseArgs({
        args,
        strict: true,
        options: {
          report: { type: "string", multiple: true },
          count: { type: "string", multiple: true },
          model: { type: "string" },
          quant: { type: "string" },
          context: { type: "string" },
          batch: { type: "string" },
          interconnect: { type: "string" },
          "memory-gb": { type: "string" },
          backend: { type: "string" },
          json: { type: "boolean" },
          help: { type: "boolean", short: "h" },
        },
      }));
    } catch (e) {
      throw new UsageError(
        `${(e instanceof Error ? e.message : String(e)).replace(/\.?\s*To specify.*$/s, "")}`,
      );
    }
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    const reports = reportCounts(args);
    if (reports.length === 0) throw new UsageError("--report is required");
    const model = getPreset(values.model ?? "llama-3-8b");
    const quant = parseQuant(values.quant ?? "int4");
    const context = positiveInt("--context", values.context, 4096);
    const batch = positiveInt("--batch", values.batch, 1);
    const memoryGb = values["memory-gb"];
    const memoryBytes = memoryGb === undefined ? undefined : Number(memoryGb) * 1e9;
    if (memoryBytes !== undefined && !(memoryBytes > 0)) {
      throw new UsageError(`--memory-gb must be a positive number, got "${memoryGb}"`);
    }
    const backend = parseBackend(values.backend);
    const devices: { rates: ReportRates; count: number }[] = [];
    for (const { path, count } of reports) {
      const rates = ratesFromReport(await loadReport(path), {
        require: [WEIGHT_DTYPE[quant]],
        ...(memoryBytes !== undefined ? { memoryBytes } : {}),
        ...(backend !== undefined ? { backend } : {}),
      });
      devices.push({ rates, count });
    }
    const link = values.interconnect !== undefined
      ? parseInterconnect(values.interconnect)
      : hostInterconnect(devices[0]!.rates);
    const plan = planSharding(model, quant, devices, link, { context, batch });
    const estimate = plan.chosen.estimate!;
    if (values.json) {
      console.log(JSON.stringify(
        {
          plan: { ...plan, candidates: plan.candidates.map(({ estimate: _, ...c }) => c) },
          estimate,
          rates: devices.map((d) => ({ ...d.rates, count: d.count })),
        },
        null,
        2,
      ));
    } else {
      console.log(describe(plan, estimate, devices.map((d) => d.rates), link));
    }
    return 0;
  } catch (e) {
    // RangeError covers unknown presets, MissingCalibrationError, MissingRateError and ShardingError.
    if (
      e instanceof UsageError || e instanceof RangeError || e instanceof ReportError ||
      e instanceof Deno.errors.NotFound
    ) {
      console.error(`error: ${e.message}`);
      if (e instanceof UsageError) {
        console.error("\nUsage: deno task estimate [options] (see --help)");
      }
      return 2;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
