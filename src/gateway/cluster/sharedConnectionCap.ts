import type { ConnectionCap } from "../limits/connectionCap.js";
import { ConnectionCounts } from "../limits/connectionCap.js";
import type { ConnectionAcquire, ConnectionRelease } from "./messages.js";
import { isConnectionGrant } from "./messages.js";

/**
 * The primary's count of every worker's WebSocket connections per address, so `maxWsConnectionsPerAddress` caps an
 * address across the workers. Each worker's share is kept, so the connections of a worker that dies are given back.
 */
export class ClusterConnectionCounts {
  private readonly totals: ConnectionCounts;
  private readonly held = new Map<number, Map<string, number>>();

  constructor(max: number | undefined) {
    this.totals = new ConnectionCounts(max);
  }

  acquire(worker: number, address: string): boolean {
    if (!this.totals.acquire(address)) return false;
    const mine = this.held.get(worker) ?? new Map<string, number>();
    this.held.set(worker, mine);
    mine.set(address, (mine.get(address) ?? 0) + 1);
    return true;
  }

  release(worker: number, address: string): void {
    const mine = this.held.get(worker);
    const open = mine?.get(address) ?? 0;
    if (!mine || open === 0) return;
    if (open > 1) mine.set(address, open - 1);
    else mine.delete(address);
    this.totals.release(address);
  }

  /** A worker is gone: its connections went with it. */
  releaseWorker(worker: number): void {
    for (const [address, open] of this.held.get(worker) ?? [])
      for (let i = 0; i < open; i++) this.totals.release(address);
    this.held.delete(worker);
  }

  /** Addresses holding connections over all workers. */
  get tracked(): number {
    return this.totals.tracked;
  }
}

/** How long a worker waits for the primary's count before refusing the connection. */
const GRANT_TIMEOUT_MS = 2_000;

/** A worker's side: every WebSocket connection of an address counted by the primary (ClusterConnectionCounts). */
export class PrimaryConnectionCap implements ConnectionCap {
  private nextId = 1;
  /** Asked and not answered yet; `answer` is gone once the wait timed out (the connection was refused). */
  private readonly asked = new Map<number, { address: string; answer?: (ok: boolean) => void }>();

  constructor(private readonly send: (message: ConnectionAcquire | ConnectionRelease) => void) {}

  acquire(address: string): Promise<boolean> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const entry: { address: string; answer?: (ok: boolean) => void } = { address };
      const timer = setTimeout(() => {
        delete entry.answer;
        resolve(false);
      }, GRANT_TIMEOUT_MS);
      entry.answer = (ok) => {
        clearTimeout(timer);
        resolve(ok);
      };
      this.asked.set(id, entry);
      this.send({ kind: "lightfleet-gateway-ws-acquire", id, address });
    });
  }

  release(address: string): void {
    this.send({ kind: "lightfleet-gateway-ws-release", address });
  }

  /** The primary's answer; true when the message was one. A grant that came after the wait is given back. */
  receive(message: unknown): boolean {
    if (!isConnectionGrant(message)) return false;
    const entry = this.asked.get(message.id);
    this.asked.delete(message.id);
    if (entry?.answer) entry.answer(message.ok);
    else if (entry && message.ok) this.release(entry.address);
    return true;
  }
}
