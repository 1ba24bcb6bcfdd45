/** JSON-RPC 2.0 shapes shared by the probes and the gateway. */

export type JsonRpcId = string | number | null | ExactNumber | ExactString;

/**
 * A number kept as the JSON text it was written in, for an id that a double would change (12345678901234567890, 1.0,
 * 1e2): JSON-RPC servers echo the id as sent, so the gateway writes it back byte for byte. Any other serializer gets
 * the nearest double.
 */
export class ExactNumber {
  constructor(readonly text: string) {}

  toJSON(): number {
    return Number(this.text);
  }
}

/**
 * A string id kept as the JSON text it was written in, where that differs from how JSON.stringify writes its value
 * ("\u0041", "\/"): geth echoes the id's raw bytes, and so does the gateway. Any other serializer gets the value.
 */
export class ExactString {
  constructor(
    readonly text: string,
    readonly value: string,
  ) {}

  toJSON(): string {
    return this.value;
  }
}

export interface JsonRpcRequest {
  jsonrpc: "2.0";
  id?: JsonRpcId;
  method: string;
  params?: unknown[] | Record<string, unknown>;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: "2.0"; id: JsonRpcId; result: unknown }
  | { jsonrpc: "2.0"; id: JsonRpcId; error: JsonRpcErrorObject };

/** Error codes of JSON-RPC 2.0 and EIP-1474 used by lightfleet. */
export const RPC_ERROR = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** EIP-1474 "limit exceeded". */
  LIMIT_EXCEEDED: -32005,
} as const;

/** An error answered by a JSON-RPC server (as opposed to a transport failure). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

/** The request could not be carried out: connection refused, timeout, malformed answer. */
export class RpcTransportError extends Error {
  constructor(
    message: string,
    readonly reason: "timeout" | "connection" | "http-status" | "malformed",
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "RpcTransportError";
  }
}

export function isJsonRpcResponse(value: unknown): value is JsonRpcResponse {
  if (!value || typeof value !== "object") return false;
  const v = value as Record<string, unknown>;
  return v.jsonrpc === "2.0" && "id" in v && ("result" in v || "error" in v);
}
