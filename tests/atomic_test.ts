import assert from "node:assert/strict";
import { writeFileAtomic, writeJsonAtomic } from "../core/atomic.ts";

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function names(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
}

Deno.test("writeJsonAtomic() creates and then replaces a file, leaving no temporary file", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/report.json`;
    await writeJsonAtomic(path, { schemaVersion: 1, a: [1, 2] });
    assert.equal(
      await Deno.readTextFile(path),
      '{\n  "schemaVersion": 1,\n  "a": [\n    1,\n    2\n  ]\n}\n',
    );
    await writeJsonAtomic(path, { schemaVersion: 1 });
    assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), { schemaVersion: 1 });
    assert.deepEqual(names(dir), ["report.json"]);
  });
});

Deno.test("writeJsonAtomic() leaves the old file intact when serialisation throws midway", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/report.json`;
    await Deno.writeTextFile(path, "old");
    const poisoned = {
      first: "fine",
      second: {
        toJSON() {
          throw new Error("Cannot serialise this");
        },
      },
    };
    await assert.rejects(writeJsonAtomic(path, poisoned), /Cannot serialise this/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await assert.rejects(writeJsonAtomic(path, cyclic), TypeError);
    await assert.rejects(writeJsonAtomic(path, undefined), /Cannot write undefined as JSON/);
    assert.equal(await Deno.readTextFile(path), "old");
    assert.deepEqual(names(dir), ["report.json"]);
  });
});

Deno.test("writeFileAtomic() removes its temporary file when the rename fails", async () => {
  await withTempDir(async (dir) => {
    // A non-empty directory cannot be replaced by a file, whoever runs the test.
    const target = `${dir}/report.json`;
    await Deno.mkdir(target);
    await Deno.writeTextFile(`${target}/keep.txt`, "old");
    await assert.rejects(writeFileAtomic(target, "new"));
    assert.equal(await Deno.readTextFile(`${target}/keep.txt`), "old");
    assert.deepEqual(names(dir), ["report.json"]);
  });
});

Deno.test("writeFileAtomic() fails cleanly when the directory does not exist", async () => {
  await withTempDir(async (dir) => {
    await assert.rejects(writeFileAtomic(`${dir}/missing/report.json`, "x"), Deno.errors.NotFound);
    assert.deepEqual(names(dir), []);
  });
});
