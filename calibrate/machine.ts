/**
 * Describes the machine a calibration runs on (CPU, cores, memory, OS, Deno) and names it with a
 * stable fingerprint, so reports from the same machine and adapter land in the same file.
 *
 * Needs `--allow-sys=cpus,osRelease,systemMemoryInfo` (or `--allow-read=/proc/cpuinfo` under `--allow-all`) and `--allow-env`;
 * whatever is denied becomes `"unknown"` (or null) instead of an error.
 *
 * @module
 */
import { cpus } from "node:os";

/**
 * The machine, as reports record it.
 *
 * @example
 * ```ts
 * import type { MachineInfo } from "./machine.ts";
 * function label(m: MachineInfo) { return `${m.cpuModel} ×${m.cores}, ${m.os}/${m.arch}`; }
 * ```
 */
export interface MachineInfo {
  /** CPU model name from /proc/cpuinfo, or `"unknown"`. */
  readonly cpuModel: string;
  /** Logical cores (`navigator.hardwareConcurrency`). */
  readonly cores: number;
  /** Total memory in bytes, or null when denied. */
  readonly memoryBytes: number | null;
  /** `Deno.build.os`: `linux`, `darwin`, `windows`... */
  readonly os: string;
  /** Kernel release (`Deno.osRelease()`), or `"unknown"`. */
  readonly osRelease: string;
  /** `Deno.build.arch`: `x86_64` or `aarch64`. */
  readonly arch: string;
  readonly denoVersion: string;
  readonly v8Version: string;
  /** `GLIBC_TUNABLES` this process runs with, or null when unset or denied. */
  readonly glibcTunables: string | null;
  /**
   * The environment variables set for this process that change what the GPU driver or WebGPU does
   * ({@linkcode driverSettings}), or null when `--allow-env` is denied.
   */
  readonly driverEnv: Readonly<Record<string, string>> | null;
}

/**
 * The glibc tunable that backs large `malloc` blocks with huge pages. gpucal's measuring tasks set
 * it: without it, a large WebGPU upload's staging memory is fresh 4 KiB pages on every write in
 * some buffers, and on a VM where a page fault costs ~13 µs, writeBuffer of 36 MiB took 130–150 ms
 * in those buffers and 16 ms in the others of the same process (lavapipe, Firecracker).
 */
export const HUGE_PAGE_MALLOC = "glibc.malloc.hugetlb=1";

/**
 * The part of an adapter description that tells adapters apart in a fingerprint.
 *
 * @example
 * ```ts
 * import type { AdapterIdentity } from "./machine.ts";
 * const a: AdapterIdentity = { description: "llvmpipe", vendor: "65541", backend: "gl" };
 * ```
 */
export interface AdapterIdentity {
  readonly description: string;
  readonly vendor: string;
  readonly backend: string;
}

/** Where Linux tells the CPU's model name. */
const CPUINFO_PATH = "/proc/cpuinfo";

/** Keys that carry a CPU's name in /proc/cpuinfo on x86, Arm, POWER and RISC-V. */
const CPU_NAME_KEYS = ["model name", "Model", "Hardware", "cpu model", "cpu", "uarch"];

const UNKNOWN = "unknown";

/**
 * Describes this machine, degrading to `"unknown"`/null for whatever a permission hides.
 *
 * @returns The description.
 * @example
 * ```ts ignore
 * import { describeMachine } from "./machine.ts";
 * const m = await describeMachine();
 * console.log(m.cpuModel, m.cores);
 * ```
 */
export async function describeMachine(): Promise<MachineInfo> {
  return {
    cpuModel: await readCpuModel(),
    cores: navigator.hardwareConcurrency ?? 1,
    memoryBytes: permitted(() => Deno.systemMemoryInfo().total) ?? null,
    os: Deno.build.os,
    osRelease: permitted(() => Deno.osRelease()) ?? UNKNOWN,
    arch: Deno.build.arch,
    denoVersion: Deno.version.deno,
    v8Version: Deno.version.v8,
    glibcTunables: permitted(() => Deno.env.get("GLIBC_TUNABLES")) ?? null,
    driverEnv: mapOrNull(permitted(() => Deno.env.toObject()), driverSettings),
  };
}

/**
 * Prefixes of the environment variables that change how fast the same kernels run on the same
 * machine: Mesa's (llvmpipe and lavapipe read `LP_NUM_THREADS`: one thread instead of one per
 * core), Gallium's, OpenGL's, the Vulkan loader's (which driver loads), Deno's WebGPU backend
 * choice and wgpu's.
 */
export const DRIVER_ENV_PREFIXES: readonly string[] = [
  "LP_",
  "GALLIUM_",
  "MESA_",
  "LIBGL_",
  "VK_",
  "DENO_WEBGPU_",
  "WGPU_",
];

