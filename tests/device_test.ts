import assert from "node:assert/strict";
import { describeAdapter, type GpuEntry, openGpu } from "../calibrate/device.ts";
import {
  describeMachine,
  describeSettingsDifference,
  driverSettings,
  HUGE_PAGE_MALLOC,
  hugePageWarning,
  machineFingerprint,
  type MachineInfo,
  machineSlug,
  parseCpuModel,
} from "../calibrate/machine.ts";

const hasAdapter = (await navigator.gpu?.requestAdapter()) != null;

const LLVMPIPE = "llvmpipe (LLVM 15.0.6, 256 bits)";

function fakeAdapter(
  description: string,
  features: string[],
  extra: Record<string, unknown> = {},
): GPUAdapter {
  return {
    info: { description, vendor: "65541", architecture: "", device: "0", ...extra },
    features: new Set(features),
    limits: { maxBufferSize: 2 ** 31 - 1, maxStorageBufferBindingSize: 2 ** 27 },
  } as unknown as GPUAdapter;
}

const noEnv = () => undefined;

const machine: MachineInfo = {
  cpuModel: "Intel(R) Xeon(R) Processor @ 2.80GHz",
  cores: 2,
  memoryBytes: 23.4 * 2 ** 30,
  os: "linux",
  osRelease: "6.18.44",
  arch: "x86_64",
  denoVersion: "2.9.6",
  glibcTunables: null,
  driverEnv: {},
  v8Version: "14.0",
};

Deno.test("describeAdapter() infers Vulkan for lavapipe and calls it software", () => {
  const info = describeAdapter(fakeAdapter(LLVMPIPE, ["shader-f16", "timestamp-query"]), {
    env: noEnv,
    os: "linux",
  });
  assert.equal(info.description, LLVMPIPE);
  assert.equal(info.backend, "vulkan");
  assert.equal(info.backendSource, "inferred");
  assert.equal(info.software, true);
  assert.deepEqual(info.features, ["shader-f16", "timestamp-query"]);
  assert.equal(info.limits.maxStorageBufferBindingSize, 2 ** 27);
});

Deno.test("describeAdapter() infers GL from ETC2 without shader-f16", () => {
  const info = describeAdapter(
    fakeAdapter(LLVMPIPE, ["texture-compression-etc2", "timestamp-query"]),
    { env: noEnv, os: "linux" },
  );
  assert.equal(info.backend, "gl");
  assert.equal(info.backendSource, "inferred");
});

Deno.test("describeAdapter() takes the backend from DENO_WEBGPU_BACKEND when it names one", () => {
  const env = (name: string) => name === "DENO_WEBGPU_BACKEND" ? "gl" : undefined;
  const info = describeAdapter(fakeAdapter(LLVMPIPE, ["shader-f16"]), { env, os: "linux" });
  assert.equal(info.backend, "gl");
  assert.equal(info.backendSource, "env");
  const several = (name: string) => name === "DENO_WEBGPU_BACKEND" ? "vulkan,gl" : undefined;
  assert.equal(
    describeAdapter(fakeAdapter(LLVMPIPE, []), { env: several, os: "linux" }).backendSource,
    "inferred",
  );
});

Deno.test("describeAdapter() uses Metal on macOS and DX12 on Windows", () => {
  const mac = describeAdapter(fakeAdapter("Apple M2", []), { env: noEnv, os: "darwin" });
  const win = describeAdapter(fakeAdapter("NVIDIA GeForce RTX 4090", []), {
    env: noEnv,
    os: "windows",
  });
  assert.equal(mac.backend, "metal");
  assert.equal(win.backend, "dx12");
  assert.equal(mac.software, false);
  assert.equal(win.software, false);
});

