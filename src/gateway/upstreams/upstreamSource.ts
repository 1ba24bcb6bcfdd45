/** A light node the gateway may send requests to. */
export interface Upstream {
  name: string;
  network: string;
  httpUrl: string;
  wsUrl?: string;
  /** In the routed set (Healthy). Unrouted upstreams are only used in panic mode, when none is routed. */
  routed: boolean;
}

/**
 * Where the gateway learns its upstreams: the process fleet in `lightfleet up`, a static list for `lightfleet gateway`,
 * EndpointSlices in a cluster. Level-based: `upstreams` returns the current set; `onChange` says when to read again.
 */
export interface UpstreamSource {
  upstreams(network: string): Upstream[];
  onChange(listener: (network: string) => void): () => void;
  close?(): Promise<void>;
}
