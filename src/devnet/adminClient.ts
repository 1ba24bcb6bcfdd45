import type { DevnetStatus } from "./devnet.js";
import type { Fault } from "./faults.js";

/** Where `lightfleet devnet` and `lightfleet up` serve the devnet routes by default (the admin port). */
export const DEFAULT_ADMIN_URL = "http://127.0.0.1:9464";

/** An answer of the admin endpoint other than success; `status` 0 when it could not be reached. */
export class DevnetAdminError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "DevnetAdminError";
  }
}

export interface FaultResult {
  node: string;
  applied: Fault;
  status: DevnetStatus["nodes"][number] | null;
}

/** Injects a fault through the admin endpoint of a running devnet (`POST /devnet/faults/:node`). */
export function requestFault(adminUrl: string, node: string, fault: Fault): Promise<FaultResult> {
  return call<FaultResult>(adminUrl, `/devnet/faults/${encodeURIComponent(node)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(fault),
  });
}

/** Reorganises a network of a running devnet (`POST /devnet/reorg`). */
export function requestReorg(
  adminUrl: string,
  network: string,
  depth: number,
): Promise<{ network: string; depth: number; head: { number: number; hash: string } }> {
  return call(adminUrl, "/devnet/reorg", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ network, depth }),
  });
}

/** Mines one block now on one or every network of a running devnet (`POST /devnet/mine`). */
export function requestMine(adminUrl: string, network?: string): Promise<Pick<DevnetStatus, "networks">> {
  return call(adminUrl, "/devnet/mine", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(network === undefined ? {} : { network }),
  });
}

export function requestStatus(adminUrl: string): Promise<DevnetStatus> {
  return call<DevnetStatus>(adminUrl, "/devnet/status", { method: "GET" });
}

async function call<T>(adminUrl: string, path: string, init: RequestInit): Promise<T> {
  const url = new URL(path, adminUrl.endsWith("/") ? adminUrl : `${adminUrl}/`).toString();
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new DevnetAdminError(
      `cannot reach the devnet admin endpoint ${adminUrl} (${cause}): is \`lightfleet devnet\` or ` +
        "`lightfleet up` running there? Point at it with --admin URL",
      0,
    );
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new DevnetAdminError(
      `${url} answered HTTP ${res.status} without JSON: is it a lightfleet admin port?`,
      res.status,
    );
  }
  if (!res.ok) {
    const message = (body as { error?: unknown }).error;
    throw new DevnetAdminError(typeof message === "string" ? message : `HTTP ${res.status}`, res.status);
  }
  return body as T;
}
