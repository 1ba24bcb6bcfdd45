import type { IncomingMessage, ServerResponse } from "node:http";
import { gunzip } from "node:zlib";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { replyError, replyTooLarge } from "./replies.js";

/** The content types geth takes for JSON-RPC (with any parameters, such as a charset). */
const JSON_TYPE = /^application\/(?:json|jsonrequest|json-rpc)\s*(?:;|$)/i;

/**
 * Reads a JSON-RPC POST body as text, at most `maxBodyBytes` (also once inflated), and hands it to `onText`. A
 * request that is not a POST, has a content type other than JSON's, an encoding other than gzip, or a body over
 * the limit is answered here instead (405, 415, 413; 400 for a body that is not valid gzip), and `onText` is never
 * called. OPTIONS (a CORS preflight) gets 204.
 */
export function readRequestBody(
  req: IncomingMessage,
  res: ServerResponse,
  maxBodyBytes: number,
  onText: (text: string) => void,
): void {
  const method = req.method;
  if (method !== "POST") {
    if (method === "OPTIONS") {
      res.writeHead(204).end();
      return;
    }
    replyError(res, 405, RPC_ERROR.INVALID_REQUEST, "JSON-RPC requests are POSTed", {
      allow: "POST, OPTIONS",
    });
    req.resume();
    return;
  }
  const headers = req.headers;
  const type = headers["content-type"];
  // The type almost every client sends is compared as it is, before the pattern's scan.
  if (type !== undefined && type !== "application/json" && !JSON_TYPE.test(type)) {
    replyError(res, 415, RPC_ERROR.INVALID_REQUEST, "content-type must be application/json");
    req.resume();
    return;
  }
  const encoding = headers["content-encoding"]?.trim().toLowerCase();
  const gzipped = encoding === "gzip" || encoding === "x-gzip";
  if (encoding !== undefined && encoding !== "identity" && !gzipped) {
    replyError(res, 415, RPC_ERROR.INVALID_REQUEST, "content-encoding must be gzip or identity");
    req.resume();
    return;
  }
  // llhttp takes only digits here: a length with fewer digits than the limit's is under it, with no number read.
  const declared = headers["content-length"];
  if (
    declared !== undefined &&
    declared.length >= String(maxBodyBytes).length &&
    Number(declared) > maxBodyBytes
  ) {
    replyTooLarge(res, maxBodyBytes);
    req.destroy();
    return;
  }
  // Most bodies come in one chunk: kept as it is, with no array and no copy. No 'error' listener: node:http emits a
  // request's error (a client gone mid-body) only to listeners, and there is nothing to answer then.
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  req.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBodyBytes) {
      replyTooLarge(res, maxBodyBytes);
      req.destroy();
      return;
    }
    if (first === undefined) first = chunk;
    else (more ??= [first]).push(chunk);
  });
  req.on("end", () => {
    if (size > maxBodyBytes) return;
    const body = more ? Buffer.concat(more) : (first ?? Buffer.alloc(0));
    // toString() with no argument goes straight to the UTF-8 decoder.
    if (!gzipped) return onText(body.toString());
    // Inflated to at most maxBodyBytes, so a small compressed body cannot become a huge one.
    gunzip(body, { maxOutputLength: maxBodyBytes }, (error, inflated) => {
      if (!error) return onText(inflated.toString("utf8"));
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        return replyTooLarge(res, maxBodyBytes);
      replyError(res, 400, RPC_ERROR.PARSE_ERROR, "parse error: the body is not valid gzip");
    });
  });
}
