import { afterEach, describe, expect, it, vi } from "vitest";
import type { FilterCall, FilterReply } from "../../../src/gateway/cluster/messages.js";
import { FilterCallRelay, ForwardedFilterCalls } from "../../../src/gateway/cluster/sharedFilters.js";
import { filterOwner, newFilterId } from "../../../src/gateway/filters/filterId.js";
import { FilterStore } from "../../../src/gateway/filters/filterStore.js";
import type { JsonRpcRequest, JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";
import { ExactNumber } from "../../../src/rpc/jsonRpc.js";
import type { Json } from "../support.js";

const call = (method: string, params: unknown[] = [], id: JsonRpcRequest["id"] = 1): JsonRpcRequest => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

const NOT_FOUND = { code: -32000, message: "filter not found" };

describe("filter ids naming the worker that holds the filter", () => {
  it("round-trips the owner, for any worker id", () => {
    for (const owner of [0, 1, 2, 17, 65_535, 2 ** 32 - 1])
      expect(filterOwner(newFilterId(owner))).toBe(owner);
  });

  it("is a valid hex quantity of 20 bytes, and differs every time", () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newFilterId(1)));
    expect(ids.size).toBe(1_000);
    for (const id of ids) expect(id).toMatch(/^0x[1-9a-f][0-9a-f]{39}$/);
    // Even random bytes starting with zero give an id without a leading zero.
    expect(newFilterId(3, Buffer.alloc(16))).toMatch(/^0x[1-9a-f]/);
    expect(filterOwner(newFilterId(3, Buffer.alloc(16)))).toBe(3);
  });

  it("does not show the owner in plain: ids of one worker share no fixed digits", () => {
    const ids = Array.from({ length: 200 }, () => newFilterId(2));
    for (let i = 2; i < 42; i++) expect(new Set(ids.map((id) => id[i])).size).toBeGreaterThan(1);
  });

  it("names no owner for an id it did not make (another length, not hex)", () => {
    expect(filterOwner("0x1")).toBeUndefined();
    expect(filterOwner(`0x${"a".repeat(32)}`)).toBeUndefined();
    expect(filterOwner(`0x${"g".repeat(40)}`)).toBeUndefined();
    expect(filterOwner(newFilterId(5).toUpperCase().replace("0X", "0x"))).toBe(5);
  });
});

describe("a worker's filter store with other workers", () => {
  function store(options: {
    owner: number;
    quota?: { acquire(a: string): Promise<boolean>; release(a: string): void };
  }) {
    const forwarded: Array<{ owner: number; request: JsonRpcRequest; client: string }> = [];
    const filters = new FilterStore({
      streams: { add: () => () => undefined },
      getLogs: (request) => ({ jsonrpc: "2.0", id: request.id ?? null, result: [] }),
      maxPerClient: 2,
      timeoutMs: 60_000,
      owner: options.owner,
      ...(options.quota ? { quota: options.quota } : {}),
      forward: async (owner, request, client) => {
        forwarded.push({ owner, request, client });
        return { jsonrpc: "2.0", id: request.id ?? null, result: "from the owner" };
      },
    });
    return { filters, forwarded };
  }

  it("answers its own filters itself and sends the calls on another worker's filters to it", async () => {
    const { filters, forwarded } = store({ owner: 1 });
    const mine = (filters.answer(call("eth_newBlockFilter"), "c") as Json).result as string;
    expect(filterOwner(mine)).toBe(1);
    expect(filters.answer(call("eth_getFilterChanges", [mine]), "c")).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: [],
    });

    const theirs = newFilterId(2);
    for (const method of ["eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"])
      expect(await filters.answer(call(method, [theirs], 7), "c")).toEqual({
        jsonrpc: "2.0",
        id: 7,
        result: "from the owner",
      });
    expect(forwarded.map((f) => [f.owner, f.request.method, f.client])).toEqual([
      [2, "eth_getFilterChanges", "c"],
      [2, "eth_getFilterLogs", "c"],
      [2, "eth_uninstallFilter", "c"],
    ]);
    // Ids it did not make, and bad ids, are answered here as before: nothing to forward.
    expect(filters.answer(call("eth_getFilterChanges", ["0x1234"]), "c")).toMatchObject({ error: NOT_FOUND });
    expect(filters.answer(call("eth_getFilterChanges", [42]), "c")).toMatchObject({
      error: { code: -32602 },
    });
    expect(forwarded).toHaveLength(3);
  });

  it("answers a forwarded call itself, never forwarding it again", () => {
    const { filters, forwarded } = store({ owner: 1 });
    const theirs = newFilterId(2);
    expect(filters.answerHere(call("eth_getFilterChanges", [theirs]), "c")).toMatchObject({
      error: NOT_FOUND,
    });
    expect(forwarded).toHaveLength(0);
  });

  it("counts each address's filters with the primary, and gives a filter's place back when it goes", async () => {
    const held = new Map<string, number>();
    const quota = {
      acquire: async (address: string) => {
        const n = held.get(address) ?? 0;
        if (n >= 2) return false;
        held.set(address, n + 1);
        return true;
      },
      release: (address: string) => held.set(address, (held.get(address) ?? 0) - 1),
    };
    const { filters } = store({ owner: 1, quota });
    const a = (await filters.answer(call("eth_newBlockFilter"), "c")) as Json;
    expect(a.result).toMatch(/^0x/);
    // Another worker holds one of c's filters: the primary's count says c is full.
    held.set("c", 2);
    const refused = (await filters.answer(call("eth_newFilter", [{}]), "c")) as Json;
    expect(refused.error).toMatchObject({ code: -32005, data: { limit: 2 } });
    expect(((await filters.answer(call("eth_uninstallFilter", [a.result]), "c")) as Json).result).toBe(true);
    expect(held.get("c")).toBe(1);
    expect(((await filters.answer(call("eth_newBlockFilter"), "c")) as Json).result).toMatch(/^0x/);
  });
});

