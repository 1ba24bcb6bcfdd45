import { randomBytes } from "node:crypto";
import type { Writable } from "node:stream";
import { textFrameHeader } from "./textFrame.js";

/** Subscription ids as the gateway makes them: "0x" and 32 hex digits. */
const SUBSCRIPTION_ID_LENGTH = 34;

/**
 * A new subscription id: 128 random bits, as geth makes them, so ids are unique across connections and across gateway
 * workers without any coordination (a client holding several connections never sees one id twice).
 */
export function newSubscriptionId(): string {
  return `0x${randomBytes(16).toString("hex")}`;
}

/** The id's bytes, made once when subscribing and written with every notification of that subscription. */
export function subscriptionIdBytes(subscriptionId: string): Buffer {
  if (subscriptionId.length !== SUBSCRIPTION_ID_LENGTH)
    throw new RangeError(`a subscription id is ${SUBSCRIPTION_ID_LENGTH} characters`);
  return Buffer.from(subscriptionId, "latin1");
}

const PREFIX = '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"';

/**
 * The newHeads notification of one block as a WebSocket text frame, framed and encoded once for every subscriber:
 * every subscriber's socket gets the same two buffers (frame header with the text before the id, and the text after
 * it) around its own id's bytes, so fan-out to thousands of subscribers does no JSON, no UTF-8 encoding, no framing
 * and no copy per subscriber.
 */
export class HeadsNotification {
  /** Frame header and the notification up to the subscription id. */
  private readonly head: Buffer;
  /** The notification after the subscription id. */
  private readonly tail: Buffer;

  constructor(headerJson: string) {
    this.tail = Buffer.from(`","result":${headerJson}}}`, "utf8");
    const prefix = Buffer.from(PREFIX, "latin1");
    const length = prefix.length + SUBSCRIPTION_ID_LENGTH + this.tail.length;
    this.head = Buffer.concat([textFrameHeader(length), prefix]);
  }

  /**
   * Writes the frame for one subscription to the connection's socket, in one write (corked). The socket must be the
   * one `ws` upgraded, with no permessage-deflate: `ws` then writes its own frames straight to it too, so the order
   * of frames is kept and `bufferedAmount` counts these bytes.
   */
  writeTo(socket: Writable, idBytes: Buffer): void {
    socket.cork();
    socket.write(this.head);
    socket.write(idBytes);
    socket.write(this.tail);
    socket.uncork();
  }

  /** The notification's text for one subscription id (no frame header): for checks. */
  textFor(subscriptionId: string): string {
    const headerLength = this.head.length - PREFIX.length;
    return Buffer.concat([
      this.head.subarray(headerLength),
      subscriptionIdBytes(subscriptionId),
      this.tail,
    ]).toString("utf8");
  }
}
