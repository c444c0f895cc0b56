/**
 * The `wasm-mt` worker: instantiates kernels on the shared memory when told to, then serves runs
 * announced through the control buffer (see `_wasm_control.ts`) without any message per run: on
 * each new generation it claims chunks of the run until none is left, then waits again.
 *
 * Waiting polls the generation briefly, then uses `Atomics.waitAsync`, so the worker's event loop
 * stays free for the next {@linkcode LoadMessage} and for termination.
 *
 * @module
 */
import {
  ChunkTable,
  claimChunk,
  GEN,
  type InitMessage,
  type LoadedMessage,
  type LoadMessage,
  PENDING,
  SLOT,
  SPIN_MS,
  spinWhile,
  WorkerSlot,
} from "./_wasm_control.ts";

type Run = (...args: number[]) => unknown;

const kernels = new Map<number, Run>();
let memory: WebAssembly.Memory | null = null;

self.onmessage = async (event: MessageEvent<InitMessage | LoadMessage>) => {
  const message = event.data;
  if (message.kind === "init") {
    memory = message.memory;
    serve(message);
    return;
  }
  const reply: LoadedMessage = await load(message);
  self.postMessage(reply);
};

async function load({ slot, module }: LoadMessage): Promise<LoadedMessage> {
  if (!memory) return { kind: "loaded", slot, error: "The worker got a kernel before its memory" };
  try {
    const instance = await WebAssembly.instantiate(module, { env: { memory } });
    const run = instance.exports.run;
    if (typeof run !== "function") {
      return { kind: "loaded", slot, error: "The module exports no run()" };
    }
    kernels.set(slot, run as Run);
    return { kind: "loaded", slot };
  } catch (error) {
    return { kind: "loaded", slot, error: String(error) };
  }
}

async function serve({ control, index, workers, chunks, gen }: InitMessage): Promise<void> {
  const header = new Int32Array(control);
  const table = new ChunkTable(control, workers, chunks);
  const errors = new WorkerSlot(control, index);
  let seen = gen;
  for (;;) {
    if (!spinWhile(header, GEN, seen, SPIN_MS)) {
      const wait = Atomics.waitAsync(header, GEN, seen);
      if (wait.async) await wait.value;
    }
    // A wake without a new generation (spurious, or a timeout) has nothing to claim.
    const now = Atomics.load(header, GEN);
    if (now === seen) continue;
    seen = now;
    // Claims carry the generation woken for: if that run already ended, nothing is claimed,
    // even when the caller has opened the next one meanwhile.
    for (let chunk: number; (chunk = claimChunk(control, now)) >= 0;) {
      try {
        const args = table.args(chunk);
        const run = kernels.get(Atomics.load(header, SLOT));
        if (!run) throw new Error(`Worker ${index} has no kernel in slot ${header[SLOT]}`);
        if (args) run(...args);
      } catch (error) {
        errors.setError(String(error));
      }
      if (Atomics.sub(header, PENDING, 1) === 1) Atomics.notify(header, PENDING);
    }
  }
}
