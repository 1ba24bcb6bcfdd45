import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AdminServer } from "../../src/admin/adminServer.js";
import { startAdminServer } from "../../src/admin/adminServer.js";
import { devnetAdminRouter } from "../../src/devnet/adminRoutes.js";
import type { Devnet, DevnetStatus } from "../../src/devnet/devnet.js";
import { silentLogger } from "../../src/log/logger.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { startTestDevnet } from "../support/devnet.js";

let devnet: Devnet;
let admin: AdminServer;

beforeAll(async () => {
  devnet = await startTestDevnet({ networks: [{ name: "devnet", chainId: 31_337, lightNodes: 1 }] });
  admin = await startAdminServer({
    host: "127.0.0.1",
    port: 0,
    registry: createRegistry({ defaultMetrics: false }),
    logger: silentLogger(),
  });
  admin.addRoutes(devnetAdminRouter(devnet));
});
afterAll(() => admin?.close());

function post(path: string, body: string | undefined, contentType = "application/json") {
  return fetch(`${admin.url}${path}`, {
    method: "POST",
    headers: body === undefined ? {} : { "content-type": contentType },
    body,
  });
}

async function expectError(res: Response, status: number, message: RegExp): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/json");
  const body = (await res.json()) as { error: string };
  expect(body.error).toMatch(message);
}

describe("devnet admin routes", () => {
  it("serves the status as JSON next to the admin server's own endpoints", async () => {
    const res = await fetch(`${admin.url}/devnet/status`);
    expect(res.status).toBe(200);
    const status = (await res.json()) as DevnetStatus;
    expect(status.nodes.map((n) => n.name)).toEqual(["devnet-full-0", "devnet-light-0"]);
    expect(status.networks[0]).toMatchObject({ name: "devnet", chainId: 31_337, halted: false });
    expect((await fetch(`${admin.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${admin.url}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("injects and heals faults by node name, and mines on request", async () => {
    const lag = await post("/devnet/faults/devnet-light-0", JSON.stringify({ kind: "lag", blocks: 2 }));
    expect(lag.status).toBe(200);
    expect(await lag.json()).toMatchObject({
      node: "devnet-light-0",
      applied: { kind: "lag", blocks: 2 },
      status: { fault: { kind: "lag", blocks: 2 } },
    });
    for (let i = 0; i < 3; i++) expect((await post("/devnet/mine", "{}")).status).toBe(200);
    const head = devnet.head("devnet").number;
    const status = devnet.status().nodes.find((n) => n.name === "devnet-light-0")!;
    expect(status.head?.number).toBe(head - 2);
    const heal = await post("/devnet/faults/devnet-light-0", JSON.stringify({ kind: "heal" }));
    expect(heal.status).toBe(200);
    expect(((await heal.json()) as { status: { head: { number: number } } }).status.head.number).toBe(head);
    const mined = await post("/devnet/mine", JSON.stringify({ network: "devnet" }));
    expect(((await mined.json()) as DevnetStatus).networks[0]!.head.number).toBe(head + 1);
  });

  it("reorganises a network on request", async () => {
    await post("/devnet/mine", "{}");
    const before = devnet.head("devnet");
    const res = await post("/devnet/reorg", JSON.stringify({ network: "devnet", depth: 1 }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { head: { number: number; hash: string } };
    expect(body).toMatchObject({ network: "devnet", depth: 1, head: { number: before.number } });
    expect(body.head.hash).not.toBe(before.hash);
    expect(body.head).toEqual(devnet.head("devnet"));
  });

  it.each([
    ["/devnet/faults/nope", '{"kind":"stall"}', 404, /no devnet node named nope/],
    ["/devnet/faults/devnet-light-0", '{"kind":"melt"}', 400, /kind must be one of/],
    ["/devnet/faults/devnet-light-0", '{"kind":"lag"}', 400, /lag needs blocks/],
    ["/devnet/faults/devnet-light-0", '{"kind":"lag","blocks":-1}', 400, /lag needs blocks/],
    ["/devnet/faults/devnet-light-0", "{bad", 400, /not valid JSON/],
    [
      "/devnet/faults/devnet-light-0",
      undefined,
      400,
      /kind must be one of lag, slow, stall, fork, kill, heal \(got undefined\)/,
    ],
    ["/devnet/faults/devnet-light-0", "[1,2]", 400, /JSON object/],
    [
      "/devnet/faults/devnet-light-0",
      JSON.stringify({ kind: "stall", pad: "x".repeat(20_000) }),
      413,
      /too large/,
    ],
    ["/devnet/mine", '{"network":"nope"}', 404, /no devnet network named nope/],
    ["/devnet/mine", '{"network":5}', 400, /network must be/],
    ["/devnet/reorg", "{}", 400, /network must be a network name/],
    ["/devnet/reorg", '{"network":"devnet","depth":"1"}', 400, /depth must be a number/],
    ["/devnet/reorg", '{"network":"devnet","depth":999}', 400, /reorg depth must be/],
    ["/devnet/reorg", '{"network":"nope","depth":1}', 404, /no devnet network/],
    ["/devnet/reorg", "[]", 400, /JSON object/],
  ] as const)("POST %s %s answers %i in JSON", async (path, body, status, message) => {
    const head = devnet.head("devnet");
    await expectError(await post(path, body), status, message);
    // Nothing changed the devnet.
    expect(devnet.head("devnet")).toEqual(head);
    expect(devnet.status().nodes.every((n) => n.fault === null)).toBe(true);
  });

  it("takes a JSON object body whatever its content type says, as curl -d sends it", async () => {
    // No content-type header at all (fetch would add text/plain).
    const bare = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${admin.url}/devnet/faults/devnet-light-0`, { method: "POST" }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.end('{"kind":"stall"}');
    });
    expect(bare.status, bare.body).toBe(200);
    expect(devnet.status().nodes.find((n) => n.name === "devnet-light-0")?.fault).toEqual({ kind: "stall" });
    const form = await post(
      "/devnet/faults/devnet-light-0",
      '{"kind":"heal"}',
      "application/x-www-form-urlencoded",
    );
    expect(form.status).toBe(200);
    expect(devnet.status().nodes.every((n) => n.fault === null)).toBe(true);
  });

  it("answers other bad requests without crashing", async () => {
    await expectError(
      await post("/devnet/faults/devnet-light-0", "kind=lag", "text/plain"),
      400,
      /the body is not valid JSON: expected a JSON object such as \{"kind": "lag", "blocks": 5\}/,
    );
    await expectError(await fetch(`${admin.url}/devnet/faults`), 404, /no devnet route GET/);
    await expectError(
      await fetch(`${admin.url}/devnet/status`, { method: "DELETE" }),
      404,
      /no devnet route/,
    );
    expect((await fetch(`${admin.url}/elsewhere`)).status).toBe(404);
    expect(devnet.status().nodes.every((n) => n.fault === null)).toBe(true);
  });
});