/** Most driver settings a report records, and the longest value. */
const MAX_DRIVER_SETTINGS = 64;
const MAX_DRIVER_VALUE = 1024;
/** The names a report keeps (the prefixes are upper case; anything else is not a driver's). */
const DRIVER_ENV_NAME = /^[A-Z][A-Z0-9_]{0,127}$/;

/**
 * The driver settings among `env`: the variables named with one of
 * {@linkcode DRIVER_ENV_PREFIXES}, sorted by name (at most 64, values cut at 1024 characters).
 * Two runs with different settings measured different configurations of the machine.
 *
 * @param env Environment variables, as `Deno.env.toObject()` gives them.
 * @returns The settings, by name.
 * @example
 * ```ts
 * import { driverSettings } from "./machine.ts";
 * console.log(driverSettings({ LP_NUM_THREADS: "1", HOME: "/root" })); // { LP_NUM_THREADS: "1" }
 * ```
 */
export function driverSettings(env: Readonly<Record<string, string>>): Record<string, string> {
  const names = Object.keys(env)
    .filter((k) => DRIVER_ENV_NAME.test(k) && DRIVER_ENV_PREFIXES.some((p) => k.startsWith(p)))
    .sort()
    .slice(0, MAX_DRIVER_SETTINGS);
  return Object.fromEntries(names.map((k) => [k, env[k]!.slice(0, MAX_DRIVER_VALUE)]));
}

/**
 * Driver settings a machine fingerprint already tells apart: the WebGPU backend is part of the
 * adapter's identity ({@linkcode machineFingerprint}), so `DENO_WEBGPU_BACKEND=vulkan` and a Vulkan
 * adapter picked unasked are one configuration.
 */
export const FINGERPRINTED_SETTINGS: ReadonlySet<string> = new Set(["DENO_WEBGPU_BACKEND"]);

/**
 * The driver settings that make another configuration of one fingerprinted machine: `driverEnv`
 * without those the fingerprint tells apart ({@linkcode FINGERPRINTED_SETTINGS}).
 *
 * @param driverEnv Recorded driver settings; undefined or null is none.
 * @returns The settings, by name, sorted.
 * @example
 * ```ts
 * import { configurationSettings } from "./machine.ts";
 * console.log(configurationSettings({ DENO_WEBGPU_BACKEND: "vulkan", LP_NUM_THREADS: "1" }));
 * // { LP_NUM_THREADS: "1" }
 * ```
 */
export function configurationSettings(
  driverEnv: Readonly<Record<string, string>> | null | undefined,
): Record<string, string> {
  const names = Object.keys(driverEnv ?? {}).filter((k) => !FINGERPRINTED_SETTINGS.has(k)).sort();
  return Object.fromEntries(names.map((k) => [k, driverEnv![k]!]));
}

/**
 * How the driver settings of two runs differ, in words (`LP_NUM_THREADS "1" in this run, unset in
 * the baseline`), or null when they are one configuration ({@linkcode configurationSettings}).
 * At most three settings are named.
 *
 * @param mine One run's settings.
 * @param theirs The other's.
 * @param names What to call the two runs in the words.
 * @returns The difference, or null.
 * @example
 * ```ts
 * import { describeSettingsDifference } from "./machine.ts";
 * console.log(describeSettingsDifference({ LP_NUM_THREADS: "1" }, {}, ["this run", "it"]));
 * // 'LP_NUM_THREADS "1" in this run, unset in it'
 * ```
 */
export function describeSettingsDifference(
  mine: Readonly<Record<string, string>> | null | undefined,
  theirs: Readonly<Record<string, string>> | null | undefined,
  names: readonly [string, string],
): string | null {
  const a = configurationSettings(mine);
  const b = configurationSettings(theirs);
  const said = (v: string | undefined) => v === undefined ? "unset" : `"${v}"`;
  const differing = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()
    .filter((k) => a[k] !== b[k]);
  if (differing.length === 0) return null;
  const more = differing.length > 3 ? ` and ${differing.length - 3} more` : "";
  return differing.slice(0, 3)
    .map((k) => `${k} ${said(a[k])} in ${names[0]}, ${said(b[k])} in ${names[1]}`)
    .join("; ") + more;
}

/**
 * A configuration's driver settings as a person reads them, `LP_NUM_THREADS=1 MESA_X=y`, or null
 * for the machine's default configuration ({@linkcode configurationSettings}).
 *
 * @param driverEnv Recorded driver settings.
 * @returns The settings, or null.
 * @example
 * ```ts
 * import { formatSettings } from "./machine.ts";
 * console.log(formatSettings({ LP_NUM_THREADS: "1", DENO_WEBGPU_BACKEND: "vulkan" })); // "LP_NUM_THREADS=1"
 * console.log(formatSettings(undefined)); // null
 * ```
 */