describe("forwarding filter calls between workers", () => {
  afterEach(() => vi.useRealTimers());

  it("relays a call to the owner and its reply to the asker", () => {
    const sent: Array<[number, FilterCall | FilterReply]> = [];
    const relay = new FilterCallRelay((worker, message) => (sent.push([worker, message]), true));
    relay.call(1, {
      kind: "lightfleet-gateway-filter-call",
      id: 9,
      owner: 2,
      network: "n",
      client: "c",
      request: call("eth_getFilterChanges", ["0x1"], null),
    });
    const [to, asked] = sent[0]!;
    expect(to).toBe(2);
    expect(asked).toMatchObject({
      kind: "lightfleet-gateway-filter-call",
      owner: 2,
      network: "n",
      client: "c",
    });
    relay.reply({
      kind: "lightfleet-gateway-filter-reply",
      id: asked.id,
      response: { jsonrpc: "2.0", id: null, result: ["0xab"] },
    });
    expect(sent[1]).toEqual([
      1,
      {
        kind: "lightfleet-gateway-filter-reply",
        id: 9,
        response: { jsonrpc: "2.0", id: null, result: ["0xab"] },
      },
    ]);
    expect(relay.pending).toBe(0);
    // A reply for nothing asked (its asker gone) is dropped.
    relay.reply({
      kind: "lightfleet-gateway-filter-reply",
      id: 12345,
      response: { jsonrpc: "2.0", id: null, result: [] },
    });
    expect(sent).toHaveLength(2);
  });

  it('answers "filter not found" for an owner that is gone, or dies before it answers', () => {
    const sent: Array<[number, FilterCall | FilterReply]> = [];
    const alive = new Set([1, 2]);
    const relay = new FilterCallRelay(
      (worker, message) => alive.has(worker) && (sent.push([worker, message]), true),
    );
    const ask = (id: number, owner: number) =>
      relay.call(1, {
        kind: "lightfleet-gateway-filter-call",
        id,
        owner,
        network: "n",
        client: "c",
        request: call("eth_getFilterChanges", ["0x1"], null),
      });
    ask(1, 3);
    expect(sent).toEqual([
      [
        1,
        {
          kind: "lightfleet-gateway-filter-reply",
          id: 1,
          response: { jsonrpc: "2.0", id: null, error: NOT_FOUND },
        },
      ],
    ]);
    ask(2, 2);
    expect(relay.pending).toBe(1);
    alive.delete(2);
    relay.workerGone(2);
    expect(sent.at(-1)).toEqual([
      1,
      {
        kind: "lightfleet-gateway-filter-reply",
        id: 2,
        response: { jsonrpc: "2.0", id: null, error: NOT_FOUND },
      },
    ]);
    expect(relay.pending).toBe(0);
    // An asker that dies leaves nothing behind, and its owner's reply goes nowhere.
    relay.call(1, {
      kind: "lightfleet-gateway-filter-call",
      id: 3,
      owner: 1,
      network: "n",
      client: "c",
      request: call("eth_uninstallFilter", ["0x1"], null),
    });
    const relayed = sent.at(-1)![1];
    alive.delete(1);
    relay.workerGone(1);
    expect(relay.pending).toBe(0);
    const before = sent.length;
    relay.reply({
      kind: "lightfleet-gateway-filter-reply",
      id: relayed.id,
      response: { jsonrpc: "2.0", id: null, result: true },
    });
    expect(sent).toHaveLength(before);
  });

  it("answers with the owner's reply and the client's own id, or a clear error after the timeout", async () => {
    vi.useFakeTimers();
    const sent: FilterCall[] = [];
    const calls = new ForwardedFilterCalls((message) => (sent.push(message), true), 5_000);
    const exact = new ExactNumber("12345678901234567890");
    const answered = calls.forward(2, "n", call("eth_getFilterChanges", ["0x1"], exact), "c");
    const late = calls.forward(2, "n", call("eth_getFilterChanges", ["0x2"], "x"), "c");
    expect(sent[0]).toMatchObject({
      kind: "lightfleet-gateway-filter-call",
      owner: 2,
      network: "n",
      client: "c",
    });
    // The request crosses processes without the client's id (an exact number would not survive it).
    expect(sent[0]!.request.id).toBeNull();
    expect(
      calls.receive({
        kind: "lightfleet-gateway-filter-reply",
        id: sent[0]!.id,
        response: { jsonrpc: "2.0", id: null, result: [] },
      }),
    ).toBe(true);
    expect(await answered).toEqual({ jsonrpc: "2.0", id: exact, result: [] });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await late).toEqual({
      jsonrpc: "2.0",
      id: "x",
      error: {
        code: -32603,
        message: "the gateway worker holding this filter did not answer within 5 s; poll again",
      },
    });
    // Its reply, if it ever comes, is dropped; other messages are left to other handlers.
    expect(
      calls.receive({
        kind: "lightfleet-gateway-filter-reply",
        id: sent[1]!.id,
        response: { jsonrpc: "2.0", id: null, result: [] },
      }),
    ).toBe(true);
    expect(calls.receive({ kind: "lightfleet-gateway-spent", spent: [] })).toBe(false);
  });

  it("answers at once when the primary cannot be reached", async () => {
    const calls = new ForwardedFilterCalls(() => false, 5_000);
    const answer: JsonRpcResponse = await calls.forward(2, "n", call("eth_getFilterChanges", ["0x1"]), "c");
    expect(answer).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: {
        code: -32603,
        message: "the gateway worker holding this filter cannot be reached; poll again",
      },
    });
  });
});
