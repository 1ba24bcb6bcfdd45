import { describe, expect, it } from "vitest";
import { KeyedWrites } from "../../../src/kubernetes/status/keyedWrites.js";

/** Writes that finish only when the test says so, recording what ran and how many were in flight. */
function heldWrites() {
  const held = new Map<string, Array<() => void>>();
  const started: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const perKey = new Map<string, number>();
  let maxPerKey = 0;
  const write =
    (key: string, label = key, fail = false) =>
    () => {
      started.push(label);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      perKey.set(key, (perKey.get(key) ?? 0) + 1);
      maxPerKey = Math.max(maxPerKey, perKey.get(key)!);
      return new Promise<void>((resolve, reject) => {
        held.set(key, [
          ...(held.get(key) ?? []),
          () => {
            inFlight--;
            perKey.set(key, perKey.get(key)! - 1);
            if (fail) reject(new Error(`${label} refused`));
            else resolve();
          },
        ]);
      });
    };
  /** Finishes the oldest held write of `key`, then lets the queue start what follows. */
  const finish = async (key: string) => {
    const pending = held.get(key) ?? [];
    const next = pending.shift();
    if (!next) throw new Error(`no write of ${key} in flight`);
    next();
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return {
    write,
    finish,
    started,
    held: () => [...held.entries()].filter(([, list]) => list.length > 0).map(([key]) => key),
    get maxInFlight() {
      return maxInFlight;
    },
    get maxPerKey() {
      return maxPerKey;
    },
  };
}

describe("KeyedWrites", () => {
  it("never has more than `concurrency` writes in flight, and fills every slot while writes wait", async () => {
    const writes = heldWrites();
    const queue = new KeyedWrites(3);
    const keys = Array.from({ length: 10 }, (_, i) => `node-${i}`);
    for (const key of keys) void queue.submit(key, writes.write(key));
    expect(queue.inFlight).toBe(3);
    expect(writes.started).toEqual(["node-0", "node-1", "node-2"]);
    // Finishing any write starts the next waiting one, oldest first.
    for (let done = 0; done < keys.length; done++) {
      await writes.finish(writes.held()[0]!);
      expect(queue.inFlight).toBe(Math.min(3, keys.length - done - 1));
    }
    expect(writes.started).toEqual(keys);
    expect(writes.maxInFlight).toBe(3);
    await queue.idle();
  });

  it("keeps one write per key in flight, in submission order; a newer write replaces one that has not started", async () => {
    const writes = heldWrites();
    const queue = new KeyedWrites(4);
    const first = queue.submit("node-0", writes.write("node-0", "healthy"));
    const second = queue.submit("node-0", writes.write("node-0", "lagging"));
    // Another object is not held up by node-0's write in flight.
    void queue.submit("node-1", writes.write("node-1"));
    expect(writes.started).toEqual(["healthy", "node-1"]);
    let secondSettled = false;
    void second.then(() => (secondSettled = true));
    const third = queue.submit("node-0", writes.write("node-0", "diverged"));
    await writes.finish("node-0");
    await first;
    expect(writes.started).toEqual(["healthy", "node-1", "diverged"]);
    expect(secondSettled).toBe(false);
    await writes.finish("node-0");
    // The replaced write's promise settles with the write that replaced it.
    await Promise.all([second, third]);
    expect(writes.started.filter((s) => s !== "node-1")).toEqual(["healthy", "diverged"]);
    expect(writes.maxPerKey).toBe(1);
  });

  it("reports a failed write and carries on; cancel drops a write not yet started", async () => {
    const writes = heldWrites();
    const errors: string[] = [];
    const queue = new KeyedWrites(1, (key, error) => errors.push(`${key}: ${String(error)}`));
    void queue.submit("node-0", writes.write("node-0", "a", true));
    const cancelled = queue.submit("node-1", writes.write("node-1"));
    void queue.submit("node-2", writes.write("node-2"));
    queue.cancel("node-1");
    await cancelled;
    await writes.finish("node-0");
    expect(errors).toEqual(["node-0: Error: a refused"]);
    expect(writes.started).toEqual(["a", "node-2"]);
    let idle = false;
    const waiting = queue.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    await writes.finish("node-2");
    await waiting;
    expect(queue.inFlight).toBe(0);
  });

  it("cancelAll drops every write not yet started and lets the one in flight finish", async () => {
    const writes = heldWrites();
    const queue = new KeyedWrites(1);
    void queue.submit("node-0", writes.write("node-0"));
    const dropped = [
      queue.submit("node-1", writes.write("node-1")),
      queue.submit("node-2", writes.write("node-2")),
    ];
    queue.cancelAll();
    await Promise.all(dropped);
    await writes.finish("node-0");
    await queue.idle();
    expect(writes.started).toEqual(["node-0"]);
  });

  it("refuses a concurrency below one", () => {
    expect(() => new KeyedWrites(0)).toThrow(/positive integer/);
  });
});