export function formatSettings(
  driverEnv: Readonly<Record<string, string>> | null | undefined,
): string | null {
  const settings = Object.entries(configurationSettings(driverEnv));
  return settings.length === 0 ? null : settings.map(([k, v]) => `${k}=${v}`).join(" ");
}

/**
 * Whether two runs' driver settings are one configuration of the machine
 * ({@linkcode configurationSettings}: the backend choice the fingerprint names aside).
 *
 * @param a One run's settings; undefined or null is none.
 * @param b The other's.
 * @returns True when they are the same.
 * @example
 * ```ts
 * import { sameConfiguration } from "./machine.ts";
 * console.log(sameConfiguration({ DENO_WEBGPU_BACKEND: "vulkan" }, undefined)); // true
 * console.log(sameConfiguration({ LP_NUM_THREADS: "1" }, {})); // false
 * ```
 */
export function sameConfiguration(
  a: Readonly<Record<string, string>> | null | undefined,
  b: Readonly<Record<string, string>> | null | undefined,
): boolean {
  return describeSettingsDifference(a, b, ["", ""]) === null;
}

/** Longest settings part of a slug spelled out; longer ones are named by a hash. */
const MAX_SETTINGS_SLUG = 40;

/**
 * The part of a machine slug that names a configuration other than the default
 * ({@linkcode configurationSettings}): `""` with none, else `-<name>-<value>…` in lower case
 * (`-lp_num_threads-1`), or `-env-<8 hex>` when that would be longer than 40 characters.
 *
 * @param driverEnv The run's driver settings.
 * @returns The suffix.
 * @example
 * ```ts
 * import { settingsSlug } from "./machine.ts";
 * console.log(settingsSlug({ LP_NUM_THREADS: "1" })); // "-lp_num_threads-1"
 * console.log(settingsSlug({ DENO_WEBGPU_BACKEND: "vulkan" })); // ""
 * ```
 */
export function settingsSlug(
  driverEnv: Readonly<Record<string, string>> | null | undefined,
): string {
  const settings = Object.entries(configurationSettings(driverEnv));
  if (settings.length === 0) return "";
  const spelled = settings.map(([k, v]) => `-${slugify(k)}-${slugify(v) || "empty"}`).join("");
  if (spelled.length <= MAX_SETTINGS_SLUG) return spelled;
  return `-env-${fnv1a(JSON.stringify(settings)).toString(16).padStart(8, "0")}`;
}

/** 32-bit FNV-1a of a string's UTF-16 code units: a short, stable name, not a secure digest. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  }
  return hash;
}

function mapOrNull<T, U>(value: T | undefined, f: (v: T) => U): U | null {
  return value === undefined ? null : f(value);
}

/**
 * The warning a Linux calibration records when its process runs without {@linkcode HUGE_PAGE_MALLOC}:
 * its large uploads may run at fresh-memory speed, as a program's do without the tunable.
 *
 * @param machine The machine and process.
 * @returns The warning, or null off Linux or with the tunable set.
 * @example
 * ```ts
 * import { hugePageWarning, type MachineInfo } from "./machine.ts";
 * const m: MachineInfo = {
 *   cpuModel: "Xeon", cores: 2, memoryBytes: 8 * 2 ** 30, os: "linux", osRelease: "6.1",
 *   arch: "x86_64", denoVersion: "2.9.6", v8Version: "14.0", glibcTunables: null,
 *   driverEnv: {},
 * };
 * console.log(hugePageWarning(m)?.startsWith("GLIBC_TUNABLES")); // true
 * ```
 */
export function hugePageWarning(machine: MachineInfo): string | null {
  if (machine.os !== "linux") return null;
  const tunables = (machine.glibcTunables ?? "").split(":");
  if (tunables.includes(HUGE_PAGE_MALLOC)) return null;
  return `GLIBC_TUNABLES lacks ${HUGE_PAGE_MALLOC}: large WebGPU uploads may have run at ` +
    `fresh-memory speed in some buffers (×5–10 slower on VMs); run through \`deno task calibrate\`, ` +
    `which sets it, or set it yourself`;
}

/**
 * The CPU's model name from /proc/cpuinfo text.
 *
 * @param cpuinfo The file's text.
 * @returns The name, or `"unknown"` when no known key is present.
 * @example
 * ```ts
 * import { parseCpuModel } from "./machine.ts";
 * console.log(parseCpuModel("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n")); // "Intel(R) Xeon(R)"
 * ```
 */
