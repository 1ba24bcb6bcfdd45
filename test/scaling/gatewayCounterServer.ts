import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Registry } from "prom-client";

/**
 * A stand-in for a gateway pod's admin port: serves `lightfleet_gateway_upstream_requests_total{network,upstream,outcome}` on
 * `/metrics` (written by prom-client, as the gateway's is) on 127.0.0.1 and an ephemeral port.
 */
export class GatewayCounterServer {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "lightfleet_gateway_upstream_requests_total",
    help: "JSON-RPC calls sent to nodes, by network, node and outcome",
    labelNames: ["network", "upstream", "outcome"],
    registers: [this.registry],
  });
  /** While set, /metrics answers with this HTTP status instead. */
  failWith: number | undefined;
  /** While set, /metrics answers 200 with this text instead. */
  body: string | undefined;
  private server: Server | undefined;
  private timer: NodeJS.Timeout | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      if (req.url !== "/metrics") return void res.writeHead(404).end();
      if (this.failWith) return void res.writeHead(this.failWith).end("failing on purpose");
      if (this.body !== undefined) return void res.writeHead(200).end(this.body);
      void this.registry.metrics().then((text) => {
        res.writeHead(200, { "content-type": this.registry.contentType }).end(text);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return this.metricsUrl;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  get metricsUrl(): string {
    return `http://127.0.0.1:${this.port}/metrics`;
  }

  serve(network: string, count: number, upstream = "light-0", outcome = "ok"): void {
    this.requests.inc({ network, upstream, outcome }, count);
  }

  /** Counts `perSecond` requests a second in steps of 100 ms until stopped (bounded by the caller's teardown). */
  steadyLoad(network: string, perSecond: number): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => this.serve(network, perSecond / 10), 100);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
