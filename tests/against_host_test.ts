import assert from "node:assert/strict";
import { againstReference } from "../bench/_against_host.ts";
import { AllCoresReference } from "../bench/_all_cores.ts";
import { repeatability } from "../calibrate/stability.ts";

const timesOf = (row: { case: string; ms: readonly (number | null)[] }) =>
  row.ms.flatMap((ms, window) => (ms === null ? [] : [{ case: row.case, window, ms }]));

Deno.test("a case that slows down with the host repeats exactly against the host's reference", () => {
  // The host runs ×1, ×1.5, ×1.5, ×1 in four windows; two cases follow it, one at its own pace.
  const host = [4, 6, 6, 4];
  const cases = [
    { case: "sum", moment: "before sum", ms: host.map((h) => h / 8) },
    { case: "dot", moment: "before dot", ms: host.map((h) => h / 2) },
  ];
  const reference = new Map([["before sum", host], ["before dot", host]]);
  const raw = repeatability(cases.flatMap(timesOf))!;
  const against = repeatability(againstReference(cases, reference).flatMap(timesOf))!;
  assert.ok(raw.within10 < 1, `raw times move with the host: ${raw.within10}`);
  assert.equal(against.within5, 1);
  assert.equal(against.sigmaLn, 0);
});

Deno.test("a case's own noise stays when the host's is taken out", () => {
  const host = [4, 6, 4, 6];
  const own = [1, 1, 1.3, 1];
  const cases = [{ case: "add", moment: "m", ms: host.map((h, w) => h * own[w]!) }];
  const [row] = againstReference(cases, new Map([["m", host]]));
  assert.deepEqual(row!.ms.map((r) => r!.toFixed(2)), ["1.00", "1.00", "1.30", "1.00"]);
});

Deno.test("a window without a time or a reference at that moment has no ratio", () => {
  const cases = [
    { case: "a", moment: "m", ms: [1, null, 3] },
    { case: "b", moment: "elsewhere", ms: [1, 2, 3] },
  ];
  const rows = againstReference(cases, new Map([["m", [2, 2, null]]]));
  assert.deepEqual(rows[0]!.ms, [0.5, null, null]);
  assert.deepEqual(rows[1]!.ms, [null, null, null]);
});

Deno.test("the throughput reference on every core returns the slowest core's median time and its workers stop", async () => {
  const all = new AllCoresReference(2);
  try {
    const ms = await all.time();
    assert.ok(Number.isFinite(ms) && ms > 0, `${ms}`);
  } finally {
    all.close();
  }
});
