import { describe, expect, it } from "vitest";
import { matchRoute } from "../../../src/gateway/http/routes.js";
import { pinBlockParam, readBlockParam } from "../../../src/gateway/rpc/blockParams.js";
import { checkGetLogs } from "../../../src/gateway/rpc/getLogsRule.js";
import { checkMethod, methodLabel } from "../../../src/gateway/rpc/methodPolicy.js";
import { parseBody } from "../../../src/gateway/rpc/parseRequest.js";
import { serializeResponse } from "../../../src/gateway/rpc/serialize.js";
import { pickCandidate, rankCandidates } from "../../../src/gateway/upstreams/balancer.js";
import { chooseNode } from "../../../src/gateway/upstreams/chooseNode.js";
import type { Candidate } from "../../../src/gateway/upstreams/balancer.js";
import { matchesFilter, parseLogFilter } from "../../../src/gateway/ws/logFilter.js";

const hex = (n: number) => `0x${n.toString(16)}`;

describe("request parsing", () => {
  it.each([
    ["not JSON", "{", -32700],
    ["an empty batch", "[]", -32600],
    [
      "a batch over the limit",
      JSON.stringify(Array(4).fill({ jsonrpc: "2.0", id: 1, method: "eth_chainId" })),
      -32600,
    ],
  ])("answers %s with one error", (_what, body, code) => {
    const parsed = parseBody(body, 3);
    expect(parsed.kind).toBe("error");
    // A batch over the limit: an array with the error and the first call's id, as geth answers it.
    const response = parsed.kind === "error" ? [parsed.response].flat()[0] : undefined;
    expect(response).toMatchObject({
      id: Array.isArray(parsed.kind === "error" && parsed.response) ? 1 : null,
      error: { code },
    });
  });

  it.each([
    ["a number", 1],
    ["no version", { id: 1, method: "eth_chainId" }],
    ["a wrong version", { jsonrpc: "1.0", id: 1, method: "eth_chainId" }],
    ["no method", { jsonrpc: "2.0", id: 1 }],
    ["a numeric method", { jsonrpc: "2.0", id: 1, method: 5 }],
    ["params that are a string", { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: "x" }],
    ["an object id", { jsonrpc: "2.0", id: {}, method: "eth_chainId" }],
  ])("refuses an item with %s (-32600) and keeps the others of the batch", (_what, bad) => {
    const parsed = parseBody(JSON.stringify([bad, { jsonrpc: "2.0", id: 7, method: "eth_chainId" }]), 10);
    expect(parsed.kind).toBe("batch");
    if (parsed.kind !== "batch") return;
    expect(parsed.items[0]).toMatchObject({ ok: false, response: { error: { code: -32600 } } });
    expect(parsed.items[1]).toMatchObject({ ok: true, request: { id: 7, method: "eth_chainId" } });
  });
});

describe("ids written with escapes", () => {
  const ids = (body: string) => {
    const parsed = parseBody(body, 10);
    const items = parsed.kind === "batch" ? parsed.items : parsed.kind === "single" ? [parsed.item] : [];
    return items.map((item) =>
      item.ok ? serializeResponse({ jsonrpc: "2.0", id: item.request.id ?? null, result: 1 }) : "",
    );
  };

  it('keeps each call\'s own text, in a batch, whatever other "id" members its params hold', () => {
    const body =
      String.raw`[{"jsonrpc":"2.0","method":"m","params":[{"id":"\u0042"}],"id":"\u0041"},` +
      String.raw`{"jsonrpc":"2.0","id":"\u0042","method":"m"},{"jsonrpc":"2.0","id":"plain","method":"m"}]`;
    expect(ids(body)).toEqual([
      String.raw`{"jsonrpc":"2.0","id":"\u0041","result":1}`,
      String.raw`{"jsonrpc":"2.0","id":"\u0042","result":1}`,
      `{"jsonrpc":"2.0","id":"plain","result":1}`,
    ]);
    // Any other serializer (a node's request, a worker's message) gets the value.
    const parsed = parseBody(String.raw`{"jsonrpc":"2.0","id":"\u0041\/","method":"m"}`, 10);
    expect(parsed.kind === "single" && parsed.item.ok && JSON.stringify(parsed.item.request)).toBe(
      '{"jsonrpc":"2.0","method":"m","id":"A/"}',
    );
  });
});

