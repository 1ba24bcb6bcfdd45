import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, onTestFinished } from "vitest";
import { AgreedTags, agreeOnTag, tagRoundDelay } from "../../../src/gateway/upstreams/agreedTags.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";

const block = (number: number) => ({
  number,
  hash: `0x${number.toString(16).padStart(64, "0")}`,
  timestamp: 0,
});

describe("the safe or finalized block the sources agree on", () => {
  it("is the highest that two sources have reached", () => {
    expect(agreeOnTag([block(40), block(36), block(30)])).toEqual(block(36));
    expect(agreeOnTag([block(30), block(40)])).toEqual(block(30));
  });

  it("is the one source's own when only one is asked", () => {
    expect(agreeOnTag([block(36)])).toEqual(block(36));
  });

  it("is unknown while too few sources have one (none yet, or unreachable)", () => {
    expect(agreeOnTag([block(36), undefined])).toBeUndefined();
    expect(agreeOnTag([undefined])).toBeUndefined();
    expect(agreeOnTag([])).toBeUndefined();
    expect(agreeOnTag([block(36), undefined, block(20)])).toEqual(block(20));
  });
});

describe("following the sources' safe and finalized blocks", () => {
  /** A node answering eth_getBlockByNumber for the tags from `blocks` (null when absent), counting the calls. */
  async function tagNode(blocks: Partial<Record<"safe" | "finalized", number>>) {
    let calls = 0;
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        calls++;
        const call = JSON.parse(body) as { id: number; params: ["safe" | "finalized", boolean] };
        const number = blocks[call.params[0]];
        const result =
          number === undefined
            ? null
            : { number: `0x${number.toString(16)}`, hash: block(number).hash, timestamp: "0x0" };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return {
      source: { name: "peer", httpUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
      blocks,
      calls: () => calls,
    };
  }

  it("knows them after a round, and never lets the finalized block go back", async () => {
    const node = await tagNode({ safe: 40, finalized: 32 });
    const tags = new AgreedTags({ sources: () => [node.source], timeoutMs: 2_000, logger: silentLogger() });
    await tags.refresh();
    expect(tags.safe()).toEqual(block(40));
    expect(tags.finalized()).toEqual(block(32));
    node.blocks.safe = 38;
    node.blocks.finalized = 0;
    await tags.refresh();
    expect(tags.safe()).toEqual(block(38));
    expect(tags.finalized()).toEqual(block(32));
  });

  it("keeps what it knew when a round finds no agreement", async () => {
    const node = await tagNode({ safe: 40, finalized: 32 });
    const tags = new AgreedTags({ sources: () => [node.source], timeoutMs: 2_000, logger: silentLogger() });
    await tags.refresh();
    delete node.blocks.safe;
    delete node.blocks.finalized;
    await tags.refresh();
    expect(tags.safe()).toEqual(block(40));
    expect(tags.finalized()).toEqual(block(32));
  });

  it("runs one round at a time: a refresh during a round asks for one more after it, not one each", async () => {
    const node = await tagNode({ safe: 40, finalized: 32 });
    const tags = new AgreedTags({ sources: () => [node.source], timeoutMs: 2_000, logger: silentLogger() });
    const first = tags.refresh();
    await Promise.all([tags.refresh(), tags.refresh(), tags.refresh()]);
    await first;
    // Two rounds of two calls (safe and finalized), however many heads came during the first.
    expect(node.calls()).toBe(4);
  });

  it("reads them at most once per interval: heads within it cost one round, the last read once it has passed", async () => {
    const node = await tagNode({ safe: 40, finalized: 32 });
    let now = 1_000_000;
    const tags = new AgreedTags({
      sources: () => [node.source],
      timeoutMs: 2_000,
      logger: silentLogger(),
      minIntervalMs: 50,
      clock: () => now,
    });
    onTestFinished(() => tags.close());
    for (let head = 0; head < 10; head++) await tags.refresh();
    expect(node.calls()).toBe(2);
    expect(tags.finalized()).toEqual(block(32));
    node.blocks.safe = 41;
    node.blocks.finalized = 33;
    now += 50;
    await waitFor(() => tags.safe()?.number === 41 && tags.finalized()?.number === 33, {
      what: "safe 41 and finalized 33 read after the interval",
    });
    expect(node.calls()).toBe(4);
  });
});

describe("when safe and finalized may be read again", () => {
  it("at once the first time, then the interval after the last reading began", () => {
    expect(tagRoundDelay(undefined, 5_000, 2_000)).toBe(0);
    expect(tagRoundDelay(5_000, 5_500, 2_000)).toBe(1_500);
    expect(tagRoundDelay(5_000, 7_000, 2_000)).toBe(0);
    expect(tagRoundDelay(5_000, 5_500, 0)).toBe(0);
  });
});