Deno.test("describeAdapter() calls fallback adapters and WARP software", () => {
  const fallback = describeAdapter(fakeAdapter("Some GPU", [], { isFallbackAdapter: true }), {
    env: noEnv,
    os: "linux",
  });
  const warp = describeAdapter(fakeAdapter("Microsoft Basic Render Driver", []), {
    env: noEnv,
    os: "windows",
  });
  assert.equal(fallback.software, true);
  assert.equal(fallback.isFallbackAdapter, true);
  assert.equal(warp.software, true);
});

Deno.test("openGpu() returns null and says why when navigator.gpu is missing", async () => {
  const reasons: string[] = [];
  const gpu = await openGpu({ gpu: null, onUnavailable: (r) => reasons.push(r) });
  assert.equal(gpu, null);
  assert.equal(reasons.length, 1);
  assert.match(reasons[0]!, /navigator\.gpu is missing/);
});

Deno.test("openGpu() returns null and says why when requestAdapter() finds none", async () => {
  const reasons: string[] = [];
  const none: GpuEntry = { requestAdapter: () => Promise.resolve(null) };
  const throwing: GpuEntry = { requestAdapter: () => Promise.reject(new Error("no driver")) };
  assert.equal(await openGpu({ gpu: none, onUnavailable: (r) => reasons.push(r) }), null);
  assert.equal(await openGpu({ gpu: throwing, onUnavailable: (r) => reasons.push(r) }), null);
  assert.match(reasons[0]!, /returned null/);
  assert.match(reasons[1]!, /"no driver"/);
});

Deno.test({
  name: "openGpu() requests the adapter's own limits and features",
  ignore: !hasAdapter,
  fn: async () => {
    const gpu = await openGpu();
    assert.ok(gpu);
    try {
      assert.ok(gpu.info.description.length > 0);
      assert.equal(
        gpu.device.limits.maxStorageBufferBindingSize,
        gpu.adapter.limits.maxStorageBufferBindingSize,
      );
      assert.equal(
        gpu.device.limits.maxComputeInvocationsPerWorkgroup,
        gpu.adapter.limits.maxComputeInvocationsPerWorkgroup,
      );
      for (const f of gpu.adapter.features) assert.ok(gpu.device.features.has(f), f);
      const envSet = Deno.env.get("DENO_WEBGPU_BACKEND") !== undefined;
      assert.equal(gpu.info.backendSource, envSet ? "env" : "inferred");
    } finally {
      gpu.device.destroy();
    }
  },
});

Deno.test({
  name: "openGpu() records a lost device and reopen() gives a working one",
  ignore: !hasAdapter,
  fn: async () => {
    const gpu = await openGpu();
    assert.ok(gpu);
    assert.equal(gpu.loss, null);
    gpu.device.destroy();
    const loss = await gpu.lost;
    assert.equal(loss.reason, "destroyed");
    assert.deepEqual(gpu.loss, loss);
    const again = await gpu.reopen();
    assert.ok(again);
    assert.equal(again.loss, null);
    assert.equal(again.info.description, gpu.info.description);
    again.device.destroy();
  },
});

Deno.test("parseCpuModel() reads x86 and Arm cpuinfo", () => {
  assert.equal(
    parseCpuModel("processor\t: 0\nmodel name\t: AMD EPYC  7B13\ncpu cores\t: 2\n"),
    "AMD EPYC 7B13",
  );
  assert.equal(
    parseCpuModel("processor : 0\nBogoMIPS : 48.00\nModel : Raspberry Pi 5\n"),
    "Raspberry Pi 5",
  );
  assert.equal(parseCpuModel(""), "unknown");
});

Deno.test("describeMachine() describes this machine", async () => {
  const m = await describeMachine();
  assert.equal(m.os, Deno.build.os);
  assert.equal(m.arch, Deno.build.arch);
  assert.ok(m.cores >= 1);
  assert.equal(m.denoVersion, Deno.version.deno);
});