describe("method policy", () => {
  it.each([
    "admin_nodeInfo",
    "debug_traceTransaction",
    "personal_sign",
    "miner_start",
    "txpool_content",
    "anvil_mine",
    "evm_mine",
    "eth_sendTransaction",
    "eth_sign",
    "nonsense",
    "eth",
  ])("refuses %s", (method) => expect(checkMethod(method).allowed).toBe(false));
  it.each(["eth_call", "eth_getLogs", "net_version", "web3_clientVersion", "eth_sendRawTransaction"])(
    "serves %s",
    (method) => expect(checkMethod(method).allowed).toBe(true),
  );
  it("labels unknown methods as other, so metric series stay bounded", () => {
    expect(methodLabel("eth_call")).toBe("eth_call");
    expect(methodLabel("eth_" + "x".repeat(50))).toBe("other");
  });
});

describe("eth_getLogs rules (head 5000, limit 1000)", () => {
  const head = 5000;
  const check = (filter: Record<string, unknown>) => checkGetLogs([filter], head, 1000);
  it.each([
    ["inside the window", { fromBlock: hex(4500), toBlock: hex(4600) }, { ok: true }],
    ["exactly 1000 below the head", { fromBlock: hex(4000), toBlock: "latest" }, { ok: true }],
    ["1001 below the head", { fromBlock: hex(3999), toBlock: "latest" }, { ok: false, code: -32005 }],
    ["earliest", { fromBlock: "earliest" }, { ok: false, code: -32005 }],
    ["tags only (latest to latest)", {}, { ok: true }],
    ["toBlock past the head", { fromBlock: hex(4990), toBlock: hex(5001) }, { ok: false, code: -32602 }],
    ["fromBlock after toBlock", { fromBlock: hex(4990), toBlock: hex(4980) }, { ok: false, code: -32602 }],
    ["a blockHash", { blockHash: "0x" + "ab".repeat(32) }, { ok: true }],
    [
      "a blockHash with a range",
      { blockHash: "0x" + "ab".repeat(32), fromBlock: hex(1) },
      { ok: false, code: -32602 },
    ],
    ["a malformed block", { fromBlock: "yesterday" }, { ok: false, code: -32602 }],
  ])("%s", (_what, filter, expected) => {
    expect(check(filter)).toMatchObject(expected);
  });

  it("names the limit and the earliest block allowed when refusing", () => {
    expect(check({ fromBlock: hex(10) })).toMatchObject({
      code: -32005,
      data: { limit: 1000, earliestBlock: hex(4000), head: hex(5000) },
    });
  });

  it("resolves tags against the served head, so every node answers for the same range", () => {
    expect(check({ fromBlock: hex(4999) })).toMatchObject({
      ok: true,
      params: [{ fromBlock: hex(4999), toBlock: hex(5000) }],
    });
  });

  it("resolves safe and finalized to the agreed blocks, and judges the window by them", () => {
    const tags = { safe: 4980, finalized: 3950 };
    expect(checkGetLogs([{ fromBlock: "0x0", toBlock: "finalized" }], head, 5000, head, tags)).toMatchObject({
      ok: true,
      params: [{ fromBlock: hex(0), toBlock: hex(3950) }],
      toBlock: 3950,
    });
    expect(checkGetLogs([{ fromBlock: "safe" }], head, 1000, head, tags)).toMatchObject({
      ok: true,
      params: [{ fromBlock: hex(4980), toBlock: hex(5000) }],
    });
    expect(checkGetLogs([{ fromBlock: "finalized" }], head, 1000, head, tags)).toMatchObject({
      ok: false,
      code: -32005,
    });
  });

  it("leaves safe and finalized to the node while no agreed block is known", () => {
    expect(check({ fromBlock: "finalized", toBlock: "safe" })).toMatchObject({
      ok: true,
      params: [{ fromBlock: "finalized", toBlock: "safe" }],
    });
  });

  it("refuses pending as geth does", () => {
    for (const filter of [{ fromBlock: "pending" }, { toBlock: "pending" }])
      expect(check(filter)).toMatchObject({
        ok: false,
        code: -32602,
        message: "pending logs are not supported",
      });
  });

  it("refuses a call that is not one filter object", () => {
    expect(checkGetLogs([], head, 1000)).toMatchObject({ ok: false, code: -32602 });
    expect(checkGetLogs("x", head, 1000)).toMatchObject({ ok: false, code: -32602 });
  });
});

