import { Watch } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../../log/logger.js";
import type { KubeCacheMetrics, WatchRestartReason } from "../../metrics/kubeCacheMetrics.js";
import { backoffDelay } from "../../rpc/backoff.js";
import { olderResourceVersion } from "./resourceVersion.js";

/** What every object kept by a ListWatch has: a name and a resource version (and a namespace, if namespaced). */
export interface Named {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface ListWatchOptions<T extends Named> {
  kubeConfig: KubeConfig;
  /** The collection's path, e.g. `/api/v1/namespaces/NS/pods`; watched with `?watch=true`. */
  path: string;
  /** Lists the collection (through the typed client, so the call is the same one RBAC and tests know). */
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  labelSelector?: string;
  /** Names the collection in logs ("pod", "EndpointSlice", "LightNodePool"). */
  what: string;
  logger: Logger;
  onChange: () => void;
  /** A watch that has been silent this long (no event, no bookmark) is dropped and re-made. */
  silenceMs?: number;
  clock?: () => number;
  /** Cache age and watch restarts, labelled with the resource (the path's last segment) and this scope. */
  metrics?: { recorder: KubeCacheMetrics; scope: string };
}

/**
 * One collection kept in memory by list + watch, the informer client-node 1.x lacks in a form that never gives up:
 * a 410 Gone relists, a dropped or failing watch is re-made with backoff, and a watch silent for too long (a dead
 * connection that never closes, which 1.4 does not notice) is restarted by a watchdog.
 */
export class ListWatch<T extends Named> {
  private readonly objects = new Map<string, T>();
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private attempt = 0;
  private stopped = false;
  private lastEventAt = 0;
  private syncedAt: number | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Each list or watch request's number: answers and callbacks of a superseded request are ignored. */
  private generation = 0;
  /** What the cache waits for now; the watchdog acts on a request that hangs in any phase but `waiting`. */
  private phase: "listing" | "connecting" | "watching" | "waiting" = "waiting";
  /** Why the watch being torn down ends, when this side ends it (the watchdog). */
  private ending: WatchRestartReason | undefined;
  private untrack: (() => void) | undefined;
  private readonly resource: string;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly clock: () => number;
  private readonly silenceMs: number;
  /** A collection of every namespace holds one name once per namespace: its objects are kept by `namespace/name`. */
  private readonly clusterWide: boolean;

  constructor(private readonly options: ListWatchOptions<T>) {
    this.clock = options.clock ?? Date.now;
    this.silenceMs = options.silenceMs ?? 5 * 60_000;
    this.resource = options.path.split("/").at(-1) ?? options.what;
    this.clusterWide = !options.path.includes("/namespaces/");
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  /** An object by name (`namespace/name` in a collection of every namespace). */
  get(name: string): T | undefined {
    return this.objects.get(name);
  }

  private keyOf(object: T): string | undefined {
    const name = object.metadata?.name;
    if (name === undefined || !this.clusterWide) return name;
    return `${object.metadata?.namespace ?? ""}/${name}`;
  }

  /**
   * Takes an object the API returned from a write, so the cache does not wait for the watch to see our change. The
   * answer may arrive after the watch delivered a later write by someone else (an operator's annotation): the cache
   * keeps whichever is newer.
   */
  update(object: T): void {
    const key = this.keyOf(object);
    const cached = key === undefined ? undefined : this.objects.get(key);
    if (!cached || olderResourceVersion(object.metadata?.resourceVersion, cached.metadata?.resourceVersion))
      return;
    this.objects.set(key!, object);
  }

  /** When the cache was last known good (a list, or a watch event); undefined before the first list. */
  lastSync(): number | undefined {
    return this.syncedAt;
  }

  start(): void {
    this.stopped = false;
    const metrics = this.options.metrics;
    this.untrack = metrics?.recorder.track(this.resource, metrics.scope, () => this.lastSync());
    void this.relist();
    this.watchdog = setInterval(
      () => {
        if (this.stopped || this.clock() - this.lastEventAt <= this.silenceMs) return;
        if (this.phase === "watching") {
          this.options.logger.warn(
            this.context(),
            `${this.options.what} watch silent for too long: restarting it`,
          );
          this.ending = "silent";
          this.abort?.abort();
        } else if (this.phase !== "waiting") {
          // client-node 1.4 puts no timeout on list and watch requests: one the server never answers is abandoned
          // (its answer ignored, a watch aborted if it ever comes) for a new one.
          this.options.logger.warn(
            this.context(),
            `${this.options.what} ${this.phase} unanswered: asking again`,
          );
          this.restarted("unanswered");
          void (this.phase === "listing" ? this.relist() : this.watch());
        }
      },
      Math.min(this.silenceMs, 30_000),
    );
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    this.untrack?.();
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdog);
    this.abort?.abort();
  }

