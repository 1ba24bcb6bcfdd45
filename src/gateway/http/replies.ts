import type { ServerResponse } from "node:http";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { errorResponse } from "../rpc/parseRequest.js";

/** A JSON answer with its length. */
export function reply(
  res: ServerResponse,
  status: number,
  text: string,
  extra?: Record<string, string>,
): void {
  res.writeHead(
    status,
    extra === undefined
      ? { "content-type": "application/json", "content-length": Buffer.byteLength(text) }
      : { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...extra },
  );
  res.end(text);
}

/** A JSON-RPC error answer with no id, for a request refused before its body was read or parsed. */
export function replyError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  extra?: Record<string, string>,
): void {
  reply(res, status, JSON.stringify(errorResponse(null, code, message)), extra);
}

/** 413 for a body over the limit; the connection closes, since the rest of the body is not read. */
export function replyTooLarge(res: ServerResponse, maxBodyBytes: number): void {
  replyError(res, 413, RPC_ERROR.INVALID_REQUEST, `request body larger than ${maxBodyBytes} bytes`, {
    connection: "close",
  });
}
