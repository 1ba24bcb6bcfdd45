import type { JsonRpcId, JsonRpcResponse } from "../../rpc/jsonRpc.js";

/**
 * A node's `result` kept as the JSON text it came in: a forwarded answer is written back to the client as bytes, not
 * parsed and serialized again (a block is kilobytes of JSON). Parsed only where the gateway reads the value itself.
 */
export class RawResult {
  constructor(readonly json: string) {}

  value(): unknown {
    return JSON.parse(this.json);
  }

  /** Any other serializer still gets the right JSON. */
  toJSON(): unknown {
    return this.value();
  }
}

/** The result as a value: a RawResult parsed, anything else as is. */
export function resultValue(result: unknown): unknown {
  return result instanceof RawResult ? result.value() : result;
}

const idJson = (id: JsonRpcId) =>
  typeof id === "number" ? String(id) : id === null ? "null" : JSON.stringify(id);

/** One answer as JSON text; a RawResult is spliced in as it came. */
export function serializeResponse(response: JsonRpcResponse): string {
  if ("result" in response) {
    const result = response.result;
    if (result instanceof RawResult)
      return `{"jsonrpc":"2.0","id":${idJson(response.id)},"result":${result.json}}`;
    if (typeof result === "string")
      return `{"jsonrpc":"2.0","id":${idJson(response.id)},"result":${JSON.stringify(result)}}`;
  }
  return JSON.stringify(response);
}

/** A single answer or a batch answer as JSON text. */
export function serializeBody(body: JsonRpcResponse | JsonRpcResponse[]): string {
  return Array.isArray(body) ? `[${body.map(serializeResponse).join(",")}]` : serializeResponse(body);
}
