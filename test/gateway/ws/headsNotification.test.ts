import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  HeadsNotification,
  newSubscriptionId,
  subscriptionIdBytes,
} from "../../../src/gateway/ws/headsNotification.js";
import { textFrameHeader } from "../../../src/gateway/ws/textFrame.js";

/** A socket that takes every write at once, as the kernel does when its buffer has room: it keeps a copy. */
class TakenWrites extends Writable {
  readonly chunks: Buffer[] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error) => void): void {
    this.chunks.push(Buffer.from(chunk));
    done();
  }
}

/** A socket that keeps every chunk written to it as it was handed over, and completes each write only when told. */
class HeldWrites extends Writable {
  readonly chunks: Buffer[] = [];
  readonly pending: Array<() => void> = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error) => void): void {
    this.chunks.push(chunk);
    this.pending.push(done);
  }
}

/** The frame a server sends for this notification: header and the JSON-RPC notification's UTF-8 text. */
function expectedFrame(subscription: string, header: unknown): Buffer {
  const text = Buffer.from(
    JSON.stringify({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription, result: header } }),
    "utf8",
  );
  return Buffer.concat([textFrameHeader(text.length), text]);
}

describe("a newHeads notification written to a subscriber's socket", () => {
  const headers = [
    { number: "0x1" },
    { number: "0x2", extraData: `0x${"ab".repeat(200)}`, logsBloom: `0x${"0".repeat(512)}` },
    { number: "0x3", big: "é".repeat(40_000) },
  ];

  it("is the frame of the notification's JSON, byte for byte, in one write for a header of the usual size", () => {
    for (const header of headers.slice(0, 2)) {
      const notification = new HeadsNotification(JSON.stringify(header));
      const id = newSubscriptionId();
      const socket = new HeldWrites();
      notification.writeTo(socket, subscriptionIdBytes(id));
      expect(socket.chunks).toHaveLength(1);
      expect(socket.chunks[0]!.equals(expectedFrame(id, header))).toBe(true);
    }
  });

  it("is the frame of the notification's JSON, byte for byte, for a header of 80 KB", () => {
    const notification = new HeadsNotification(JSON.stringify(headers[2]));
    const id = newSubscriptionId();
    const socket = new HeldWrites();
    notification.writeTo(socket, subscriptionIdBytes(id));
    for (let done = socket.pending.shift(); done; done = socket.pending.shift()) done();
    expect(Buffer.concat(socket.chunks).equals(expectedFrame(id, headers[2]))).toBe(true);
  });

  it("keeps each subscriber's bytes while its socket has not taken them, among sockets that take theirs at once", () => {
    for (const header of headers) {
      const notification = new HeadsNotification(JSON.stringify(header));
      // Every third socket is a slow client: it holds its first write unfinished, so the next ones queue behind it.
      const subscribers = Array.from({ length: 60 }, (_, i) => ({
        id: newSubscriptionId(),
        socket: i % 3 === 1 ? new HeldWrites() : new TakenWrites(),
      }));
      for (let block = 0; block < 3; block++)
        for (const { id, socket } of subscribers) notification.writeTo(socket, subscriptionIdBytes(id));
      for (const { id, socket } of subscribers) {
        // A slow socket takes its writes one by one, long after they were all made.
        if (socket instanceof HeldWrites)
          for (let done = socket.pending.shift(); done; done = socket.pending.shift()) done();
        const frame = expectedFrame(id, header);
        expect(Buffer.concat(socket.chunks).equals(Buffer.concat([frame, frame, frame]))).toBe(true);
      }
    }
  });

  it("gives the notification's text for a subscription id", () => {
    const notification = new HeadsNotification(JSON.stringify(headers[2]));
    const id = newSubscriptionId();
    expect(JSON.parse(notification.textFor(id))).toEqual({
      jsonrpc: "2.0",
      method: "eth_subscription",
      params: { subscription: id, result: headers[2] },
    });
  });
});
