import { createServer, connect, type Server, type Socket } from "node:net";
import { CoreV1Api, DiscoveryV1Api, type KubeConfig, type V1Service } from "@kubernetes/client-node";

/**
 * The stand-ins for kube-proxy and cluster DNS, for pods that call a Service by name (the chart's `helm test` pods):
 * - each Service's ClusterIP is an address on the host, and each of its TCP ports listens there; a connection goes to
 *   a ready endpoint of the Service's EndpointSlices, read from the API at connect time and matched by port name, as
 *   kube-proxy routes it. With no ready endpoint the connection is reset (kube-proxy rejects it).
 * - `hosts(namespace)` gives the names cluster DNS answers for a pod of that namespace (`<svc>`, `<svc>.<ns>`,
 *   `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`) with each Service's ClusterIP.
 * Services are taken up when `sync` runs (before such a pod starts); a Service made after that is unknown to it.
 */
export interface ServiceProxy {
  /** Takes up every Service with a ClusterIP not served yet; returns the DNS names a pod of NAMESPACE resolves. */
  sync(namespace: string): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export const CLUSTER_DOMAIN = "cluster.local";

export function startServiceProxy(options: {
  kubeConfig: KubeConfig;
  /** Makes the ClusterIP an address of this host, so a server can listen on it. */
  addAddress(address: string): Promise<void>;
  log?: (line: string) => void;
}): ServiceProxy {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const discovery = options.kubeConfig.makeApiClient(DiscoveryV1Api);
  const log = options.log ?? (() => undefined);
  const servers = new Map<string, Server>();
  const addresses = new Set<string>();
  const sockets = new Set<Socket>();
  let turn = 0;

  /** A ready endpoint for the Service's port PORTNAME, in turn among the ready ones, or undefined. */
  const endpointFor = async (namespace: string, service: string, portName: string) => {
    const slices = await discovery.listNamespacedEndpointSlice({
      namespace,
      labelSelector: `kubernetes.io/service-name=${service}`,
    });
    const ready = slices.items.flatMap((slice) => {
      const port = slice.ports?.find((p) => (p.name ?? "") === portName)?.port;
      if (port === undefined) return [];
      return (slice.endpoints ?? [])
        .filter((e) => e.conditions?.ready !== false) // unset counts as ready, as kube-proxy reads it
        .map((e) => ({ host: e.addresses[0]!, port }));
    });
    return ready.length === 0 ? undefined : ready[turn++ % ready.length];
  };

  const serve = async (service: V1Service) => {
    const namespace = service.metadata!.namespace!;
    const name = service.metadata!.name!;
    const clusterIp = service.spec!.clusterIP!;
    for (const port of service.spec!.ports ?? []) {
      if ((port.protocol ?? "TCP") !== "TCP") continue;
      const key = `${clusterIp}:${port.port}`;
      if (servers.has(key)) continue;
      if (!addresses.has(clusterIp)) {
        await options.addAddress(clusterIp);
        addresses.add(clusterIp);
      }
      const server = createServer((client) => {
        sockets.add(client);
        client.once("close", () => sockets.delete(client));
        client.on("error", () => undefined);
        client.pause();
        endpointFor(namespace, name, port.name ?? "").then(
          (endpoint) => {
            if (!endpoint) {
              log(`service proxy: ${namespace}/${name}:${port.port} has no ready endpoint`);
              resetOnceSpoken(client);
              return;
            }
            const upstream = connect(endpoint.port, endpoint.host);
            sockets.add(upstream);
            upstream.once("close", () => sockets.delete(upstream));
            upstream.on("error", () => client.resetAndDestroy());
            client.on("error", () => upstream.destroy());
            client.pipe(upstream).pipe(client);
            client.resume();
          },
          (error: Error) => {
            log(`service proxy: ${namespace}/${name}: ${error.message}`);
            client.resetAndDestroy();
          },
        );
      });
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port.port, clusterIp, () => resolve());
      });
      servers.set(key, server);
    }
  };

  /**
   * kube-proxy refuses a connection to a Service with no ready endpoint; a proxy that has already accepted it can
   * only reset it. A reset between connect and the request's first bytes can leave Node 20's fetch waiting forever
   * (the process exits 13 without a word), which no refused connection does; so the reset waits for the client to
   * speak, or at most a second.
   */
  const resetOnceSpoken = (client: Socket) => {
    const reset = () => {
      clearTimeout(timer);
      client.resetAndDestroy();
    };
    const timer = setTimeout(reset, 1_000);
    client.once("readable", reset);
    client.once("close", () => clearTimeout(timer));
  };

  return {
    async sync(namespace) {
      const services = (await core.listServiceForAllNamespaces()).items.filter(
        (s) => s.spec?.clusterIP && s.spec.clusterIP !== "None",
      );
      const hosts: Record<string, string> = {};
      for (const service of services) {
        // The `kubernetes` Service has no endpoints here (the API server is on loopback): nothing to proxy.
        if (service.metadata!.namespace === "default" && service.metadata!.name === "kubernetes") continue;
        await serve(service);
        const name = service.metadata!.name!;
        const ns = service.metadata!.namespace!;
        const ip = service.spec!.clusterIP!;
        for (const host of [`${name}.${ns}`, `${name}.${ns}.svc`, `${name}.${ns}.svc.${CLUSTER_DOMAIN}`])
          hosts[host] = ip;
        if (ns === namespace) hosts[name] = ip;
      }
      return hosts;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(
        [...servers.values()].map((server) => new Promise((resolve) => server.close(resolve))),
      );
      servers.clear();
    },
  };
}

/**
 * A module for `node --import` that answers DNS lookups of HOSTS (cluster DNS's names for Services) and passes any
 * other name to the system resolver, as a pod's resolv.conf would send it on.
 */
export function clusterDnsModule(hosts: Record<string, string>): string {
  const source = `
import dns from "node:dns";
const hosts = new Map(Object.entries(${JSON.stringify(hosts)}));
const lookup = dns.lookup;
dns.lookup = function (hostname, options, callback) {
  if (typeof options === "function") [callback, options] = [options, {}];
  if (typeof options === "number") options = { family: options };
  const address = typeof hostname === "string" ? hosts.get(hostname.toLowerCase().replace(/\\.$/, "")) : undefined;
  if (address === undefined || options?.family === 6) return lookup.call(this, hostname, options, callback);
  if (options?.all) process.nextTick(callback, null, [{ address, family: 4 }]);
  else process.nextTick(callback, null, address, 4);
};
`;
  return `data:text/javascript,${encodeURIComponent(source)}`;
}
