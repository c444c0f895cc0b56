/**
 * Opens the WebGPU adapter and device Deno gives us and describes them: name, backend, whether it
 * is a software rasteriser, its features and the limits that bound our kernels.
 *
 * No adapter is not an error: {@linkcode openGpu} says why and returns null, and gpucal measures
 * the CPU backends only.
 *
 * @module
 */
import type { GpuApi } from "../core/schema.ts";

/**
 * The adapter limits that bound gpucal's kernels and buffers.
 *
 * @example
 * ```ts
 * import type { GpuLimits } from "./device.ts";
 * function fits(l: GpuLimits, bytes: number) { return bytes <= l.maxStorageBufferBindingSize; }
 * ```
 */
export interface GpuLimits {
  /** Largest buffer, bytes. */
  readonly maxBufferSize: number;
  /** Largest storage buffer binding, bytes. */
  readonly maxStorageBufferBindingSize: number;
  /** Most storage buffers one shader stage may bind. */
  readonly maxStorageBuffersPerShaderStage: number;
  /** Most workgroups per dispatch dimension. */
  readonly maxComputeWorkgroupsPerDimension: number;
  /** Most invocations in one workgroup. */
  readonly maxComputeInvocationsPerWorkgroup: number;
  /** Largest workgroup size in x. */
  readonly maxComputeWorkgroupSizeX: number;
  /** Largest workgroup size in y. */
  readonly maxComputeWorkgroupSizeY: number;
  /** Most workgroup shared memory, bytes. */
  readonly maxComputeWorkgroupStorageSize: number;
}

/**
 * What an adapter is, as reports record it.
 *
 * @example
 * ```ts
 * import type { GpuInfo } from "./device.ts";
 * function label(i: GpuInfo) { return `${i.description} (${i.backend}${i.software ? ", software" : ""})`; }
 * ```
 */
export interface GpuInfo {
  /** Driver's name for the device, e.g. `"llvmpipe (LLVM 15.0.6, 256 bits)"`; may be empty. */
  readonly description: string;
  /** PCI vendor id or name as the adapter reports it; often partly empty on Deno. */
  readonly vendor: string;
  /** Architecture as the adapter reports it; often empty on Deno. */
  readonly architecture: string;
  /** Device as the adapter reports it; often empty on Deno. */
  readonly device: string;
  /** The graphics API underneath wgpu. */
  readonly backend: GpuApi;
  /** `env`: read from `DENO_WEBGPU_BACKEND`; `inferred`: guessed from the OS and the features. */
  readonly backendSource: "env" | "inferred";
  /** Why the backend is what it is, for people reading a report. */
  readonly backendEvidence: string;
  /** True for CPU rasterisers (llvmpipe, lavapipe, SwiftShader, WARP) and fallback adapters. */
  readonly software: boolean;
  /** True when the adapter is the implementation's fallback adapter. */
  readonly isFallbackAdapter: boolean;
  /** Smallest subgroup size, when the adapter reports it (Deno does). */
  readonly subgroupMinSize?: number;
  /** Largest subgroup size, when the adapter reports it. */
  readonly subgroupMaxSize?: number;
  /** Every adapter feature, sorted. */
  readonly features: readonly string[];
  /** The limits that bound gpucal's kernels. */
  readonly limits: GpuLimits;
}

/**
 * Why and when the device was lost.
 *
 * @example
 * ```ts
 * import type { GpuLoss } from "./device.ts";
 * const l: GpuLoss = { reason: "destroyed", message: "" };
 * ```
 */
export interface GpuLoss {
  /** `"destroyed"` after `device.destroy()`, `"unknown"` for a driver reset or crash. */
  readonly reason: string;
  /** The driver's message. */
  readonly message: string;
}

/**
 * An open adapter and device.
 *
 * @example
 * ```ts ignore
 * import { openGpu } from "./device.ts";
 * const gpu = await openGpu();
 * if (gpu) {
 *   console.log(gpu.info.description);
 *   gpu.device.destroy();
 * }
 * ```
 */
export interface GpuHandle {
  /** The WebGPU adapter. */
  readonly adapter: GPUAdapter;
  /** The device opened on it. */
  readonly device: GPUDevice;
  /** What the adapter is. */
  readonly info: GpuInfo;
  /** Resolves when the device is lost (destroyed included). */
  readonly lost: Promise<GpuLoss>;
  /** The loss once it happened, else null. */
  readonly loss: GpuLoss | null;
  /** Opens a fresh adapter and device with the same options, e.g. after a loss. */
  reopen(): Promise<GpuHandle | null>;
}

