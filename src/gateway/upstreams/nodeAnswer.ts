import type { JsonRpcId, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { isJsonRpcResponse } from "../../rpc/jsonRpc.js";
import { leadingId } from "../../rpc/answerLayout.js";
import { RawResult, keepErrorText } from "../rpc/serialize.js";

const RESULT = ',"result":';
const ERROR = ',"error":';

/**
 * A node's answer with the caller's id. With `raw`, a successful answer in the usual layout keeps its result as the
 * node's JSON text (a RawResult), to go back to the client without being parsed and serialized again; anything else
 * is parsed and checked; an error in the usual layout also keeps its JSON text, so the client gets the node's bytes
 * (geth writes `>` as `\u003e`). `malformed` makes the error for an answer that is not JSON-RPC. `ascii`: the answer's
 * bytes were ASCII (so is its result, written to the client as Latin-1 without counting or encoding it).
 */
export function readNodeAnswer(
  text: string,
  id: JsonRpcId,
  raw: boolean,
  malformed: (cause: unknown) => Error,
  ascii = false,
): JsonRpcResponse {
  if (raw) {
    const lead = leadingId(text);
    if (lead && text.startsWith(RESULT, lead.end)) {
      const start = lead.end + RESULT.length;
      const end = text.lastIndexOf("}");
      if (end > start) return { jsonrpc: "2.0", id, result: new RawResult(text.slice(start, end), ascii) };
    }
    if (lead && text.startsWith(ERROR, lead.end)) {
      const errorText = text.slice(lead.end + ERROR.length, text.lastIndexOf("}"));
      const error = nodeError(errorText);
      if (error) return { jsonrpc: "2.0", id, error: keepErrorText(error, errorText) };
    }
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw malformed(error);
  }
  if (!isJsonRpcResponse(body)) throw malformed(new Error("not a JSON-RPC answer"));
  return { ...body, id };
}

/** The error object when `text` is exactly one (anything after it in the answer makes it another layout). */
function nodeError(text: string): { code: number; message: string; data?: unknown } | undefined {
  try {
    const error = JSON.parse(text) as unknown;
    if (!error || typeof error !== "object" || Array.isArray(error)) return undefined;
    const e = error as { code?: unknown; message?: unknown };
    return typeof e.code === "number" && typeof e.message === "string"
      ? (error as { code: number; message: string })
      : undefined;
  } catch {
    return undefined;
  }
}