Deno.test("describeMachine() records the GLIBC_TUNABLES the process runs with", async () => {
  const before = Deno.env.get("GLIBC_TUNABLES");
  try {
    Deno.env.set("GLIBC_TUNABLES", `glibc.malloc.check=0:${HUGE_PAGE_MALLOC}`);
    assert.equal(
      (await describeMachine()).glibcTunables,
      `glibc.malloc.check=0:${HUGE_PAGE_MALLOC}`,
    );
    Deno.env.delete("GLIBC_TUNABLES");
    assert.equal((await describeMachine()).glibcTunables, null);
  } finally {
    if (before === undefined) Deno.env.delete("GLIBC_TUNABLES");
    else Deno.env.set("GLIBC_TUNABLES", before);
  }
});

Deno.test("hugePageWarning() asks a Linux process without huge-page malloc for it, and nobody else", () => {
  const linux = (glibcTunables: string | null) => hugePageWarning({ ...machine, glibcTunables });
  assert.match(linux(null) ?? "", /GLIBC_TUNABLES lacks glibc\.malloc\.hugetlb=1/);
  assert.match(linux("glibc.malloc.hugetlb=0") ?? "", /deno task calibrate/);
  assert.match(linux("glibc.malloc.hugetlb=10") ?? "", /lacks/, "a tunable is matched whole");
  assert.equal(linux(HUGE_PAGE_MALLOC), null);
  assert.equal(linux(`glibc.malloc.check=0:${HUGE_PAGE_MALLOC}`), null);
  assert.equal(hugePageWarning({ ...machine, os: "darwin", glibcTunables: null }), null);
});

Deno.test({
  name: "describeMachine() degrades to unknown values without permissions",
  permissions: { read: false, sys: false, env: false },
  fn: async () => {
    const m = await describeMachine();
    assert.equal(m.cpuModel, "unknown");
    assert.equal(m.memoryBytes, null);
    assert.equal(m.osRelease, "unknown");
    assert.equal(m.driverEnv, null);
  },
});

Deno.test("driverSettings() keeps the variables that change what the GPU driver or WebGPU does, by name", () => {
  assert.deepEqual(
    driverSettings({
      VK_ICD_FILENAMES: "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
      HOME: "/root",
      LP_NUM_THREADS: "1",
      DENO_WEBGPU_BACKEND: "vulkan",
      XDG_RUNTIME_DIR: "/tmp/xdg",
      lp_num_threads: "4",
    }),
    {
      DENO_WEBGPU_BACKEND: "vulkan",
      LP_NUM_THREADS: "1",
      VK_ICD_FILENAMES: "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
    },
  );
  assert.deepEqual(Object.keys(driverSettings({ MESA_X: "y".repeat(5000) })), ["MESA_X"]);
  assert.equal(driverSettings({ MESA_X: "y".repeat(5000) }).MESA_X!.length, 1024);
});

Deno.test("describeMachine() records the driver settings the process runs with", async () => {
  const before = Deno.env.get("LP_NUM_THREADS");
  try {
    Deno.env.set("LP_NUM_THREADS", "1");
    assert.equal((await describeMachine()).driverEnv?.LP_NUM_THREADS, "1");
    Deno.env.delete("LP_NUM_THREADS");
    assert.equal((await describeMachine()).driverEnv?.LP_NUM_THREADS, undefined);
  } finally {
    if (before === undefined) Deno.env.delete("LP_NUM_THREADS");
    else Deno.env.set("LP_NUM_THREADS", before);
  }
});

Deno.test("machineFingerprint() is stable and 16 hex digits", async () => {
  const a = await machineFingerprint(machine, {
    description: LLVMPIPE,
    vendor: "65541",
    backend: "vulkan",
  });
  const b = await machineFingerprint({
    ...machine,
    memoryBytes: 23.3 * 2 ** 30,
    denoVersion: "2.9.7",
  }, {
    description: LLVMPIPE,
    vendor: "65541",
    backend: "vulkan",
  });
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.equal(a, b);
});

