/**
 * One shared `WebAssembly.Memory` per runner and a bump allocator over it: every prepared kernel
 * takes one region, and the allocator starts over once no prepared kernel is alive.
 *
 * @module
 */
import { UnsupportedError } from "../runner.ts";

const PAGE_BYTES = 65536;

/** Pages of the shared memory at most (4 GiB, wasm32's limit); kernels import it with this maximum. */
export const MAX_PAGES = 65536;

/** Alignment of every region and operand: a cache line, so `v128` loads never split one needlessly. */
export const ALIGN = 64;

/**
 * Rounds `bytes` up to a multiple of {@linkcode ALIGN}.
 *
 * @param bytes A byte offset or length.
 * @returns The aligned value.
 * @example
 * ```ts
 * import { align } from "./_wasm_arena.ts";
 * console.log(align(65)); // 128
 * ```
 */
export function align(bytes: number): number {
  return Math.ceil(bytes / ALIGN) * ALIGN;
}

/**
 * A shared memory and its allocator.
 *
 * @example
 * ```ts
 * import { WasmArena } from "./_wasm_arena.ts";
 * const arena = new WasmArena();
 * const ptr = arena.alloc(1024);
 * console.log(ptr % 64); // 0
 * arena.release();
 * ```
 */
export class WasmArena {
  /** The memory every kernel instance of the runner imports as `env.memory`. */
  readonly memory: WebAssembly.Memory = new WebAssembly.Memory({
    initial: 1,
    maximum: MAX_PAGES,
    shared: true,
  });
  #top = ALIGN;
  #live = 0;

  /**
   * Reserves `bytes`, growing the memory when needed.
   *
   * @param bytes Size of the region.
   * @returns Its aligned address.
   * @throws {UnsupportedError} when the region does not fit in 4 GiB or the memory cannot grow.
   */
  alloc(bytes: number): number {
    if (this.#live === 0) this.#top = ALIGN;
    const ptr = align(this.#top);
    const end = ptr + bytes;
    if (end > MAX_PAGES * PAGE_BYTES) {
      throw new UnsupportedError(
        `Cannot fit ${end} bytes in a wasm32 memory (4 GiB at most): use a smaller shape`,
      );
    }
    const pages = Math.ceil(end / PAGE_BYTES) - this.memory.buffer.byteLength / PAGE_BYTES;
    if (pages > 0) {
      try {
        this.memory.grow(pages);
      } catch (error) {
        throw new UnsupportedError(`Cannot grow the wasm memory to ${end} bytes: ${error}`);
      }
    }
    this.#top = end;
    this.#live++;
    return ptr;
  }

  /** Gives back one region (the allocator reuses everything once all are given back). */
  release(): void {
    this.#live = Math.max(0, this.#live - 1);
  }
}
