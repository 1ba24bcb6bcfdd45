import { Gauge } from "prom-client";
import type { Registry } from "prom-client";

export interface LeaderMetrics {
  leader: Gauge;
}

/** 1 on the controller replica that holds the Lease, 0 on the others (alert: no leader in a namespace). */
export function createLeaderMetrics(registry: Registry): LeaderMetrics {
  return {
    leader: new Gauge({
      name: "lightfleet_controller_leader",
      help: "1 while this controller replica leads (holds the Lease and acts), 0 otherwise.",
      registers: [registry],
    }),
  };
}
