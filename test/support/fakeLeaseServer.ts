import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

interface StoredLease {
  metadata: { name: string; namespace: string; resourceVersion: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

/**
 * coordination.k8s.io/v1 Leases as the API server keeps them: get, create (409 if present) and replace with
 * optimistic concurrency (409 on a stale resourceVersion). Enough for several leader electors to race on loopback.
 */
export async function startFakeLeaseServer(): Promise<{
  kubeConfig: () => KubeConfig;
  lease: (namespace: string, name: string) => StoredLease | undefined;
  /** Stores a Lease as `kubectl apply` or Helm would have created it. */
  seed: (lease: { metadata: { name: string; namespace: string; labels?: Record<string, string> } }) => void;
  writes: () => number;
  close: () => Promise<void>;
}> {
  const leases = new Map<string, StoredLease>();
  let version = 0;
  let writes = 0;
  const path = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/?]+))?/;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      const status = (code: number, reason: string) =>
        reply(code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, code });
      const match = path.exec(req.url ?? "");
      if (!match) return status(404, "NotFound");
      const [, namespace, name] = match;
      const key = `${namespace}/${name ?? ""}`;
      if (req.method === "GET" && name) {
        const lease = leases.get(key);
        return lease
          ? reply(200, { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease })
          : status(404, "NotFound");
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as StoredLease;
      if (req.method === "POST" && !name) {
        const createKey = `${namespace}/${body.metadata.name}`;
        if (leases.has(createKey)) return status(409, "AlreadyExists");
        writes++;
        const stored = {
          metadata: { ...body.metadata, namespace: namespace!, resourceVersion: String(++version) },
          spec: body.spec,
        };
        leases.set(createKey, stored);
        return reply(201, { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...stored });
      }
      if (req.method === "PUT" && name) {
        const current = leases.get(key);
        if (!current) return status(404, "NotFound");
        if (body.metadata.resourceVersion !== current.metadata.resourceVersion)
          return status(409, "Conflict");
        writes++;
        // A replace is the whole object: metadata the body leaves out (labels) is gone, as on a real server.
        const stored = {
          metadata: {
            ...body.metadata,
            name: name!,
            namespace: namespace!,
            resourceVersion: String(++version),
          },
          spec: body.spec,
        };
        leases.set(key, stored);
        return reply(200, { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...stored });
      }
      return status(405, "MethodNotAllowed");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    kubeConfig: () => {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "fake", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: "fake", token: "fake" }],
        contexts: [{ name: "fake", cluster: "fake", user: "fake", namespace: "fleet" }],
        currentContext: "fake",
      });
      return kc;
    },
    lease: (namespace, name) => leases.get(`${namespace}/${name}`),
    seed: ({ metadata }) =>
      leases.set(`${metadata.namespace}/${metadata.name}`, {
        metadata: { ...metadata, resourceVersion: String(++version) },
        spec: {},
      }),
    writes: () => writes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
