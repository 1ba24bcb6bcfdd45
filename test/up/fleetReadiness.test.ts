import { describe, expect, it } from "vitest";
import type { FleetMember } from "../../src/fleet/fleet.js";
import { fleetServes } from "../../src/up/fleetReadiness.js";

const member = (name: string, routed: boolean) => ({ name, routed }) as FleetMember;

describe("readiness of up's process fleet", () => {
  it("is not ready until every network has a routed light node", () => {
    const members: Record<string, FleetMember[]> = {
      alpha: [member("alpha-light-0", false), member("alpha-light-1", false)],
      beta: [member("beta-light-0", true)],
    };
    const fleet = { members: (network: string) => members[network] ?? [] };
    expect(fleetServes(fleet, ["alpha", "beta"])).toEqual({
      ok: false,
      message: "no routed light node yet for alpha",
    });
    members.alpha![1] = member("alpha-light-1", true);
    expect(fleetServes(fleet, ["alpha", "beta"])).toEqual({ ok: true });
  });
});
