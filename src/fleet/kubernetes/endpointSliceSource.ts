import { DiscoveryV1Api, Watch } from "@kubernetes/client-node";
import type { KubeConfig, V1EndpointSlice } from "@kubernetes/client-node";
import type { Upstream, UpstreamSource } from "../../gateway/upstreams/upstreamSource.js";
import type { Logger } from "../../log/logger.js";
import { backoffDelay } from "../../rpc/backoff.js";

/** One pool's Service whose EndpointSlices the gateway follows. */
export interface ServiceBinding {
  network: string;
  namespace: string;
  service: string;
  /** Port names in the slices for JSON-RPC over HTTP and over WebSocket. */
  rpcPortName?: string;
  wsPortName?: string;
}

/** The ready endpoints of one Service's slices as upstreams: only ready endpoints, one per address. */
export function upstreamsFromSlices(binding: ServiceBinding, slices: V1EndpointSlice[]): Upstream[] {
  const upstreams: Upstream[] = [];
  for (const slice of slices) {
    const ports = slice.ports ?? [];
    const rpc = ports.find((p) => p.name === (binding.rpcPortName ?? "rpc")) ?? ports[0];
    const ws = ports.find((p) => p.name === (binding.wsPortName ?? "ws"));
    if (!rpc?.port) continue;
    for (const endpoint of slice.endpoints) {
      if (endpoint.conditions?.ready !== true) continue;
      for (const address of endpoint.addresses) {
        const host = address.includes(":") ? `[${address}]` : address;
        upstreams.push({
          name: endpoint.targetRef?.name ?? address,
          network: binding.network,
          httpUrl: `http://${host}:${rpc.port}`,
          ...(ws?.port ? { wsUrl: `ws://${host}:${ws.port}` } : {}),
          routed: true,
        });
      }
    }
  }
  return upstreams.sort((a, b) => a.name.localeCompare(b.name));
}

export interface EndpointSliceSourceOptions {
  kubeConfig: KubeConfig;
  services: ServiceBinding[];
  logger: Logger;
  /** A watch silent this long (no event, no bookmark) is dropped and re-made. */
  silenceMs?: number;
}

/**
 * Gateway upstreams from each pool Service's EndpointSlices (discovery.k8s.io/v1), kept by list + watch: a 410 Gone
 * relists, a failed watch is re-made with backoff, a watch silent too long is restarted.
 */
export class EndpointSliceSource implements UpstreamSource {
  private readonly watchers: SliceWatcher[];
  private readonly listeners = new Set<(network: string) => void>();

  constructor(options: EndpointSliceSourceOptions) {
    const api = options.kubeConfig.makeApiClient(DiscoveryV1Api);
    this.watchers = options.services.map(
      (binding) =>
        new SliceWatcher(options, api, binding, () => {
          for (const listener of this.listeners) listener(binding.network);
        }),
    );
    for (const watcher of this.watchers) watcher.start();
  }

  upstreams(network: string): Upstream[] {
    return this.watchers
      .filter((w) => w.binding.network === network)
      .flatMap((w) => upstreamsFromSlices(w.binding, w.list()));
  }

  onChange(listener: (network: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): Promise<void> {
    for (const watcher of this.watchers) watcher.stop();
    return Promise.resolve();
  }
}

class SliceWatcher {
  private readonly slices = new Map<string, V1EndpointSlice>();
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private attempt = 0;
  private stopped = false;
  private lastEventAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly selector: string;

  constructor(
    private readonly options: EndpointSliceSourceOptions,
    private readonly api: DiscoveryV1Api,
    readonly binding: ServiceBinding,
    private readonly changed: () => void,
  ) {
    this.selector = `kubernetes.io/service-name=${binding.service}`;
  }

  list(): V1EndpointSlice[] {
    return [...this.slices.values()];
  }

  start(): void {
    void this.relist();
    const silenceMs = this.options.silenceMs ?? 5 * 60_000;
    this.watchdog = setInterval(
      () => {
        if (this.abort && Date.now() - this.lastEventAt > silenceMs) {
          this.options.logger.warn(
            { selector: this.selector },
            "EndpointSlice watch silent too long: restarting it",
          );
          this.abort.abort();
        }
      },
      Math.min(silenceMs, 30_000),
    );
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdog);
    this.abort?.abort();
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    try {
      const list = await this.api.listNamespacedEndpointSlice({
        namespace: this.binding.namespace,
        labelSelector: this.selector,
      });
      this.slices.clear();
      for (const slice of list.items) if (slice.metadata?.name) this.slices.set(slice.metadata.name, slice);
      this.resourceVersion = list.metadata?.resourceVersion;
      this.attempt = 0;
      this.changed();
      await this.watch();
    } catch (error) {
      this.retry("list failed", error, () => void this.relist());
    }
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    this.lastEventAt = Date.now();
    let gone = false;
    this.abort = await new Watch(this.options.kubeConfig).watch(
      `/apis/discovery.k8s.io/v1/namespaces/${this.binding.namespace}/endpointslices`,
      { labelSelector: this.selector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
      (phase: string, object: V1EndpointSlice & { code?: number }) => {
        this.lastEventAt = Date.now();
        if (phase === "ERROR") {
          gone = object.code === 410;
          return;
        }
        if (object.metadata?.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
        const name = object.metadata?.name;
        if (phase === "BOOKMARK" || !name) return;
        if (phase === "DELETED") this.slices.delete(name);
        else this.slices.set(name, object);
        this.changed();
      },
      (error: unknown) => {
        this.abort = undefined;
        if (this.stopped) return;
        if (gone || (error as { statusCode?: number } | null)?.statusCode === 410) void this.relist();
        else if (error) this.retry("watch failed", error, () => void this.watch());
        else void this.watch();
      },
    );
  }

  private retry(what: string, error: unknown, again: () => void): void {
    if (this.stopped) return;
    const delay = backoffDelay(this.attempt++, 500, 30_000);
    this.options.logger.warn(
      { err: String(error), selector: this.selector, retryInMs: delay },
      `EndpointSlice ${what}`,
    );
    this.retryTimer = setTimeout(again, delay);
  }
}
