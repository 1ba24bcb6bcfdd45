import type { JsonRpcId, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { ExactNumber, ExactString } from "../../rpc/jsonRpc.js";

/**
 * A node's `result` kept as the JSON text it came in: a forwarded answer is written back to the client as bytes, not
 * parsed and serialized again (a block is kilobytes of JSON). Parsed only where the gateway reads the value itself.
 */
export class RawResult {
  /** The id of the last answer written with this result, and that answer's bytes (see answerBytes). */
  private lastId: unknown = NO_ID;
  private lastAnswer: Buffer | undefined = undefined;

  /**
   * `ascii`: the text is known to be ASCII (see keptResult), so an answer with it and a numeric id is as many bytes as
   * characters, written without counting or encoding them. `kept`: the result is answered many times (the response
   * cache), so the whole answer is worth keeping as bytes.
   */
  constructor(
    readonly json: string,
    readonly ascii = false,
    readonly kept = false,
  ) {}

  /**
   * The whole answer with this result and `id` as bytes, for a kept ASCII result asked for again with the id of the
   * answer before it (a poller or script repeating a call with `"id":1`): those bytes are built on the second such
   * answer and written as they are from then on, as a bare server writes a constant. Undefined otherwise (another id,
   * an id kept as written, a result not kept): the answer is then written as text.
   */
  answerBytes(id: JsonRpcId): Buffer | undefined {
    if (!this.kept || !this.ascii) return undefined;
    if (id === this.lastId)
      return (this.lastAnswer ??= answerBuffer(id as number | string | null, this.json));
    // Only ids whose JSON is known without a scan: numbers, null, strings that need no escapes.
    this.lastId =
      typeof id === "number" || id === null || (typeof id === "string" && plainString(id)) ? id : NO_ID;
    this.lastAnswer = undefined;
    return undefined;
  }

  value(): unknown {
    return JSON.parse(this.json);
  }

  /** Any other serializer still gets the right JSON. */
  toJSON(): unknown {
    return this.value();
  }
}

/** No id: what a RawResult remembers before its first answer, or after one whose id it does not keep bytes for. */
const NO_ID = Symbol("noId");

/**
 * A whole answer as bytes, in a buffer of its own (one cut from node's shared pool would hold the rest of that pool for
 * as long as the answer is kept).
 */
function answerBuffer(id: number | string | null, json: string): Buffer {
  const head = `{"jsonrpc":"2.0","id":${typeof id === "string" ? `"${id}"` : String(id)},"result":`;
  const bytes = Buffer.allocUnsafeSlow(head.length + json.length + 1);
  bytes.write(head, 0, "latin1");
  bytes.write(json, head.length, "latin1");
  bytes[bytes.length - 1] = 0x7d; // }
  return bytes;
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

/** Whether JSON writes a string as it is between quotes: printable ASCII with no quote nor backslash. */
function plainString(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/**
 * JSON.stringify of a value, written directly for a string that needs no escapes (a quantity, a hash), the common
 * result and parameter: the same text, at a fraction of JSON.stringify's cost.
 */
export function stringifyJson(value: unknown): string | undefined {
  return typeof value === "string" && plainString(value) ? `"${value}"` : JSON.stringify(value);
}

/**
 * JSON.stringify of a call's params, written directly when they are strings needing no escapes and booleans (a
 * block hash and a flag, say); the same text either way. `plainAt`: the index of a string known to need no escapes
 * (a block hash already read), not scanned again; with `omitPlain`, written as nothing (`[,false]`: a look-up's params
 * beside their hash, which JSON.stringify never writes).
 */
export function paramsJson(params: unknown, plainAt = -1, omitPlain = false): string {
  if (!Array.isArray(params)) return JSON.stringify(params ?? []);
  let text = "[";
  for (let i = 0; i < params.length; i++) {
    const param: unknown = params[i];
    if (i > 0) text += ",";
    if (i === plainAt && omitPlain) continue;
    if (typeof param === "string" && (i === plainAt || plainString(param))) text += `"${param}"`;
    else if (typeof param === "boolean") text += param ? "true" : "false";
    else return JSON.stringify(params);
  }
  return `${text}]`;
}

/** One answer as JSON text; a RawResult is spliced in as it came, the id written as the client wrote it. */
export function serializeResponse(response: JsonRpcResponse): string {
  const head = `{"jsonrpc":"2.0","id":${idJson(response.id)},`;
  if ("result" in response) {
    const result = response.result;
    if (result instanceof RawResult) return `${head}"result":${result.json}}`;
    return `${head}"result":${stringifyJson(result) ?? "null"}}`;
  }
  const error = response.error as { [ERROR_TEXT]?: string };
  return `${head}"error":${error[ERROR_TEXT] ?? JSON.stringify(error)}}`;
}

/** A result kept to be answered many times (the response cache): whether it is ASCII is found out once, here. */
export function keptResult(json: string): RawResult {
  return new RawResult(json, Buffer.byteLength(json) === json.length, true);
}

/** Whether a short text (an id as JSON) is ASCII. */
function asciiText(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * The text of an answer known to be ASCII (an ASCII result the gateway kept or a node sent, and an id written in
 * ASCII), whose length is its bytes'; undefined for any other answer.
 */
export function asciiAnswer(response: JsonRpcResponse): string | undefined {
  if (!("result" in response) || !(response.result instanceof RawResult) || !response.result.ascii)
    return undefined;
  const id = response.id;
  if (typeof id === "number" || id === null) return serializeResponse(response);
  const idText = idJson(id);
  return asciiText(idText) ? `{"jsonrpc":"2.0","id":${idText},"result":${response.result.json}}` : undefined;
}

/** A single answer as the bytes its kept result holds for its id (see RawResult.answerBytes), else undefined. */
export function keptAnswerBytes(body: JsonRpcResponse | JsonRpcResponse[]): Buffer | undefined {
  if (Array.isArray(body) || !("result" in body)) return undefined;
  const result = body.result;
  return result instanceof RawResult ? result.answerBytes(body.id) : undefined;
}

/** A single or batch answer's text when all of it is known to be ASCII (see asciiAnswer), else undefined. */
export function asciiBody(body: JsonRpcResponse | JsonRpcResponse[]): string | undefined {
  if (!Array.isArray(body)) return asciiAnswer(body);
  let text = "[";
  for (let i = 0; i < body.length; i++) {
    const answer = asciiAnswer(body[i]!);
    if (answer === undefined) return undefined;
    text += i === 0 ? answer : `,${answer}`;
  }
  return `${text}]`;
}

/** A single answer or a batch answer as JSON text. */
export function serializeBody(body: JsonRpcResponse | JsonRpcResponse[]): string {
  return Array.isArray(body) ? `[${body.map(serializeResponse).join(",")}]` : serializeResponse(body);
}
