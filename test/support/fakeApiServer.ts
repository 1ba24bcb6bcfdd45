import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { isDeepStrictEqual } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { ApiError, failureStatus } from "./fakeApi/apiStatus.js";
import {
  chartCustomResources,
  customCollection,
  type CustomResourceKind,
} from "./fakeApi/customResources.js";
import { checkEviction, type BudgetLike, type PodLike } from "./fakeApi/disruptionBudget.js";
import { collectorActions, type OwnerReference } from "./fakeApi/garbageCollection.js";
import {
  matchesRequirements,
  parseSelector,
  SelectorError,
  type Requirement,
} from "./fakeApi/labelSelector.js";
import { applyPatch, patchKind } from "./fakeApi/patchBody.js";
import { pruneAndDefault } from "./fakeApi/schemaPruning.js";
import { schemaValidator } from "./fakeApi/schemaValidation.js";
import {
  apiVersionOf,
  kindOf,
  objectMeta,
  resourceOf,
  servedGroup,
  specOf,
  WORKLOAD_PLURALS,
} from "./fakeApi/resourceKinds.js";

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
    ownerReferences?: OwnerReference[];
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
  /** The User-Agent header; a real API server names a write's default field manager after it. */
  userAgent: string | undefined;
  /** Which TCP connection carried it: 1 for the server's first, and so on. */
  connection: number;
}

export interface FakeApiServerOptions {
  /** The custom resources served, with their schemas (default: the chart's CRDs, charts/lightfleet/crds). */
  crds?: CustomResourceKind[];
  /** How often a watch that allows bookmarks gets one (default 60 s, as the API server's watch cache). */
  bookmarkIntervalMs?: number;
}

interface Watcher {
  collection: string;
  namespace: string | undefined;
  selector: Requirement[];
  bookmarks: boolean;
  /** Set when the watch missed events while silent: it never gets a bookmark that would skip them. */
  missed: boolean;
  res: ServerResponse;
}

/**
 * A small Kubernetes API server on loopback for tests at the wire, faithful to kube-apiserver where the product's
 * calls meet it (docs/kubernetes.md, "Tests at the wire", lists what it models and what it does not): list and
 * streaming watch of any collection (label selectors as the API server parses them, resume from a resourceVersion,
 * bookmarks), get, create, replace, delete, merge, strategic-merge (built-in kinds only) and JSON patches, status
 * subresources that take only the status, metadata.generation, pruning and defaults of custom resources by the chart's
 * CRD schemas, pod eviction against PodDisruptionBudgets, DeleteOptions preconditions, garbage collection by owner
 * references, the scale subresource of workloads, Events and Leases. And the faults a real server does not make on
 * demand: 410 Gone after a simulated compaction, watches cut, silent or never answered, lists never answered.
 * Collections are named by their path without the namespace: `api/v1/pods`, `apis/lightfleet.io/v1alpha1/lightnodepools`.
 */
