import type { HealthCheck } from "../admin/adminServer.js";
import type { Logger } from "../log/logger.js";
import { untilSignal } from "./gatewayProcess.js";

/**
 * The gateway's shutdown, as ingress-nginx drains: on SIGTERM /readyz fails at once while everything is still
 * served for `delayMs` (the time Kubernetes takes to take the pod out of every Service, EndpointSlice watcher and
 * ingress), then `stop` closes WebSockets with 1001 and drains what is in flight. A second signal skips the delay.
 */
export class GracefulShutdown {
  private shuttingDown = false;

  constructor(
    private readonly delayMs: number,
    private readonly logger: Logger,
  ) {}

  /** A readiness check that fails from the first signal on. */
  readonly readiness: HealthCheck = {
    name: "shutdown",
    check: () => (this.shuttingDown ? { ok: false, message: "shutting down" } : { ok: true }),
  };

  /** Resolves on SIGINT or SIGTERM, after the delay (during which `drain` has been called) has passed. */
  async untilStopping(drain: () => void = () => {}): Promise<void> {
    await untilSignal();
    this.shuttingDown = true;
    drain();
    if (this.delayMs <= 0) return;
    this.logger.info(
      { delayMs: this.delayMs },
      "gateway shutting down: /readyz fails, serving on until the endpoint removal has spread",
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise((resolve) => (timer = setTimeout(resolve, this.delayMs))),
      untilSignal(),
    ]);
    clearTimeout(timer);
  }
}
