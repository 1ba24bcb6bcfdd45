import { describe, expect, it, onTestFinished, vi } from "vitest";
import { agreeOnHead } from "../../../src/gateway/upstreams/agreedHead.js";
import type * as AgreedHead from "../../../src/gateway/upstreams/agreedHead.js";
import { NetworkUpstreams } from "../../../src/gateway/upstreams/networkUpstreams.js";
import { StaticUpstreamSource } from "../../../src/gateway/upstreams/staticSource.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";
import { CHAIN_ID, hashOf, silentNode } from "./silentNode.js";

// Every recount of the agreement goes through agreeOnHead: counted, and still the real one.
vi.mock("../../../src/gateway/upstreams/agreedHead.js", async (importOriginal) => {
  const actual = await importOriginal<typeof AgreedHead>();
  return { ...actual, agreeOnHead: vi.fn(actual.agreeOnHead) };
});
const recounts = () => vi.mocked(agreeOnHead).mock.calls.length;

function upstreamsOf(nodes: Array<{ name: string; httpUrl: string; wsUrl?: string }>) {
  const upstreams = new NetworkUpstreams({
    network: "devnet",
    chainId: CHAIN_ID,
    source: new StaticUpstreamSource(nodes.map((n) => ({ ...n, network: "devnet", routed: true }))),
    pollIntervalMs: 20,
    timeoutMs: 1_000,
    logger: silentLogger(),
  });
  onTestFinished(() => upstreams.close());
  return upstreams;
}

describe("the agreement while nothing changes", () => {
  it("is not recounted at every poll period while no node's view moves", async () => {
    const a = await silentNode();
    const b = await silentNode();
    const upstreams = upstreamsOf([
      { name: "a", httpUrl: a.httpUrl, wsUrl: a.wsUrl },
      { name: "b", httpUrl: b.httpUrl, wsUrl: b.wsUrl },
    ]);
    await waitFor(
      () => upstreams.servedHead() === 5 && a.state.wsHeadReads >= 3 && b.state.wsHeadReads >= 3,
      {
        what: "the served head, read over the WebSockets",
      },
    );
    const before = recounts();
    const reads = a.state.wsHeadReads;
    // Ten poll periods (each reads both heads) in which nothing changes.
    await waitFor(() => a.state.wsHeadReads >= reads + 10, { what: "ten more poll periods" });
    expect(recounts()).toBe(before);
    expect(upstreams.servedHead()).toBe(5);
  });

  it("is recounted when a node stops answering, without a new head", async () => {
    // a is at 6, b at 5: with both reachable, 6's hash is on a serving node's chain; once a is gone, it is on none.
    const a = await silentNode();
    const b = await silentNode();
    a.state.head = 6;
    const upstreams = upstreamsOf([
      { name: "a", httpUrl: a.httpUrl },
      { name: "b", httpUrl: b.httpUrl },
    ]);
    await waitFor(() => upstreams.servedHeightOfHash(hashOf(6)) === 6, {
      what: "block 6 held by a serving node",
    });
    const before = recounts();
    a.down();
    await waitFor(() => upstreams.servedHeightOfHash(hashOf(6)) === undefined, {
      what: "block 6 on no serving node's chain once its node stops answering",
    });
    expect(recounts()).toBeGreaterThan(before);
    expect(upstreams.candidates().find((c) => c.name === "a")?.reachable).toBe(false);
  });
});