export function parseCpuModel(cpuinfo: string): string {
  const fields = new Map<string, string>();
  for (const line of cpuinfo.split("\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (value && !fields.has(key)) fields.set(key, value);
  }
  for (const key of CPU_NAME_KEYS) {
    const value = fields.get(key);
    if (value) return value.replace(/\s+/g, " ");
  }
  return UNKNOWN;
}

/**
 * A stable short hash of what makes measurements comparable: CPU model, cores, memory in GiB,
 * OS, arch and the adapter's description, vendor and backend (so one machine's Vulkan and GL
 * adapters get different fingerprints). Deno's version is left out: it is recorded, not identity.
 *
 * @param machine The machine.
 * @param adapter The adapter, or null for CPU-only.
 * @returns 16 lowercase hex digits (the start of a SHA-256).
 * @example
 * ```ts
 * import { machineFingerprint, type MachineInfo } from "./machine.ts";
 * const m: MachineInfo = {
 *   cpuModel: "Xeon", cores: 2, memoryBytes: 8 * 2 ** 30, os: "linux", osRelease: "6.1",
 *   arch: "x86_64", denoVersion: "2.9.6", v8Version: "14.0", glibcTunables: null,
 *   driverEnv: {},
 * };
 * console.log((await machineFingerprint(m, null)).length); // 16
 * ```
 */
export async function machineFingerprint(
  machine: MachineInfo,
  adapter: AdapterIdentity | null,
): Promise<string> {
  const parts = [
    machine.cpuModel,
    String(machine.cores),
    machine.memoryBytes === null ? UNKNOWN : `${Math.round(machine.memoryBytes / 2 ** 30)}GiB`,
    machine.os,
    machine.arch,
    adapter ? `${adapter.description}|${adapter.vendor}|${adapter.backend}` : "cpu-only",
  ];
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n")));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("").slice(
    0,
    16,
  );
}

/**
 * A file-name-safe name for a machine and adapter: `<adapter>-<backend>-<arch>-<hash8>`, or
 * `cpu-only-<arch>-<hash8>` without an adapter, followed by the driver settings of a
 * configuration other than the default ({@linkcode settingsSlug}): a calibration with
 * `LP_NUM_THREADS=1` (lavapipe on one thread) lands beside the machine's report, not over it.
 *
 * @param machine The machine, and its driver settings.
 * @param adapter The adapter, or null for CPU-only.
 * @param fingerprint The {@linkcode machineFingerprint} of the two.
 * @returns The slug, e.g. `llvmpipe-vulkan-x86_64-3f2a9c1e`.
 * @example
 * ```ts
 * import { machineSlug, type MachineInfo } from "./machine.ts";
 * const m = { arch: "x86_64" } as MachineInfo;
 * const a = { description: "llvmpipe (LLVM 15.0.6, 256 bits)", vendor: "", backend: "vulkan" };
 * console.log(machineSlug(m, a, "3f2a9c1e00112233")); // "llvmpipe-vulkan-x86_64-3f2a9c1e"
 * const one = { arch: "x86_64", driverEnv: { LP_NUM_THREADS: "1" } };
 * console.log(machineSlug(one, a, "3f2a9c1e00112233"));
 * // "llvmpipe-vulkan-x86_64-3f2a9c1e-lp_num_threads-1"
 * ```
 */
export function machineSlug(
  machine: Pick<MachineInfo, "arch"> & Partial<Pick<MachineInfo, "driverEnv">>,
  adapter: AdapterIdentity | null,
  fingerprint: string,
): string {
  const hash = fingerprint.slice(0, 8);
  const settings = settingsSlug(machine.driverEnv);
  if (!adapter) return `cpu-only-${slugify(machine.arch)}-${hash}${settings}`;
  // The parenthesised tail of a driver name is versions and widths, not identity worth a file name.
  const name = slugify(adapter.description.replace(/\(.*$/, "")).slice(0, 32).replace(/-+$/, "") ||
    slugify(adapter.vendor) || "gpu";
  return `${name}-${slugify(adapter.backend)}-${slugify(machine.arch)}-${hash}${settings}`;
}

function slugify(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9_]+/g, "-").replace(/^-+|-+$/g, "");
}

async function readCpuModel(): Promise<string> {
  // Deno 2.9 wants --allow-all for /proc/cpuinfo; node:os asks only --allow-sys=cpus.
  const model = permitted(() => cpus()[0]?.model?.trim());
  if (model) return model.replace(/\s+/g, " ");
  try {
    return parseCpuModel(await Deno.readTextFile(CPUINFO_PATH));
  } catch (e) {
    if (isDenied(e) || e instanceof Deno.errors.NotFound) return UNKNOWN;
    throw e;
  }
}

function permitted<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (e) {
    if (isDenied(e)) return undefined;
    throw e;
  }
}

function isDenied(e: unknown): boolean {
  return e instanceof Deno.errors.PermissionDenied || e instanceof Deno.errors.NotCapable;
}
