import type { Worker } from "node:cluster";
import { AggregatorRegistry, Registry } from "prom-client";
import type { PrometheusContentType } from "prom-client";
import { isMetricsReply, isMetricsRequest } from "./messages.js";
import type { MetricsReply, MetricsRequest } from "./messages.js";

/** A worker that has not answered within this long fails the scrape (a partial sum would look like a drop). */
const TIMEOUT_MS = 3_000;

/** Metric kinds that only grow: a dead worker's last values stay in the sums. */
const CUMULATIVE = new Set(["counter", "histogram"]);

/**
 * The primary's `/metrics`: every serving worker's registry, merged by prom-client's aggregation (counters and most
 * gauges summed; a metric's `aggregator` says otherwise). Only workers that are serving are asked, so a replacement
 * still starting does not fail the scrape. The counters and histograms of a worker that died stay in the sums at the
 * values its last scrape gave, so a sum never goes down (which Prometheus' rate() and the autoscaler would read as a
 * reset and count again from zero).
 */
export class ClusterMetrics {
  readonly contentType: PrometheusContentType = Registry.PROMETHEUS_CONTENT_TYPE;
  private nextId = 0;
  private readonly pending = new Map<number, (reply: MetricsReply) => void>();
  /** Each worker's metrics at its last scrape. */
  private readonly last = new Map<number, unknown[]>();
  /** The cumulative metrics of workers that died (summed into one at the next scrape). */
  private retired: unknown[][] = [];

  constructor(private readonly workers: () => Worker[]) {}

  /** Feeds a worker's message; true when it was a metrics reply. */
  receive(message: unknown): boolean {
    if (!isMetricsReply(message)) return false;
    this.pending.get(message.id)?.(message);
    return true;
  }

  async metrics(): Promise<string> {
    const replies = await Promise.all(
      this.workers().map(async (worker) => {
        const metrics = await this.ask(worker);
        this.last.set(worker.id, metrics);
        return metrics;
      }),
    );
    if (this.retired.length > 1)
      this.retired = [await AggregatorRegistry.aggregate(this.retired).getMetricsAsJSON()];
    return AggregatorRegistry.aggregate<PrometheusContentType>([...replies, ...this.retired]).metrics();
  }

  /** A worker exited: its counters and histograms are kept at their last scraped values, its gauges dropped. */
  retire(workerId: number): void {
    const last = this.last.get(workerId);
    this.last.delete(workerId);
    if (last)
      this.retired.push(last.filter((metric) => CUMULATIVE.has((metric as { type?: string }).type ?? "")));
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
