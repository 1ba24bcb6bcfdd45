/**
 * Whether a state-changing request comes from another site, and why. SameSite=Strict cookies are the first line;
 * this is the second: `Sec-Fetch-Site` when the browser sends it, else `Origin`, which must be exactly this server's
 * scheme, host and port. A malformed Origin and `Origin: null` (sandboxed frames, some redirects) are refused, never
 * parsed into an exception.
 */
export function crossSiteReason(request: {
  method: string;
  secFetchSite: string | undefined;
  origin: string | undefined;
  host: string | undefined;
  protocol: string;
}): string | undefined {
  if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return undefined;
  const site = request.secFetchSite;
  if (site !== undefined && site !== "same-origin" && site !== "none")
    return `Sec-Fetch-Site ${site.slice(0, 20)}`;
  const origin = request.origin;
  if (origin === undefined) return undefined;
  if (origin === "null") return "Origin null";
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return "malformed Origin";
  }
  // An origin is scheme://host[:port] and nothing more.
  if (parsed.origin !== origin.replace(/\/$/, "")) return "malformed Origin";
  if (parsed.protocol !== `${request.protocol}:`) return "Origin of another scheme";
  if (request.host === undefined || parsed.host !== hostOf(request.protocol, request.host))
    return "Origin of another host";
  return undefined;
}

/** The Host header as URL.host normalises it (default ports dropped), or undefined when it is not a host. */
function hostOf(protocol: string, host: string): string | undefined {
  try {
    return new URL(`${protocol}://${host}`).host;
  } catch {
    return undefined;
  }
}
