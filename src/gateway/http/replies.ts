import type { ServerResponse } from "node:http";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { errorResponse } from "../rpc/parseRequest.js";

/** Up to this many characters, a string's UTF-8 length is counted here: Buffer.byteLength's call costs more. */
const COUNTED_HERE = 256;

/** The UTF-8 length of a string: its length when it is ASCII, as most answers are. */
function utf8Length(text: string): number {
  if (text.length > COUNTED_HERE) return Buffer.byteLength(text);
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return Buffer.byteLength(text);
  return text.length;
}

/**
 * A JSON answer with its length: text, or bytes already built (a cached answer). `ascii` when the text is known to be
 * ASCII (then written as Latin-1, uncounted).
 */
export function reply(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  extra?: Record<string, string>,
  ascii = false,
): void {
  const text = typeof body === "string";
  const length = !text || ascii ? body.length : utf8Length(body);
  res.writeHead(
    status,
    extra === undefined
      ? { "content-type": "application/json", "content-length": length }
      : { "content-type": "application/json", "content-length": length, ...extra },
  );
  if (text && ascii) res.end(body, "latin1");
  else res.end(body);
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
