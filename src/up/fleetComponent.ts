import { ProcessFleet } from "../fleet/process/processFleet.js";
import type { UpComponent } from "./component.js";
import { fleetServes } from "./fleetReadiness.js";

/** The light nodes of every network with a `nodes:` block, as child processes; attached to the devnet when there is one. */
export const fleetComponent: UpComponent = {
  name: "process fleet",
  async start(context) {
    const { config, devnet, logger } = context;
    const networks = config.networks.flatMap((n) =>
      n.nodes ? [{ name: n.name, chainId: n.chainId, nodes: n.nodes }] : [],
    );
    const fleet = new ProcessFleet({
      networks,
      dataDir: config.dataDir,
      logger,
      placeholders: devnet ? { genesisTimestamp: String(devnet.genesisTimestamp) } : {},
      // A geth devnet makes each member's data directory a node of its genesis and gives it an engine port.
      ...(devnet?.prepareMember ? { prepare: (member) => devnet.prepareMember!(member) } : {}),
      // A devnet replays each new incarnation to the head and then keeps it following, as a real light node syncs
      // from its reserved peers; it can also kill it (fault injection).
      // Heal of a killed node starts it again, through the controller (a restart of reason manual).
      onStarted: devnet
        ? (member) => devnet.attach({ ...member, restart: () => void fleet.requestRestart(member.name) })
        : undefined,
      onStopping: devnet
        ? (member) => {
            try {
              devnet.detach(member.name);
            } catch {
              // Never attached (it failed to start).
            }
          }
        : undefined,
    });
    context.fleet = fleet;
    await fleet.start();
    return {
      endpoints: networks.flatMap((n) =>
        fleet.members(n.name).map((m) => ({ label: m.name, url: m.httpUrl, note: "light node" })),
      ),
      // Ready once the fleet serves: a routed light node in every network (the controller routes Healthy ones).
      ready: () =>
        fleetServes(
          fleet,
          networks.map((n) => n.name),
        ),
      stop: () => fleet.stop(),
    };
  },
};
