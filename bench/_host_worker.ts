/**
 * A worker that times the host's `throughput` reference on request, so the noise bench can time
 * it on every core at once (`_all_cores.ts`). Messages in: anything; out: the median ms.
 *
 * @module
 */
import { timeHostReference } from "../calibrate/host_reference.ts";

self.onmessage = () => {
  self.postMessage(timeHostReference("throughput"));
};
