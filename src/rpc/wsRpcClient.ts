import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import WebSocket from "ws";
import { leadingId } from "./answerLayout.js";
import { backoffDelay } from "./backoff.js";
import type { JsonRpcErrorObject } from "./jsonRpc.js";
import { RpcError, RpcTransportError } from "./jsonRpc.js";

export interface WsRpcClientOptions {
  url: string;
  /** Timeout of each call, and of the connection handshake. */
  timeoutMs: number;
  reconnectBaseMs?: number;
  reconnectMaxMs?: number;
  /** A ping is sent this often; a connection that has not answered the previous one is dropped and re-made. */
  pingIntervalMs?: number;
}

interface Pending {
  /** The answer's JSON text is wanted as it came, errors included (callText). */
  text: boolean;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

interface SubscriptionEntry {
  params: unknown[];
  onData: (data: unknown) => void;
  /** Server-side id on the current connection. */
  serverId?: string;
}

export interface WsSubscription {
  unsubscribe(): void;
}

/**
 * JSON-RPC over WebSocket with automatic reconnection (exponential backoff) and subscriptions that survive it:
 * after every reconnect each subscription is made again and `resubscribed` is emitted, so the owner can back-fill
 * what it may have missed.
 *
 * Events: `open`, `close` (reason), `resubscribed`, `error` (Error; for logging only, and only emitted when someone
 * listens, so an unobserved failure never crashes the process).
 */
export class WsRpcClient extends EventEmitter {
  private socket: WebSocket | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly subscriptions = new Set<SubscriptionEntry>();
  private readonly byServerId = new Map<string, SubscriptionEntry>();
  private attempt = 0;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private awaitingPong = false;
  /** The connection under the WebSocket, held to cork it (see `write`). */
  private wire: Duplex | undefined;
  private flushScheduled = false;
  /** closeWhenIdle was called: close once the last pending call is settled. */
  private closing = false;

  constructor(private readonly options: WsRpcClientOptions) {
    super();
  }

  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Bytes sent but not yet written to the socket: a node that stopped reading shows here first. */
  get backlog(): number {
    return this.socket?.bufferedAmount ?? 0;
  }

  connect(): void {
    if (this.closed || this.socket) return;
    const socket = new WebSocket(this.options.url, { handshakeTimeout: this.options.timeoutMs });
    this.socket = socket;
    socket.on("open", () => {
      this.attempt = 0;
      this.startPings(socket);
      this.emit("open");
      void this.resubscribeAll();
    });
    socket.on("upgrade", (response) => (this.wire = response.socket));
    socket.on("message", (data) => this.onMessage(data.toString()));
    socket.on("pong", () => (this.awaitingPong = false));
    socket.on("error", (error) => this.report(error));
    socket.on("close", (code) => this.onClose(socket, `closed (${code})`));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.pingTimer);
    this.socket?.terminate();
    this.socket = undefined;
    this.failPending("client closed");
  }

  /** Takes no more calls and closes once those in flight are answered (or time out). */
  closeWhenIdle(): void {
    this.closing = true;
    if (this.pending.size === 0) this.close();
  }

  call<T = unknown>(method: string, params: unknown[] = [], timeoutMs = this.options.timeoutMs): Promise<T> {
    return this.send(method, params, timeoutMs, false) as Promise<T>;
  }

  /**
   * One call whose answer comes back as the node's JSON text, whatever it says (errors included), for a caller that
   * passes it on: an answer that begins with its id (as geth, reth and anvil write them) is matched without being
   * parsed. Rejects only when there is no answer.
   */
  callText(method: string, params: unknown, timeoutMs = this.options.timeoutMs): Promise<string> {
    return this.send(method, params, timeoutMs, true) as Promise<string>;
  }

