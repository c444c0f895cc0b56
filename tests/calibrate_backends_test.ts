import assert from "node:assert/strict";
import { calibrate } from "../calibrate/calibrate.ts";
import { peekAdapter, quietDisplayProbe } from "../calibrate/device.ts";
import { describeMachine, machineFingerprint } from "../calibrate/machine.ts";
import { WEBGPU_NOT_CALIBRATED } from "../calibrate/summary.ts";
import { hasAdapter } from "./_gpu.ts";

Deno.test({
  name: `calibrate --backends without webgpu records the adapter and a full run's fingerprint${
    hasAdapter ? "" : " (skipped: no WebGPU adapter)"
  }`,
  ignore: !hasAdapter,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const { report } = await calibrate({
        quick: true,
        ops: ["add"],
        dtypes: ["f32"],
        backends: ["js"],
        llm: false,
        out: `${dir}/r.json`,
      });
      const adapter = (await peekAdapter())!;
      assert.equal(report.adapter?.description, adapter.description);
      assert.equal(report.adapter?.backend, adapter.backend);
      // The fingerprint a full run of this machine gets, so the two reports can be compared.
      assert.equal(report.fingerprint, await machineFingerprint(await describeMachine(), adapter));
      assert.ok(!report.slug.startsWith("cpu-only"), report.slug);
      assert.ok(report.measurements.every((m) => m.backend === "js"));
      assert.equal(report.system.dispatchRoundTripMs.reason, WEBGPU_NOT_CALIBRATED);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("quietDisplayProbe() sets XDG_RUNTIME_DIR only where it is unset", () => {
  const vars = new Map<string, string>([["TMPDIR", "/var/tmp"]]);
  const env = {
    get: (k: string) => vars.get(k),
    set: (k: string, v: string) => void vars.set(k, v),
  };
  const dir = quietDisplayProbe(env, "linux");
  assert.equal(dir, `/var/tmp/gpucal-no-display-${Deno.pid}`);
  assert.equal(vars.get("XDG_RUNTIME_DIR"), dir);
  assert.equal(quietDisplayProbe(env, "linux"), null, "a set value is kept");
  assert.equal(vars.get("XDG_RUNTIME_DIR"), dir);
  const mac = new Map<string, string>();
  assert.equal(
    quietDisplayProbe({ get: (k) => mac.get(k), set: (k, v) => void mac.set(k, v) }, "darwin"),
    null,
  );
  assert.equal(mac.size, 0);
});
