/**
 * Private: the device-resident operand copies of one case, shared by every variant prepared on the
 * same inputs. A device-resident run moving 4 MiB or more rotates through copies spanning 256 MiB
 * (`core/operand_rotation.ts`); the variants a calibration times side by side at one shape read the
 * same operands (only their outputs differ), so one set of copies serves them all. Before, each
 * variant held its own: four gemv variants of 4096 × 1024 were a gibibyte of device memory at once,
 * host memory on a software adapter and a real limit on a GPU with a few gigabytes.
 *
 * ```ts ignore
 * import { SharedCopies } from "./_gpu_operands.ts";
 * const shared = new SharedCopies(device);
 * const lease = shared.acquire(inputs, 16, (resources) => makeCopies(resources));
 * if (lease.fresh) upload(lease.sets);
 * lease.release(); // the copies go with the last lease
 * ```
 *
 * @module
 */
import type { OpInputs } from "../../kernels/types.ts";
import { GpuResources } from "./gpu.ts";

/**
 * A case's hold on its operand copies.
 *
 * @example
 * ```ts
 * import type { OperandLease } from "./_gpu_operands.ts";
 * const own: OperandLease = { sets: [], fresh: true, release: () => {} };
 * ```
 */
export interface OperandLease {
  /** One set of operand buffers per rotated copy. */
  readonly sets: readonly (readonly GPUBuffer[])[];
  /** Whether the copies were made for this lease and still need their data uploaded. */
  readonly fresh: boolean;
  /** Gives the hold up; the copies are destroyed with the last one. Safe to call twice. */
  release(): void;
}

interface Shared {
  readonly resources: GpuResources;
  readonly sets: readonly (readonly GPUBuffer[])[];
  holders: number;
}

/**
 * The operand copies of a device's cases, one set per inputs, while some case holds them.
 *
 * @example
 * ```ts ignore
 * import { SharedCopies } from "./_gpu_operands.ts";
 * const shared = new SharedCopies(device);
 * const a = shared.acquire(inputs, 2, (r) => [0, 1].map(() => [r.buffer(64, GPUBufferUsage.STORAGE)]));
 * const b = shared.acquire(inputs, 2, () => []);
 * console.log(a.fresh, b.fresh, a.sets === b.sets); // true false true
 * ```
 */
export class SharedCopies {
  readonly #byInputs = new WeakMap<OpInputs, Shared>();

  /** @param device The device the copies live on. */
  constructor(readonly device: GPUDevice) {}

  /**
   * The copies of `inputs`, made by `create` unless a live lease holds as many already.
   * Synchronous, so a caller's error scope around it sees the allocation.
   *
   * @param inputs The case's inputs (the key: variants prepared on the same object share).
   * @param copies How many operand sets the case rotates through.
   * @param create Makes the sets in the resources given.
   * @returns The lease.
   */
  acquire(
    inputs: OpInputs,
    copies: number,
    create: (resources: GpuResources) => (readonly GPUBuffer[])[],
  ): OperandLease {
    const held = this.#byInputs.get(inputs);
    const fresh = held === undefined || held.sets.length !== copies;
    let shared = held;
    if (fresh) {
      const resources = new GpuResources(this.device);
      shared = { resources, sets: create(resources), holders: 0 };
      this.#byInputs.set(inputs, shared);
    }
    const entry = shared!;
    entry.holders++;
    let released = false;
    return {
      sets: entry.sets,
      fresh,
      release: () => {
        if (released) return;
        released = true;
        if (--entry.holders > 0) return;
        entry.resources.destroy();
        if (this.#byInputs.get(inputs) === entry) this.#byInputs.delete(inputs);
      },
    };
  }
}
