import type { IncomingMessage, ServerResponse } from "node:http";
import { gzip } from "node:zlib";
import type { Answer } from "../pipeline/answer.js";
import { asciiBody, keptAnswerBytes, serializeBody } from "../rpc/serialize.js";
import { reply } from "./replies.js";

/** Answers smaller than this go out uncompressed even to clients that take gzip: compressing them gains nothing. */
const GZIP_MIN_BYTES = 1024;
const TAKES_GZIP = /\bgzip\b(?!\s*;\s*q=0(?:\.0*)?\s*(?:,|$))/i;

/**
 * Writes an answer: an empty 200 for notifications only (as geth answers them), Retry-After with a rate-limit
 * refusal, gzip-compressed when the client takes it and the answer is large enough to gain from it.
 */
export function sendAnswer(req: IncomingMessage, res: ServerResponse, answered: Answer): void {
  if (answered.body === undefined) {
    res.writeHead(200, { "content-type": "application/json", "content-length": 0 }).end();
    return;
  }
  const body = answered.body;
  const status = answered.retryAfterMs === undefined ? 200 : 429;
  const extra =
    answered.retryAfterMs === undefined
      ? undefined
      : { "retry-after": String(Math.ceil(answered.retryAfterMs / 1000)) };
  // A cached answer asked for again with the same id: written as the bytes built for the call before.
  const bytes = keptAnswerBytes(body);
  if (bytes !== undefined) {
    if (!takesGzip(req, bytes.length)) reply(res, status, bytes, extra);
    else sendGzipped(res, status, bytes, extra);
    return;
  }
  // An ASCII answer (cached, or as a node sent it) is as many bytes as characters: written as Latin-1, nothing counted
  // or encoded again (a block is kilobytes).
  const ascii = asciiBody(body);
  const text = ascii ?? serializeBody(body);
  if (!takesGzip(req, text.length)) reply(res, status, text, extra, ascii !== undefined);
  else sendGzipped(res, status, text, extra);
}

/** Whether an answer this long goes compressed: the header is read only for answers large enough to gain from it. */
function takesGzip(req: IncomingMessage, length: number): boolean {
  if (length < GZIP_MIN_BYTES) return false;
  const accepts = req.headers["accept-encoding"];
  return accepts !== undefined && TAKES_GZIP.test(accepts);
}

function sendGzipped(
  res: ServerResponse,
  status: number,
  answer: string | Buffer,
  extra: Record<string, string> | undefined,
): void {
  gzip(answer, (error, zipped) => {
    if (error) return reply(res, status, answer, extra);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-encoding": "gzip",
      vary: "accept-encoding",
      "content-length": zipped.length,
      ...extra,
    });
    res.end(zipped);
  });
}
