import type { Config } from "../config/schema.js";
import type { Endpoint } from "./component.js";

/** The banner's lines for a gateway at `url`: each network's RPC and WebSocket addresses. */
export function gatewayEndpoints(config: Config, url: string): Endpoint[] {
  const ws = url.replace(/^http/, "ws");
  return config.networks.flatMap((network) => {
    const path = network.gateway.path ?? `/${network.name}`;
    const isDefault = network.gateway.default || config.networks.length === 1;
    return [
      ...(isDefault
        ? [
            { label: `${network.name} RPC`, url: `${url}/` },
            { label: `${network.name} WebSocket`, url: `${ws}/ws` },
          ]
        : []),
      { label: `${network.name} RPC`, url: `${url}${path}` },
      { label: `${network.name} WebSocket`, url: `${ws}${path}/ws` },
    ];
  });
}
