import { randomBytes } from "node:crypto";

/** Subscription ids as the gateway makes them: "0x" and 32 hex digits. */
const SUBSCRIPTION_ID_LENGTH = 34;

/** A new subscription id, of the length the shared notification bytes have room for. */
export function newSubscriptionId(): string {
  return `0x${randomBytes(16).toString("hex")}`;
}

const PREFIX = '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"';

/**
 * The newHeads notification of one block, encoded once for every subscriber: each gets a copy of these bytes with its
 * subscription id written in place, so fan-out to thousands of subscribers does no JSON and no UTF-8 encoding per
 * subscriber.
 */
export class HeadsNotification {
  private readonly template: Buffer;

  constructor(headerJson: string) {
    this.template = Buffer.from(
      `${PREFIX}${"0".repeat(SUBSCRIPTION_ID_LENGTH)}","result":${headerJson}}}`,
      "utf8",
    );
  }

  /** The notification for one subscription id from newSubscriptionId. */
  for(subscriptionId: string): Buffer {
    const bytes = Buffer.allocUnsafe(this.template.length);
    this.template.copy(bytes);
    bytes.write(subscriptionId, PREFIX.length, SUBSCRIPTION_ID_LENGTH, "latin1");
    return bytes;
  }
}
