import type { Writable } from "node:stream";
import WebSocket from "ws";
import type { Logger } from "../../log/logger.js";
import type { GatewayMetrics } from "../../metrics/gatewayMetrics.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import type { CallExecutor } from "../pipeline/callExecutor.js";
import { errorResponse, parseBody } from "../rpc/parseRequest.js";
import type { ParsedBody } from "../rpc/parseRequest.js";
import { serializeBody } from "../rpc/serialize.js";
import { answer } from "../pipeline/answer.js";
import type { AnswerSteps, Refusal } from "../pipeline/answer.js";
import type { FeedBlock } from "./headFeed.js";
import { newSubscriptionId, subscriptionIdBytes } from "./headsNotification.js";
import type { Log, LogFilter } from "./logFilter.js";
import { matchesFilter, parseLogFilter } from "./logFilter.js";
import type { NetworkStreams, StreamListener } from "./networkStreams.js";

export interface WsLimits {
  maxBatchLength: number;
  maxSubscriptions: number;
  /** A client that lets this much pile up unread is cut off (it cannot keep up with the chain). */
  maxBufferedBytes: number;
  /** Calls of this connection answered at once; beyond, the gateway stops reading until answers go out. */
  maxInFlight: number;
}

/** What a network gives each of its connections, made once per network (nothing per connection but the session). */
export interface WsNetwork {
  /** The network's call handler. */
  handler: Pick<CallExecutor, "network" | "handle">;
  streams: NetworkStreams;
  limits: WsLimits;
  /** The per-address rate limit: the refusal to send when a frame's calls do not fit. */
  admit: (parsed: ParsedBody, address: string) => Refusal | Promise<Refusal>;
  metrics: GatewayMetrics;
  logger: Logger;
  /** The open sessions (of every network), each in it from its start to its close. */
  sessions: Set<WsSession>;
}

/** The session of each socket, found from the socket in its listeners (shared by every connection: no closures). */
const SESSION = Symbol("session");
type SessionSocket = WebSocket & { [SESSION]: WsSession };

/**
 * A newHeads subscription keeps its id's bytes, written into every notification frame, and the lowest head it may be
 * sent (-1: any).
 */
type HeadsSubscription = { type: "newHeads"; idBytes: Buffer; floor: number };
type Subscription = HeadsSubscription | { type: "logs"; filter: LogFilter };

const sessionOf = (socket: WebSocket): WsSession => (socket as SessionSocket)[SESSION];
function onMessage(this: WebSocket, data: WebSocket.RawData, isBinary: boolean): void {
  sessionOf(this).onMessage(data, isBinary);
}
function onPong(this: WebSocket): void {
  sessionOf(this).alive = true;
}
function onClose(this: WebSocket): void {
  sessionOf(this).cleanup();
}
function onError(this: WebSocket, error: Error): void {
  sessionOf(this).network.logger.debug({ err: error.message }, "gateway: client socket error");
}

/**
 * One client WebSocket on a network's `/ws`: calls routed like HTTP, and `newHeads` / `logs` subscriptions served
 * from the network's shared streams, so a client keeps its subscription ids whichever node the gateway follows.
 *
 * Thousands of these are held at once, so a session keeps only what is its own: the network's parts are shared
 * (WsNetwork), the socket's listeners are functions shared by every session, the session is its own stream listener
 * and its own steps of answering a frame (the same answer as HTTP's, with its subscriptions in front), and pings are
 * sent by one timer for every session (WsUpgrades).
 */
export class WsSession implements StreamListener, AnswerSteps {
  private readonly subscriptions = new Map<string, Subscription>();
  /** The newHeads subscriptions, in the order made: what each block walks, with no iterator over the map. */
  private heads: HeadsSubscription[] = [];
  /** How many of the subscriptions are `logs` ones: with none, a block is written at once. */
  private logsSubscriptions = 0;
  /** Notifications are sent in block order, each after the previous block's logs; none made until one is queued. */
  private outbox: Promise<void> | undefined;
  /** Answered the last ping (or has not been pinged yet). */
  alive = true;
  private inFlight = 0;
  /** Notification steps waiting in the outbox. */
  private queued = 0;
  /** Frames read while maxInFlight were being answered; bounded by what the paused socket had already read. */
  private waiting: Array<[WebSocket.RawData, boolean]> | undefined;

  constructor(
    private readonly socket: WebSocket,
    /** The socket `ws` upgraded: newHeads frames, framed once per block, are written to it directly. */
    private readonly frames: Writable,
    readonly network: WsNetwork,
    /** The client's address, which the rate limit and the filters count by. */
    private readonly address: string,
  ) {
    network.metrics.wsConnections.inc({ network: network.handler.network });
    network.streams.add(this);
    network.sessions.add(this);
    (socket as SessionSocket)[SESSION] = this;
    socket.on("message", onMessage);
    socket.on("pong", onPong);
    socket.on("close", onClose);
    socket.on("error", onError);
  }

