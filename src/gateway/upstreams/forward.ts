import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError, isJsonRpcResponse } from "../../rpc/jsonRpc.js";

/**
 * Sends one call to a node and returns its JSON-RPC answer as it came (errors included). Transport failures throw
 * RpcTransportError with the reason, so the caller can tell "the node said no" from "the node is not there".
 */
export async function forward(
  url: string,
  request: JsonRpcRequest,
  timeoutMs: number,
): Promise<JsonRpcResponse> {
  const upstreamRequest = { ...request, id: 1 };
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(upstreamRequest),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const timeout = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
    throw new RpcTransportError(
      timeout ? `no answer within ${timeoutMs} ms` : "connection failed",
      timeout ? "timeout" : "connection",
      { cause: error },
    );
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch (error) {
    throw new RpcTransportError(
      `HTTP ${response.status} without a JSON body`,
      response.ok ? "malformed" : "http-status",
      { cause: error },
    );
  }
  if (!isJsonRpcResponse(body))
    throw new RpcTransportError(`HTTP ${response.status}: not a JSON-RPC answer`, "malformed");
  return { ...body, id: request.id ?? null };
}
