import { Redis } from "ioredis";
import type { Counter, Histogram, Registry } from "prom-client";
import type { Logger } from "../../log/logger.js";
import { createSharedStoreMetrics } from "../../metrics/sharedStoreMetrics.js";
import type { SharedStoreOperation } from "../../metrics/sharedStoreMetrics.js";
import { SubscriberWatch } from "./subscriberWatch.js";
import type { WatchTimers } from "./subscriberWatch.js";

/** The shared-store calls the gateway makes, as metric labels (a fixed set). */
export type StoreOperation = SharedStoreOperation;

export interface SharedStoreOptions {
  url: string;
  keyPrefix: string;
  /** Time one command may take; beyond, it fails and the caller goes on without it. */
  commandTimeoutMs: number;
  registry: Registry;
  logger: Logger;
  /** The subscriber connection's PING: every `intervalMs`, answered within `deadlineMs` (defaults below). */
  subscriberPing?: { intervalMs?: number; deadlineMs?: number; timers?: WatchTimers };
}

/** Reconnection backoff: fast at first, then every 2 s for as long as Redis is away. */
const RECONNECT_MAX_MS = 2_000;
/** A subscription that failed on a live connection is tried again after this long. */
const RESUBSCRIBE_MS = 1_000;
/** The subscriber connection is sent a PING this long after its last answer... */
const SUBSCRIBER_PING_MS = 1_000;
/** ...and is taken as stalled (and replaced) when the answer takes longer than this. */
const SUBSCRIBER_DEADLINE_MS = 1_000;
/** A failure is logged at most this often (an outage fails every call). */
const LOG_EVERY_MS = 10_000;

/**
 * The gateway's connection to Redis, shared by everything kept there. A call never waits for Redis beyond the command
 * timeout: no offline queue (a command while disconnected fails at once), no retries of a command, reconnection in
 * the background for as long as it takes. Every command is timed and counted (`run`), so an operator sees the store's
 * latency and errors.
 */
export interface ChannelListener {
  message(text: string): void;
  /** True once subscribed (again, after a reconnection), false as soon as the subscription may miss messages. */
  subscribed(up: boolean): void;
}

export class SharedStore {
  readonly redis: Redis;
  /** The pub/sub connection, opened with the first listener. */
  private subscriber: Redis | undefined;
  /** PINGs the pub/sub connection while it is up, to find a stall that does not close it. */
  private watch: SubscriberWatch | undefined;
  private readonly listeners = new Map<string, ChannelListener>();
  /** Channels subscribed on the current subscriber connection. */
  private readonly subscribed = new Set<string>();
  private readonly duration: Histogram<"operation">;
  private readonly errors: Counter<"operation">;
  private readonly subscriberStalls: Counter;
  private loggedAt = 0;
  private connectedOnce = false;

