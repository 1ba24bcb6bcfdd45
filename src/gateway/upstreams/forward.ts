import { isAscii } from "node:buffer";
import { Pool, errors } from "undici";
import type { Dispatcher } from "undici";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError } from "../../rpc/jsonRpc.js";
import { readNodeAnswer } from "./nodeAnswer.js";

/**
 * One connection pool per node (undici: kept-alive connections, far less overhead per call than node:http's client,
 * which is the gateway's hot path). Pools of nodes that left are closed when they have been idle for a while.
 */
const pools = new Map<string, { pool: Pool; usedAt: number }>();
const IDLE_POOL_MS = 5 * 60_000;

function poolFor(origin: string): Pool {
  const now = Date.now();
  let entry = pools.get(origin);
  if (!entry) {
    entry = { pool: new Pool(origin, { connections: 64, keepAliveTimeout: 30_000 }), usedAt: now };
    pools.set(origin, entry);
    for (const [other, e] of pools)
      if (now - e.usedAt > IDLE_POOL_MS) {
        pools.delete(other);
        void e.pool.close().catch(() => {});
      }
  }
  entry.usedAt = now;
  return entry.pool;
}

/** Closes every pool (tests, shutdown). */
export async function closeUpstreamPools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((e) => e.pool.close().catch(() => {})));
}

/** Parsed node URLs: one URL parse per node, not per call. */
const targets = new Map<string, { origin: string; path: string }>();

function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= 1_000) targets.clear();
    targets.set(url, target);
  }
  return target;
}

const HEADERS = { "content-type": "application/json" };

/**
 * Sends one call to a node and returns its JSON-RPC answer as it came (errors included), with the caller's id. With
 * `raw`, a successful answer keeps its result as the node's JSON text (a RawResult), so it can go back to the client
 * without being parsed and serialized again. Transport failures throw RpcTransportError with the reason, so the
 * caller can tell "the node said no" from "the node is not there".
 *
 * Undici's dispatch API, not request(): the answer is collected in a few buffers instead of going through a stream
 * and its promises, which is most of the cost of a forwarded call.
 */
export function forward(
  url: string,
  request: JsonRpcRequest,
  timeoutMs: number,
  raw = false,
): Promise<JsonRpcResponse> {
  const target = targetOf(url);
  return new Promise((resolve, reject) => {
    let statusCode = 0;
    const chunks: Buffer[] = [];
    const handler: Dispatcher.DispatchHandler = {
      onConnect() {},
      onHeaders(status) {
        statusCode = status;
        return true;
      },
      onData(chunk) {
        chunks.push(chunk);
        return true;
      },
      onComplete() {
        try {
          const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          // A node's answer is ASCII (JSON with escapes): read as Latin-1, a plain copy, and written on as such.
          const ascii = isAscii(bytes);
          const text = bytes.toString(ascii ? "latin1" : "utf8");
          resolve(
            readNodeAnswer(text, request.id ?? null, raw, (cause) => malformed(statusCode, cause), ascii),
          );
        } catch (error) {
          reject(error);
        }
      },
      onError(error) {
        // Before the status line, the node is not there (or too slow); after it, its answer broke off.
        if (statusCode === 0 || error instanceof errors.BodyTimeoutError)
          reject(transportError(error, timeoutMs));
        else reject(malformed(statusCode, error));
      },
    };
    poolFor(target.origin).dispatch(
      {
        method: "POST",
        path: target.path,
        headers: HEADERS,
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: request.method, params: request.params }),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      handler,
    );
  });
}

function transportError(error: unknown, timeoutMs: number): RpcTransportError {
  const timeout = error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError;
  return new RpcTransportError(
    timeout ? `no answer within ${timeoutMs} ms` : "connection failed",
    timeout ? "timeout" : "connection",
    { cause: error },
  );
}

function malformed(statusCode: number, cause: unknown): RpcTransportError {
  return new RpcTransportError(
    `HTTP ${statusCode} without a JSON-RPC answer`,
    statusCode < 400 ? "malformed" : "http-status",
    { cause },
  );
}
