import { Pool, errors } from "undici";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError, isJsonRpcResponse } from "../../rpc/jsonRpc.js";

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

/**
 * Sends one call to a node and returns its JSON-RPC answer as it came (errors included). Transport failures throw
 * RpcTransportError with the reason, so the caller can tell "the node said no" from "the node is not there".
 */
export async function forward(
  url: string,
  request: JsonRpcRequest,
  timeoutMs: number,
): Promise<JsonRpcResponse> {
  const target = new URL(url);
  let response;
  try {
    response = await poolFor(target.origin).request({
      method: "POST",
      path: `${target.pathname}${target.search}`,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...request, id: 1 }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  } catch (error) {
    const timeout = error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError;
    throw new RpcTransportError(
      timeout ? `no answer within ${timeoutMs} ms` : "connection failed",
      timeout ? "timeout" : "connection",
      { cause: error },
    );
  }
  let body: unknown;
  try {
    body = await response.body.json();
  } catch (error) {
    const timeout = error instanceof errors.BodyTimeoutError;
    if (timeout) throw new RpcTransportError(`no answer within ${timeoutMs} ms`, "timeout", { cause: error });
    throw new RpcTransportError(
      `HTTP ${response.statusCode} without a JSON body`,
      response.statusCode < 400 ? "malformed" : "http-status",
      { cause: error },
    );
  }
  if (!isJsonRpcResponse(body))
    throw new RpcTransportError(`HTTP ${response.statusCode}: not a JSON-RPC answer`, "malformed");
  return { ...body, id: request.id ?? null };
}
