/**
 * WebAssembly SIMD128 matmul: B is packed per (k, n) block into a private scratch memory, then a
 * register-blocked micro-kernel keeps an `mr`×`nr` tile of C in `v128` locals, broadcasting one
 * element of A (`v128.load32_splat`) against `nr / 4` vectors of packed B per step of k.
 *
 * The scratch memory is the module's own second memory (Wasm multi-memory), so every instance,
 * and therefore every `wasm-mt` worker, packs into its own copy without the runner knowing.
 * A call given fewer rows than one micro-tile (m = 1…mr − 1, or a worker's share of the rows
 * left over) skips packing and streams B once into its rows of C.
 *
 * @module
 */
import type { Shape, Variant, WasmImpl } from "../types.ts";

/** Tile and blocking parameters of one generated kernel. */
interface Params {
  /** Rows of C per micro-tile. */
  readonly mr: number;
  /** Columns of C per micro-tile, a multiple of 4. */
  readonly nr: number;
  /** Depth of one packed block of B. */
  readonly kc: number;
  /** Width of one packed block of B, a multiple of `nr`. */
  readonly nc: number;
  /** Fused multiply-add (`f32x4.relaxed_madd`) instead of `f32x4.mul` + `f32x4.add`. */
  readonly fma: boolean;
}

// Steps of k per trip of the micro-kernel's main loop.
const K_UNROLL = 4;

function params(variant: Variant): Params {
  const { mr, nr, kc, nc, fma } = variant;
  const ok = typeof mr === "number" && mr >= 1 && mr <= 8 && Number.isInteger(mr) &&
    typeof nr === "number" && nr >= 4 && nr <= 16 && nr % 4 === 0 &&
    typeof kc === "number" && kc >= K_UNROLL && Number.isInteger(kc) &&
    typeof nc === "number" && nc >= nr && nc % nr === 0 && typeof fma === "boolean";
  if (!ok) {
    throw new RangeError(
      `Invalid wasm matmul variant ${JSON.stringify(variant)}: ` +
        "use integers mr in 1..8, nr in {4, 8, 12, 16}, kc >= 4, nc a multiple of nr, and a boolean fma",
    );
  }
  return { mr, nr, kc, nc, fma };
}

