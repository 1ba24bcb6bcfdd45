import { startKeysApi } from "../keys/runKeysApi.js";
import { cliHint, configHint } from "./banner.js";
import type { UpComponent } from "./component.js";

/** The key API and its web page, on keys.port (8080), with the store in the data directory unless DATABASE_URL says otherwise. */
export const keysComponent: UpComponent = {
  name: "key API",
  async start(context) {
    const keys = await startKeysApi({
      config: context.config,
      logger: context.logger,
      registry: context.registry,
      local: context.devnet !== undefined,
    });
    return {
      endpoints: [
        {
          label: "key API",
          url: `${keys.url}/v1`,
          note: `accounts: ${cliHint()} keys-api user add --email E -c ${configHint(context.configFile)}`,
        },
        { label: "key web page", url: `${keys.url}/` },
      ],
      stop: () => keys.stop(),
    };
  },
};
