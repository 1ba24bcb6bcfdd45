import { Watch } from "@kubernetes/client-node";
import type { CoreV1Api, KubeConfig, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "../../log/logger.js";
import { backoffDelay } from "../../rpc/backoff.js";

export interface PodWatcherOptions {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  labelSelector: string;
  logger: Logger;
  onChange: () => void;
  /** A watch that has been silent this long (no event, no bookmark) is dropped and re-made. */
  silenceMs?: number;
  clock?: () => number;
}

/**
 * The pods of one selector, kept by list + watch. It never stops by itself: a 410 Gone relists, a dropped or failing
 * watch is re-made with backoff, and a watch silent for too long (a dead connection that never closes) is restarted.
 */
export class PodWatcher {
  private readonly pods = new Map<string, V1Pod>();
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private attempt = 0;
  private stopped = false;
  private lastEventAt = 0;
  private syncedAt: number | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly clock: () => number;
  private readonly silenceMs: number;

  constructor(private readonly options: PodWatcherOptions) {
    this.clock = options.clock ?? Date.now;
    this.silenceMs = options.silenceMs ?? 5 * 60_000;
  }

  list(): V1Pod[] {
    return [...this.pods.values()];
  }

  get(name: string): V1Pod | undefined {
    return this.pods.get(name);
  }

  /** Takes a pod the API returned from a write, so the cache does not wait for the watch to see our own change. */
  update(pod: V1Pod): void {
    const name = pod.metadata?.name;
    if (name && this.pods.has(name)) this.pods.set(name, pod);
  }

  /** When the cache was last known good (a list, or a watch event), undefined before the first list. */
  lastSync(): number | undefined {
    return this.syncedAt;
  }

  start(): void {
    this.stopped = false;
    void this.relist();
    this.watchdog = setInterval(
      () => {
        if (this.abort && this.clock() - this.lastEventAt > this.silenceMs) {
          this.options.logger.warn(
            { selector: this.options.labelSelector },
            "pod watch silent for too long: restarting it",
          );
          this.abort.abort();
        }
      },
      Math.min(this.silenceMs, 30_000),
    );
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdog);
    this.abort?.abort();
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    try {
      const list = await this.options.core.listNamespacedPod({
        namespace: this.options.namespace,
        labelSelector: this.options.labelSelector,
      });
      this.pods.clear();
      for (const pod of list.items) if (pod.metadata?.name) this.pods.set(pod.metadata.name, pod);
      this.resourceVersion = list.metadata?.resourceVersion;
      this.syncedAt = this.clock();
      this.attempt = 0;
      this.options.onChange();
      await this.watch();
    } catch (error) {
      this.retry("list failed", error, () => void this.relist());
    }
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    this.lastEventAt = this.clock();
    let gone = false;
    const path = `/api/v1/namespaces/${this.options.namespace}/pods`;
    this.abort = await new Watch(this.options.kubeConfig).watch(
      path,
      {
        labelSelector: this.options.labelSelector,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
      },
      (phase: string, object: V1Pod & { code?: number }) => {
        this.lastEventAt = this.clock();
        if (phase === "ERROR") {
          gone = object.code === 410;
          return;
        }
        if (object.metadata?.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
        if (phase === "BOOKMARK") return;
        const name = object.metadata?.name;
        if (!name) return;
        if (phase === "DELETED") this.pods.delete(name);
        else this.pods.set(name, object);
        this.syncedAt = this.clock();
        this.options.onChange();
      },
      (error: unknown) => {
        this.abort = undefined;
        if (this.stopped) return;
        if (gone || (error as { statusCode?: number } | null)?.statusCode === 410) {
          this.options.logger.info(
            { selector: this.options.labelSelector },
            "pod watch expired (410 Gone): relisting",
          );
          void this.relist();
        } else if (error) this.retry("watch failed", error, () => void this.watch());
        else void this.watch(); // the server closed a healthy watch: resume from the last resource version
      },
    );
  }

  private retry(what: string, error: unknown, again: () => void): void {
    if (this.stopped) return;
    const delay = backoffDelay(this.attempt++, 500, 30_000);
    this.options.logger.warn(
      { err: String(error), selector: this.options.labelSelector, retryInMs: delay },
      `pod ${what}`,
    );
    this.retryTimer = setTimeout(again, delay);
  }
}