  private context(): Record<string, string> {
    return {
      path: this.options.path,
      ...(this.options.labelSelector ? { selector: this.options.labelSelector } : {}),
    };
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    const generation = this.begin("listing");
    try {
      const list = await this.options.list();
      // Superseded (stopped, or abandoned by the watchdog) while the list was under way.
      if (generation !== this.generation) return;
      this.objects.clear();
      for (const object of list.items) {
        const key = this.keyOf(object);
        if (key) this.objects.set(key, object);
      }
      this.resourceVersion = list.metadata?.resourceVersion;
      this.syncedAt = this.clock();
      this.attempt = 0;
      this.options.onChange();
    } catch (error) {
      if (generation !== this.generation) return;
      this.retry("list failed", error, () => void this.relist());
      return;
    }
    await this.watch();
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    const generation = this.begin("connecting");
    let gone = false;
    let ended = false;
    let abort: AbortController;
    try {
      abort = await new Watch(this.options.kubeConfig).watch(
        this.options.path,
        {
          ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
        },
        (phase: string, object: T & { code?: number }) => {
          if (generation !== this.generation) return;
          this.lastEventAt = this.clock();
          if (phase === "ERROR") {
            gone = object.code === 410;
            return;
          }
          if (object.metadata?.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
          // A bookmark also proves the cache current: a quiet collection must not look stale.
          this.syncedAt = this.clock();
          if (phase === "BOOKMARK") return;
          const key = this.keyOf(object);
          if (!key) return;
          if (phase === "DELETED") this.objects.delete(key);
          else this.objects.set(key, object);
          this.options.onChange();
        },
        (error: unknown) => {
          if (generation !== this.generation) return;
          ended = true;
          this.phase = "waiting";
          this.abort = undefined;
          if (this.stopped) return;
          const expired = gone || (error as { statusCode?: number } | null)?.statusCode === 410;
          this.restarted(this.ending ?? (expired ? "expired" : error ? "failed" : "closed"));
          this.ending = undefined;
          if (expired) {
            this.options.logger.info(
              this.context(),
              `${this.options.what} watch expired (410 Gone): relisting`,
            );
            void this.relist();
          } else if (error) this.retry("watch failed", error, () => void this.watch());
          else void this.watch(); // the server closed a healthy watch: resume from the last resource version
        },
      );
    } catch (error) {
      // Failed before any request (credentials from an exec plugin or a token file, say): retried like a failed watch.
      if (generation !== this.generation) return;
      this.restarted("failed");
      this.retry("watch failed", error, () => void this.watch());
      return;
    }
    // Superseded (stopped, or abandoned by the watchdog) while the request was under way.
    if (generation !== this.generation) {
      abort.abort();
      return;
    }
    // A watch refused at once has already ended (and its retry is scheduled): keep no handle to it.
    if (ended) return;
    this.phase = "watching";
    this.abort = abort;
    // The server took the watch from our resource version: nothing was missed up to now.
    this.syncedAt = this.clock();
  }

  /** Starts a list or watch request: a new generation, and the watchdog's clock starts over. */
  private begin(phase: "listing" | "connecting"): number {
    this.phase = phase;
    this.abort = undefined;
    this.lastEventAt = this.clock();
    return ++this.generation;
  }

  private restarted(reason: WatchRestartReason): void {
    this.options.metrics?.recorder.watchRestart(this.resource, reason);
  }

  private retry(what: string, error: unknown, again: () => void): void {
    if (this.stopped) return;
    this.phase = "waiting";
    const delay = backoffDelay(this.attempt++, 500, 30_000);
    this.options.logger.warn(
      { err: String(error), ...this.context(), retryInMs: delay },
      `${this.options.what} ${what}`,
    );
    this.retryTimer = setTimeout(again, delay);
  }
}