function dims(shape: Shape): { m: number; k: number; n: number } {
  const { m, k, n } = shape;
  if (!m || !k || !n) throw new RangeError(`matmul needs m, k and n, got ${JSON.stringify(shape)}`);
  return { m, k, n };
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** `acc += s * b` for one vector of the tile. */
function madd(p: Params, acc: string, s: string, b: string): string {
  return p.fma
    ? `(local.set ${acc} (f32x4.relaxed_madd (local.get ${s}) (local.get ${b}) (local.get ${acc})))`
    : `(local.set ${acc} (f32x4.add (local.get ${acc}) (f32x4.mul (local.get ${s}) (local.get ${b}))))`;
}

/** One step of k at byte offset `u` steps into the current A and B positions. */
function step(p: Params, rows: number, u: number): string {
  const vecs = p.nr / 4;
  const out: string[] = [];
  for (const v of range(vecs)) {
    out.push(`(local.set $b${v} (v128.load $s offset=${(u * p.nr + v * 4) * 4} (local.get $bp)))`);
  }
  for (const r of range(rows)) {
    out.push(`(local.set $av (v128.load32_splat $m offset=${u * 4} (local.get $a${r})))`);
    for (const v of range(vecs)) out.push(madd(p, `$c${r}_${v}`, "$av", `$b${v}`));
  }
  return out.join("\n");
}

/** Advances A by `steps` elements and packed B by `steps` rows. */
function advance(p: Params, rows: number, steps: number): string {
  const out = range(rows).map((r) =>
    `(local.set $a${r} (i32.add (local.get $a${r}) (i32.const ${steps * 4})))`
  );
  out.push(`(local.set $bp (i32.add (local.get $bp) (i32.const ${steps * p.nr * 4})))`);
  return out.join("\n");
}

/** The micro-kernel for `rows` rows: C[rows × w] (+)= A[rows × kc] · Bpanel[kc × nr]. */
function microKernel(p: Params, rows: number, tile: number): string {
  const vecs = p.nr / 4;
  const accs = range(rows).flatMap((r) => range(vecs).map((v) => `$c${r}_${v}`));
  // Vector v of row r's tile into C: stored on the first block of k, added to C after it.
  const update = (r: number, v: number) =>
    `(if (local.get $first)
       (then (v128.store $m offset=${v * 16} (local.get $cr) (local.get $c${r}_${v})))
       (else (v128.store $m offset=${v * 16} (local.get $cr)
         (f32x4.add (v128.load $m offset=${v * 16} (local.get $cr)) (local.get $c${r}_${v})))))`;
  const store = (full: boolean) =>
    range(rows).map((r) => {
      const row =
        `(local.set $cr (i32.add (local.get $c) (i32.mul (local.get $ldc) (i32.const ${r}))))`;
      if (full) return row + range(vecs).map((v) => update(r, v)).join("\n");
      // A partial tile stores its whole vectors directly and the columns of its last, partial
      // vector through scratch, so any column count (n % 4 != 0 included) works.
      return row + range(vecs).map((v) =>
        `(if (i32.ge_u (local.get $w) (i32.const ${(v + 1) * 4}))
          (then ${update(r, v)})
          (else (if (i32.gt_u (local.get $w) (i32.const ${v * 4}))
            (then
              (v128.store $s offset=${tile + (r * p.nr + v * 4) * 4} (i32.const 0)
                (local.get $c${r}_${v}))
              (local.set $j (i32.const ${v * 4}))
              (block $cols${r}_${v} (loop $col${r}_${v}
                (br_if $cols${r}_${v} (i32.ge_u (local.get $j) (local.get $w)))
                (local.set $x (f32.load $s offset=${tile + r * p.nr * 4}
                  (i32.shl (local.get $j) (i32.const 2))))
                (local.set $y (i32.add (local.get $cr) (i32.shl (local.get $j) (i32.const 2))))
                (if (i32.eqz (local.get $first))
                  (then (local.set $x (f32.add (local.get $x) (f32.load $m (local.get $y))))))
                (f32.store $m (local.get $y) (local.get $x))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $col${r}_${v})))))))`
      ).join("\n");
    }).join("\n");
  return `
  (func $mk${rows} (param $a i32) (param $lda i32) (param $bp i32) (param $kc i32)
      (param $c i32) (param $ldc i32) (param $w i32) (param $first i32)
    ${range(rows).map((r) => `(local $a${r} i32)`).join(" ")}
    ${accs.map((a) => `(local ${a} v128)`).join(" ")}
    ${range(vecs).map((v) => `(local $b${v} v128)`).join(" ")}
    (local $av v128) (local $cr i32) (local $j i32) (local $x f32) (local $y i32)
    ${
    range(rows).map((r) =>
      `(local.set $a${r} (i32.add (local.get $a) (i32.mul (local.get $lda) (i32.const ${r}))))`
    ).join("\n")
  }
    (block $main_done (loop $main
      (br_if $main_done (i32.lt_u (local.get $kc) (i32.const ${K_UNROLL})))
      ${range(K_UNROLL).map((u) => step(p, rows, u)).join("\n")}
      ${advance(p, rows, K_UNROLL)}
      (local.set $kc (i32.sub (local.get $kc) (i32.const ${K_UNROLL})))
      (br $main)))
    (block $tail_done (loop $tail
      (br_if $tail_done (i32.eqz (local.get $kc)))
      ${step(p, rows, 0)}
      ${advance(p, rows, 1)}
      (local.set $kc (i32.sub (local.get $kc) (i32.const 1)))
      (br $tail)))
    (if (i32.eq (local.get $w) (i32.const ${p.nr}))
      (then ${store(true)})
      (else ${store(false)})))`;
}

/**
 * Bytes between the starts of two packed panels beyond the panel itself. Without it a panel is
 * `kc · nr · 4` bytes (8 KiB for kc = 256, nr = 8), so the row-by-row packing below writes each
 * row's 64 panel slices to one cache set and evicts them before the next row fills their lines.
 */
const PANEL_PAD = 64;

/**
 * Packs B[kc × nc] (row stride `ldb` bytes) into panels of `nr` columns, zero-padded, a row of B
 * at a time: each row is read once, contiguously, and its `nr`-wide slices go to their panels
 * (`kc · nr · 4 + PANEL_PAD` bytes apart). Packing panel by panel read `nr` floats per row of B,
 * `kc` rows apart: at m = 1 and 8, where packing is most of the work, such strides ran
 * 1.4–2.5 ms for 1 × 3072 × 768 and 7.4–11.5 ms for 1 × 1536 × 6144 from one window to the next.
 */
function pack(p: Params): string {
  const vecs = p.nr / 4;
  // Vector v of the last, partial panel's row: copied whole while B's row has its four columns,
  // else zeroed and its remaining columns copied one by one.
  const partialSlice = (v: number) => `
          (if (i32.le_u (i32.add (local.get $j0) (i32.const ${(v + 1) * 4})) (local.get $nc))
            (then (v128.store $s offset=${v * 16} (local.get $q) (v128.load $m offset=${v * 16}
              (i32.add (local.get $src) (i32.shl (local.get $j0) (i32.const 2))))))
            (else
              (v128.store $s offset=${v * 16} (local.get $q) (v128.const i32x4 0 0 0 0))
              (local.set $j (i32.add (local.get $j0) (i32.const ${v * 4})))
              (block $tail_done${v} (loop $tail${v}
                (br_if $tail_done${v} (i32.ge_u (local.get $j) (local.get $nc)))
                (f32.store $s (i32.add (local.get $q) (i32.shl (i32.sub (local.get $j) (local.get $j0))
                  (i32.const 2)))
                  (f32.load $m (i32.add (local.get $src) (i32.shl (local.get $j) (i32.const 2)))))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $tail${v})))))`;
  return `
  (func $pack (param $b i32) (param $ldb i32) (param $kc i32) (param $nc i32)
    (local $ps i32) (local $full i32) (local $row i32) (local $rowEnd i32) (local $src i32)
    (local $q i32) (local $j0 i32) (local $j i32)
    (local.set $ps (i32.add (i32.mul (local.get $kc) (i32.const ${
    p.nr * 4
  })) (i32.const ${PANEL_PAD})))
    (local.set $full (i32.sub (local.get $nc) (i32.rem_u (local.get $nc) (i32.const ${p.nr}))))
    (local.set $rowEnd (i32.mul (local.get $kc) (i32.const ${p.nr * 4})))
    (local.set $src (local.get $b))
    (block $rows_done (loop $rows
      (br_if $rows_done (i32.ge_u (local.get $row) (local.get $rowEnd)))
      (local.set $q (local.get $row))
      (local.set $j0 (i32.const 0))
      (block $full_done (loop $full_loop
        (br_if $full_done (i32.ge_u (local.get $j0) (local.get $full)))
        ${
    range(vecs).map((v) =>
      `(v128.store $s offset=${v * 16} (local.get $q) (v128.load $m offset=${v * 16}
          (i32.add (local.get $src) (i32.shl (local.get $j0) (i32.const 2)))))`
    ).join("\n")
  }
        (local.set $q (i32.add (local.get $q) (local.get $ps)))
        (local.set $j0 (i32.add (local.get $j0) (i32.const ${p.nr})))
        (br $full_loop)))
      (if (i32.lt_u (local.get $j0) (local.get $nc))
        (then
          ${range(vecs).map((v) => partialSlice(v)).join("\n")}))
      (local.set $src (i32.add (local.get $src) (local.get $ldb)))
      (local.set $row (i32.add (local.get $row) (i32.const ${p.nr * 4})))
      (br $rows))))`;
}

/** Bytes of a cache line: the unpacked path's rows of C start on one in its private memory. */
const LINE_BYTES = 64;
/**
 * Columns of C the unpacked path sums at a time for `rows` rows: as many whole cache lines of
 * them as the module's private memory (`pages` of 64 KiB) holds, so that a decode's row is one
 * strip (a variant's packing tile is 0.5 MiB and more); cut in strips of 2048, B's rows read as
 * 8 KiB pieces, and 1 × 1536 × 6144 ran ×1.37 slower on one thread.
 */
function directStrip(rows: number, pages: number): number {
  const floatsPerLine = LINE_BYTES / 4;
  return Math.floor((pages * 65536) / (rows * LINE_BYTES)) * floatsPerLine;
}

/**
 * C[rows × n] = A[rows × k] · B[k × n] for fewer rows than one micro-tile, without packing, where
 * B's rows are `ldn` floats apart (n of them, from a column block's start): B is read once, four
 * rows of it at a time and each contiguously, into `rows` rows of C that stay in cache. With a
 * single row tile there is nothing for a packed copy of B to be reused by, and writing and
 * re-reading it cost more than the product (1 × 3072 × 768: 0.82–1.2 ms packed).
 *
 * `viaScratch` (`$directS<rows>`): the rows of C are summed in the module's private memory, each
 * from a cache line's start (`$c`), and copied to C (`$cOut`, rows `$ldcOut` bytes apart) once
 * at the end. `run` takes it for several rows of a column range other threads share: summed in
 * C itself, k / 4 times over, a row whose length was not whole cache lines shared a line with
 * the next row, and wasm-mt's threads, which split C by columns here, wrote the same lines: on
 * the 2-vCPU AMD VM 3 × 5000 × 300 ran 1.49–1.85 ms on wasm-mt against 0.80 on one thread
 * (× 304, whole lines: 0.95 and 0.94), 0.70–0.80 summed apart. One row, or a call's whole rows,
 * sum in C (the copy and private loads cost 4–6 % at 1 × 3072 × 768).
 */
function direct(p: Params, rows: number, viaScratch: boolean): string {
  const rs = range(rows);
  const cm = viaScratch ? "$s" : "$m";
  const name = `$direct${viaScratch ? "S" : ""}${rows}`;
  const cRow = (r: number) => `(i32.add (local.get $cr${r}) (local.get $j))`;
  const bRow = (u: number) => `(i32.add (local.get $bu${u}) (local.get $j))`;
  // `steps` rows of B from row $p: vectors while 4 columns remain, then one column at a time.
  const update = (steps: number) => `
      ${
    rs.flatMap((r) =>
      range(steps).map((u) =>
        `(local.set $s${r}_${u} (v128.load32_splat $m offset=${u * 4} (local.get $ap${r})))`
      )
    ).join("\n")
  }
      ${
    range(steps).map((u) =>
      `(local.set $bu${u} (i32.add (local.get $b)
        (i32.mul (i32.add (local.get $p) (i32.const ${u})) (local.get $ldb))))`
    ).join("\n")
  }
      (local.set $j (i32.const 0))
      (block $vec_done${steps} (loop $vec${steps}
        (br_if $vec_done${steps} (i32.gt_u (i32.add (local.get $j) (i32.const 16)) (local.get $nb)))
        ${rs.map((r) => `(local.set $acc${r} (v128.load ${cm} ${cRow(r)}))`).join("\n")}
        ${
    range(steps).map((u) =>
      `(local.set $bv (v128.load $m ${bRow(u)}))\n` +
      rs.map((r) => madd(p, `$acc${r}`, `$s${r}_${u}`, "$bv")).join("\n")
    ).join("\n")
  }
        ${rs.map((r) => `(v128.store ${cm} ${cRow(r)} (local.get $acc${r}))`).join("\n")}
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $vec${steps})))
      (block $col_done${steps} (loop $col${steps}
        (br_if $col_done${steps} (i32.ge_u (local.get $j) (local.get $nb)))
        ${
    rs.map((r) =>
      `(f32.store ${cm} ${cRow(r)} ${
        range(steps).reduce(
          (sum, u) =>
            `(f32.add ${sum} (f32.mul (f32.load $m offset=${u * 4} (local.get $ap${r}))
              (f32.load $m ${bRow(u)})))`,
          `(f32.load ${cm} ${cRow(r)})`,
        )
      })`
    ).join("\n")
  }
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $col${steps})))
      ${
    rs.map((r) => `(local.set $ap${r} (i32.add (local.get $ap${r}) (i32.const ${steps * 4})))`)
      .join("\n")
  }
      (local.set $p (i32.add (local.get $p) (i32.const ${steps})))`;
  return `
  (func ${name} (param $a i32) (param $lda i32) (param $b i32) (param $c i32)
      (param $k i32) (param $n i32) (param $ldn i32)${
    viaScratch ? " (param $cOut i32) (param $ldcOut i32)" : ""
  }
    (local $ldb i32) (local $ldc i32) (local $nb i32) (local $p i32) (local $j i32) (local $bv v128)
    ${rs.map((r) => `(local $cr${r} i32) (local $ap${r} i32) (local $acc${r} v128)`).join(" ")}
    ${rs.flatMap((r) => range(K_UNROLL).map((u) => `(local $s${r}_${u} v128)`)).join(" ")}
    ${range(K_UNROLL).map((u) => `(local $bu${u} i32)`).join(" ")}
    (local.set $ldb (i32.shl (local.get $ldn) (i32.const 2)))
    (local.set $nb (i32.shl (local.get $n) (i32.const 2)))
    (local.set $ldc ${
    viaScratch
      ? `(i32.and (i32.add (local.get $nb) (i32.const ${
        LINE_BYTES - 1
      })) (i32.const ${-LINE_BYTES}))`
      : "(local.get $ldb)"
  })
    ${
    rs.map((r) =>
      `(local.set $cr${r} (i32.add (local.get $c) (i32.mul (local.get $ldc) (i32.const ${r}))))
    (local.set $ap${r} (i32.add (local.get $a) (i32.mul (local.get $lda) (i32.const ${r}))))`
    ).join("\n")
  }
    ${
    rs.map((r) => `(memory.fill ${cm} (local.get $cr${r}) (i32.const 0) (local.get $nb))`).join(
      "\n",
    )
  }
    (block $main_done (loop $main
      (br_if $main_done (i32.gt_u (i32.add (local.get $p) (i32.const ${K_UNROLL})) (local.get $k)))
      ${update(K_UNROLL)}
      (br $main)))
    (block $tail_done (loop $tail
      (br_if $tail_done (i32.ge_u (local.get $p) (local.get $k)))
      ${update(1)}
      (br $tail)))
    ${
    viaScratch
      ? rs.map((r) =>
        `(memory.copy $m ${cm}
      (i32.add (local.get $cOut) (i32.mul (local.get $ldcOut) (i32.const ${r})))
      (local.get $cr${r}) (local.get $nb))`
      ).join("\n")
      : ""
  })`;
}

/** Calls the micro-kernel for `rows` rows across every panel of the packed block. */
function panelSweep(p: Params, rows: number): string {
  return `
        (local.set $j0 (i32.const 0))
        (local.set $bp (i32.const 0))
        (block $sweep_done${rows} (loop $sweep${rows}
          (br_if $sweep_done${rows} (i32.ge_u (local.get $j0) (local.get $ncb)))
          (call $mk${rows}
            (i32.add (local.get $a) (i32.shl (i32.add (i32.mul (local.get $i) (local.get $k)) (local.get $pc)) (i32.const 2)))
            (local.get $lda) (local.get $bp) (local.get $kcb)
            (i32.add (local.get $c) (i32.shl
              (i32.add (i32.mul (local.get $i) (local.get $n)) (i32.add (local.get $jc) (local.get $j0)))
              (i32.const 2)))
            (local.get $ldc)
            (select (i32.const ${p.nr}) (i32.sub (local.get $ncb) (local.get $j0))
              (i32.ge_u (i32.sub (local.get $ncb) (local.get $j0)) (i32.const ${p.nr})))
            (i32.eqz (local.get $pc)))
          (local.set $j0 (i32.add (local.get $j0) (i32.const ${p.nr})))
          (local.set $bp (i32.add (local.get $bp) (i32.add
            (i32.mul (local.get $kcb) (i32.const ${p.nr * 4})) (i32.const ${PANEL_PAD}))))
          (br $sweep${rows})))`;
}

/**
 * `run`'s unpacked path for `rem` = `rows`: one row, or a call's whole rows, summed in C itself
 * (no other thread writes their cache lines); several rows of a column range another thread
 * shares, summed in private memory a strip at a time.
 */
function unpackedRows(rows: number, pages: number): string {
  // A call's rows of A, and B's and C's columns from column `col` on.
  const aRows =
    `(i32.add (local.get $a) (i32.mul (local.get $r0) (local.get $lda))) (local.get $lda)`;
  const bAt = (col: string) =>
    `(i32.add (local.get $b) (i32.shl (local.get ${col}) (i32.const 2)))`;
  const cAt = (col: string) =>
    `(i32.add (i32.add (local.get $c) (i32.mul (local.get $r0) (local.get $ldc)))
              (i32.shl (local.get ${col}) (i32.const 2)))`;
  const inC = `(call $direct${rows} ${aRows} ${bAt("$c0")} ${cAt("$c0")}
            (local.get $k) (i32.sub (local.get $c1) (local.get $c0)) (local.get $n))
          (return)`;
  if (rows === 1) return `(if (i32.eq (local.get $rem) (i32.const 1)) (then ${inC}))`;
  const strip = directStrip(rows, pages);
  return `(if (i32.eq (local.get $rem) (i32.const ${rows})) (then
        (if (i32.and (i32.eqz (local.get $c0)) (i32.eq (local.get $c1) (local.get $n)))
          (then ${inC}))
        (local.set $j0 (local.get $c0))
        (block $strips_done${rows} (loop $strips${rows}
          (br_if $strips_done${rows} (i32.ge_u (local.get $j0) (local.get $c1)))
          (local.set $ncb (select (i32.const ${strip}) (i32.sub (local.get $c1) (local.get $j0))
            (i32.ge_u (i32.sub (local.get $c1) (local.get $j0)) (i32.const ${strip}))))
          (call $directS${rows} ${aRows} ${bAt("$j0")} (i32.const 0)
            (local.get $k) (local.get $ncb) (local.get $n) ${cAt("$j0")} (local.get $ldc))
          (local.set $j0 (i32.add (local.get $j0) (local.get $ncb)))
          (br $strips${rows})))
        (return)))`;
}

function wat(variant: Variant): string {
  const p = params(variant);
  const tile = p.kc * p.nc * 4 + (p.nc / p.nr) * PANEL_PAD;
  const pages = Math.ceil((tile + p.mr * p.nr * 4) / 65536);
  const remainders = range(p.mr - 1).map((r) => r + 1);
  return `(module
  (import "env" "memory" (memory $m 1 65536 shared))
  (memory $s ${pages})
  ${range(p.mr).map((r) => microKernel(p, r + 1, tile)).join("\n")}
  ${pack(p)}
  ${remainders.map((r) => direct(p, r, false) + (r > 1 ? direct(p, r, true) : "")).join("\n")}
  (func (export "run") (param $a i32) (param $b i32) (param $c i32)
      (param $m i32) (param $k i32) (param $n i32) (param $r0 i32) (param $r1 i32)
      (param $c0 i32) (param $c1 i32)
    (local $lda i32) (local $ldc i32) (local $jc i32) (local $ncb i32) (local $pc i32)
    (local $kcb i32) (local $i i32) (local $j0 i32) (local $bp i32) (local $rem i32)
    (local.set $lda (i32.shl (local.get $k) (i32.const 2)))
    (local.set $ldc (i32.shl (local.get $n) (i32.const 2)))
    (local.set $rem (i32.sub (local.get $r1) (local.get $r0)))
    (if (i32.lt_u (local.get $rem) (i32.const ${p.mr}))
      (then
        ${remainders.map((r) => unpackedRows(r, pages)).join("\n")}
        (return)))
    (block $jc_done (loop $jc_loop
      (br_if $jc_done (i32.ge_u (local.get $jc) (local.get $n)))
      (local.set $ncb (select (i32.const ${p.nc}) (i32.sub (local.get $n) (local.get $jc))
        (i32.ge_u (i32.sub (local.get $n) (local.get $jc)) (i32.const ${p.nc}))))
      (local.set $pc (i32.const 0))
      (block $pc_done (loop $pc_loop
        (br_if $pc_done (i32.ge_u (local.get $pc) (local.get $k)))
        (local.set $kcb (select (i32.const ${p.kc}) (i32.sub (local.get $k) (local.get $pc))
          (i32.ge_u (i32.sub (local.get $k) (local.get $pc)) (i32.const ${p.kc}))))
        (call $pack
          (i32.add (local.get $b) (i32.shl (i32.add (i32.mul (local.get $pc) (local.get $n)) (local.get $jc)) (i32.const 2)))
          (local.get $ldc) (local.get $kcb) (local.get $ncb))
        (local.set $i (local.get $r0))
        (block $rows_done (loop $rows
          (br_if $rows_done (i32.gt_u (i32.add (local.get $i) (i32.const ${p.mr})) (local.get $r1)))
          ${panelSweep(p, p.mr)}
          (local.set $i (i32.add (local.get $i) (i32.const ${p.mr})))
          (br $rows)))
        (local.set $rem (i32.sub (local.get $r1) (local.get $i)))
        ${
    remainders.map((r) =>
      `(if (i32.eq (local.get $rem) (i32.const ${r})) (then ${panelSweep(p, r)}))`
    ).join("\n")
  }
        (local.set $pc (i32.add (local.get $pc) (local.get $kcb)))
        (br $pc_loop)))
      (local.set $jc (i32.add (local.get $jc) (local.get $ncb)))
      (br $jc_loop)))))`;
}

/**
 * Columns of C per part when a matmul has fewer rows than one micro-tile: a multiple of 4, so
 * every part's columns start on a vector, and narrow enough that two threads share a decode's
 * 768 columns evenly (in 256-column parts they took 512 and 256, and 1 × 3072 × 768 ran 0.41 ms
 * on wasm-mt against 0.35 on one thread; in 64-column parts 0.30, and 1 × 1536 × 6144 0.74
 * against 1.35).
 */
const DIRECT_COLUMNS = 64;

/**
 * {@linkcode matmulWasm}'s code path for fewer rows than one micro-tile: B streamed, not packed.
 */
const UNPACKED = 1;

/**
 * Its path for more columns than one packed block (`nc`): B is packed a block of columns at a
 * time, each row of B read in `nc`-wide pieces `n` floats apart, where up to `nc` columns it is
 * read whole. Where packing is most of the work the pieces cost: in one process on the 2-vCPU
 * AMD EPYC VM, 8 × 2048 × 512 ran 0.78 ms and 8 × 2048 × 640 1.47 (B 5.4 against 3.6 GB/s),
 * 8 × 2560 × 512 and 8 × 4096 × 320 0.96–0.97 and 8 × 1024 × 1280 1.52, all with 5.2 MB of B.
 * A path beside the packed one block's, on the far side from the unpacked one (−1: one gap from
 * the first, two from the second), since its speed is the first's but for the pieces.
 */
const COLUMN_BLOCKS = -1;

/** What a part is: `mr` rows of C, or with fewer rows, {@linkcode DIRECT_COLUMNS} columns. */
function blocks(shape: Shape, variant: Variant): { total: number; per: number } {
  const { m, n } = dims(shape);
  const { mr } = params(variant);
  return m < mr ? { total: n, per: DIRECT_COLUMNS } : { total: m, per: mr };
}

/**
 * The matmul WebAssembly implementation. `parts` are blocks of `mr` rows, so `wasm-mt` splits C
 * by rows, or with fewer rows than one block, blocks of {@linkcode DIRECT_COLUMNS} columns (a
 * decode's m = 1 would otherwise run on one thread); `run(a, b, c, m, k, n, rowStart, rowEnd,
 * colStart, colEnd)`, the columns read only below `mr` rows.
 *
 * @example
 * ```ts
 * import { matmulWasm } from "./wasm.ts";
 * const v = matmulWasm.variants[0]!;
 * console.log(matmulWasm.parts({ m: 10, k: 3, n: 3 }, v) > 0); // true
 * // Five rows run unpacked, six (one micro-tile of the first variant) packed, in one block of
 * // columns up to 512 and in several beyond.
 * console.log(matmulWasm.codePath!({ m: 5, k: 64, n: 64 }, v)); // 1
 * console.log(matmulWasm.codePath!({ m: 6, k: 64, n: 64 }, v)); // 0
 * console.log(matmulWasm.codePath!({ m: 6, k: 64, n: 640 }, v)); // -1
 * ```
 */
export const matmulWasm: WasmImpl = {
  variants: [
    { mr: 6, nr: 8, kc: 256, nc: 512, fma: true },
    { mr: 4, nr: 8, kc: 256, nc: 512, fma: true },
    { mr: 6, nr: 8, kc: 256, nc: 512, fma: false },
    { mr: 4, nr: 8, kc: 256, nc: 512, fma: false },
  ],

  wat,
  parts: (shape, variant) => {
    const { total, per } = blocks(shape, variant);
    return Math.ceil(total / per);
  },
  partLength: blocks,
  codePath: (shape, variant) => {
    const { m, n } = dims(shape);
    const { mr, nc } = params(variant);
    return m < mr ? UNPACKED : n > nc ? COLUMN_BLOCKS : 0;
  },
  packsPerCall: true,
  args: (shape, [a, b], c, start, end, variant) => {
    const { m, k, n } = dims(shape);
    const { mr } = params(variant);
    if (a === undefined || b === undefined) throw new RangeError("matmul needs two input pointers");
    return m < mr
      ? [a, b, c, m, k, n, 0, m, start * DIRECT_COLUMNS, Math.min(n, end * DIRECT_COLUMNS)]
      : [a, b, c, m, k, n, start * mr, Math.min(m, end * mr), 0, n];
  },
};