/** The part of `navigator.gpu` {@linkcode openGpu} uses, so tests can pass a stand-in. */
export interface GpuEntry {
  /** Requests an adapter, or null when there is none. */
  requestAdapter(options?: GPURequestAdapterOptions): Promise<GPUAdapter | null>;
}

/**
 * Options of {@linkcode openGpu}.
 *
 * @example
 * ```ts
 * import type { OpenGpuOptions } from "./device.ts";
 * const quiet: OpenGpuOptions = { onUnavailable: () => {} };
 * ```
 */
export interface OpenGpuOptions {
  /** Where to get adapters; `navigator.gpu` when absent. Pass `null` to mean "no WebGPU". */
  readonly gpu?: GpuEntry | null;
  /** Which adapter to ask for when there are several; the implementation's default when absent. */
  readonly powerPreference?: GPUPowerPreference;
  /** Told why there is no GPU; `console.warn` when absent. */
  readonly onUnavailable?: (reason: string) => void;
  /** Reads environment variables; `Deno.env.get` (permission-safe) when absent. */
  readonly env?: (name: string) => string | undefined;
  /** Operating system; `Deno.build.os` when absent. */
  readonly os?: string;
}

/** Environment variable Deno reads to choose wgpu backends. */
export const BACKEND_ENV = "DENO_WEBGPU_BACKEND";

const SOFTWARE_NAMES = /llvmpipe|lavapipe|softpipe|swiftshader|\bwarp\b|basic render/i;

/**
 * Opens an adapter and a device with every feature and the adapter's real limits (not the
 * WebGPU defaults, which would cap buffers at 128 MiB and workgroups at 256 invocations).
 *
 * @param options Where to get adapters, and how to report their absence.
 * @returns The handle, or null when there is no WebGPU or no adapter (after calling
 *   `onUnavailable` with the reason).
 * @throws {Error} when an adapter exists but `requestDevice` fails.
 * @example
 * ```ts ignore
 * import { openGpu } from "./device.ts";
 * const gpu = await openGpu({ onUnavailable: (why) => console.log(`CPU only: ${why}`) });
 * console.log(gpu?.info.backend ?? "cpu-only");
 * gpu?.device.destroy();
 * ```
 */
export async function openGpu(options: OpenGpuOptions = {}): Promise<GpuHandle | null> {
  const warn = options.onUnavailable ?? ((reason: string) => console.warn(reason));
  const entry = entryOf(options);
  if (!entry) {
    warn("No WebGPU: navigator.gpu is missing, measuring CPU backends only");
    return null;
  }
  let adapter: GPUAdapter | null;
  try {
    adapter = await entry.requestAdapter(
      options.powerPreference ? { powerPreference: options.powerPreference } : undefined,
    );
  } catch (e) {
    warn(
      `No WebGPU adapter: requestAdapter() threw "${errorText(e)}", measuring CPU backends only`,
    );
    return null;
  }
  if (!adapter) {
    warn(
      `No WebGPU adapter: requestAdapter() returned null (${BACKEND_ENV}=` +
        `"${readEnv(options)(BACKEND_ENV) ?? ""}"), measuring CPU backends only`,
    );
    return null;
  }
  const device = await adapter.requestDevice({
    requiredFeatures: [...adapter.features] as GPUFeatureName[],
    requiredLimits: numericLimits(adapter.limits),
  });
  const info = describeAdapter(adapter, {
    env: readEnv(options),
    os: options.os ?? Deno.build.os,
  });
  let loss: GpuLoss | null = null;
  const lost = device.lost.then((l) => {
    loss = { reason: String(l.reason ?? "unknown"), message: l.message ?? "" };
    return loss;
  });
  return {
    adapter,
    device,
    info,
    lost,
    get loss() {
      return loss;
    },
    reopen: () => openGpu(options),
  };
}

/**
 * Describes the adapter without opening a device: for a run that leaves WebGPU out by choice
 * (`--backends js,wasm`) but still records the machine's adapter, so that its fingerprint is
 * the one a full run of the same machine gets and the two reports can be compared.
 *
 * @param options Where to get adapters (`onUnavailable` is not called: no adapter is no news here).
 * @returns The description, or null when there is no WebGPU or no adapter.
 * @example
 * ```ts
 * import { peekAdapter } from "./device.ts";
 * console.log(await peekAdapter({ gpu: null })); // null
 * ```
 */
