import assert from "node:assert/strict";
import { compareHostState, hostStateLine } from "../bench/_host_state.ts";

const calibration = [
  { atS: 4, ms: { js: 0.061, wasm: 0.0151 } }, // cold: left out
  { atS: 26, ms: { js: 0.0406, wasm: 0.0096 } },
  { atS: 36, ms: { js: 0.0405, wasm: 0.0092 } },
  { atS: 60, ms: { js: 0.0398, wasm: 0.0092 } },
];

Deno.test("the truth's host matches the calibration's when its probes are within the report's drift", () => {
  const rows = compareHostState(calibration, [{ atS: 0, ms: { js: 0.041, wasm: 0.0095 } }], {
    js: 0.03,
    wasm: 0.07,
  });
  assert.deepEqual(rows.map((r) => r.backend), ["wasm", "js"]);
  assert.ok(rows.every((r) => r.same));
  assert.match(hostStateLine(rows), /the same conditions/);
});

Deno.test("a truth measured with the host ×1.45 slower says so, backend by backend", () => {
  const truth = [{ atS: 0, ms: { js: 0.059, wasm: 0.0139 } }, { atS: 0, ms: { js: 0.058 } }];
  const rows = compareHostState(calibration, truth, { js: 0.03, wasm: 0.07 });
  const js = rows.find((r) => r.backend === "js")!;
  assert.ok(Math.abs(js.ratio - 0.0585 / 0.0405) < 1e-9, `${js.ratio}`);
  assert.equal(js.same, false);
  assert.match(hostStateLine(rows), /js ×1\.44 \(differs\).*another host state/);
});

Deno.test("a report without probes has no host state to compare with, and the line says so", () => {
  assert.deepEqual(compareHostState([], [{ atS: 0, ms: { js: 0.04 } }]), []);
  assert.match(hostStateLine([]), /no drift probes/);
});
