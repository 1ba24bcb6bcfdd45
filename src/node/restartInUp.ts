import { NodeRestartError } from "./nodeRestartError.js";

/**
 * In `up`: asks the controller to restart NODE (`POST /nodes/NODE/restart` on the admin port). Resolves with the
 * node's network.
 */
export async function requestRestartInUp(adminUrl: string, node: string): Promise<string> {
  const url = new URL(`/nodes/${encodeURIComponent(node)}/restart`, adminUrl).toString();
  let res: Response;
  try {
    res = await fetch(url, { method: "POST", signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new NodeRestartError(
      `cannot reach the admin endpoint ${adminUrl} (${cause}): is \`lightfleet up\` running there? Point at it ` +
        "with --admin URL, or use --cluster for a node in Kubernetes",
      false,
    );
  }
  const body = (await res.json().catch(() => undefined)) as { network?: string; error?: string } | undefined;
  if (res.status === 202 && typeof body?.network === "string") return body.network;
  if (res.status === 404 && typeof body?.error === "string") throw new NodeRestartError(body.error, true);
  throw new NodeRestartError(
    `${url} answered HTTP ${res.status}${body?.error ? `: ${body.error}` : ""}: is it the admin port of \`lightfleet up\`?`,
    false,
  );
}
