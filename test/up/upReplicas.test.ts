import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { expectProcessesGone } from "../support/devnet.js";
import { commandLine, descendants } from "../support/processTree.js";
import { redisTool } from "../support/redisServer.js";
import { runCli } from "../support/runCli.js";
import { writeUpConfig } from "../support/upConfig.js";
import { spawnUp, type UpProcess } from "../support/upProcess.js";
import { waitFor } from "../support/waitFor.js";

if (!redisTool.path) console.warn(`skipping the up gateway replica tests: ${redisTool.missing}`);

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** `lightfleet up` as its own process, killed with everything under it if a test fails halfway. */
function startUp(config: string): UpProcess {
  const up = spawnUp(config);
  cleanup.push(up.kill);
  return up;
}

/** One eth_blockNumber through the front, on a fresh connection: the head and the replica that answered. */
async function blockNumber(url: string): Promise<{ status: number; head?: number; replica: string | null }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", connection: "close" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
  });
  const body = (await res.json()) as { result?: string };
  return {
    status: res.status,
    ...(body.result ? { head: Number(body.result) } : {}),
    replica: res.headers.get("x-lightfleet-replica"),
  };
}

/** A newHeads subscription through the front until it has `count` heads: the heads and the replica it landed on. */
function newHeads(url: string, count: number): Promise<{ heads: number[]; replica: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const heads: number[] = [];
    let replica = "";
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`no ${count} newHeads within 20 s (got ${heads.join(", ")})`));
    }, 20_000);
    ws.on("upgrade", (res) => (replica = String(res.headers["x-lightfleet-replica"])));
    ws.on("open", () =>
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] })),
    );
    ws.on("message", (data: Buffer) => {
      const message = JSON.parse(data.toString()) as {
        method?: string;
        params?: { result: { number: string } };
      };
      if (message.method !== "eth_subscription") return;
      heads.push(Number(message.params!.result.number));
      if (heads.length === count) {
        clearTimeout(timer);
        ws.close();
        resolve({ heads, replica });
      }
    });
    ws.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

describe.skipIf(!redisTool.path)("lightfleet up with gateway.replicas: 2", () => {
  it("serves through one front over both replicas, never back in the head, through a killed replica, and stops clean", async () => {
    const { child, lines } = startUp(writeUpConfig({ gateway: { replicas: 2 } }));
    const started = await waitFor(() => lines().find((l) => l.msg === "lightfleet up: started"), {
      what: "up started",
      timeoutMs: 60_000,
    });
    const endpoints = started.endpoints as Array<{ label: string; url: string; note?: string }>;
    const front = endpoints.find((e) => e.label === "alpha RPC" && e.url.endsWith("/"))!.url;
    const frontWs = endpoints.find((e) => e.label === "alpha WebSocket" && e.url.endsWith("/ws"))!.url;
    // The banner lists each replica with its process, and the Redis up started for them.
    const replicaPid = (name: string) =>
      Number(endpoints.find((e) => e.label === name)?.note?.match(/pid (\d+)/)?.[1]);
    expect(replicaPid("gateway-1")).toBeGreaterThan(0);
    expect(replicaPid("gateway-2")).toBeGreaterThan(0);
    expect(endpoints.find((e) => e.label === "redis")?.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    await waitFor(async () => (await fetch(`${started.admin as string}/readyz`)).status === 200, {
      what: "up ready",
      timeoutMs: 30_000,
    });

    // Calls through the front reach both replicas, and the head a client sees never goes back across them.
    const answered = new Set<string>();
    let seen = 0;
    for (let i = 0; i < 30; i++) {
      const call = await blockNumber(front);
      expect(call.status).toBe(200);
      expect(call.head).toBeGreaterThanOrEqual(seen);
      seen = call.head!;
      answered.add(call.replica!);
    }
    expect([...answered].sort()).toEqual(["gateway-1", "gateway-2"]);

    // A client that reconnects its newHeads subscription lands on the other replica each time: no head below one it
    // was sent before, and each subscription's own heads in order.
    const landed = new Set<string>();
    let top = 0;
    for (let i = 0; i < 4; i++) {
      const { heads, replica } = await newHeads(frontWs, 2);
      landed.add(replica);
      expect(heads[0]).toBeGreaterThanOrEqual(top);
      expect(heads[1]).toBeGreaterThan(heads[0]!);
      top = heads[1]!;
    }
    expect([...landed].sort()).toEqual(["gateway-1", "gateway-2"]);

    // One replica dies as a crash would: once up has seen it go, every call through the front is answered by the
    // other, and up starts it again, on the same address.
    const victim = replicaPid("gateway-1");
    process.kill(victim, "SIGKILL");
    await waitFor(() => lines().some((l) => l.msg === "gateway replica exited; starting it again"), {
      what: "up to see the replica exit",
    });
    const afterKill = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const call = await blockNumber(front);
      expect(call.status).toBe(200);
      expect(call.head).toBeGreaterThanOrEqual(seen);
      seen = call.head!;
      afterKill.add(call.replica!);
    }
    // (The restarted replica may already be back for the last of them.)
    expect(afterKill).toContain("gateway-2");
    const back = await waitFor(
      () =>
        lines().find(
          (l) => l.msg === "gateway replica serving" && l.replica === "gateway-1" && l.pid !== victim,
        ),
      { what: "the killed replica serving again", timeoutMs: 30_000 },
    );
    await waitFor(async () => (await blockNumber(front)).replica === "gateway-1", {
      what: "the front to use the restarted replica",
    });
    expect(commandLine(victim)).toBe("");

    // SIGTERM stops everything: the replicas, the Redis, the nodes.
    const tree = descendants(child.pid!);
    expect(tree).toContain(back.pid as number);
    expect(tree.filter((pid) => commandLine(pid).includes("redis-server"))).toHaveLength(1);
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    await expectProcessesGone(tree);
    expect(lines().filter((l) => Number(l.level) >= 50 && l.replica !== undefined)).toEqual([]);
  });

  it("says which package to install when redis-server is not on PATH", async () => {
    const result = await runCli(["up", "--config", writeUpConfig({ gateway: { replicas: 2 } })], {
      env: { PATH: "/nonexistent" },
      timeoutMs: 60_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("redis-server is not on PATH");
    expect(result.stderr).toContain("apt-get install redis-server");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
