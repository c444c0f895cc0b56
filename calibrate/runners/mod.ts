/**
 * Opens the runner of a backend, or says why that backend is unavailable here.
 *
 * @module
 */
import type { Backend } from "../../kernels/types.ts";
import type { Runner } from "../runner.ts";
import { openGpu } from "../device.ts";
import { createJsRunner } from "./js.ts";
import { createWasmRunner } from "./wasm.ts";
import { createWasmMtRunner } from "./wasm_mt.ts";
import { createWebGpuRunner } from "./webgpu.ts";

/**
 * Opens `backend`'s runner: a {@linkcode Runner}, or a sentence saying why it cannot run here
 * (e.g. no WebGPU adapter), so callers record `unsupported` instead of crashing.
 *
 * @param backend The backend.
 * @returns The runner or the reason.
 * @example
 * ```ts ignore
 * import { openRunner } from "./mod.ts";
 * const r = await openRunner("wasm");
 * if (typeof r !== "string") await r.close();
 * ```
 */
export async function openRunner(backend: Backend): Promise<Runner | string> {
  switch (backend) {
    case "js":
      return createJsRunner();
    case "wasm":
      return createWasmRunner();
    case "wasm-mt":
      return createWasmMtRunner();
    case "webgpu": {
      const gpu = await openGpu();
      return gpu ? createWebGpuRunner(gpu) : "No WebGPU adapter on this machine";
    }
  }
}