  private get handler(): WsNetwork["handler"] {
    return this.network.handler;
  }

  private get limits(): WsLimits {
    return this.network.limits;
  }

  private get metrics(): GatewayMetrics {
    return this.network.metrics;
  }

  private get logger(): Logger {
    return this.network.logger;
  }

  /** Closes with 1001 (going away), as on shutdown. */
  close(code = 1001, reason = "server shutting down"): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.close(code, reason);
  }

  /** Pings the client; one that did not answer the last ping is cut off (called by one timer for all sessions). */
  ping(): void {
    if (!this.alive) {
      this.metrics.wsDisconnects.inc({ network: this.handler.network, reason: "ping-timeout" });
      this.socket.terminate();
      return;
    }
    this.alive = false;
    if (this.socket.readyState === WebSocket.OPEN) this.socket.ping();
  }

  cleanup(): void {
    this.network.streams.remove(this);
    this.network.sessions.delete(this);
    this.waiting = undefined;
    const network = this.handler.network;
    this.metrics.wsConnections.dec({ network });
    for (const sub of this.subscriptions.values())
      this.metrics.wsSubscriptions.dec({ network, type: sub.type });
    this.subscriptions.clear();
    this.heads = [];
    this.logsSubscriptions = 0;
  }

  private send(message: JsonRpcResponse | JsonRpcResponse[]): void {
    this.sendText(serializeBody(message));
  }

  private sendText(text: string): void {
    if (this.writable()) this.socket.send(text);
  }

  /** Open and keeping up; a client that lets too much pile up unread is cut off. */
  private writable(): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    if (this.socket.bufferedAmount <= this.limits.maxBufferedBytes) return true;
    this.metrics.wsDisconnects.inc({ network: this.handler.network, reason: "slow-consumer" });
    this.logger.info(
      { buffered: this.socket.bufferedAmount },
      "gateway: cutting off a slow WebSocket client",
    );
    this.socket.terminate();
    return false;
  }

  /**
   * Reads the next frames only while fewer than maxInFlight calls are being answered, so a client that floods the
   * connection with calls is slowed down by TCP instead of multiplying work on the nodes.
   */
  onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.inFlight >= this.limits.maxInFlight) {
      (this.waiting ??= []).push([data, isBinary]);
      if (!this.socket.isPaused) this.socket.pause();
      return;
    }
    void this.answerCounted(data, isBinary);
  }

  private async answerCounted(data: WebSocket.RawData, isBinary: boolean): Promise<void> {
    this.inFlight++;
    try {
      await this.answerFrame(data, isBinary);
    } catch (error) {
      // Never an unhandled rejection (which would end the process) nor a stack trace to the client.
      this.logger.error({ err: error }, "gateway: unexpected failure answering a WebSocket frame");
      this.send(errorResponse(null, RPC_ERROR.INTERNAL_ERROR, "internal error"));
    } finally {
      this.inFlight--;
      const next = this.waiting?.shift();
      if (next) void this.answerCounted(...next);
      else if (this.socket.isPaused && this.socket.readyState === WebSocket.OPEN) this.socket.resume();
    }
  }

  private async answerFrame(data: WebSocket.RawData, isBinary: boolean): Promise<void> {
    if (isBinary) {
      this.send(
        errorResponse(null, RPC_ERROR.INVALID_REQUEST, "invalid request: binary frames are not JSON-RPC"),
      );
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString("utf8")
      : Buffer.from(data as ArrayBuffer).toString("utf8");
    const answered = answer(parseBody(text, this.limits.maxBatchLength), this, this.address);
    const { body } = answered instanceof Promise ? await answered : answered;
    if (body !== undefined) this.send(body);
  }

  /** AnswerSteps: the rate limit of the connection's address. */
  admit(parsed: ParsedBody): Refusal | Promise<Refusal> {
    return this.network.admit(parsed, this.address);
  }

  /** AnswerSteps: one call, with this connection's subscriptions in front of the network's handler. */
  call(request: JsonRpcRequest): JsonRpcResponse | Promise<JsonRpcResponse> {
    if (request.method === "eth_subscribe") return this.subscribe(request);
    if (request.method === "eth_unsubscribe") return this.unsubscribe(request);
    return this.handler.handle(request, this.address);
  }

  private subscribe(request: JsonRpcRequest): JsonRpcResponse | Promise<JsonRpcResponse> {
    const params = Array.isArray(request.params) ? request.params : [];
    if (params[0] !== "newHeads") return this.addSubscription(request, -1);
    const floor = this.network.streams.newHeadsFloor();
    return floor instanceof Promise
      ? floor.then((height) =>
          // Closed meanwhile: nothing to subscribe (the answer goes nowhere).
          this.socket.readyState === WebSocket.OPEN
            ? this.addSubscription(request, height)
            : errorResponse(request.id ?? null, RPC_ERROR.INTERNAL_ERROR, "connection closed"),
        )
      : this.addSubscription(request, floor ?? -1);
  }

  private addSubscription(request: JsonRpcRequest, floor: number): JsonRpcResponse {
    const id = request.id ?? null;
    const params = Array.isArray(request.params) ? request.params : [];
    const network = this.handler.network;
    if (this.subscriptions.size >= this.limits.maxSubscriptions)
      return errorResponse(
        id,
        RPC_ERROR.LIMIT_EXCEEDED,
        `limit exceeded: at most ${this.limits.maxSubscriptions} subscriptions per connection`,
        { limit: this.limits.maxSubscriptions },
      );
    let subscription: Subscription;
    const subscriptionId = newSubscriptionId();
    if (params[0] === "newHeads" && params.length === 1)
      subscription = { type: "newHeads", idBytes: subscriptionIdBytes(subscriptionId), floor };
    else if (params[0] === "logs" && params.length <= 2) {
      const filter = parseLogFilter(params[1]);
      if (typeof filter === "string")
        return errorResponse(id, RPC_ERROR.INVALID_PARAMS, `invalid params: ${filter}`);
      subscription = { type: "logs", filter };
    } else {
      return errorResponse(
        id,
        RPC_ERROR.INVALID_PARAMS,
        'invalid params: supported subscriptions are "newHeads" and "logs"',
      );
    }
    this.subscriptions.set(subscriptionId, subscription);
    if (subscription.type === "newHeads") this.heads.push(subscription);
    else this.logsSubscriptions++;
    this.metrics.wsSubscriptions.inc({ network, type: subscription.type });
    return { jsonrpc: "2.0", id, result: subscriptionId };
  }

  private unsubscribe(request: JsonRpcRequest): JsonRpcResponse {
    const params = Array.isArray(request.params) ? request.params : [];
    const subscriptionId = params[0];
    if (typeof subscriptionId !== "string" || params.length !== 1)
      return errorResponse(
        request.id ?? null,
        RPC_ERROR.INVALID_PARAMS,
        "invalid params: eth_unsubscribe takes a subscription id",
      );
    const subscription = this.subscriptions.get(subscriptionId);
    // As geth answers an id it does not have (never made, or already gone).
    if (!subscription) return errorResponse(request.id ?? null, -32000, "subscription not found");
    this.subscriptions.delete(subscriptionId);
    if (subscription.type === "newHeads") this.heads = this.heads.filter((sub) => sub !== subscription);
    else this.logsSubscriptions--;
    this.metrics.wsSubscriptions.dec({ network: this.handler.network, type: subscription.type });
    return { jsonrpc: "2.0", id: request.id ?? null, result: true };
  }

  private notify(subscription: string, result: unknown): void {
    this.sendText(
      JSON.stringify({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription, result } }),
    );
  }

  /** StreamListener: a new block of the network. */
  onBlock(block: FeedBlock, logs: () => Promise<Log[]>): void {
    if (this.logsSubscriptions > 0) {
      this.enqueue(async () => this.deliver(block, await logs()));
      return;
    }
    if (this.heads.length === 0) return;
    // Heads only and nothing queued: send now, which keeps fan-out to thousands of subscribers to one pass.
    if (this.queued === 0) return this.sendHeads(block);
    this.enqueue(async () => this.sendHeads(block));
  }

  /** A block to a connection with newHeads subscriptions only. */
  private sendHeads(block: FeedBlock): void {
    if (!this.writable()) return;
    for (const sub of this.heads)
      if (block.number >= sub.floor) block.notification.writeTo(this.frames, sub.idBytes);
  }

  /** A block and its logs, each subscription in the order it was made. */
  private deliver(block: FeedBlock, blockLogs: Log[]): void {
    for (const [id, sub] of this.subscriptions) {
      if (sub.type === "newHeads") {
        if (block.number >= sub.floor && this.writable())
          block.notification.writeTo(this.frames, sub.idBytes);
      } else for (const log of blockLogs) if (matchesFilter(log, sub.filter)) this.notify(id, log);
    }
  }

  /** Runs notification work in order; a failed step (logs that could not be fetched) does not stop later ones. */
  private enqueue(task: () => Promise<void>): void {
    this.queued++;
    this.outbox = (this.outbox ?? Promise.resolve())
      .then(task)
      .catch((error: unknown) =>
        this.logger.warn({ err: error }, "gateway: could not deliver a subscription notification"),
      )
      .finally(() => this.queued--);
  }

  /** StreamListener: a block replaced by a reorg. */
  onRemoved(_block: FeedBlock, removedLogs: Promise<Log[]>): void {
    this.enqueue(async () => {
      const logs = await removedLogs;
      for (const [id, sub] of this.subscriptions) {
        if (sub.type !== "logs") continue;
        for (const log of logs)
          if (matchesFilter(log, sub.filter)) this.notify(id, { ...log, removed: true });
      }
    });
  }
}
