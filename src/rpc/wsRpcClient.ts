import { performance } from "node:perf_hooks";
import { isAscii, isUtf8 } from "node:buffer";
import { EventEmitter } from "node:events";
import type { createConnection } from "node:net";
import type { Duplex } from "node:stream";
import WebSocket from "ws";
import { leadingId } from "./answerLayout.js";
import { maskedTextFrame } from "./maskedTextFrame.js";
import { oneBufferConnection } from "./oneBufferConnection.js";
import { backoffDelay } from "./backoff.js";
import type { JsonRpcErrorObject } from "./jsonRpc.js";
import { RpcError, RpcTransportError } from "./jsonRpc.js";
import { requestText } from "./requestText.js";

export interface WsRpcClientOptions {
  url: string;
  /** Timeout of each call, and of the connection handshake. */
  timeoutMs: number;
  reconnectBaseMs?: number;
  reconnectMaxMs?: number;
  /** A ping is sent this often; a connection that has not answered the previous one is dropped and re-made. */
  pingIntervalMs?: number;
}

/**
 * Where the answer to a call made with `callInto` goes: one of the two, once, never in the turn the call was made.
 */
export interface TextSink {
  /**
   * The answer's JSON text as the node sent it, errors included; `ascii`: its bytes were ASCII (see frameText), so the
   * text is as many bytes as characters. A throw goes to `failed`.
   */
  answered(text: string, ascii: boolean): void;
  failed(error: Error): void;
}

/** One call waiting for its answer: every kind of call is a sink for the answer's text (`call` parses it). */
interface Pending {
  sink: TextSink;
  method: string;
  timeoutMs: number;
  /** When the call times out (performance.now()). */
  deadline: number;
}

/** A `call`'s answer: its result or its JSON-RPC error, parsed, to a promise. */
class ParsedAnswer implements TextSink {
  constructor(
    private readonly resolve: (value: unknown) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  answered(text: string): void {
    let message;
    try {
      message = JSON.parse(text) as { result?: unknown; error?: JsonRpcErrorObject };
    } catch (cause) {
      this.reject(new RpcTransportError("the node's answer is not JSON", "malformed", { cause }));
      return;
    }
    if (message.error)
      this.reject(new RpcError(message.error.code, message.error.message, message.error.data));
    else this.resolve(message.result);
  }

  failed(error: Error): void {
    this.reject(error);
  }
}

/**
 * A client's frames are masked with this key: none. Masking keeps a browser's script from choosing the bytes an
 * intermediary sees; these connections go from the gateway or the controller to its own nodes, and a zero key lets
 * `ws` send the text as it is, where a random one made it copy and XOR every call.
 */
const zeroMask = (mask: Uint8Array) => mask.fill(0);

/**
 * A text frame's text; undefined when it is not UTF-8. A node's answers are ASCII (JSON with escapes), read as
 * Latin-1, a plain copy: ws's UTF-8 check and the UTF-8 decoding each went over every byte of the answer (a block is
 * kilobytes). Anything else is checked and decoded as UTF-8.
 */
function frameText(data: Buffer, ascii: boolean): string | undefined {
  if (ascii) return data.toString("latin1");
  return isUtf8(data) ? data.toString("utf8") : undefined;
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
  /**
   * One timer for every pending call's timeout, due at the earliest deadline (a timer set and cleared per call cost
   * more than the rest of sending it); undefined when no call is pending or it has not been set yet.
   */
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweepAt = Infinity;

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
    const socket = new WebSocket(this.options.url, {
      handshakeTimeout: this.options.timeoutMs,
      generateMask: zeroMask,
      skipUTF8Validation: true,
      // wss: goes through TLS, ws's own connection. (ws calls it with options only, not net's other overloads.)
      ...(this.options.url.startsWith("ws:")
        ? { createConnection: oneBufferConnection as typeof createConnection }
        : {}),
    });
    this.socket = socket;
    socket.on("open", () => {
      this.attempt = 0;
      this.startPings(socket);
      this.emit("open");
      void this.resubscribeAll();
    });
    socket.on("upgrade", (response) => (this.wire = response.socket));
    socket.on("message", (data: Buffer) => {
      // Told to callText's reader too: an ASCII answer goes on to a client as Latin-1, its length its bytes'.
      const ascii = isAscii(data);
      const text = frameText(data, ascii);
      if (text !== undefined) return this.onMessage(text, ascii);
      // What ws does with a text frame that is not UTF-8 (its own check is off, see frameText).
      this.report(new RpcTransportError(`${this.options.url} sent a frame that is not UTF-8`, "malformed"));
      socket.terminate();
    });
    socket.on("pong", () => (this.awaitingPong = false));
    socket.on("error", (error) => this.report(error));
    socket.on("close", (code) => this.onClose(socket, `closed (${code})`));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
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
    if (!this.open()) return Promise.reject(this.notConnected());
    return new Promise((resolve, reject) =>
      this.send(method, params, timeoutMs, new ParsedAnswer(resolve as (value: unknown) => void, reject)),
    );
  }

