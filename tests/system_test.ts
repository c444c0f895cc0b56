import assert from "node:assert/strict";
import { measureSystem } from "../calibrate/system.ts";
import { gpuTest } from "./_gpu.ts";

Deno.test("measureSystem() without an adapter gives every figure null with the reason", async () => {
  const s = await measureSystem(null);
  const figures = [
    s.dispatchRoundTripMs,
    s.readbackRoundTripMs,
    s.perDispatchUs,
    s.encodePerDispatchUs,
    s.uploadGBps,
  ];
  for (const f of figures) {
    assert.equal(f?.value, null);
    assert.equal(f?.reason, "No WebGPU adapter");
  }
});

gpuTest(
  "measureSystem() times the host's recording of a dispatch apart from the GPU's, and a round " +
    "trip that reads a result back beside one that only waits",
  async (gpu) => {
    const s = await measureSystem(gpu, { quick: true });
    const encode = s.encodePerDispatchUs!;
    assert.equal(encode.unit, "us");
    assert.equal(encode.tag, "measured");
    assert.ok(encode.value! > 0, `${encode.value} µs`);
    assert.ok(encode.ci![0] <= encode.value! && encode.value! <= encode.ci![1]);
    assert.match(encode.source!, /host time recording .* not submitted; median of 7/);
    const read = s.readbackRoundTripMs!;
    assert.equal(read.unit, "ms");
    assert.equal(read.tag, "measured");
    assert.ok(read.value! > 0, `${read.value} ms`);
    assert.match(
      read.source!,
      /copy of 4 bytes to a MAP_READ buffer \+ mapAsync \+ read; median of 7/,
    );
    assert.match(s.dispatchRoundTripMs.source!, /onSubmittedWorkDone; median of 7/);
  },
);
