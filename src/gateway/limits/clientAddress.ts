import type { IncomingMessage } from "node:http";

/**
 * The client address a rate limit applies to: the peer of the connection, or, behind a trusted proxy (an ingress),
 * the last address of X-Forwarded-For, the one that proxy saw. Earlier entries are the client's own claims.
 */
export function clientAddress(req: IncomingMessage, trustForwardedFor: boolean): string {
  if (trustForwardedFor) {
    const header = req.headers["x-forwarded-for"];
    const value = Array.isArray(header) ? header[header.length - 1] : header;
    const last = value?.split(",").pop()?.trim();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}
