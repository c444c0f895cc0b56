import assert from "node:assert/strict";
import type { IndexEntry, ReportIndex } from "../reports/index.ts";
import { parseReport } from "../reports/load.ts";
import { borrowReport, type MachineDescription, nearestReport } from "../models/nearest.ts";
import { syntheticReport } from "./_fixtures.ts";
import { systemFigures } from "./_report_variants.ts";

function entry(
  file: string,
  machine: IndexEntry["machine"],
  adapter: IndexEntry["adapter"],
  date = "2026-01-01T00:00:00.000Z",
): IndexEntry {
  return {
    file,
    slug: file.replace(".json", ""),
    fingerprint: "0123456789abcdef",
    machine,
    adapter,
    date,
    schemaVersion: 1,
    sha256: "0".repeat(64),
    complete: true,
  };
}

const EPYC = { cpuModel: "AMD EPYC 7763 64-Core Processor", cores: 2 };
const LLVMPIPE = {
  description: "llvmpipe (LLVM 19.1.7, 256 bits)",
  backend: "vulkan" as const,
  vendor: "mesa",
  software: true,
};
const RTX = {
  description: "NVIDIA GeForce RTX 4070",
  backend: "vulkan" as const,
  vendor: "nvidia",
  software: false,
};

const INDEX: ReportIndex = {
  generated: "2026-02-01T00:00:00.000Z",
  reports: [
    entry("rtx.json", { cpuModel: "AMD Ryzen 9 7950X 16-Core Processor", cores: 32 }, RTX),
    entry("llvmpipe.json", EPYC, LLVMPIPE),
    entry("m2.json", { cpuModel: "Apple M2", cores: 8 }, null),
  ],
};

Deno.test("nearestReport() picks the machine's default configuration over a newer one with other driver settings, and the other way round", () => {
  const oneThread = {
    ...entry("llvmpipe-lp_num_threads-1.json", EPYC, LLVMPIPE, "2026-03-01T00:00:00.000Z"),
    driverEnv: { LP_NUM_THREADS: "1" },
  };
  const index: ReportIndex = {
    generated: "2026-04-01T00:00:00.000Z",
    reports: [entry("llvmpipe.json", EPYC, LLVMPIPE), oneThread],
  };
  const asDefault = nearestReport(index, { machine: EPYC, adapter: LLVMPIPE });
  assert.equal(asDefault?.entry.file, "llvmpipe.json");
  assert.equal(asDefault.distance, 0);
  const asOneThread = nearestReport(index, {
    machine: EPYC,
    adapter: LLVMPIPE,
    driverEnv: { LP_NUM_THREADS: "1", DENO_WEBGPU_BACKEND: "vulkan" },
  });
  assert.equal(asOneThread?.entry.file, "llvmpipe-lp_num_threads-1.json");
  assert.equal(asOneThread.distance, 0);
  const onlyOneThread = nearestReport({ ...index, reports: [oneThread] }, {
    machine: EPYC,
    adapter: LLVMPIPE,
  });
  assert.deepEqual(onlyOneThread?.differences, [
    'driver settings: LP_NUM_THREADS "1" in the report, unset in this machine',
  ]);
});

Deno.test("nearestReport() prefers the same software adapter over a real GPU", () => {
  const want: MachineDescription = {
    machine: { cpuModel: "AMD EPYC 9654 96-Core Processor", cores: 4 },
    adapter: { ...LLVMPIPE, description: "llvmpipe (LLVM 20.1.2, 256 bits)" },
  };
  const nearest = nearestReport(INDEX, want);
  assert.equal(nearest?.entry.file, "llvmpipe.json");
  assert.ok(nearest.distance > 0);
  assert.ok(nearest.differences.some((d) => d.includes("2 cores instead of 4")));
  assert.ok(nearest.differences.some((d) => d.startsWith('CPU "AMD EPYC 7763')));
});

Deno.test("nearestReport() is at distance 0 with no differences for the same machine", () => {
  const nearest = nearestReport(INDEX, { machine: EPYC, adapter: LLVMPIPE });
  assert.equal(nearest?.entry.file, "llvmpipe.json");
  assert.equal(nearest.distance, 0);
  assert.deepEqual(nearest.differences, []);
});

Deno.test("nearestReport() matches a CPU-only machine to a CPU-only report", () => {
  const nearest = nearestReport(INDEX, {
    machine: { cpuModel: "Apple M3", cores: 8 },
    adapter: null,
  });
  assert.equal(nearest?.entry.file, "m2.json");
});

Deno.test("nearestReport() picks a hardware GPU of the same vendor for a hardware GPU", () => {
  const nearest = nearestReport(INDEX, {
    machine: { cpuModel: "Intel(R) Core(TM) i7-13700K", cores: 24 },
    adapter: { ...RTX, description: "NVIDIA GeForce RTX 4080" },
  });
  assert.equal(nearest?.entry.file, "rtx.json");
  assert.ok(nearest.differences.includes(
    'adapter "NVIDIA GeForce RTX 4070" instead of "NVIDIA GeForce RTX 4080"',
  ));
});

Deno.test("nearestReport() breaks ties by the newer report and returns null for an empty index", () => {
  const twin: ReportIndex = {
    generated: INDEX.generated,
    reports: [
      entry("old.json", EPYC, LLVMPIPE, "2025-06-01T00:00:00.000Z"),
      entry("new.json", EPYC, LLVMPIPE, "2026-01-20T00:00:00.000Z"),
    ],
  };
  assert.equal(nearestReport(twin, { machine: EPYC, adapter: LLVMPIPE })?.entry.file, "new.json");
  assert.equal(
    nearestReport({ generated: INDEX.generated, reports: [] }, { machine: EPYC, adapter: null }),
    null,
  );
});

Deno.test("borrowReport() re-tags every figure as borrowed and warns with the differences", () => {
  const original = syntheticReport();
  const borrowed = borrowReport(original, ["8 cores instead of 4", 'CPU "x" instead of "y"']);
  assert.ok(borrowed.crossovers.every((c) => c.tag === "borrowed"));
  assert.ok(borrowed.tuning.every((t) => t.tag === "borrowed"));
  assert.ok(
    borrowed.thresholds.every((t) =>
      t.simdAbove.tag === "borrowed" && t.gpuAbove.tag === "borrowed"
    ),
  );
  for (const f of systemFigures(borrowed)) assert.equal(f.tag, "borrowed");
  assert.match(
    borrowed.provenance.warnings.at(-1)!,
    /Borrowed from report "llvmpipe-vulkan.*8 cores instead of 4; CPU "x"/,
  );
  assert.equal(original.crossovers[0]?.tag === "borrowed", false);
  assert.equal(original.provenance.warnings.length + 1, borrowed.provenance.warnings.length);
  parseReport(JSON.parse(JSON.stringify(borrowed)));
});
