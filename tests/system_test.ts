import assert from "node:assert/strict";
import { measureSystem } from "../calibrate/system.ts";
import { gpuTest } from "./_gpu.ts";

Deno.test("measureSystem() without an adapter gives every figure null with the reason", async () => {
  const s = await measureSystem(null);
  for (const f of [s.dispatchRoundTripMs, s.perDispatchUs, s.encodePerDispatchUs, s.uploadGBps]) {
    assert.equal(f?.value, null);
    assert.equal(f?.reason, "No WebGPU adapter");
  }
});

gpuTest(
  "measureSystem() times the host's recording of a dispatch apart from the GPU's",
  async (gpu) => {
    const s = await measureSystem(gpu, { quick: true });
    const encode = s.encodePerDispatchUs!;
    assert.equal(encode.unit, "us");
    assert.equal(encode.tag, "measured");
    assert.ok(encode.value! > 0, `${encode.value} µs`);
    assert.ok(encode.ci![0] <= encode.value! && encode.value! <= encode.ci![1]);
    assert.match(encode.source!, /host time recording .* not submitted; median of 7/);
  },
);