describe("block parameters", () => {
  it("resolves latest and absent to the served head, keeps other tags", () => {
    expect(readBlockParam("latest", 9)).toEqual({ kind: "number", number: 9 });
    expect(readBlockParam(undefined, 9)).toEqual({ kind: "number", number: 9 });
    expect(readBlockParam("0x10", 9)).toEqual({ kind: "number", number: 16 });
    expect(readBlockParam("finalized", 9)).toEqual({ kind: "tag", tag: "finalized" });
    expect(readBlockParam({ blockNumber: "0x2" }, 9)).toEqual({ kind: "number", number: 2 });
    expect(readBlockParam("0x", 9)).toEqual({ kind: "invalid" });
  });

  it("reads a block number as the quantity pattern and parseInt did, whatever its digits and length", () => {
    const pattern = /^0x(0|[1-9a-f][0-9a-f]*)$/i;
    const asBefore = (text: string) =>
      pattern.test(text) ? { kind: "number", number: Number.parseInt(text, 16) } : { kind: "invalid" };
    const texts = [
      "0x0",
      "0x00",
      "0x01",
      "0X1f",
      "0xAbCdEf",
      "0x1g",
      "0x 1",
      "0x-1",
      "0x1.5",
      "1x10",
      "0x@",
      "0x`",
      "0x\u00c1",
      `0x${"f".repeat(13)}`,
      `0x1${"0".repeat(13)}`,
      `0x${"f".repeat(16)}`,
      `0x${"F".repeat(20)}`,
    ];
    for (let n = 1; n < 2 ** 40; n = n * 7 + 3) texts.push(hex(n));
    for (const text of texts) expect(readBlockParam(text, 9), text).toEqual(asBefore(text));
  });

  it("reads every EIP-1898 form of a hash, and pins latest in either form to the served head", () => {
    const hash = `0x${"Ab".repeat(32)}`;
    const lower = hash.toLowerCase();
    expect(readBlockParam(hash, 9)).toEqual({ kind: "hash", hash: lower });
    expect(readBlockParam({ blockHash: hash }, 9)).toEqual({ kind: "hash", hash: lower });
    expect(readBlockParam({ blockHash: hash, requireCanonical: true }, 9)).toEqual({
      kind: "hash",
      hash: lower,
    });
    expect(readBlockParam({ blockNumber: "latest" }, 9)).toEqual({ kind: "number", number: 9 });
    expect(readBlockParam({ blockHash: hash, blockNumber: "0x1" }, 9)).toEqual({ kind: "invalid" });
    expect(readBlockParam({ blockHash: "0x12" }, 9)).toEqual({ kind: "invalid" });
    expect(pinBlockParam("latest", 9)).toBe("0x9");
    expect(pinBlockParam({ blockNumber: "latest" }, 9)).toEqual({ blockNumber: "0x9" });
    expect(pinBlockParam({ blockHash: hash, requireCanonical: true }, 9)).toEqual({
      blockHash: hash,
      requireCanonical: true,
    });
    expect(pinBlockParam("0x3", 9)).toBe("0x3");
    // safe and finalized: pinned to the agreed blocks when known, else left to the node.
    expect(readBlockParam("safe", 9, { safe: 5 })).toEqual({ kind: "number", number: 5 });
    expect(readBlockParam({ blockNumber: "finalized" }, 9, { finalized: 3 })).toEqual({
      kind: "number",
      number: 3,
    });
    expect(pinBlockParam("finalized", 9, { finalized: 3 })).toBe("0x3");
    expect(pinBlockParam({ blockNumber: "safe" }, 9, { safe: 4 })).toEqual({ blockNumber: "0x4" });
    expect(pinBlockParam("safe", 9)).toBe("safe");
    expect(pinBlockParam("earliest", 9, { safe: 4, finalized: 3 })).toBe("earliest");
  });
});

describe("routes", () => {
  const routes = [
    { network: "mainnet", hosts: ["mainnet.rpc.example.org"], path: "/mainnet", default: true },
    { network: "sepolia", hosts: ["sepolia.rpc.example.org"], path: "/sepolia", default: false },
  ];
  it.each([
    ["sepolia.rpc.example.org", "/", { network: "sepolia", transport: "http" }],
    ["sepolia.rpc.example.org:443", "/ws", { network: "sepolia", transport: "ws" }],
    ["any.host", "/sepolia", { network: "sepolia", transport: "http" }],
    ["any.host", "/sepolia/ws?x=1", { network: "sepolia", transport: "ws" }],
    ["any.host", "/", { network: "mainnet", transport: "http" }],
    ["any.host", "/ws", { network: "mainnet", transport: "ws" }],
    ["any.host", "/goerli", undefined],
    ["sepolia.rpc.example.org", "/other", undefined],
  ])("%s %s", (host, path, expected) => {
    expect(matchRoute(routes, host, path)).toEqual(expected);
  });
});

