import type { ConnectionCap } from "../limits/connectionCap.js";
import type { ConnectionAcquire, ConnectionRelease, CountedPool } from "./messages.js";
import { isConnectionGrant } from "./messages.js";

/**
 * The primary's count of every worker's WebSocket connections per address, so `maxWsConnectionsPerAddress` caps an
 * address across the workers. Kept per worker (an address's total is the sum over the few workers), so the
 * connections of a worker that dies go with it.
 */
export class ClusterConnectionCounts {
  private readonly held = new Map<number, Map<string, number>>();

  constructor(private readonly max: number | undefined) {}

  acquire(worker: number, address: string): boolean {
    if (this.max === undefined) return true;
    let total = 0;
    for (const counts of this.held.values()) total += counts.get(address) ?? 0;
    if (total >= this.max) return false;
    const mine = this.held.get(worker) ?? new Map<string, number>();
    this.held.set(worker, mine);
    mine.set(address, (mine.get(address) ?? 0) + 1);
    return true;
  }

  release(worker: number, address: string): void {
    const mine = this.held.get(worker);
    const open = mine?.get(address) ?? 0;
    if (open > 1) mine!.set(address, open - 1);
    else mine?.delete(address);
  }

  /** A worker is gone: its connections went with it. */
  releaseWorker(worker: number): void {
    this.held.delete(worker);
  }

  /** Addresses holding connections over all workers. */
  get tracked(): number {
    return new Set([...this.held.values()].flatMap((counts) => [...counts.keys()])).size;
  }
}

/** How long a worker waits for the primary's count before refusing the connection. */
const GRANT_TIMEOUT_MS = 2_000;

/**
 * A worker's side: every WebSocket connection (or filter, with `pool` "filters") of an address counted by the primary
 * (ClusterConnectionCounts).
 */
export class PrimaryConnectionCap implements ConnectionCap {
  private nextId = 1;
  /** Asked and not answered yet; `answer` is gone once the wait timed out (the connection was refused). */
  private readonly asked = new Map<number, { address: string; answer?: (ok: boolean) => void }>();
  /** Set on the messages of any pool but the first one ("ws"), whose messages stay as they were. */
  private readonly named: { pool?: CountedPool };

  constructor(
    private readonly send: (message: ConnectionAcquire | ConnectionRelease) => void,
    private readonly pool: CountedPool = "ws",
  ) {
    this.named = pool === "ws" ? {} : { pool };
  }

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
      this.send({ kind: "lightfleet-gateway-ws-acquire", id, address, ...this.named });
    });
  }

  release(address: string): void {
    this.send({ kind: "lightfleet-gateway-ws-release", address, ...this.named });
  }

  /** The primary's answer; true when the message was one. A grant that came after the wait is given back. */
  receive(message: unknown): boolean {
    if (!isConnectionGrant(message) || (message.pool ?? "ws") !== this.pool) return false;
    const entry = this.asked.get(message.id);
    this.asked.delete(message.id);
    if (entry?.answer) entry.answer(message.ok);
    else if (entry && message.ok) this.release(entry.address);
    return true;
  }
}
