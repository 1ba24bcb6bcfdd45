import { devnetAdminRouter } from "../devnet/adminRoutes.js";
import { startDevnet } from "../devnet/devnet.js";
import { resolveDevnetOptions } from "../devnet/devnetOptions.js";
import type { UpComponent } from "./component.js";

/**
 * The local anvil devnet, when the config has a `devnet:` section: full nodes (the reserved peers) and the block driver
 * that the fleet's light nodes are attached to. Its fault-injection routes are served on the admin port.
 */
export const devnetComponent: UpComponent = {
  name: "devnet",
  async start(context) {
    const { config, logger, admin } = context;
    if (!config.devnet) return undefined;
    const options = resolveDevnetOptions(config, {});
    // The fleet runs the light nodes; the devnet only runs the full nodes.
    const networks = options.networks.map((n) => ({ ...n, lightNodes: 0 }));
    const devnet = await startDevnet({ ...options, networks, logger: logger.child({ component: "devnet" }) });
    context.devnet = devnet;
    // The fleet starts after the devnet: looked up when a heal needs it.
    admin.addRoutes(
      devnetAdminRouter(devnet, {
        restartUndriven: (node) => context.fleet?.requestRestart(node) !== undefined,
      }),
    );
    const every =
      options.blockTimeMs > 0 ? `a block every ${options.blockTimeMs} ms` : "blocks on POST /devnet/mine";
    return {
      endpoints: devnet
        .nodes()
        .map((node) => ({ label: node.name, url: node.httpUrl, note: `full node, ${every}` })),
      stop: () => devnet.stop(),
    };
  },
};