  private send(method: string, params: unknown, timeoutMs: number, text: boolean): Promise<unknown> {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN || this.closing) {
      return Promise.reject(new RpcTransportError(`${this.options.url} is not connected`, "connection"));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new RpcTransportError(
            `${method}: no answer from ${this.options.url} within ${timeoutMs} ms`,
            "timeout",
          ),
        );
        this.closeIfDone();
      }, timeoutMs);
      this.pending.set(id, { text, resolve, reject, timer });
      this.write(socket, JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  /**
   * Calls sent in one turn of the event loop leave in one write: the connection is corked at the first and uncorked
   * once the turn's I/O has been handled. Under load that puts many calls in one system call, which costs more than
   * the rest of a call on a loopback or a virtual machine's network.
   */
  private write(socket: WebSocket, text: string): void {
    const wire = this.wire;
    if (wire && !this.flushScheduled) {
      this.flushScheduled = true;
      wire.cork();
      setImmediate(() => {
        this.flushScheduled = false;
        wire.uncork();
      });
    }
    socket.send(text);
  }

  /** Subscribes (e.g. `["newHeads"]`) now if connected and again after every reconnect. */
  subscribe(params: unknown[], onData: (data: unknown) => void): WsSubscription {
    const entry: SubscriptionEntry = { params, onData };
    this.subscriptions.add(entry);
    if (this.connected) void this.subscribeOne(entry);
    return {
      unsubscribe: () => {
        this.subscriptions.delete(entry);
        if (entry.serverId) {
          this.byServerId.delete(entry.serverId);
          if (this.connected) this.call("eth_unsubscribe", [entry.serverId]).catch(() => undefined);
        }
      },
    };
  }

  private async resubscribeAll(): Promise<void> {
    this.byServerId.clear();
    await Promise.all([...this.subscriptions].map((entry) => this.subscribeOne(entry)));
    if (this.subscriptions.size > 0) this.emit("resubscribed");
  }

  private async subscribeOne(entry: SubscriptionEntry): Promise<void> {
    try {
      const serverId = await this.call<string>("eth_subscribe", entry.params);
      if (!this.subscriptions.has(entry)) {
        this.call("eth_unsubscribe", [serverId]).catch(() => undefined);
        return;
      }
      entry.serverId = serverId;
      this.byServerId.set(serverId, entry);
    } catch (error) {
      this.report(error instanceof Error ? error : new Error(String(error)));
      // A subscription that cannot be made is as bad as a dead connection: start over.
      this.socket?.terminate();
    }
  }

  private onMessage(text: string): void {
    const lead = leadingId(text);
    const answered = lead && this.pending.get(lead.id);
    if (answered && answered.text) return this.settle(lead.id, answered, () => answered.resolve(text));
    let message: {
      id?: number;
      result?: unknown;
      error?: JsonRpcErrorObject;
      method?: string;
      params?: { subscription?: string; result?: unknown };
    };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      this.emit(
        "error",
        new RpcTransportError(`${this.options.url} sent a frame that is not JSON`, "malformed"),
      );
      return;
    }
    if (message.method === "eth_subscription" && message.params?.subscription !== undefined) {
      this.byServerId.get(message.params.subscription)?.onData(message.params.result);
      return;
    }
    if (typeof message.id !== "number") return;
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.settle(message.id, pending, () => {
      if (pending.text) pending.resolve(text);
      else if (message.error)
        pending.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else pending.resolve(message.result);
    });
  }

  private settle(id: number, pending: Pending, answer: () => void): void {
    this.pending.delete(id);
    clearTimeout(pending.timer);
    answer();
    this.closeIfDone();
  }

  private closeIfDone(): void {
    if (this.closing && !this.closed && this.pending.size === 0) this.close();
  }

  private startPings(socket: WebSocket): void {
    const interval = this.options.pingIntervalMs;
    if (!interval) return;
    clearInterval(this.pingTimer);
    this.awaitingPong = false;
    this.pingTimer = setInterval(() => {
      if (this.awaitingPong) {
        socket.terminate();
        return;
      }
      this.awaitingPong = true;
      socket.ping();
    }, interval);
    this.pingTimer.unref();
  }

  private onClose(socket: WebSocket, reason: string): void {
    if (this.socket !== socket) return;
    this.socket = undefined;
    this.wire = undefined;
    clearInterval(this.pingTimer);
    this.failPending(reason);
    this.emit("close", reason);
    if (this.closed) return;
    const delay = backoffDelay(
      this.attempt++,
      this.options.reconnectBaseMs ?? 250,
      this.options.reconnectMaxMs ?? 10_000,
    );
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  private report(error: Error): void {
    if (this.listenerCount("error") > 0) this.emit("error", error);
  }

  private failPending(reason: string): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new RpcTransportError(`${this.options.url}: ${reason}`, "connection"));
      this.pending.delete(id);
    }
    // A connection lost while closing when idle is not made again.
    this.closeIfDone();
  }
}
