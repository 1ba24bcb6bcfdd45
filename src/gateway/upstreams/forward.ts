import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError, isJsonRpcResponse } from "../../rpc/jsonRpc.js";

/** Kept-alive connections to the nodes: a new TCP connection per call would cost more than the call itself. */
const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });

/**
 * Sends one call to a node and returns its JSON-RPC answer as it came (errors included). Transport failures throw
 * RpcTransportError with the reason, so the caller can tell "the node said no" from "the node is not there".
 * Plain node:http with a keep-alive agent: the hot path of the gateway, where fetch's stream machinery costs most.
 */
export function forward(url: string, request: JsonRpcRequest, timeoutMs: number): Promise<JsonRpcResponse> {
  const body = JSON.stringify({ ...request, id: 1 });
  const https = url.startsWith("https:");
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (error: RpcTransportError) => {
      if (settled) return;
      settled = true;
      req.destroy();
      reject(error);
    };
    const req = (https ? httpsRequest : httpRequest)(
      url,
      {
        method: "POST",
        agent: https ? httpsAgent : httpAgent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", (error) =>
          fail(new RpcTransportError("connection lost", "connection", { cause: error })),
        );
        res.on("end", () => {
          if (settled) return;
          let parsed: unknown;
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          } catch (error) {
            const ok = (res.statusCode ?? 500) < 400;
            return fail(
              new RpcTransportError(
                `HTTP ${res.statusCode} without a JSON body`,
                ok ? "malformed" : "http-status",
                { cause: error },
              ),
            );
          }
          if (!isJsonRpcResponse(parsed))
            return fail(new RpcTransportError(`HTTP ${res.statusCode}: not a JSON-RPC answer`, "malformed"));
          settled = true;
          resolve({ ...parsed, id: request.id ?? null });
        });
      },
    );
    req.on("timeout", () => fail(new RpcTransportError(`no answer within ${timeoutMs} ms`, "timeout")));
    req.on("error", (error) =>
      fail(new RpcTransportError("connection failed", "connection", { cause: error })),
    );
    req.end(body);
  });
}
