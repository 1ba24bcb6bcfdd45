import { createHash } from "node:crypto";
import http from "node:http";
import https from "node:https";
import {
  createConfiguration,
  ServerConfiguration,
  type ApiConstructor,
  type ApiType,
  type KubeConfig,
  type RequestContext,
  type SecurityAuthentication,
} from "@kubernetes/client-node";
import { VERSION } from "../../version.js";

/**
 * Pooled connections are closed after this long idle: before an API server or a load balancer in front of it drops
 * them, which would fail the call that picked such a connection up.
 */
const IDLE_MS = 30_000;

/**
 * The API server names a write's field manager after the User-Agent (up to its first "/") and logs it in audit
 * events, so `managedFields` and the audit log say "lightfleet", not the HTTP library's "node-fetch".
 */
const USER_AGENT = `lightfleet/${VERSION}`;

/**
 * `kubeConfig.makeApiClient(Api)` whose calls reuse kept-alive connections. client-node 1.4 builds a new agent without
 * keep-alive for every call (KubeConfig.applySecurityAuthentication), so every call opens a TCP connection and, over
 * HTTPS, makes a TLS handshake. Here the library still prepares every call (headers, tokens from exec plugins and token
 * files that refresh, the agent's TLS options); only the agent it built is swapped for one kept per KubeConfig with
 * the same options and keep-alive on. Watches (Watch, not these clients) keep a connection of their own.
 */
export function makeApiClient<T extends ApiType>(kubeConfig: KubeConfig, api: ApiConstructor<T>): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error("No active cluster!");
  return new api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: pooledAuthentication(kubeConfig) },
    }),
  );
}

const pooled = new WeakMap<KubeConfig, SecurityAuthentication>();

function pooledAuthentication(kubeConfig: KubeConfig): SecurityAuthentication {
  let authentication = pooled.get(kubeConfig);
  if (authentication) return authentication;
  // One agent at a time: its key changes only when the TLS material does (a rotated client certificate or CA), and
  // the agent it replaces closes its connections once they have been idle IDLE_MS.
  let current: { key: string; agent: http.Agent } | undefined;
  authentication = {
    getName: () => kubeConfig.getName(),
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await kubeConfig.applySecurityAuthentication(context);
      context.setHeaderParam("User-Agent", USER_AGENT);
      const built = context.getAgent();
      // Proxy agents (a cluster's proxy-url) are subclasses with state of their own: left as the library makes them.
      if (!built || (built.constructor !== http.Agent && built.constructor !== https.Agent)) return;
      const options = (built as http.Agent & { options: https.AgentOptions }).options;
      const key = `${built.constructor === https.Agent ? "https" : "http"}:${optionsKey(options)}`;
      if (current?.key !== key) {
        const Agent = built.constructor as typeof https.Agent;
        current = { key, agent: new Agent({ ...options, keepAlive: true, timeout: IDLE_MS }) };
      }
      context.setAgent(current.agent);
    },
  };
  pooled.set(kubeConfig, authentication);
  return authentication;
}

/** A digest of every option the library gave its agent (CA, client certificate and key, servername, verification). */
function optionsKey(options: object): string {
  const hash = createHash("sha256");
  for (const [name, value] of Object.entries(options).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (value === undefined) continue;
    hash.update(`${name}=`);
    for (const part of [value].flat()) {
      if (Buffer.isBuffer(part)) hash.update(part);
      else hash.update(JSON.stringify(part) ?? String(part));
      hash.update("\0");
    }
  }
  return hash.digest("hex");
}