Deno.test("machineFingerprint() tells the Vulkan and GL adapters of one machine apart", async () => {
  const vulkan = await machineFingerprint(machine, {
    description: LLVMPIPE,
    vendor: "65541",
    backend: "vulkan",
  });
  const gl = await machineFingerprint(machine, {
    description: LLVMPIPE,
    vendor: "65541",
    backend: "gl",
  });
  const cpu = await machineFingerprint(machine, null);
  assert.notEqual(vulkan, gl);
  assert.notEqual(vulkan, cpu);
  assert.notEqual(gl, cpu);
});

Deno.test("machineSlug() names the adapter, backend and arch, or says cpu-only", async () => {
  const adapter = { description: LLVMPIPE, vendor: "65541", backend: "vulkan" };
  const hash = await machineFingerprint(machine, adapter);
  assert.equal(machineSlug(machine, adapter, hash), `llvmpipe-vulkan-x86_64-${hash.slice(0, 8)}`);
  const cpu = await machineFingerprint(machine, null);
  assert.equal(machineSlug(machine, null, cpu), `cpu-only-x86_64-${cpu.slice(0, 8)}`);
  const nvidia = {
    description: "NVIDIA GeForce RTX 4090",
    vendor: "",
    backend: "vulkan",
  };
  assert.match(
    machineSlug(machine, nvidia, hash),
    /^nvidia-geforce-rtx-4090-vulkan-x86_64-[0-9a-f]{8}$/,
  );
});

Deno.test("machineSlug() names a configuration other than the default after the machine, so its report lands beside the machine's", async () => {
  const adapter = { description: LLVMPIPE, vendor: "65541", backend: "vulkan" };
  const hash = await machineFingerprint(machine, adapter);
  const base = `llvmpipe-vulkan-x86_64-${hash.slice(0, 8)}`;
  const slug = (driverEnv: Record<string, string>) =>
    machineSlug({ ...machine, driverEnv }, adapter, hash);
  assert.equal(slug({ LP_NUM_THREADS: "1" }), `${base}-lp_num_threads-1`);
  // The backend choice is the adapter's identity, already in the fingerprint.
  assert.equal(slug({ DENO_WEBGPU_BACKEND: "vulkan" }), base);
  assert.equal(
    slug({ MESA_NO_DITHER: "1", LP_NUM_THREADS: "2" }),
    `${base}-lp_num_threads-2-mesa_no_dither-1`,
  );
  const long = slug({ VK_ICD_FILENAMES: "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json" });
  assert.match(long, new RegExp(`^${base}-env-[0-9a-f]{8}$`));
  assert.equal(slug({ VK_ICD_FILENAMES: "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json" }), long);
  assert.notEqual(
    slug({ VK_ICD_FILENAMES: "/usr/share/vulkan/icd.d/other_icd.x86_64.json" }),
    long,
  );
  assert.equal(slug({ MESA_DEBUG: "" }), `${base}-mesa_debug-empty`);
  assert.equal(
    machineSlug({ ...machine, driverEnv: { LP_NUM_THREADS: "1" } }, null, hash),
    `cpu-only-x86_64-${hash.slice(0, 8)}-lp_num_threads-1`,
  );
});

Deno.test("describeSettingsDifference() names what differs, leaving out what the fingerprint tells apart", () => {
  assert.equal(
    describeSettingsDifference({ LP_NUM_THREADS: "1" }, {}, ["the current report", "the baseline"]),
    'LP_NUM_THREADS "1" in the current report, unset in the baseline',
  );
  assert.equal(
    describeSettingsDifference({ DENO_WEBGPU_BACKEND: "vulkan" }, undefined, ["a", "b"]),
    null,
  );
  assert.equal(
    describeSettingsDifference(null, { LP_NUM_THREADS: "1" }, ["a", "b"]),
    'LP_NUM_THREADS unset in a, "1" in b',
  );
  const many = { LP_A: "1", LP_B: "1", LP_C: "1", LP_D: "1", LP_E: "1" };
  assert.match(
    describeSettingsDifference(many, {}, ["a", "b"])!,
    /LP_C "1" in a, unset in b and 2 more$/,
  );
});
