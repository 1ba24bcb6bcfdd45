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
 * Frames up to this size are written whole, the id written into a copy of the frame; larger ones (rare: a header with
 * a long extraData) are written as their shared parts around the id, as a copy for a slow socket would cost more.
 */
const COPY_LIMIT = 4096;

/**
 * The newHeads notification of one block as a WebSocket text frame, framed and encoded once for every subscriber:
 * fan-out to thousands of subscribers does no JSON, no UTF-8 encoding, no framing and, as a rule, no allocation per
 * subscriber. Each subscriber's frame is one buffer, the block's frame with its id written in, in one socket write:
 * cheaper than the stream's cork, three writes, uncork and a writev of the parts.
 */
export class HeadsNotification {
  /** The whole frame, with zeros where the subscription id goes. */
  private readonly frame: Buffer;
  /** Where the subscription id starts in the frame. */
  private readonly idAt: number;
  /** A copy of the frame no socket holds: the next subscriber's id is written into it. */
  private spare: Buffer | undefined;

  constructor(headerJson: string) {
    const tail = Buffer.from(`","result":${headerJson}}}`, "utf8");
    const length = PREFIX.length + SUBSCRIPTION_ID_LENGTH + tail.length;
    const header = textFrameHeader(length);
    this.idAt = header.length + PREFIX.length;
    this.frame = Buffer.concat([
      header,
      Buffer.from(PREFIX, "latin1"),
      Buffer.alloc(SUBSCRIPTION_ID_LENGTH),
      tail,
    ]);
  }

  /**
   * Writes the frame for one subscription to the connection's socket. The socket must be the one `ws` upgraded, with
   * no permessage-deflate: `ws` then writes its own frames straight to it too, so the order of frames is kept and
   * `bufferedAmount` counts these bytes.
   */
  writeTo(socket: Writable, idBytes: Buffer): void {
    const { frame, idAt } = this;
    if (frame.length > COPY_LIMIT) {
      socket.cork();
      socket.write(frame.subarray(0, idAt));
      socket.write(idBytes);
      socket.write(frame.subarray(idAt + SUBSCRIPTION_ID_LENGTH));
      socket.uncork();
      return;
    }
    const bytes = this.spare ?? Buffer.from(frame);
    bytes.set(idBytes, idAt);
    socket.write(bytes);
    // Nothing left in the stream: the kernel took the bytes during the write (the usual case), so the same buffer
    // serves the next subscriber. Otherwise the socket holds it until the client reads, and the next gets a new copy.
    this.spare = socket.writableLength === 0 ? bytes : undefined;
  }

  /** The notification's text for one subscription id (no frame header): for checks. */
  textFor(subscriptionId: string): string {
    const bytes = Buffer.from(this.frame);
    subscriptionIdBytes(subscriptionId).copy(bytes, this.idAt);
    return bytes.toString("utf8", this.idAt - PREFIX.length);
  }
}
