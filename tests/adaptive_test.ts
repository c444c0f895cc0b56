import assert from "node:assert/strict";
import { AdaptiveSelector } from "../models/adaptive.ts";
import { syntheticReport } from "./_fixtures.ts";

const KEY = {
  op: "matmul",
  shape: { m: 128, k: 128, n: 128 },
  residency: "device-resident",
} as const;

Deno.test("AdaptiveSelector starts from the report's predictions", () => {
  const adaptive = new AdaptiveSelector(syntheticReport());
  const first = adaptive.choose(KEY);
  const est = adaptive.estimates(KEY);
  assert.equal(first.backend, "webgpu");
  assert.equal(first.explored, false);
  assert.equal(est.bucket, 7);
  assert.deepEqual(est.arms.map((a) => a.backend).sort(), ["js", "wasm", "wasm-mt", "webgpu"]);
  assert.ok(est.arms.every((a) => a.priorMs !== null && a.observations === 0));
});

Deno.test("AdaptiveSelector converges to the faster backend when the prior is wrong", () => {
  // The report says webgpu (~0.4 ms) beats wasm (~1.4 ms); here webgpu really takes 5 ms.
  const truth = { webgpu: 5, wasm: 1.4 } as const;
  const adaptive = new AdaptiveSelector(syntheticReport(), {
    backends: ["wasm", "webgpu"],
    seed: 3,
  });
  const picks: string[] = [];
  for (let i = 0; i < 300; i++) {
    const { backend } = adaptive.choose(KEY);
    picks.push(backend);
    adaptive.record(KEY, backend, truth[backend as keyof typeof truth] * (1 + 0.05 * Math.sin(i)));
  }
  const late = picks.slice(-100);
  assert.ok(late.filter((b) => b === "wasm").length >= 80, `late picks: ${late.join(",")}`);
  const est = adaptive.estimates(KEY);
  assert.equal(est.arms[0]!.backend, "wasm");
  assert.ok(Math.abs(est.arms[0]!.ms! / 1.4 - 1) < 0.1);
  assert.ok(est.explorations <= 0.15 * est.choices + 2);
});

Deno.test("AdaptiveSelector is deterministic for a seed", () => {
  const run = () => {
    const adaptive = new AdaptiveSelector(syntheticReport(), { seed: 42, epsilon: 0.5 });
    return Array.from({ length: 50 }, (_, i) => {
      const c = adaptive.choose(KEY);
      adaptive.record(KEY, c.backend, 1 + (i % 3));
      return c.backend;
    }).join();
  };
  assert.equal(run(), run());
});

Deno.test("AdaptiveSelector.record() takes sub-100 µs and zero durations, and refuses negative ones", () => {
  const adaptive = new AdaptiveSelector(null, { backends: ["js", "wasm"] });
  const key = { op: "dot", size: 1000 };
  for (let i = 0; i < 50; i++) adaptive.record(key, "js", 0.02);
  adaptive.record(key, "wasm", 0);
  const arms = adaptive.estimates(key).arms;
  const js = arms.find((a) => a.backend === "js")!;
  assert.ok(Math.abs(js.ms! - 0.02) < 1e-12);
  assert.equal(js.observations, 50);
  assert.ok(arms.find((a) => a.backend === "wasm")!.ms! > 0);
  assert.throws(() => adaptive.record(key, "js", -1), RangeError);
  assert.throws(() => adaptive.record(key, "js", NaN), RangeError);
});

Deno.test("AdaptiveSelector without priors tries each backend before settling", () => {
  const adaptive = new AdaptiveSelector(null, { backends: ["js", "wasm", "wasm-mt"], seed: 1 });
  const key = { op: "custom", size: 4096 };
  const tried = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const c = adaptive.choose(key);
    tried.add(c.backend);
    adaptive.record(key, c.backend, c.backend === "wasm" ? 0.5 : 2);
  }
  assert.equal(tried.size, 3);
  assert.equal(adaptive.estimates(key).arms[0]!.backend, "wasm");
});

Deno.test("AdaptiveSelector keeps at most maxBuckets buckets, dropping the least recent", () => {
  const adaptive = new AdaptiveSelector(null, { backends: ["js", "wasm"], maxBuckets: 2 });
  const key = (size: number) => ({ op: "custom", size });
  adaptive.record(key(16), "js", 1);
  adaptive.record(key(1024), "js", 1);
  adaptive.record(key(16), "js", 1);
  adaptive.record(key(1 << 20), "js", 1);
  assert.equal(adaptive.size, 2);
  assert.equal(adaptive.estimates(key(16)).arms.find((a) => a.backend === "js")!.observations, 2);
  assert.equal(adaptive.estimates(key(1024)).arms.find((a) => a.backend === "js")!.observations, 0);
});

Deno.test("AdaptiveSelector shares estimates within a log2 size bucket", () => {
  const adaptive = new AdaptiveSelector(null, { backends: ["js"] });
  adaptive.record({ op: "add", shape: { n: 1100 } }, "js", 3);
  assert.equal(adaptive.estimates({ op: "add", shape: { n: 2000 } }).arms[0]!.observations, 1);
  assert.equal(adaptive.estimates({ op: "add", shape: { n: 2048 } }).arms[0]!.observations, 0);
});

Deno.test("AdaptiveSelector rejects keys without a size and bad options", () => {
  assert.throws(() => new AdaptiveSelector(null).choose({ op: "custom" }), /has no size/);
  assert.throws(() => new AdaptiveSelector(null, { epsilon: 2 }), RangeError);
  assert.throws(() => new AdaptiveSelector(null, { maxBuckets: 0 }), RangeError);
  assert.throws(() => new AdaptiveSelector(null, { backends: [] }), RangeError);
});
