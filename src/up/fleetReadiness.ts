import type { Fleet } from "../fleet/fleet.js";

/**
 * `up` is ready when the fleet serves: every network with light nodes has at least one routed (Healthy) node. Until
 * then the gateway could only answer in panic mode, from nodes the controller has not found in sync.
 */
export function fleetServes(
  fleet: Pick<Fleet, "members">,
  networks: ReadonlyArray<string>,
): { ok: boolean; message?: string } {
  const unserved = networks.filter((network) => !fleet.members(network).some((m) => m.routed));
  return unserved.length === 0
    ? { ok: true }
    : { ok: false, message: `no routed light node yet for ${unserved.join(", ")}` };
}
