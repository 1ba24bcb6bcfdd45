import { DiscoveryV1Api } from "@kubernetes/client-node";
import type { KubeConfig, V1EndpointSlice } from "@kubernetes/client-node";
import { makeApiClient } from "../api/kubeClients.js";
import type { Logger } from "../../log/logger.js";
import type { KubeCacheMetrics } from "../../metrics/kubeCacheMetrics.js";
import { ListWatch } from "../api/listWatch.js";

/**
 * One ready endpoint of a Service. It has the shape of the gateway's `Upstream`, and EndpointSliceSource that of its
 * `UpstreamSource`, so the gateway takes them as they are while this adapter (a layer below) does not import it.
 */
export interface ServiceEndpoint {
  name: string;
  network: string;
  httpUrl: string;
  wsUrl?: string;
  routed: boolean;
}

/** One pool's Service whose EndpointSlices the gateway follows. */
export interface ServiceBinding {
  network: string;
  namespace: string;
  service: string;
  /** Port names in the slices for JSON-RPC over HTTP (default `http`, else the first port) and over WebSocket
   * (default `ws`; without one, WebSocket goes to the HTTP port, as nodes serving both on one port expect). */
  httpPortName?: string;
  wsPortName?: string;
}

/**
 * The ready endpoints of one Service's slices as upstreams, one per address: an endpoint the EndpointSlice controller
 * is moving between slices shows in both for a while. Ready is `conditions.ready` not false: the API defines an
 * absent value as unknown, to be taken as ready.
 */
export function upstreamsFromSlices(binding: ServiceBinding, slices: V1EndpointSlice[]): ServiceEndpoint[] {
  const upstreams = new Map<string, ServiceEndpoint>();
  for (const slice of slices) {
    const ports = slice.ports ?? [];
    const rpc = ports.find((p) => p.name === (binding.httpPortName ?? "http")) ?? ports[0];
    const ws = ports.find((p) => p.name === (binding.wsPortName ?? "ws")) ?? rpc;
    if (!rpc?.port) continue;
    for (const endpoint of slice.endpoints) {
      if (endpoint.conditions?.ready === false) continue;
      for (const address of endpoint.addresses) {
        const host = address.includes(":") ? `[${address}]` : address;
        const httpUrl = `http://${host}:${rpc.port}`;
        upstreams.set(httpUrl, {
          name: endpoint.targetRef?.name ?? address,
          network: binding.network,
          httpUrl,
          wsUrl: `ws://${host}:${ws?.port ?? rpc.port}`,
          routed: true,
        });
      }
    }
  }
  return [...upstreams.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export interface EndpointSliceSourceOptions {
  kubeConfig: KubeConfig;
  services: ServiceBinding[];
  logger: Logger;
  /** A watch silent this long (no event, no bookmark) is dropped and re-made. */
  silenceMs?: number;
  cacheMetrics?: KubeCacheMetrics;
}

/**
 * Gateway upstreams from each pool Service's EndpointSlices (discovery.k8s.io/v1), kept by list + watch: a 410 Gone
 * relists, a failed watch is re-made with backoff, a watch silent too long is restarted.
 */
export class EndpointSliceSource {
  private readonly watchers: Array<{ binding: ServiceBinding; slices: ListWatch<V1EndpointSlice> }>;
  private readonly listeners = new Set<(network: string) => void>();

  constructor(options: EndpointSliceSourceOptions) {
    const api = makeApiClient(options.kubeConfig, DiscoveryV1Api);
    this.watchers = options.services.map((binding) => {
      const labelSelector = `kubernetes.io/service-name=${binding.service}`;
      const slices = new ListWatch<V1EndpointSlice>({
        kubeConfig: options.kubeConfig,
        path: `/apis/discovery.k8s.io/v1/namespaces/${binding.namespace}/endpointslices`,
        list: () => api.listNamespacedEndpointSlice({ namespace: binding.namespace, labelSelector }),
        labelSelector,
        what: "EndpointSlice",
        logger: options.logger.child({ network: binding.network }),
        onChange: () => {
          for (const listener of this.listeners) listener(binding.network);
        },
        ...(options.silenceMs !== undefined ? { silenceMs: options.silenceMs } : {}),
        ...(options.cacheMetrics
          ? { metrics: { recorder: options.cacheMetrics, scope: binding.network } }
          : {}),
      });
      return { binding, slices };
    });
    for (const { slices } of this.watchers) slices.start();
  }

  upstreams(network: string): ServiceEndpoint[] {
    return this.watchers
      .filter((w) => w.binding.network === network)
      .flatMap((w) => upstreamsFromSlices(w.binding, w.slices.list()));
  }

  /** When every Service's slices were last known good; undefined until each has listed once. */
  oldestSync(): number | undefined {
    let oldest: number | undefined;
    for (const { slices } of this.watchers) {
      const synced = slices.lastSync();
      if (synced === undefined) return undefined;
      oldest = oldest === undefined ? synced : Math.min(oldest, synced);
    }
    return oldest;
  }

  onChange(listener: (network: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): Promise<void> {
    for (const { slices } of this.watchers) slices.stop();
    return Promise.resolve();
  }
}
