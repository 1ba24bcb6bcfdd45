import { randomBytes } from "node:crypto";
import { EventsV1Api, V1MicroTime } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { makeApiClient } from "../api/kubeClients.js";
import type { Decision } from "../../health/types.js";
import type { Logger } from "../../log/logger.js";

export interface EventTarget {
  kind: "Pod" | "LightNodePool";
  apiVersion: string;
  namespace: string;
  name: string;
  uid?: string;
}

export interface KubeEvent {
  target: EventTarget;
  type: "Normal" | "Warning";
  reason: string;
  action: string;
  note: string;
}

/** The Events worth telling an SRE about in one round: state transitions and restarts. */
export function eventsOfRound(
  decisions: readonly Decision[],
  pod: (name: string) => EventTarget,
): KubeEvent[] {
  const events: KubeEvent[] = [];
  for (const d of decisions) {
    if (d.kind === "transition" && d.from !== undefined)
      events.push({
        target: pod(d.node),
        type: d.to === "Healthy" || d.to === "Starting" ? "Normal" : "Warning",
        reason: d.to,
        action: "Probe",
        note: `${d.from} -> ${d.to}: ${d.message}`.slice(0, 1024),
      });
    if (d.kind === "restart")
      events.push({
        target: pod(d.node),
        type: "Warning",
        reason: "Restart",
        action: "Evict",
        note: `restarting the node (${d.reason})`,
      });
  }
  return events;
}

/**
 * Writes events.k8s.io/v1 Events, at most one per object and reason per `minIntervalMs`, so a flapping node cannot
 * flood the API server (the rest are counted in the log).
 */
export class EventRecorder {
  private readonly api: EventsV1Api;
  private readonly lastSent = new Map<string, number>();
  private readonly clock: () => number;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: {
      identity: string;
      logger: Logger;
      clock?: () => number;
      minIntervalMs?: number;
    },
  ) {
    this.api = makeApiClient(kubeConfig, EventsV1Api);
    this.clock = options.clock ?? Date.now;
  }

  async record(event: KubeEvent): Promise<void> {
    const now = this.clock();
    const key = `${event.target.namespace}/${event.target.kind}/${event.target.name}/${event.reason}`;
    const last = this.lastSent.get(key);
    if (last !== undefined && now - last < (this.options.minIntervalMs ?? 60_000)) return;
    this.lastSent.set(key, now);
    if (this.lastSent.size > 10_000) this.lastSent.delete(this.lastSent.keys().next().value!);
    const { target } = event;
    try {
      await this.api.createNamespacedEvent({
        namespace: target.namespace,
        body: {
          apiVersion: "events.k8s.io/v1",
          kind: "Event",
          metadata: { name: `${target.name}.${randomBytes(8).toString("hex")}`, namespace: target.namespace },
          eventTime: new V1MicroTime(now),
          reportingController: "lightfleet.io/controller",
          reportingInstance: this.options.identity,
          action: event.action,
          reason: event.reason,
          type: event.type,
          note: event.note,
          regarding: {
            kind: target.kind,
            apiVersion: target.apiVersion,
            namespace: target.namespace,
            name: target.name,
            ...(target.uid ? { uid: target.uid } : {}),
          },
        },
      });
    } catch (error) {
      this.options.logger.debug({ err: String(error), reason: event.reason }, "could not record an Event");
    }
  }
}