  constructor(private readonly options: SharedStoreOptions) {
    this.redis = new Redis(options.url, {
      keyPrefix: options.keyPrefix,
      commandTimeout: options.commandTimeoutMs,
      connectTimeout: Math.max(1_000, options.commandTimeoutMs * 4),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times) => Math.min(times * 100, RECONNECT_MAX_MS),
      // Client-side names help an operator find the gateways in CLIENT LIST.
      connectionName: "lightfleet-gateway",
    });
    const metrics = createSharedStoreMetrics(options.registry, () => this.ready);
    this.duration = metrics.duration;
    this.errors = metrics.errors;
    this.subscriberStalls = metrics.subscriberStalls;
    this.redis.on("error", (error: Error) => this.logFailure(error, "shared store (Redis) connection error"));
    this.redis.on("ready", () => {
      this.connectedOnce = true;
      options.logger.info("shared store (Redis) connected");
    });
  }

  /** True while commands can be sent (connected); a command sent otherwise fails at once. */
  get ready(): boolean {
    return this.redis.status === "ready";
  }

  /** Runs one command (or script), timed and counted under `operation`; rejects as the command does. */
  async run<T>(operation: StoreOperation, command: (redis: Redis) => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await command(this.redis);
    } catch (error) {
      this.errors.inc({ operation });
      // Before the first connection a command fails at once ("not writeable"): the gateway is starting, and a
      // connection that cannot be made says why in its own error.
      if (this.connectedOnce) this.logFailure(error, `shared store (Redis) command failed: ${operation}`);
      throw error;
    } finally {
      this.duration.observe({ operation }, (performance.now() - started) / 1000);
    }
  }

  /** A channel's name in Redis: pub/sub channels are not keys, so the key prefix is added here. */
  channel(name: string): string {
    return `${this.options.keyPrefix}${name}`;
  }

  /** Follows a pub/sub channel (one listener per channel) on a connection of its own; returns the unsubscribe. */
  listen(channel: string, listener: ChannelListener): () => void {
    this.listeners.set(channel, listener);
    const subscriber = this.subscriber ?? this.openSubscriber();
    if (subscriber.status === "ready") this.subscribe(subscriber, channel);
    return () => {
      this.listeners.delete(channel);
      this.subscribed.delete(channel);
      if (subscriber.status === "ready") subscriber.unsubscribe(channel).catch(() => undefined);
    };
  }

  /** True while the channel's subscription is in place (no message can have been missed since it was made). */
  listening(channel: string): boolean {
    return this.subscribed.has(channel) && this.subscriber?.status === "ready";
  }

  async close(): Promise<void> {
    this.watch?.stop();
    this.subscriber?.disconnect();
    this.redis.disconnect();
  }

  private openSubscriber(): Redis {
    // Queued commands wait for the connection here (SUBSCRIBE only); subscriptions are made again by hand after a
    // reconnection, so the listener learns when they are back.
    const subscriber = this.redis.duplicate({
      enableOfflineQueue: true,
      autoResubscribe: false,
      // Channel names carry the prefix already (see `channel`).
      keyPrefix: "",
      connectionName: "lightfleet-gateway-subscriber",
      // The watch's PING deadline bounds this connection's commands instead.
      commandTimeout: undefined,
      // A stalled connection is dropped at once: nothing on it is worth the wait for a goodbye.
      disconnectTimeout: 0,
    });
    this.subscriber = subscriber;
    const { intervalMs, deadlineMs, timers } = this.options.subscriberPing ?? {};
    const deadline = deadlineMs ?? SUBSCRIBER_DEADLINE_MS;
    const watch = new SubscriberWatch({
      intervalMs: intervalMs ?? SUBSCRIBER_PING_MS,
      deadlineMs: deadline,
      timers,
      ping: () => subscriber.ping(),
      stalled: () => {
        // Packets stopped but the socket is open: messages may be missed from here on, so the listeners stop
        // trusting what they learnt from it before the new connection subscribes (and they read again).
        this.subscriberStalls.inc();
        this.options.logger.warn(
          { deadlineMs: deadline },
          "shared store (Redis) subscriber connection stalled (PING unanswered); reconnecting it",
        );
        this.loseSubscriptions();
        subscriber.disconnect(true);
      },
    });
    this.watch = watch;
    subscriber.on("error", (error: Error) => this.logFailure(error, "shared store (Redis) subscriber error"));
    subscriber.on("ready", () => {
      watch.start();
      for (const channel of this.listeners.keys()) this.subscribe(subscriber, channel);
    });
    subscriber.on("close", () => {
      watch.stop();
      this.loseSubscriptions();
    });
    subscriber.on("message", (channel: string, text: string) => this.listeners.get(channel)?.message(text));
    return subscriber;
  }

  private loseSubscriptions(): void {
    const lost = [...this.subscribed];
    this.subscribed.clear();
    for (const channel of lost) this.listeners.get(channel)?.subscribed(false);
  }

  private subscribe(subscriber: Redis, channel: string): void {
    subscriber.subscribe(channel).then(
      () => {
        const listener = this.listeners.get(channel);
        if (!listener || subscriber.status !== "ready") return;
        this.subscribed.add(channel);
        listener.subscribed(true);
      },
      (error: unknown) => {
        this.logFailure(error, "shared store (Redis): could not subscribe");
        // Until it is in place every call asks Redis: try again while the connection lasts (a new connection
        // subscribes anyway).
        if (subscriber.status === "ready")
          setTimeout(() => {
            if (this.listeners.has(channel) && subscriber.status === "ready")
              this.subscribe(subscriber, channel);
          }, RESUBSCRIBE_MS).unref();
      },
    );
  }

  private logFailure(error: unknown, message: string): void {
    const now = Date.now();
    if (now - this.loggedAt < LOG_EVERY_MS) return;
    this.loggedAt = now;
    this.options.logger.warn({ err: error }, message);
  }
}

/** The Redis server's clock in milliseconds, in a Lua script: every replica judges time by the same clock. */
export const LUA_NOW =
  "local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";
