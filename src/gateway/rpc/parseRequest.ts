import { parse as parseLossless } from "lossless-json";
import type { JsonRpcId, JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { ExactNumber, ExactString, RPC_ERROR } from "../../rpc/jsonRpc.js";

/** One item of a request body: a valid call, or the error answer it gets without going upstream. */
export type ParsedItem = { ok: true; request: JsonRpcRequest } | { ok: false; response: JsonRpcResponse };

export type ParsedBody =
  | { kind: "single"; item: ParsedItem }
  | { kind: "batch"; items: ParsedItem[] }
  /** The whole body is answered with one error (unparsable JSON, empty or oversized batch). */
  | { kind: "error"; response: JsonRpcResponse | JsonRpcResponse[] };

export function errorResponse(id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcResponse {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

function validId(id: unknown): id is JsonRpcId {
  return (
    id === null ||
    typeof id === "string" ||
    (typeof id === "number" && Number.isFinite(id)) ||
    id instanceof ExactNumber ||
    id instanceof ExactString
  );
}

/**
 * A numeric id a double would not give back as written (16 digits or more, a fraction, an exponent). Most bodies have
 * none and take JSON.parse alone.
 */
const INEXACT_NUMBER = String.raw`-?\d*(?:[.eE]|\d{16})`;
const INEXACT_ID = new RegExp(String.raw`"id"\s*:\s*${INEXACT_NUMBER}`);

/** A number as JSON.parse reads it, unless the double would be written back differently: then its text is kept. */
const exactNumber = (text: string): number | ExactNumber => {
  const value = Number(text);
  return String(value) === text ? value : new ExactNumber(text);
};

/** A string id with an escape in it: JSON.stringify may write its value otherwise. Most bodies have none. */
const ESCAPED_STRING = String.raw`"[^"\\]*\\`;
const ESCAPED_STRING_ID = new RegExp(String.raw`"id"\s*:\s*${ESCAPED_STRING}`);
/** Either of the two above, in one scan. */
const SPECIAL_ID = new RegExp(String.raw`"id"\s*:\s*(?:${INEXACT_NUMBER}|${ESCAPED_STRING})`);
const STRING_ID = /"id"\s*:\s*("(?:[^"\\]|\\.)*")/g;

const decodeString = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/**
 * Gives each call whose string id was written with escapes an ExactString of its text. The ids' texts are found in
 * order; a match of another "id" member (inside params) is taken only where its value is the call's, so at worst an
 * id comes back in the spelling of an equal string elsewhere in the body.
 */
function keepEscapedStringIds(text: string, value: unknown): void {
  const texts = [...text.matchAll(STRING_ID)].map((m) => m[1]!);
  let next = 0;
  for (const call of Array.isArray(value) ? value : [value]) {
    if (!call || typeof call !== "object") continue;
    const id = (call as { id?: unknown }).id;
    if (typeof id !== "string") continue;
    for (let i = next; i < texts.length; i++) {
      if (decodeString(texts[i]!) !== id) continue;
      if (texts[i] !== JSON.stringify(id)) (call as { id: unknown }).id = new ExactString(texts[i]!, id);
      next = i + 1;
      break;
    }
  }
}

/**
 * JSON.parse, keeping numbers that a double would change and strings written with escapes as their text (ids are
 * echoed as the client wrote them).
 */
function parseJson(text: string): unknown {
  // One scan of the body for both kinds of id (most bodies have neither); each is told apart only when one is there.
  if (!SPECIAL_ID.test(text)) return JSON.parse(text);
  const value = INEXACT_ID.test(text) ? parseLossless(text, null, exactNumber) : JSON.parse(text);
  if (ESCAPED_STRING_ID.test(text)) keepEscapedStringIds(text, value);
  return value;
}

/** Checks one call against JSON-RPC 2.0: version, method, params and id types. */
export function parseItem(value: unknown): ParsedItem {
  if (!value || typeof value !== "object" || Array.isArray(value))
    return {
      ok: false,
      response: errorResponse(null, RPC_ERROR.INVALID_REQUEST, "invalid request: not an object"),
    };
  const v = value as Record<string, unknown>;
  const id = "id" in v ? v.id : undefined;
  if (id !== undefined && !validId(id))
    return { ok: false, response: errorResponse(null, RPC_ERROR.INVALID_REQUEST, "invalid request: bad id") };
  const answerId = id ?? null;
  if (v.jsonrpc !== "2.0")
    return {
      ok: false,
      response: errorResponse(answerId, RPC_ERROR.INVALID_REQUEST, 'invalid request: jsonrpc must be "2.0"'),
    };
  if (typeof v.method !== "string" || v.method.length === 0 || v.method.length > 128)
    return {
      ok: false,
      response: errorResponse(
        answerId,
        RPC_ERROR.INVALID_REQUEST,
        "invalid request: method must be a string",
      ),
    };
  if (v.params !== undefined && (typeof v.params !== "object" || v.params === null))
    return {
      ok: false,
      response: errorResponse(
        answerId,
        RPC_ERROR.INVALID_REQUEST,
        "invalid request: params must be an array or object",
      ),
    };
  const request: JsonRpcRequest = { jsonrpc: "2.0", method: v.method };
  if (id !== undefined) request.id = id;
  if (v.params !== undefined) request.params = v.params as unknown[] | Record<string, unknown>;
  return { ok: true, request };
}

/** Parses a request body (HTTP POST or one WebSocket frame) into single or batch calls. */
export function parseBody(text: string, maxBatchLength: number): ParsedBody {
  let value: unknown;
  try {
    value = parseJson(text);
  } catch {
    return {
      kind: "error",
      response: errorResponse(null, RPC_ERROR.PARSE_ERROR, "parse error: invalid JSON"),
    };
  }
  if (!Array.isArray(value)) return { kind: "single", item: parseItem(value) };
  if (value.length === 0)
    return {
      kind: "error",
      response: errorResponse(null, RPC_ERROR.INVALID_REQUEST, "invalid request: empty batch"),
    };
  if (value.length > maxBatchLength) {
    // As geth answers it: an array with one error, carrying the id of the first call.
    const first = value.find((v): v is { id: unknown } => !!v && typeof v === "object" && "id" in v)?.id;
    return {
      kind: "error",
      response: [errorResponse(validId(first) ? first : null, RPC_ERROR.INVALID_REQUEST, "batch too large")],
    };
  }
  return { kind: "batch", items: value.map(parseItem) };
}