describe("balancing and the served head", () => {
  const node = (name: string, head: number | undefined, extra: Partial<Candidate> = {}): Candidate => ({
    name,
    head,
    routed: true,
    reachable: true,
    outstanding: 0,
    ...extra,
  });

  it("prefers a node that has the block, then the fewest outstanding requests", () => {
    const nodes = [
      node("a", 10, { outstanding: 0 }),
      node("b", 12, { outstanding: 3 }),
      node("c", 12, { outstanding: 1 }),
    ];
    expect(rankCandidates(nodes, 12, new Set()).map((n) => n.name)).toEqual(["c", "b", "a"]);
    expect(rankCandidates(nodes, undefined, new Set()).map((n) => n.name)).toEqual(["a", "c", "b"]);
    expect(rankCandidates(nodes, 12, new Set(["c"])).map((n) => n.name)).toEqual(["b", "a"]);
  });

  it("takes turns among equally good nodes, so an idle pool spreads its calls", () => {
    const nodes = [node("a", 12), node("b", 12), node("c", 12, { outstanding: 1 }), node("d", 10)];
    const ranked = rankCandidates(nodes, 12, new Set());
    const picks = [0, 1, 2, 3].map((turn) => pickCandidate(ranked, 12, turn)?.name);
    expect(picks).toEqual(["a", "b", "a", "b"]);
    expect(pickCandidate([], 12, 0)).toBeUndefined();
  });

  it("never picks a node below a block the call names, even one passed over for being hung when it has the block", () => {
    const nodes = [node("behind", 11), node("hung", 12)];
    const choose = (requireBlock: boolean, nothingInFlight: boolean) =>
      chooseNode({
        candidates: nodes,
        minBlock: 12,
        requireBlock,
        tried: new Set(),
        avoid: new Set(["hung"]),
        nothingInFlight,
        turn: 0,
      })?.name;
    expect(choose(true, true)).toBe("hung");
    expect(choose(true, false)).toBeUndefined();
    // A call that names no block (minBlock is the served head, a preference) still gets the node below.
    expect(choose(false, false)).toBe("behind");
  });

  it("uses only routed nodes, and every reachable one in panic mode, highest head first", () => {
    expect(
      rankCandidates([node("a", 10), node("b", 20, { routed: false })], undefined, new Set()).map(
        (n) => n.name,
      ),
    ).toEqual(["a"]);
    const panic = [
      node("a", 10, { routed: false }),
      node("b", 20, { routed: false }),
      node("c", 30, { routed: false, reachable: false }),
    ];
    expect(rankCandidates(panic, undefined, new Set()).map((n) => n.name)).toEqual(["b", "a"]);
  });
});

describe("logs filters", () => {
  const log = { address: "0x" + "AA".repeat(20), topics: ["0x" + "01".repeat(32), "0x" + "02".repeat(32)] };
  it("matches by address and by topic position, null being any", () => {
    const parse = (f: unknown) => {
      const filter = parseLogFilter(f);
      if (typeof filter === "string") throw new Error(filter);
      return filter;
    };
    expect(matchesFilter(log, parse({}))).toBe(true);
    expect(matchesFilter(log, parse({ address: "0x" + "aa".repeat(20) }))).toBe(true);
    expect(matchesFilter(log, parse({ address: ["0x" + "bb".repeat(20)] }))).toBe(false);
    expect(matchesFilter(log, parse({ topics: [null, "0x" + "02".repeat(32)] }))).toBe(true);
    expect(matchesFilter(log, parse({ topics: [["0x" + "03".repeat(32), "0x" + "01".repeat(32)]] }))).toBe(
      true,
    );
    expect(matchesFilter(log, parse({ topics: [null, null, "0x" + "02".repeat(32)] }))).toBe(false);
  });
  it("refuses malformed filters with a message", () => {
    expect(parseLogFilter({ address: "0x12" })).toMatch(/address/);
    expect(parseLogFilter({ topics: "x" })).toMatch(/topics/);
    expect(parseLogFilter([1])).toMatch(/object/);
  });
});
