import { writeFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

/** An object as the fake keeps it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    generation?: number;
    labels?: Record<string, string>;
    creationTimestamp?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** One request as the server saw it. */
export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  body: unknown;
  authorization: string | undefined;
  /** Which TCP connection carried it: 1 for the server's first, and so on. */
  connection: number;
}

interface Watcher {
  collection: string;
  namespace: string | undefined;
  selector: string | undefined;
  res: ServerResponse;
}

/**
 * A small Kubernetes API server on loopback for tests at the wire: list and streaming watch of any collection (label
 * selectors of the `a=b,c=d` form, resume from a resourceVersion, 410 Gone on demand, silent or dropped watches),
 * get, create, merge and strategic-merge patches of objects and their status, pod eviction (429 on demand), the scale
 * subresource of workloads, Events and Leases. Collections are named by their path without the namespace:
 * `api/v1/pods`, `apis/lightfleet.io/v1alpha1/lightnodepools`.
 */
export async function startFakeApiServer() {
  const objects = new Map<string, Map<string, KubeObject>>();
  const history: Array<{ rv: number; collection: string; type: string; object: KubeObject }> = [];
  const watchers = new Set<Watcher>();
  const calls: RecordedCall[] = [];
  const scales = new Map<string, number>();
  let version = 100;
  /** Watches from before this version get 410 Gone (their history was compacted away). */
  let compacted = 0;
  let silent = false;
  let unanswered = false;
  let listsUnanswered = false;
  const held = new Set<ServerResponse>();
  let refuseEvictions = false;
  let uid = 0;

  const store = (collection: string) => {
    let map = objects.get(collection);
    if (!map) objects.set(collection, (map = new Map()));
    return map;
  };
  const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const matches = (o: KubeObject, namespace: string | undefined, selector: string | undefined) => {
    if (namespace !== undefined && o.metadata.namespace !== namespace) return false;
    for (const term of (selector ?? "").split(",").filter(Boolean)) {
      const [k, v] = term.split("=");
      if (o.metadata.labels?.[k!] !== v) return false;
    }
    return true;
  };
  const send = (w: Watcher, type: string, object: unknown) =>
    w.res.write(`${JSON.stringify({ type, object })}\n`);

  /** Stores an object (created or replaced) and tells the watches. */
  const put = (collection: string, object: KubeObject, type?: "ADDED" | "MODIFIED"): KubeObject => {
    const map = store(collection);
    const existing = map.get(keyOf(object));
    const stored: KubeObject = structuredClone(object);
    stored.metadata.resourceVersion = String(++version);
    stored.metadata.uid ??= existing?.metadata.uid ?? `uid-${++uid}`;
    stored.metadata.creationTimestamp ??= existing?.metadata.creationTimestamp ?? new Date().toISOString();
    map.set(keyOf(stored), stored);
    const event = {
      rv: version,
      collection,
      type: type ?? (existing ? "MODIFIED" : "ADDED"),
      object: stored,
    };
    history.push(event);
    if (!silent)
      for (const w of watchers)
        if (w.collection === collection && matches(stored, w.namespace, w.selector))
          send(w, event.type, stored);
    return stored;
  };
  const remove = (collection: string, namespace: string, name: string): boolean => {
    const map = store(collection);
    const existing = map.get(`${namespace}/${name}`);
    if (!existing) return false;
    map.delete(`${namespace}/${name}`);
    const gone = { ...existing, metadata: { ...existing.metadata, resourceVersion: String(++version) } };
    history.push({ rv: version, collection, type: "DELETED", object: gone });
    if (!silent)
      for (const w of watchers)
        if (w.collection === collection && matches(gone, w.namespace, w.selector)) send(w, "DELETED", gone);
    return true;
  };

  // /api/v1/namespaces/NS/pods/NAME/status or /apis/G/V/PLURAL (cluster-wide)
  const route =
    /^\/(api\/v1|apis\/[^/]+\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;

  const connectionIds = new WeakMap<Socket, number>();
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const query = Object.fromEntries(url.searchParams);
      const text = Buffer.concat(chunks).toString("utf8");
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      calls.push({
        method: req.method!,
        path: url.pathname,
        query,
        contentType: req.headers["content-type"],
        body,
        authorization: req.headers.authorization,
        connection: connectionIds.get(req.socket) ?? 0,
      });
      const reply = (status: number, payload: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(payload));
      };
      const status = (code: number, reason: string, message = reason) =>
        reply(code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code });
      const m = route.exec(url.pathname);
      if (!m) return status(404, "NotFound");
      const [, prefix, namespace, resource, name, sub] = m;
      const collection = `${prefix}/${resource}`;
      const map = store(collection);

      if (req.method === "GET" && !name) {
        if (query.watch === "true") {
          const since = Number(query.resourceVersion ?? version);
          const watcher: Watcher = { collection, namespace, selector: query.labelSelector, res };
          if (unanswered) {
            held.add(res);
            res.on("close", () => held.delete(res));
            return;
          }
          res.writeHead(200, { "content-type": "application/json" });
          res.flushHeaders();
          if (since < compacted) {
            send(watcher, "ERROR", { kind: "Status", code: 410, reason: "Expired" });
            return res.end();
          }
          for (const e of history)
            if (e.rv > since && e.collection === collection && matches(e.object, namespace, watcher.selector))
              send(watcher, e.type, e.object);
          watchers.add(watcher);
          res.on("close", () => watchers.delete(watcher));
          return;
        }
        if (listsUnanswered) {
          held.add(res);
          res.on("close", () => held.delete(res));
          return;
        }
        if (collection === "apis/keda.sh/v1alpha1/scaledobjects") return status(404, "NotFound");
        const items = [...map.values()].filter((o) => matches(o, namespace, query.labelSelector));
        return reply(200, { metadata: { resourceVersion: String(version) }, items });
      }
      if (req.method === "GET" && sub === "scale") {
        const replicas = scales.get(`${resource}/${namespace}/${name}`);
        if (replicas === undefined) return status(404, "NotFound");
        return reply(200, {
          kind: "Scale",
          metadata: { name, namespace },
          spec: { replicas },
          status: { replicas },
        });
      }
      if (req.method === "GET" && name) {
        const found = map.get(`${namespace ?? ""}/${name}`);
        return found ? reply(200, found) : status(404, "NotFound");
      }
      if (req.method === "POST" && !name) {
        const object = body as KubeObject;
        object.metadata.namespace ??= namespace;
        if (map.has(keyOf(object))) return status(409, "AlreadyExists");
        return reply(201, put(collection, object));
      }
      if (req.method === "POST" && sub === "eviction") {
        if (refuseEvictions)
          return status(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
          );
        return remove(collection, namespace!, name!)
          ? reply(201, { kind: "Status", status: "Success" })
          : status(404, "NotFound");
      }
      if (req.method === "PATCH" && sub === "scale") {
        const replicas = (body as { spec: { replicas: number } }).spec.replicas;
        scales.set(`${resource}/${namespace}/${name}`, replicas);
        return reply(200, { kind: "Scale", metadata: { name, namespace }, spec: { replicas } });
      }
      if (req.method === "PUT" && name) {
        const current = map.get(`${namespace ?? ""}/${name}`);
        const object = body as KubeObject;
        if (!current) return status(404, "NotFound");
        if (object.metadata.resourceVersion !== current.metadata.resourceVersion)
          return status(409, "Conflict");
        return reply(200, put(collection, object));
      }
      if (req.method === "PATCH" && name) {
        const current = map.get(`${namespace ?? ""}/${name}`);
        if (!current) return status(404, "NotFound");
        const strategic = req.headers["content-type"] === "application/strategic-merge-patch+json";
        const next = patch(current, body ?? {}, strategic) as KubeObject;
        return reply(200, put(collection, next));
      }
      return status(405, "MethodNotAllowed");
    });
  });
  server.on("connection", (socket: Socket) => connectionIds.set(socket, ++connections));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    kubeConfig(): KubeConfig {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "fake", server: url, skipTLSVerify: true }],
        users: [{ name: "fake", token: "t0ken" }],
        contexts: [{ name: "fake", cluster: "fake", user: "fake", namespace: "eth" }],
        currentContext: "fake",
      });
      return kc;
    },
    /** Writes a kubeconfig file pointing at this server (for processes under test: KUBECONFIG=path); returns path. */
    writeKubeconfig(path: string): string {
      writeFileSync(
        path,
        [
          "apiVersion: v1",
          "kind: Config",
          `clusters: [{ name: fake, cluster: { server: "${url}", insecure-skip-tls-verify: true } }]`,
          "users: [{ name: fake, user: { token: t0ken } }]",
          "contexts: [{ name: fake, context: { cluster: fake, user: fake, namespace: eth } }]",
          "current-context: fake",
        ].join("\n"),
      );
      return path;
    },
    put,
    remove,
    get: (collection: string, namespace: string, name: string) =>
      store(collection).get(`${namespace}/${name}`),
    list: (collection: string) => [...store(collection).values()],
    calls,
    /** TCP connections accepted so far. */
    connections: () => connections,
    /** Replicas last set through the scale subresource, e.g. scale("statefulsets", "eth", "light"). */
    scale: (resource: string, namespace: string, name: string) =>
      scales.get(`${resource}/${namespace}/${name}`),
    /** A workload's size, as its scale subresource answers it (workloads without one answer 404). */
    setScale: (resource: string, namespace: string, name: string, replicas: number) =>
      void scales.set(`${resource}/${namespace}/${name}`, replicas),
    /** Open watches of a collection. */
    watching: (collection: string) => [...watchers].filter((w) => w.collection === collection).length,
    /** Ends every open watch with 410 Gone and forgets the history, as after a compaction. */
    expireWatches() {
      history.splice(0);
      compacted = ++version;
      for (const w of watchers) {
        send(w, "ERROR", { kind: "Status", code: 410, reason: "Expired" });
        w.res.end();
      }
      watchers.clear();
    },
    /** Cuts every open watch mid-stream. */
    dropWatches() {
      for (const w of watchers) w.res.destroy();
      watchers.clear();
    },
    /** While silent, open watches get nothing (a dead connection that never closes); new ones catch up. */
    setSilent(value: boolean) {
      silent = value;
    },
    /** While set, watch requests get no answer at all, not even headers (a connection lost while connecting). */
    setUnanswered(value: boolean) {
      unanswered = value;
    },
    /** While set, list requests get no answer at all. */
    setListsUnanswered(value: boolean) {
      listsUnanswered = value;
    },
    /** Watch (and list) requests left unanswered so far and still open. */
    unansweredWatches: () => held.size,
    /** Evictions answered 429, as when a PodDisruptionBudget allows no disruption. */
    setRefuseEvictions(value: boolean) {
      refuseEvictions = value;
    },
    close(): Promise<void> {
      for (const w of watchers) w.res.destroy();
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeApiServer = Awaited<ReturnType<typeof startFakeApiServer>>;

/** RFC 7386 merge patch; with `strategic`, lists of objects with a `type` (conditions) merge by it, as pods/status does. */
function patch(target: unknown, body: unknown, strategic: boolean): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    if (strategic && Array.isArray(body) && Array.isArray(target) && body.every((i) => isTyped(i))) {
      const merged = [...(target as Array<{ type: string }>)];
      for (const item of body as Array<{ type: string }>) {
        const at = merged.findIndex((t) => t.type === item.type);
        if (at >= 0) merged[at] = { ...merged[at]!, ...item };
        else merged.push(item);
      }
      return merged;
    }
    return structuredClone(body);
  }
  const out: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [k, v] of Object.entries(body)) {
    if (v === null) delete out[k];
    else out[k] = patch(out[k], v, strategic);
  }
  return out;
}

function isTyped(item: unknown): boolean {
  return typeof item === "object" && item !== null && typeof (item as { type?: unknown }).type === "string";
}