export async function peekAdapter(options: OpenGpuOptions = {}): Promise<GpuInfo | null> {
  const entry = entryOf(options);
  const adapter = await entry?.requestAdapter(
    options.powerPreference ? { powerPreference: options.powerPreference } : undefined,
  ).catch(() => null);
  return adapter
    ? describeAdapter(adapter, { env: readEnv(options), os: options.os ?? Deno.build.os })
    : null;
}

/**
 * Sets `XDG_RUNTIME_DIR` when it is unset, so that loading Mesa's drivers prints nothing.
 *
 * Mesa's Vulkan and GL drivers look for a Wayland display when wgpu loads them, and libwayland
 * prints `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` where the variable is
 * unset (a container, a CI job, a `sudo` shell): harmless, but it reads as gpucal failing. Set to
 * a directory holding no display socket, the probe finds no display, as it did unset, and says
 * nothing. The directory is not created (the calibrate task may write only under `reports/`):
 * libwayland only joins the path with a socket name and fails to connect, quietly. The drivers
 * read the variable when they load, at the first `requestAdapter()`, so this runs before it.
 *
 * @param env The environment to read and change; `Deno.env` when absent.
 * @param os The operating system; `Deno.build.os` when absent.
 * @returns The value set, or null when it was set already, not a Unix-like desktop OS, or
 *   `--allow-env` is missing.
 * @example
 * ```ts
 * import { quietDisplayProbe } from "./device.ts";
 * const vars = new Map<string, string>();
 * const env = { get: (k: string) => vars.get(k), set: (k: string, v: string) => void vars.set(k, v) };
 * console.log(quietDisplayProbe(env, "linux")?.startsWith("/")); // true
 * ```
 */
export function quietDisplayProbe(
  env: Pick<Deno.Env, "get" | "set"> = Deno.env,
  os: string = Deno.build.os,
): string | null {
  if (os === "darwin" || os === "windows") return null;
  try {
    if (env.get("XDG_RUNTIME_DIR")) return null;
    const dir = `${env.get("TMPDIR") || "/tmp"}/gpucal-no-display-${Deno.pid}`;
    env.set("XDG_RUNTIME_DIR", dir);
    return dir;
  } catch {
    // Without --allow-env the message may appear; it is harmless.
    return null;
  }
}

/**
 * Every numeric limit of an adapter, as `requiredLimits` for `requestDevice`.
 *
 * @param limits The adapter's limits.
 * @returns Limit name to value.
 * @example
 * ```ts
 * import { numericLimits } from "./device.ts";
 * const fake = { maxBufferSize: 1 << 30 } as unknown as GPUSupportedLimits;
 * console.log(numericLimits(fake).maxBufferSize); // 1073741824
 * ```
 */
export function numericLimits(limits: GPUSupportedLimits): Record<string, number> {
  const out: Record<string, number> = {};
  // The limits are prototype getters, so `Object.keys` sees none of them.
  for (const name in limits) {
    const value = (limits as unknown as Record<string, unknown>)[name];
    if (typeof value === "number") out[name] = value;
  }
  return out;
}

/**
 * Describes an adapter: names, backend (from `DENO_WEBGPU_BACKEND` or inferred), software or
 * not, features and limits.
 *
 * @param adapter The adapter (a stand-in with `info`, `features` and `limits` is enough).
 * @param context How to read the environment and which OS this is.
 * @returns The description.
 * @example
 * ```ts
 * import { describeAdapter } from "./device.ts";
 * const adapter = {
 *   info: { description: "llvmpipe (LLVM 15.0.6, 256 bits)", vendor: "", architecture: "", device: "" },
 *   features: new Set(["shader-f16"]),
 *   limits: { maxBufferSize: 1 << 30 },
 * } as unknown as GPUAdapter;
 * const info = describeAdapter(adapter, { env: () => undefined, os: "linux" });
 * console.log(info.backend, info.software); // "vulkan" true
 * ```
 */
