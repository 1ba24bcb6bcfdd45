import { request } from "undici";
import type { JsonRpcRequest, JsonRpcResponse } from "./jsonRpc.js";
import { RpcError, RpcTransportError, isJsonRpcResponse } from "./jsonRpc.js";

const JSON_HEADERS = { "content-type": "application/json" };

export interface RpcCall {
  method: string;
  params?: unknown[];
}

/**
 * A minimal JSON-RPC client over HTTP for probes: one POST per call or batch, a hard timeout on each, no retries
 * (a probe that fails is itself the observation). A plain POST rather than an ethers provider, which would batch,
 * retry and poll on its own schedule.
 */
export class HttpRpcClient {
  private nextId = 1;

  constructor(
    readonly url: string,
    private readonly timeoutMs: number,
  ) {}

  async call<T = unknown>(method: string, params: unknown[] = [], timeoutMs = this.timeoutMs): Promise<T> {
    const id = this.nextId++;
    const response = await this.post({ jsonrpc: "2.0", id, method, params }, timeoutMs);
    if (!isJsonRpcResponse(response) || response.id !== id) {
      throw new RpcTransportError(`${method}: malformed JSON-RPC response from ${this.url}`, "malformed");
    }
    if ("error" in response)
      throw new RpcError(response.error.code, response.error.message, response.error.data);
    return response.result as T;
  }

  /**
   * Sends several calls in one batch; each result is a value or an RpcError, in call order. A server that does not
   * answer batches correctly gets the calls one by one instead.
   */
  async batch(calls: RpcCall[], timeoutMs = this.timeoutMs): Promise<Array<unknown>> {
    const firstId = this.nextId;
    this.nextId += calls.length;
    const body: JsonRpcRequest[] = calls.map((c, i) => ({
      jsonrpc: "2.0",
      id: firstId + i,
      method: c.method,
      params: c.params ?? [],
    }));
    const response = await this.post(body, timeoutMs);
    if (!Array.isArray(response) || !response.every(isJsonRpcResponse)) {
      return Promise.all(
        calls.map((c) => this.call(c.method, c.params, timeoutMs).catch((e: unknown) => settleError(e))),
      );
    }
    const byId = new Map((response as JsonRpcResponse[]).map((r) => [r.id, r]));
    return body.map((request) => {
      const r = byId.get(request.id ?? null);
      if (!r) return new RpcTransportError(`${request.method}: missing from the batch response`, "malformed");
      return "error" in r ? new RpcError(r.error.code, r.error.message, r.error.data) : r.result;
    });
  }

  /**
   * One POST with undici's request(), not fetch(): fetch builds web streams, headers objects and a Response for every
   * call, which made a gateway's head polls (several per second per node) cost more CPU than thousands of calls.
   */
  private async post(body: unknown, timeoutMs: number): Promise<unknown> {
    let status: number;
    let text: string;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await request(this.url, {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify(body),
        signal,
      });
      status = res.statusCode;
      try {
        text = await res.body.text();
      } catch (error) {
        if (signal.aborted) throw error;
        throw new RpcTransportError(`${this.url}: response cut off: ${causeOf(error)}`, "connection", {
          cause: error,
        });
      }
    } catch (error) {
      if (error instanceof RpcTransportError) throw error;
      const timedOut = signal.aborted;
      throw new RpcTransportError(
        timedOut
          ? `no answer from ${this.url} within ${timeoutMs} ms`
          : `cannot reach ${this.url}: ${causeOf(error)}`,
        timedOut ? "timeout" : "connection",
        { cause: error },
      );
    }
    if ((status < 200 || status >= 300) && !text.startsWith("{") && !text.startsWith("[")) {
      throw new RpcTransportError(`${this.url} answered HTTP ${status}`, "http-status");
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new RpcTransportError(
        `${this.url} answered something that is not JSON (HTTP ${status})`,
        "malformed",
      );
    }
  }
}

function settleError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function causeOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
