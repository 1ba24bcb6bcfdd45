/**
 * One gateway replica of `lightfleet up` (`gateway.replicas` above 1), a child process of `up`: it serves the gateway
 * on the port it is told, over the upstreams `up` sends it, with its state in the shared Redis. It stops on SIGTERM,
 * and when `up` goes away (its IPC channel closes).
 */
import { startGateway } from "../../gateway/gateway.js";
import type { Gateway } from "../../gateway/gateway.js";
import { createLogger } from "../../log/logger.js";
import { createRegistry } from "../../metrics/registry.js";
import type { FromReplica, ToReplica } from "./replicaMessages.js";
import { STATUS_EVERY_MS } from "./replicaMessages.js";
import { SnapshotUpstreamSource } from "./snapshotSource.js";

const source = new SnapshotUpstreamSource();
let gateway: Gateway | undefined;
let stopping = false;

function tell(message: FromReplica): void {
  if (process.connected) process.send?.(message);
}

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await gateway?.stop().catch(() => undefined);
  }
  process.exit(code);
}

async function start(message: Extract<ToReplica, { kind: "start" }>): Promise<void> {
  const { config, host, port } = message;
  // JSON lines on stdout: `up` reads them and logs them as its own, under the replica's name.
  const logger = createLogger({ format: "json", level: config.log.level }, process.stdout);
  try {
    gateway = await startGateway({ config, source, logger, registry: createRegistry(), host, port });
  } catch (error) {
    tell({ kind: "failed", message: (error as Error).message });
    await stop(1);
    return;
  }
  tell({ kind: "listening", url: gateway.url });
  const networks = config.networks.map((n) => n.name);
  const report = () => {
    if (!gateway) return;
    const served = gateway;
    tell({
      kind: "status",
      heads: Object.fromEntries(networks.map((n) => [n, served.servedHead(n) ?? null])),
      totals: Object.fromEntries(served.requestTotals()),
    });
  };
  report();
  setInterval(report, STATUS_EVERY_MS).unref();
}

process.on("message", (message: ToReplica) => {
  if (message.kind === "upstreams") source.set(message.network, message.upstreams);
  else if (message.kind === "start") void start(message);
});
process.once("disconnect", () => void stop(0));
process.once("SIGTERM", () => void stop(0));
process.once("SIGINT", () => void stop(0));