export function describeAdapter(
  adapter: Pick<GPUAdapter, "info" | "features" | "limits">,
  context: { env: (name: string) => string | undefined; os: string },
): GpuInfo {
  const raw = adapter.info as GPUAdapterInfo & {
    subgroupMinSize?: number;
    subgroupMaxSize?: number;
    isFallbackAdapter?: boolean;
  };
  const features = [...adapter.features].map(String).sort();
  const description = raw.description ?? "";
  const isFallbackAdapter = raw.isFallbackAdapter === true ||
    (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter === true;
  const backend = chooseBackend(context.env(BACKEND_ENV), context.os, features);
  const limits = numericLimits(adapter.limits);
  const limit = (name: keyof GpuLimits) => limits[name] ?? 0;
  return {
    description,
    vendor: raw.vendor ?? "",
    architecture: raw.architecture ?? "",
    device: raw.device ?? "",
    ...backend,
    software: isFallbackAdapter || SOFTWARE_NAMES.test(description),
    isFallbackAdapter,
    ...(typeof raw.subgroupMinSize === "number" ? { subgroupMinSize: raw.subgroupMinSize } : {}),
    ...(typeof raw.subgroupMaxSize === "number" ? { subgroupMaxSize: raw.subgroupMaxSize } : {}),
    features,
    limits: {
      maxBufferSize: limit("maxBufferSize"),
      maxStorageBufferBindingSize: limit("maxStorageBufferBindingSize"),
      maxStorageBuffersPerShaderStage: limit("maxStorageBuffersPerShaderStage"),
      maxComputeWorkgroupsPerDimension: limit("maxComputeWorkgroupsPerDimension"),
      maxComputeInvocationsPerWorkgroup: limit("maxComputeInvocationsPerWorkgroup"),
      maxComputeWorkgroupSizeX: limit("maxComputeWorkgroupSizeX"),
      maxComputeWorkgroupSizeY: limit("maxComputeWorkgroupSizeY"),
      maxComputeWorkgroupStorageSize: limit("maxComputeWorkgroupStorageSize"),
    },
  };
}

const API_NAMES: Readonly<Record<string, GpuApi>> = {
  vulkan: "vulkan",
  vk: "vulkan",
  gl: "gl",
  opengl: "gl",
  gles: "gl",
  metal: "metal",
  mtl: "metal",
  dx12: "dx12",
  d3d12: "dx12",
};

function chooseBackend(
  envValue: string | undefined,
  os: string,
  features: readonly string[],
): Pick<GpuInfo, "backend" | "backendSource" | "backendEvidence"> {
  const listed = (envValue ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
  const only = listed.length === 1 ? API_NAMES[listed[0]!] : undefined;
  if (only) {
    return { backend: only, backendSource: "env", backendEvidence: `${BACKEND_ENV}=${envValue}` };
  }
  const inferred = inferBackend(os, features);
  const because = listed.length > 1 ? `${BACKEND_ENV}=${envValue} lists several; ` : "";
  return { ...inferred, backendEvidence: because + inferred.backendEvidence };
}

function inferBackend(
  os: string,
  features: readonly string[],
): Pick<GpuInfo, "backend" | "backendSource" | "backendEvidence"> {
  if (os === "darwin") {
    return { backend: "metal", backendSource: "inferred", backendEvidence: "macOS has Metal only" };
  }
  if (os === "windows") {
    return {
      backend: "dx12",
      backendSource: "inferred",
      backendEvidence: "wgpu prefers DX12 on Windows",
    };
  }
  if (
    os === "linux" || os === "freebsd" || os === "netbsd" || os === "openbsd" || os === "android"
  ) {
    // Mesa's GL driver exposes ETC2 but no shader-f16; its Vulkan drivers the other way round.
    // Only that combination is evidence enough to say GL; anything else is wgpu's first choice.
    const has = (f: string) => features.includes(f);
    if (has("texture-compression-etc2") && !has("shader-f16")) {
      return {
        backend: "gl",
        backendSource: "inferred",
        backendEvidence: "texture-compression-etc2 without shader-f16 looks like GL",
      };
    }
    return {
      backend: "vulkan",
      backendSource: "inferred",
      backendEvidence: "wgpu tries Vulkan first on Linux",
    };
  }
  return {
    backend: "unknown",
    backendSource: "inferred",
    backendEvidence: `no rule for OS "${os}"`,
  };
}

function entryOf(options: OpenGpuOptions): GpuEntry | null {
  if (options.gpu !== undefined) return options.gpu;
  quietDisplayProbe();
  return (globalThis.navigator as { gpu?: GpuEntry } | undefined)?.gpu ?? null;
}

function readEnv(options: OpenGpuOptions): (name: string) => string | undefined {
  if (options.env) return options.env;
  return (name) => {
    try {
      return Deno.env.get(name);
    } catch {
      // Without --allow-env the variable is unknowable; treat it as unset.
      return undefined;
    }
  };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
