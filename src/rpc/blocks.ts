import type { BlockRef } from "../chain/blockRef.js";

/** Parses a hex quantity ("0x1a") as a safe integer; block numbers and timestamps fit. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{1,13}$/.test(value)) return undefined;
  return Number.parseInt(value.slice(2), 16);
}

export function toQuantity(value: number): string {
  return `0x${value.toString(16)}`;
}

/** Reduces an eth_getBlockByNumber / newHeads header to the fields the engine compares; undefined if malformed. */
export function parseBlockRef(header: unknown): BlockRef | undefined {
  if (!header || typeof header !== "object") return undefined;
  const h = header as Record<string, unknown>;
  const number = parseQuantity(h.number);
  const timestamp = parseQuantity(h.timestamp);
  if (number === undefined || timestamp === undefined) return undefined;
  if (typeof h.hash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(h.hash)) return undefined;
  return { number, hash: h.hash.toLowerCase(), timestamp };
}
