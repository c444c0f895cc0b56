/**
 * GPU test scaffolding: a test that opens its own WebGPU device, destroys it after, and skips
 * itself visibly where there is no adapter.
 *
 * @module
 */
import { openGpu } from "../calibrate/device.ts";
import type { GpuHandle } from "../calibrate/device.ts";

const probe = await openGpu({ onUnavailable: () => {} });
/** Whether this machine has a WebGPU adapter. */
export const hasAdapter: boolean = probe !== null;
probe?.device.destroy();

/**
 * Registers a test that gets a fresh device (destroyed afterwards), ignored without an adapter.
 *
 * @param name The test's name, a sentence.
 * @param fn The test body.
 * @example
 * ```ts ignore
 * import { gpuTest } from "./_gpu.ts";
 * gpuTest("the device has limits", (gpu) => {
 *   if (gpu.device.limits.maxBufferSize <= 0) throw new Error("no limits");
 * });
 * ```
 */
export function gpuTest(name: string, fn: (gpu: GpuHandle) => Promise<void> | void): void {
  Deno.test({
    name,
    ignore: !hasAdapter,
    fn: async () => {
      const gpu = (await openGpu({ onUnavailable: () => {} }))!;
      try {
        await fn(gpu);
      } finally {
        gpu.device.destroy();
      }
    },
  });
}
