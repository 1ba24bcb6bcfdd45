import type { Config } from "./schema.js";
import type { ConfigProblem } from "./errors.js";

/**
 * Settings that are valid but may not work as meant, for `config check` to print beside "ok". Each names its path.
 * (Settings that cannot work at all are refused by the schema instead.)
 */
export function configWarnings(config: Config): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  config.networks.forEach((network, i) => {
    const { health } = network;
    // Peers without a WebSocket are polled once per probe interval, so their head can look still for that long.
    const polled = network.reservedPeers.filter((p) => p.ws === undefined).map((p) => p.name);
    if (polled.length > 0 && health.peerHaltAfter < 3 * health.probeInterval) {
      warnings.push({
        path: `networks[${i}].health.peerHaltAfter`,
        message: `is ${seconds(health.peerHaltAfter)}, under three probe intervals (${seconds(3 * health.probeInterval)}) while reservedPeers ${polled.join(", ")} has no ws URL and is polled every probeInterval: a halt may be reported between two polls`,
      });
    }
  });
  return warnings;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
