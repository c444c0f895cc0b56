import assert from "node:assert/strict";
import { main } from "../bench/noise.ts";
import { captureCli } from "./_console.ts";

Deno.test("deno task noise --help prints its flags and exits 0 without measuring", async () => {
  const { code, out } = await captureCli(() => main(["--help"]));
  assert.equal(code, 0);
  for (const flag of ["--windows", "--gap-s", "--backends", "--json"]) {
    assert.match(out, new RegExp(flag));
  }
});

Deno.test("deno task noise exits 2 with one line naming a bad flag", async () => {
  const cases: [string[], RegExp][] = [
    [["--windows", "1"], /--windows must be an integer from 2 to 20, got "1"/],
    [["--windows", "2.5"], /--windows must be an integer/],
    [["--gap-s", "soon"], /--gap-s must be a positive number, got "soon"/],
    [["--backends", "wasm,cuda"], /--backends: "cuda" is not one of/],
    [["--backends", ","], /--backends needs at least one backend/],
    [["--fast"], /Unknown option '--fast'/],
  ];
  for (const [args, message] of cases) {
    const { code, err, out } = await captureCli(() => main(args));
    assert.equal(code, 2, args.join(" "));
    assert.match(err, message);
    assert.equal(err.split("\n").length, 1, err);
    assert.equal(out, "");
  }
});
