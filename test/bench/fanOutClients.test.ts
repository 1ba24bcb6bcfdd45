import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";

const ROOT = join(import.meta.dirname, "../..");
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A server answering every request, WebSocket upgrades included, with 200 and a body: an eRPC without WebSockets. */
async function refusingServer(): Promise<string> {
  const server = createServer((_request, response) => response.end("eRPC is up"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(
    () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      }),
  );
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/main/evm/31337`;
}

/** The node's own WebSocket, which the subscriber process also subscribes to for its reference times. */
async function node(): Promise<string> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(wss, "listening");
  wss.on("connection", (ws) =>
    ws.on("message", () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0x1" }))),
  );
  closers.push(
    () =>
      new Promise((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(resolve);
      }),
  );
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
}

describe("the fan-out bench's subscriber process", () => {
  it("says 'no WebSocket' on a line of its own and exits cleanly when the server refuses the upgrade", async () => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(ROOT, "bench/gatewayFanOutClients.ts"),
        await refusingServer(),
        "300",
        await node(),
      ],
      { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (data: Buffer) => (stdout += String(data)));
    child.stderr.on("data", (data: Buffer) => (stderr += String(data)));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const [code] = (await once(child, "exit")) as [number | null];
    clearTimeout(timer);

    expect(stderr).not.toMatch(/Unexpected server response/);
    expect(stdout).toBe("no WebSocket (the upgrade was answered 200)\n");
    expect(code).toBe(0);
  });
});