  /** One call whose answer comes back as the node's JSON text, whatever it says (errors included); see callInto. */
  callText(method: string, params: unknown, timeoutMs = this.options.timeoutMs): Promise<string> {
    if (!this.open()) return Promise.reject(this.notConnected());
    return new Promise((resolve, reject) =>
      this.send(method, params, timeoutMs, { answered: resolve, failed: reject }),
    );
  }

  /**
   * One call whose answer's text goes to `sink` as the node sent it (errors included), for a caller that passes it on:
   * an answer that begins with its id (as geth, reth and anvil write them) is matched without being parsed. No
   * promise: the answer is handed on in the turn its frame is read. False, and the sink is never called, when the
   * connection is not open (or closing when idle): the caller sends the call another way.
   */
  callInto(method: string, params: unknown, timeoutMs: number, sink: TextSink): boolean {
    if (!this.open()) return false;
    this.send(method, params, timeoutMs, sink);
    return true;
  }

  /** Open and taking calls. */
  private open(): boolean {
    return this.socket !== undefined && this.socket.readyState === WebSocket.OPEN && !this.closing;
  }

  private notConnected(): RpcTransportError {
    return new RpcTransportError(`${this.options.url} is not connected`, "connection");
  }

  /** Sends one call on the open socket: its answer's text goes to `sink`. */
  private send(method: string, params: unknown, timeoutMs: number, sink: TextSink): void {
    const socket = this.socket!;
    const id = this.nextId++;
    const deadline = performance.now() + timeoutMs;
    this.pending.set(id, { sink, method, timeoutMs, deadline });
    if (deadline < this.sweepAt) this.sweepAfter(timeoutMs, deadline);
    this.write(socket, requestText(id, method, params));
  }

  /** Sets the one timeout timer to go off at `at`, `ms` from now. */
  private sweepAfter(ms: number, at: number): void {
    clearTimeout(this.sweepTimer);
    this.sweepAt = at;
    // Unref'd: the open socket keeps the process up while calls are pending, and a timer left for calls answered
    // since must not.
    this.sweepTimer = setTimeout(() => this.sweep(), Math.max(0, ms)).unref();
  }

  /** Times out every pending call past its deadline, then sets the timer for the earliest one left. */
  private sweep(): void {
    this.sweepTimer = undefined;
    this.sweepAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const [id, pending] of this.pending) {
      if (pending.deadline > now) {
        next = Math.min(next, pending.deadline);
        continue;
      }
      this.pending.delete(id);
      pending.sink.failed(
        new RpcTransportError(
          `${pending.method}: no answer from ${this.options.url} within ${pending.timeoutMs} ms`,
          "timeout",
        ),
      );
    }
    if (next !== Infinity) this.sweepAfter(next - now, next);
    this.closeIfDone();
  }

  /**
   * Calls sent in one turn of the event loop leave in one write: the connection is corked at the first and uncorked
   * once the turn's I/O has been handled. Under load that puts many calls in one system call, which costs more than
   * the rest of a call on a loopback or a virtual machine's network.
   */
  private write(socket: WebSocket, text: string): void {
    const wire = this.wire;
    if (!wire) return socket.send(text);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      wire.cork();
      setImmediate(() => {
        this.flushScheduled = false;
        wire.uncork();
      });
    }
    // One chunk per call, its frame written whole (maskedTextFrame); text beyond ASCII goes through ws.
    const frame = maskedTextFrame(text);
    if (frame === undefined) socket.send(text);
    else wire.write(frame, "latin1");
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

  private onMessage(text: string, ascii: boolean): void {
    const lead = leadingId(text);
    const answered = lead && this.pending.get(lead.id);
    if (answered) return this.settle(lead.id, answered.sink, text, ascii);
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
    // An answer in another layout than geth's, anvil's and reth's (a `call`'s is parsed again: rare).
    const pending = this.pending.get(message.id);
    if (pending) this.settle(message.id, pending.sink, text, ascii);
  }

  /** A call answered: its text to its sink (a throw there fails the call). */
  private settle(id: number, sink: TextSink, text: string, ascii: boolean): void {
    this.pending.delete(id);
    try {
      sink.answered(text, ascii);
    } catch (error) {
      sink.failed(error instanceof Error ? error : new Error(String(error)));
    }
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
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    this.sweepAt = Infinity;
    for (const [id, p] of this.pending) {
      p.sink.failed(new RpcTransportError(`${this.options.url}: ${reason}`, "connection"));
      this.pending.delete(id);
    }
    // A connection lost while closing when idle is not made again.
    this.closeIfDone();
  }
}
