import { DiscoveryV1Api, type KubeConfig, type V1EndpointSlice } from "@kubernetes/client-node";
import { ListWatch } from "../../../src/kubernetes/api/listWatch.js";
import { silentLogger } from "../../../src/log/logger.js";

/** One pod's endpoint as one version of a Service's EndpointSlices showed it. */
export interface EndpointSighting {
  pod: string;
  uid: string;
  address: string;
  ready: boolean;
  terminating: boolean;
}

/**
 * The endpoints of SLICES whose state differs from the one LAST holds for their pod (by UID), LAST updated to them:
 * only changes count, and a state may come back (a pod not ready before its first Ready, and again when unrouted).
 */
export function endpointChanges(last: Map<string, string>, slices: V1EndpointSlice[]): EndpointSighting[] {
  const changes: EndpointSighting[] = [];
  for (const endpoint of slices.flatMap((slice) => slice.endpoints ?? [])) {
    const sighting: EndpointSighting = {
      pod: endpoint.targetRef?.name ?? "",
      uid: endpoint.targetRef?.uid ?? "",
      address: endpoint.addresses[0] ?? "",
      // An absent condition means true for ready and false for terminating (discovery.k8s.io/v1).
      ready: endpoint.conditions?.ready !== false,
      terminating: endpoint.conditions?.terminating === true,
    };
    const state = JSON.stringify(sighting);
    if (last.get(sighting.uid) === state) continue;
    last.set(sighting.uid, state);
    changes.push(sighting);
  }
  return changes;
}

/**
 * Every state a Service's endpoints went through, as the API's EndpointSlices (written by kube-controller-manager)
 * showed them, kept by list + watch from start to stop. A test polling the slices can miss a state that lasts a
 * moment; this sees each version, so "the node was unrouted while its pod still ran" is a fact of the log, whatever
 * the machine's load.
 */
export class EndpointSliceHistory {
  private readonly seen: EndpointSighting[] = [];
  private readonly last = new Map<string, string>();
  private readonly slices: ListWatch<V1EndpointSlice>;

  constructor(kubeConfig: KubeConfig, namespace: string, service: string) {
    const api = kubeConfig.makeApiClient(DiscoveryV1Api);
    const labelSelector = `kubernetes.io/service-name=${service}`;
    this.slices = new ListWatch<V1EndpointSlice>({
      kubeConfig,
      path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
      list: () => api.listNamespacedEndpointSlice({ namespace, labelSelector }),
      labelSelector,
      what: "EndpointSlice",
      logger: silentLogger(),
      onChange: () => this.seen.push(...endpointChanges(this.last, this.slices.list())),
    });
    this.slices.start();
  }

  /** Each change of an endpoint's state, oldest first. */
  sightings(): EndpointSighting[] {
    return [...this.seen];
  }

  /** The pod UIDs whose endpoints are ready now, as the watch last saw the slices. */
  readyNow(): string[] {
    return this.slices
      .list()
      .flatMap((slice) => slice.endpoints ?? [])
      .filter((e) => e.conditions?.ready !== false)
      .map((e) => e.targetRef?.uid ?? "");
  }

  stop(): void {
    this.slices.stop();
  }
}
