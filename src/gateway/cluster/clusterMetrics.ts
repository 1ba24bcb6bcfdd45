import type { Worker } from "node:cluster";
import { AggregatorRegistry, Registry } from "prom-client";
import type { PrometheusContentType } from "prom-client";
import { isMetricsReply, isMetricsRequest } from "./messages.js";
import type { MetricsReply, MetricsRequest } from "./messages.js";

/** A worker that has not answered within this long fails the scrape (a partial sum would look like a drop). */
const TIMEOUT_MS = 3_000;

/**
 * The primary's `/metrics`: every serving worker's registry, merged by prom-client's aggregation (counters and most
 * gauges summed; a metric's `aggregator` says otherwise). Only workers that are serving are asked, so a replacement
 * still starting does not fail the scrape.
 */
export class ClusterMetrics {
  readonly contentType: PrometheusContentType = Registry.PROMETHEUS_CONTENT_TYPE;
  private nextId = 0;
  private readonly pending = new Map<number, (reply: MetricsReply) => void>();

  constructor(private readonly workers: () => Worker[]) {}

  /** Feeds a worker's message; true when it was a metrics reply. */
  receive(message: unknown): boolean {
    if (!isMetricsReply(message)) return false;
    this.pending.get(message.id)?.(message);
    return true;
  }

  async metrics(): Promise<string> {
    const replies = await Promise.all(this.workers().map((worker) => this.ask(worker)));
    return AggregatorRegistry.aggregate<PrometheusContentType>(replies).metrics();
  }

  private ask(worker: Worker): Promise<unknown[]> {
    const id = this.nextId++;
    return new Promise<unknown[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`gateway worker ${worker.process.pid} did not send its metrics`));
      }, TIMEOUT_MS);
      this.pending.set(id, (reply) => {
        clearTimeout(timer);
        this.pending.delete(id);
        if (reply.metrics) resolve(reply.metrics);
        else reject(new Error(`gateway worker ${worker.process.pid}: ${reply.error ?? "no metrics"}`));
      });
      worker.send({ kind: "lightfleet-gateway-metrics", id } satisfies MetricsRequest);
    });
  }
}

/** In a worker: answers the primary's metrics requests from `registry`. */
export function answerMetricsRequests(registry: Registry): void {
  process.on("message", (message: unknown) => {
    if (!isMetricsRequest(message)) return;
    const send = (reply: MetricsReply) => process.connected && process.send?.(reply);
    registry.getMetricsAsJSON().then(
      (metrics) => send({ kind: "lightfleet-gateway-metrics-reply", id: message.id, metrics }),
      (error: unknown) =>
        send({ kind: "lightfleet-gateway-metrics-reply", id: message.id, error: String(error) }),
    );
  });
}
