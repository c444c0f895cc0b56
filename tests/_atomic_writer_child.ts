/**
 * Rewrites one JSON file atomically, over and over, until killed: `calibrate_output_test.ts` kills
 * it with SIGKILL mid-save and checks that the file is never torn and that the temporary file it
 * leaves is cleaned.
 *
 * Usage: deno run --allow-read=DIR --allow-write=DIR tests/_atomic_writer_child.ts DIR/report.json
 *
 * @module
 */
import { writeFileAtomic } from "../core/atomic.ts";

const path = Deno.args[0];
if (path === undefined) {
  console.error("usage: _atomic_writer_child.ts PATH");
  Deno.exit(2);
}
// About 16 MB of JSON, serialised once, so nearly all the time goes into saving it.
const rows = Array.from({ length: 400_000 }, (_, i) => ({ seq: i, median: i * 1e-3 }));
const bytes = new TextEncoder().encode(JSON.stringify({ rows }));
for (let round = 0;; round++) {
  await writeFileAtomic(path, bytes);
  if (round === 0) console.log("written");
}
