import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConnectionAcquire, ConnectionRelease } from "../../../src/gateway/cluster/messages.js";
import {
  ClusterConnectionCounts,
  PrimaryConnectionCap,
} from "../../../src/gateway/cluster/sharedConnectionCap.js";

describe("the WebSocket connection cap counted over gateway workers", () => {
  afterEach(() => vi.useRealTimers());

  it("caps an address over all workers, and gives back the connections of a worker that dies", () => {
    const counts = new ClusterConnectionCounts(2);
    expect(counts.acquire(1, "a")).toBe(true);
    expect(counts.acquire(2, "a")).toBe(true);
    expect(counts.acquire(1, "a")).toBe(false);
    expect(counts.acquire(2, "b")).toBe(true);
    counts.release(1, "a");
    expect(counts.acquire(2, "a")).toBe(true);
    // Worker 2 holds two of "a" and one of "b": all of them go with it.
    counts.releaseWorker(2);
    expect(counts.tracked).toBe(0);
    expect(counts.acquire(1, "a")).toBe(true);
    expect(counts.acquire(1, "a")).toBe(true);
    // A release the worker never held changes nothing.
    counts.release(3, "a");
    expect(counts.acquire(1, "a")).toBe(false);
  });

  it("counts nothing without a cap", () => {
    const counts = new ClusterConnectionCounts(undefined);
    for (let i = 0; i < 100; i++) expect(counts.acquire(1, "a")).toBe(true);
    expect(counts.tracked).toBe(0);
  });

  it("asks the primary, refuses when it does not answer in time, and gives back a grant that came too late", async () => {
    vi.useFakeTimers();
    const sent: Array<ConnectionAcquire | ConnectionRelease> = [];
    const cap = new PrimaryConnectionCap((message) => sent.push(message));
    const first = cap.acquire("a");
    const late = cap.acquire("b");
    const [askedFirst, askedLate] = sent as ConnectionAcquire[];
    expect(askedFirst).toMatchObject({ kind: "lightfleet-gateway-ws-acquire", address: "a" });
    expect(cap.receive({ kind: "lightfleet-gateway-ws-grant", id: askedFirst!.id, ok: true })).toBe(true);
    expect(await first).toBe(true);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await late).toBe(false);
    cap.receive({ kind: "lightfleet-gateway-ws-grant", id: askedLate!.id, ok: true });
    expect(sent.at(-1)).toEqual({ kind: "lightfleet-gateway-ws-release", address: "b" });
    // Not a grant: left to other handlers.
    expect(cap.receive({ kind: "lightfleet-gateway-spent", spent: [] })).toBe(false);
  });

  it("keeps the filter count apart from the connection count: each takes only its own grants", async () => {
    const sent: Array<ConnectionAcquire | ConnectionRelease> = [];
    const connections = new PrimaryConnectionCap((message) => sent.push(message));
    const filters = new PrimaryConnectionCap((message) => sent.push(message), "filters");
    const connection = connections.acquire("a");
    const filter = filters.acquire("n a");
    const [askedConnection, askedFilter] = sent as ConnectionAcquire[];
    expect(askedConnection).not.toHaveProperty("pool");
    expect(askedFilter).toMatchObject({
      kind: "lightfleet-gateway-ws-acquire",
      address: "n a",
      pool: "filters",
    });
    // Both ask with id 1: a grant goes to the count that asked for it.
    expect(askedFilter!.id).toBe(askedConnection!.id);
    const filterGrant = {
      kind: "lightfleet-gateway-ws-grant",
      id: askedFilter!.id,
      ok: false,
      pool: "filters",
    };
    expect(connections.receive(filterGrant)).toBe(false);
    expect(filters.receive(filterGrant)).toBe(true);
    expect(await filter).toBe(false);
    expect(filters.receive({ kind: "lightfleet-gateway-ws-grant", id: askedConnection!.id, ok: true })).toBe(
      false,
    );
    expect(
      connections.receive({ kind: "lightfleet-gateway-ws-grant", id: askedConnection!.id, ok: true }),
    ).toBe(true);
    expect(await connection).toBe(true);
    filters.release("n a");
    expect(sent.at(-1)).toEqual({ kind: "lightfleet-gateway-ws-release", address: "n a", pool: "filters" });
  });
});
