import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { BuiltPayload, EngineClient, PayloadAttributes } from "../../../src/devnet/geth/engineApi.js";
import type { GethNetwork } from "../../../src/devnet/geth/gethDevnet.js";
import { BUILD_WAITS_MS, GethMember } from "../../../src/devnet/geth/gethMember.js";
import { silentLogger } from "../../../src/log/logger.js";

const TX = `0x02${"ab".repeat(40)}`;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A node that takes every raw transaction into its pool, as geth does. */
async function poolNode(): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const { id } = JSON.parse(body) as { id: number };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ jsonrpc: "2.0", id, result: `0x${"cd".repeat(32)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** geth's engine API as a loaded machine shows it: the first `fullAfter` blocks asked for are still empty. */
function slowBuilder(fullAfter: number) {
  const waits: number[] = [];
  const engine = {
    build(_parent: string, attributes: PayloadAttributes, waitMs = 0): Promise<BuiltPayload> {
      waits.push(waitMs);
      const transactions = waits.length > fullAfter ? [TX] : [];
      return Promise.resolve({
        executionPayload: {
          blockHash: `0x${waits.length.toString(16).padStart(64, "0")}`,
          blockNumber: "0x1",
          parentHash: `0x${"00".repeat(32)}`,
          timestamp: `0x${attributes.timestamp.toString(16)}`,
          transactions,
        },
        executionRequests: [],
      });
    },
  };
  return { engine: engine as unknown as EngineClient, waits };
}

async function builderNode(engine: EngineClient): Promise<GethMember> {
  const httpUrl = await poolNode();
  return new GethMember(
    { name: "devnet-full-0", network: "devnet", role: "full", httpUrl, wsUrl: httpUrl.replace("http", "ws") },
    true,
    { name: "devnet", chainId: 31_337 } as GethNetwork,
    engine,
    undefined,
    silentLogger(),
  );
}

describe("a geth node building the devnet's next block", () => {
  it("asks again, later each time, while the block lacks transactions its pool took", async () => {
    const { engine, waits } = slowBuilder(2);
    const member = await builderNode(engine);
    const built = await member.build(`0x${"00".repeat(32)}`, 1_000, [TX], `0x${"11".repeat(20)}`);
    expect(built.executionPayload.transactions).toEqual([TX]);
    expect(waits).toEqual(BUILD_WAITS_MS.slice(0, 3));
  });

  it("takes the block as it is after the last wait, and asks once when nothing is pending", async () => {
    const never = slowBuilder(Infinity);
    const built = await (await builderNode(never.engine)).build(`0x${"00".repeat(32)}`, 1_000, [TX], "0x00");
    expect(built.executionPayload.transactions).toEqual([]);
    expect(never.waits).toEqual(BUILD_WAITS_MS);

    const empty = slowBuilder(Infinity);
    await (await builderNode(empty.engine)).build(`0x${"00".repeat(32)}`, 1_000, [], "0x00");
    expect(empty.waits).toEqual([0]);
  });
});