export async function startFakeApiServer(options: FakeApiServerOptions = {}) {
  const crds = new Map((options.crds ?? chartCustomResources()).map((c) => [customCollection(c), c]));
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
  let bookmarkRounds = 0;
  let collection: NodeJS.Immediate | undefined;

  const validators = new Map<CustomResourceKind, (object: unknown) => string[]>();
  const validatorOf = (kind: CustomResourceKind) => {
    let validate = validators.get(kind);
    if (!validate) validators.set(kind, (validate = schemaValidator(kind.schema)));
    return validate;
  };
  const store = (name: string) => {
    let map = objects.get(name);
    if (!map) objects.set(name, (map = new Map()));
    return map;
  };
  const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  const matches = (o: KubeObject, namespace: string | undefined, selector: Requirement[]) =>
    (namespace === undefined || o.metadata.namespace === namespace) &&
    matchesRequirements(selector, o.metadata.labels);
  const send = (w: Watcher, type: string, object: unknown) =>
    w.res.write(`${JSON.stringify({ type, object })}\n`);
  const notify = (name: string, type: string, object: KubeObject) => {
    history.push({ rv: version, collection: name, type, object });
    for (const w of watchers)
      if (w.collection === name && matches(object, w.namespace, w.selector)) {
        if (silent) w.missed = true;
        else send(w, type, object);
      }
  };
  /**
   * Stores an object as the API server would: a create, a write of the object (its status left as it was where the
   * kind has a status subresource), a write of its status (nothing else changes), or the fixture's own `put` (the
   * whole object, status included, with the uid it gives). Unknown metadata is dropped, custom resources are pruned
   * and defaulted by their schema, and generation, uid, creationTimestamp and resourceVersion are the server's.
   */
  const write = (
    name: string,
    incoming: KubeObject,
    mode: "create" | "update" | "status" | "fixture",
  ): KubeObject => {
    const resource = resourceOf(name, crds);
    const map = store(name);
    const existing = map.get(keyOf(incoming));
    let next: KubeObject = structuredClone(incoming);
    next.metadata = objectMeta(next.metadata) as KubeObject["metadata"];
    if (mode === "status" && existing) {
      next = { ...structuredClone(existing), status: structuredClone(incoming.status) };
      if (incoming.status === undefined) delete next.status;
    } else if (resource.statusSubresource && (mode === "update" || mode === "create")) {
      if (existing?.status !== undefined && mode === "update") next.status = structuredClone(existing.status);
      else delete next.status;
    }
    if (resource.custom) {
      next = pruneAndDefault(resource.custom.schema, next) as KubeObject;
      const problems = validatorOf(resource.custom)(next);
      if (problems.length > 0)
        throw new ApiError(
          422,
          "Invalid",
          `${resource.custom.kind ?? resource.custom.plural}.${resource.custom.group} "${next.metadata.name}" is invalid: ${problems.join(", ")}`,
        );
    }
    const given = incoming.metadata;
    next.metadata.uid =
      existing?.metadata.uid ??
      (mode === "fixture" && given.uid ? given.uid : `uid-${randomBytes(6).toString("hex")}`);
    next.metadata.creationTimestamp =
      existing?.metadata.creationTimestamp ??
      (mode === "fixture" && given.creationTimestamp ? given.creationTimestamp : new Date().toISOString());
    if (!resource.tracksGeneration) delete next.metadata.generation;
    else if (!existing) next.metadata.generation = 1;
    else {
      const was = existing.metadata.generation ?? 1;
      next.metadata.generation = isDeepStrictEqual(specOf(existing, resource), specOf(next, resource))
        ? was
        : was + 1;
    }
    next.metadata.resourceVersion = String(++version);
    if (next.metadata.ownerReferences?.length === 0) delete next.metadata.ownerReferences;
    map.set(keyOf(next), next);
    notify(name, existing ? "MODIFIED" : "ADDED", next);
    if (next.metadata.ownerReferences) collectGarbage();
    return next;
  };

  const remove = (name: string, namespace: string, objectName: string): boolean => {
    const map = store(name);
    const existing = map.get(`${namespace}/${objectName}`);
    if (!existing) return false;
    map.delete(`${namespace}/${objectName}`);
    const gone = { ...existing, metadata: { ...existing.metadata, resourceVersion: String(++version) } };
    notify(name, "DELETED", gone);
    collectGarbage();
    return true;
  };

  /** The garbage collector, in the background as the real one: it runs after the write that made it due. */
  function collectGarbage(): void {
    collection ??= setImmediate(() => {
      collection = undefined;
      for (let round = 0; round < 100; round++) {
        const owned = [...objects].flatMap(([name, map]) =>
          [...map.values()].map((o) => ({ collection: name, metadata: o.metadata })),
        );
        const actions = collectorActions(owned);
        if (actions.length === 0) return;
        for (const a of actions) {
          if (a.action === "delete") remove(a.collection, a.namespace, a.name);
          else {
            const current = store(a.collection).get(`${a.namespace}/${a.name}`)!;
            write(
              a.collection,
              { ...current, metadata: { ...current.metadata, ownerReferences: a.keep } },
              "update",
            );
          }
        }
      }
    });
  }

  /** The Orphan propagation policy: the owner's dependents lose their reference to it before it goes. */
  const orphanDependents = (uid: string | undefined) => {
    for (const [name, map] of objects)
      for (const o of [...map.values()]) {
        const refs = o.metadata.ownerReferences ?? [];
        if (uid && refs.some((r) => r.uid === uid))
          write(
            name,
            { ...o, metadata: { ...o.metadata, ownerReferences: refs.filter((r) => r.uid !== uid) } },
            "update",
          );
      }
  };

  const checkPreconditions = (object: KubeObject, options: unknown) => {
    const preconditions = (
      options as { preconditions?: { uid?: string; resourceVersion?: string } } | undefined
    )?.preconditions;
    if (preconditions?.uid !== undefined && preconditions.uid !== object.metadata.uid)
      throw new ApiError(
        409,
        "Conflict",
        `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${object.metadata.uid}`,
      );
    if (
      preconditions?.resourceVersion !== undefined &&
      preconditions.resourceVersion !== object.metadata.resourceVersion
    )
      throw new ApiError(
        409,
        "Conflict",
        `Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${object.metadata.resourceVersion}`,
      );
  };

  const scaleOf = (kind: string, namespace: string, name: string): number | undefined => {
    const plural = WORKLOAD_PLURALS[kind];
    if (!plural) return undefined;
    return (
      scales.get(`${plural}/${namespace}/${name}`) ??
      (store(`apis/apps/v1/${plural}`).get(`${namespace}/${name}`)?.spec as { replicas?: number } | undefined)
        ?.replicas
    );
  };

  const sendBookmarks = () => {
    if (silent) return;
    bookmarkRounds++;
    for (const w of watchers)
      if (w.bookmarks && !w.missed)
        send(w, "BOOKMARK", {
          apiVersion: apiVersionOf(w.collection),
          kind: kindOf(w.collection, crds),
          metadata: { resourceVersion: String(version) },
        });
  };
  const bookmarkTimer = setInterval(sendBookmarks, options.bookmarkIntervalMs ?? 60_000);
  bookmarkTimer.unref();

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
      let body: unknown;
      let unreadable: string | undefined;
      try {
        body = text ? (JSON.parse(text) as unknown) : undefined;
      } catch (error) {
        body = text;
        unreadable = (error as Error).message;
      }
      calls.push({
        method: req.method!,
        path: url.pathname,
        query,
        contentType: req.headers["content-type"],
        body,
        authorization: req.headers.authorization,
        userAgent: req.headers["user-agent"],
        connection: connectionIds.get(req.socket) ?? 0,
      });
      const reply = (status: number, payload: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(payload));
      };
      try {
        if (unreadable !== undefined)
          throw new ApiError(400, "BadRequest", `the request body is not valid JSON: ${unreadable}`);
        handle(req.method ?? "GET", url.pathname, query, req.headers["content-type"], body, res, reply);
      } catch (error) {
        const e =
          error instanceof ApiError
            ? error
            : new ApiError(500, "InternalError", `${(error as Error).message}`);
        if (!res.headersSent) reply(e.code, failureStatus(e.code, e.reason, e.message, e.details));
        else res.end();
      }
    });
  });

  function handle(
    method: string,
    path: string,
    query: Record<string, string>,
    contentType: string | undefined,
    body: unknown,
    res: ServerResponse,
    reply: (status: number, payload: unknown) => void,
  ): void {
    const m = route.exec(path);
    if (!m) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    const [, prefix, namespace, plural, name, sub] = m;
    const collectionName = `${prefix}/${plural}`;
    const resource = resourceOf(collectionName, crds);
    const notFound = () => new ApiError(404, "NotFound", `${plural} "${name}" not found`);
    // Only built-in groups and the CRDs' kinds are served (KEDA, the Prometheus Operator are not installed).
    const group = prefix === "api/v1" ? "" : prefix!.split("/")[1]!;
    if (!servedGroup(group, resource))
      throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    const map = store(collectionName);
    const current = name ? map.get(`${namespace ?? ""}/${name}`) : undefined;

    if (method === "GET" && !name) {
      let selector: Requirement[];
      try {
        selector = parseSelector(query.labelSelector ?? "");
      } catch (error) {
        if (error instanceof SelectorError)
          throw new ApiError(400, "BadRequest", `unable to parse requirement: ${error.message}`);
        throw error;
      }
      if (query.watch === "true" || query.watch === "1") {
        const watcher: Watcher = {
          collection: collectionName,
          namespace,
          selector,
          bookmarks: query.allowWatchBookmarks === "true",
          missed: false,
          res,
        };
        if (unanswered) {
          held.add(res);
          res.on("close", () => held.delete(res));
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        const from = query.resourceVersion;
        if (from === undefined || from === "" || from === "0") {
          // No version, or "any": the current state as ADDED events, then the changes.
          for (const o of map.values()) if (matches(o, namespace, selector)) send(watcher, "ADDED", o);
        } else {
          if (Number(from) < compacted) {
            send(
              watcher,
              "ERROR",
              failureStatus(410, "Expired", `too old resource version: ${from} (${compacted})`),
            );
            res.end();
            return;
          }
          for (const e of history)
            if (
              e.rv > Number(from) &&
              e.collection === collectionName &&
              matches(e.object, namespace, selector)
            )
              send(watcher, e.type, e.object);
        }
        watchers.add(watcher);
        res.on("close", () => watchers.delete(watcher));
        return;
      }
      if (listsUnanswered) {
        held.add(res);
        res.on("close", () => held.delete(res));
        return;
      }
      const items = [...map.values()].filter((o) => matches(o, namespace, selector));
      return reply(200, {
        apiVersion: apiVersionOf(collectionName),
        kind: `${kindOf(collectionName, crds)}List`,
        metadata: { resourceVersion: String(version) },
        items,
      });
    }

    if (sub === "scale") {
      const key = `${plural}/${namespace}/${name}`;
      const replicas = scales.get(key);
      if (replicas === undefined) throw notFound();
      const scale = {
        kind: "Scale",
        apiVersion: "autoscaling/v1",
        metadata: { name, namespace },
        spec: { replicas },
      };
      if (method === "GET") return reply(200, { ...scale, status: { replicas } });
      if (method !== "PATCH")
        throw new ApiError(405, "MethodNotAllowed", `${method} is not allowed on scale`);
      const patched = applyPatch(patchKind(contentType, false), scale, body) as {
        spec?: { replicas?: unknown };
      };
      const wanted = patched.spec?.replicas;
      if (typeof wanted !== "number" || !Number.isInteger(wanted) || wanted < 0)
        throw new ApiError(422, "Invalid", "spec.replicas: Invalid value: must be a non-negative integer");
      scales.set(key, wanted);
      return reply(200, { ...scale, spec: { replicas: wanted } });
    }
    if (sub !== undefined && sub !== "status" && sub !== "eviction")
      throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    if (sub === "status" && !resource.statusSubresource)
      throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    if (sub === "eviction" && (plural !== "pods" || method !== "POST"))
      throw new ApiError(404, "NotFound", "the server could not find the requested resource");

    if (method === "GET" && name) {
      if (!current) throw notFound();
      return reply(200, current);
    }
    if (method === "POST" && !name) {
      const object = body as KubeObject | undefined;
      if (typeof object !== "object" || object === null || Array.isArray(object))
        throw new ApiError(400, "BadRequest", "the request body must be an object");
      object.metadata ??= { name: "" };
      if (object.metadata.namespace !== undefined && object.metadata.namespace !== namespace)
        throw new ApiError(
          400,
          "BadRequest",
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      object.metadata.namespace = namespace;
      if (!object.metadata.name && typeof object.metadata.generateName === "string")
        object.metadata.name = `${object.metadata.generateName}${randomBytes(3).toString("hex").slice(0, 5)}`;
      if (!object.metadata.name)
        throw new ApiError(422, "Invalid", "metadata.name: Required value: name or generateName is required");
      if (map.has(keyOf(object)))
        throw new ApiError(409, "AlreadyExists", `${plural} "${object.metadata.name}" already exists`);
      return reply(201, write(collectionName, object, "create"));
    }
    if (method === "POST" && sub === "eviction") {
      if (!current) throw notFound();
      const eviction = (body ?? {}) as { deleteOptions?: unknown };
      checkPreconditions(current, eviction.deleteOptions);
      const budgets = [...store("apis/policy/v1/poddisruptionbudgets").values()] as unknown as BudgetLike[];
      const pods = [...map.values()] as unknown as PodLike[];
      checkEviction(current as unknown as PodLike, budgets, pods, scaleOf);
      remove(collectionName, namespace!, name!);
      return reply(201, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 });
    }
    if (method === "DELETE" && name) {
      if (!current) throw notFound();
      checkPreconditions(current, body);
      if ((body as { propagationPolicy?: string } | undefined)?.propagationPolicy === "Orphan")
        orphanDependents(current.metadata.uid);
      remove(collectionName, namespace!, name);
      return reply(200, current);
    }
    if ((method === "PUT" || method === "PATCH") && name) {
      if (!current) throw notFound();
      let next: KubeObject;
      if (method === "PUT") {
        next = body as KubeObject;
        if (typeof next !== "object" || next === null || Array.isArray(next) || !next.metadata)
          throw new ApiError(400, "BadRequest", "the request body must be an object with metadata");
        if (next.metadata.resourceVersion === undefined)
          next.metadata.resourceVersion = current.metadata.resourceVersion;
      } else {
        next = applyPatch(patchKind(contentType, resource.custom !== undefined), current, body) as KubeObject;
      }
      if (next.metadata?.name !== name)
        throw new ApiError(
          400,
          "BadRequest",
          `the name of the object (${String(next.metadata?.name)}) does not match the name on the URL (${name})`,
        );
      if ((next.metadata.namespace ?? namespace) !== namespace)
        throw new ApiError(
          400,
          "BadRequest",
          "the namespace of the object does not match the namespace on the URL",
        );
      if (next.metadata.resourceVersion !== current.metadata.resourceVersion)
        throw new ApiError(
          409,
          "Conflict",
          `Operation cannot be fulfilled on ${plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        );
      next.metadata.namespace = namespace;
      return reply(200, write(collectionName, next, sub === "status" ? "status" : "update"));
    }
    throw new ApiError(405, "MethodNotAllowed", `${method} is not allowed here`);
  }

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
    /**
     * Creates or replaces an object as the cluster's other writers together would leave it (the status too, as a
     * kubelet or another controller writes it, and the uid given, if any); the server's rules still apply: pruning and
     * defaults of custom resources, generation, resourceVersion, and garbage collection of what it owns.
     */
    put: (name: string, object: KubeObject): KubeObject => write(name, object, "fixture"),
    /** Deletes an object (as `kubectl delete`); what it owns is garbage-collected. */
    remove,
    get: (name: string, namespace: string, objectName: string) =>
      store(name).get(`${namespace}/${objectName}`),
    list: (name: string) => [...store(name).values()],
    calls,
    /** TCP connections accepted so far. */
    connections: () => connections,
    /** The latest resourceVersion handed out. */
    resourceVersion: () => version,
    /** Replicas last set through the scale subresource, e.g. scale("statefulsets", "eth", "light"). */
    scale: (resource: string, namespace: string, name: string) =>
      scales.get(`${resource}/${namespace}/${name}`),
    /** A workload's size, as its scale subresource answers it (workloads without one answer 404). */
    setScale: (resource: string, namespace: string, name: string, replicas: number) =>
      void scales.set(`${resource}/${namespace}/${name}`, replicas),
    /** Open watches of a collection. */
    watching: (name: string) => [...watchers].filter((w) => w.collection === name).length,
    /** Sends a bookmark to every watch that allows them, now (they also go every `bookmarkIntervalMs`). */
    sendBookmarks,
    /** Rounds of bookmarks sent so far. */
    bookmarksSent: () => bookmarkRounds,
    /** Ends every open watch with 410 Gone and forgets the history, as after a compaction. */
    expireWatches() {
      history.splice(0);
      compacted = ++version;
      for (const w of watchers) {
        send(w, "ERROR", failureStatus(410, "Expired", "too old resource version"));
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
    close(): Promise<void> {
      clearInterval(bookmarkTimer);
      if (collection) clearImmediate(collection);
      for (const w of watchers) w.res.destroy();
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeApiServer = Awaited<ReturnType<typeof startFakeApiServer>>;
