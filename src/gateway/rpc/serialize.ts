import type { JsonRpcId, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { ExactNumber, ExactString } from "../../rpc/jsonRpc.js";

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

/** The JSON text a node wrote an error in, kept beside the parsed error (which the gateway may read). */
const ERROR_TEXT = Symbol("errorText");

/** Marks a node's error with the text it came in, to be written back as those bytes; returns the error. */
export function keepErrorText<T extends object>(error: T, text: string): T {
  Object.defineProperty(error, ERROR_TEXT, { value: text, enumerable: false });
  return error;
}

/** The result as a value: a RawResult parsed, anything else as is. */
export function resultValue(result: unknown): unknown {
  return result instanceof RawResult ? result.value() : result;
}

/** The id as the client wrote it: an ExactNumber or ExactString keeps its text. */
const idJson = (id: JsonRpcId) =>
  typeof id === "number"
    ? String(id)
    : id === null
      ? "null"
      : id instanceof ExactNumber || id instanceof ExactString
        ? id.text
        : JSON.stringify(id);

/** One answer as JSON text; a RawResult is spliced in as it came, the id written as the client wrote it. */
export function serializeResponse(response: JsonRpcResponse): string {
  const head = `{"jsonrpc":"2.0","id":${idJson(response.id)},`;
  if ("result" in response) {
    const result = response.result;
    if (result instanceof RawResult) return `${head}"result":${result.json}}`;
    return `${head}"result":${JSON.stringify(result) ?? "null"}}`;
  }
  const error = response.error as { [ERROR_TEXT]?: string };
  return `${head}"error":${error[ERROR_TEXT] ?? JSON.stringify(error)}}`;
}

/** A single answer or a batch answer as JSON text. */
export function serializeBody(body: JsonRpcResponse | JsonRpcResponse[]): string {
  return Array.isArray(body) ? `[${body.map(serializeResponse).join(",")}]` : serializeResponse(body);
}
