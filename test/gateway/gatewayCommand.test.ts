import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider, Network } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { parseLogLines } from "../support/jsonLogLines.js";
import { runCli, spawnGateway } from "../support/runCli.js";
import { waitFor } from "../support/waitFor.js";
import { startUpstreamNode, writeGatewayConfig } from "./support.js";

describe("lightfleet gateway", () => {
  let node: AnvilNode;
  let dir: string;
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    node = await startUpstreamNode();
    dir = mkdtempSync(join(tmpdir(), "lightfleet-gateway-"));
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await node?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the configured upstreams on --port with admin endpoints on --admin-port, and drains on SIGTERM", async () => {
    const file = writeGatewayConfig(join(dir, "gateway.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
    });
    const serving = await spawnGateway(file);
    const child = serving.child;
    children.push(child);

    // Ready once it serves a head: before, eth_blockNumber goes to a node, which may not be reached yet under load.
    await waitFor(async () => (await fetch(`${serving.admin}/readyz`)).status === 200, { what: "ready" });
    const provider = new JsonRpcProvider(`${serving.url}/`, Network.from(31_337), { staticNetwork: true });
    try {
      expect(await provider.getBlockNumber()).toBe(3);
    } finally {
      provider.destroy();
    }
    expect(await (await fetch(`${serving.admin}/metrics`)).text()).toMatch(
      /lightfleet_gateway_requests_total\{network="devnet",method="eth_blockNumber",outcome="ok"\}/,
    );

    const ws = new WebSocket(`${serving.url.replace("http", "ws")}/ws`);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const closed = new Promise<number>((resolve) => ws.once("close", resolve));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await closed).toBe(1001);
    expect(await exited).toBe(0);
  });

  it("says at start that gateway.replicas is not its to read, and serves as one replica", async () => {
    const file = writeGatewayConfig(join(dir, "replicas.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl }] },
      gateway: { replicas: 3 },
    });
    const serving = await spawnGateway(file);
    children.push(serving.child);
    const warning = await waitFor(
      () =>
        parseLogLines(serving.stdout()).find((line) =>
          String(line.msg).startsWith("gateway.replicas is read by `lightfleet up` only"),
        ),
      { what: "the replicas warning" },
    );
    expect(warning).toMatchObject({ level: 40, replicas: 3 });
    const exited = new Promise<number | null>((resolve) => serving.child.once("exit", resolve));
    serving.child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("serves on and drains cleanly when the reader of its log output goes away", async () => {
    const file = writeGatewayConfig(join(dir, "closed-stdout.yaml"), {
      peer: node.httpUrl,
      network: { upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
    });
    const serving = await spawnGateway(file);
    const child = serving.child;
    children.push(child);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    await waitFor(async () => (await fetch(`${serving.admin}/readyz`)).status === 200, { what: "ready" });
    // As `lightfleet gateway | head` once head has exited, or a log shipper that died: writes to stdout fail (EPIPE).
    child.stdout.destroy();
    const answer = await fetch(serving.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    expect(await answer.json()).toMatchObject({ id: 1, result: "0x3" });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    // Shutdown logs, into the closed pipe.
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/log output closed/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it("exits 2 with every problem by path on a bad config", async () => {
    const file = join(dir, "bad.yaml");
    writeFileSync(file, "gateway: { maxBatchLength: 0, rateLimit: { requestsPerSecond: -1 } }\n");
    const result = await runCli(["gateway", "--config", file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("gateway.maxBatchLength");
    expect(result.stderr).toContain("gateway.rateLimit.requestsPerSecond");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
