import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * What sets the CORS headers for the configured origins, or undefined when none is configured (then no request pays
 * for it). Only a browser's request (one with Origin) gets them: the preflight's (OPTIONS) answer gets them all, a
 * call only Access-Control-Allow-Origin, the one header the browser's check of a response reads. Every header set
 * costs a validation per answer, more than answering eth_blockNumber itself.
 */
export function corsHeaders(
  origins: readonly string[],
): ((req: IncomingMessage, res: ServerResponse) => void) | undefined {
  if (origins.length === 0) return undefined;
  const anyOrigin = origins.includes("*");
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const allowed = anyOrigin ? "*" : origins.includes(origin) ? origin : undefined;
    if (!allowed) return;
    res.setHeader("access-control-allow-origin", allowed);
    if (allowed !== "*") res.setHeader("vary", "origin");
    if (req.method !== "OPTIONS") return;
    res.setHeader("access-control-allow-methods", "POST, OPTIONS");
    res.setHeader("access-control-allow-headers", "content-type, authorization");
    res.setHeader("access-control-max-age", "86400");
  };
}
