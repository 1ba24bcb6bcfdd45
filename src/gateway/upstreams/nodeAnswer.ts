import type { JsonRpcId, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { isJsonRpcResponse } from "../../rpc/jsonRpc.js";
import { leadingId } from "../../rpc/answerLayout.js";
import { RawResult } from "../rpc/serialize.js";

const RESULT = ',"result":';

/**
 * A node's answer with the caller's id. With `raw`, a successful answer in the usual layout keeps its result as the
 * node's JSON text (a RawResult), to go back to the client without being parsed and serialized again; anything else
 * is parsed and checked. `malformed` makes the error for an answer that is not JSON-RPC.
 */
export function readNodeAnswer(
  text: string,
  id: JsonRpcId,
  raw: boolean,
  malformed: (cause: unknown) => Error,
): JsonRpcResponse {
  if (raw) {
    const lead = leadingId(text);
    if (lead && text.startsWith(RESULT, lead.end)) {
      const start = lead.end + RESULT.length;
      const end = text.lastIndexOf("}");
      if (end > start) return { jsonrpc: "2.0", id, result: new RawResult(text.slice(start, end)) };
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
