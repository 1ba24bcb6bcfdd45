import { createHmac } from "node:crypto";

/** The engine API (authenticated JSON-RPC) a consensus client uses to drive geth. */

export const ZERO_HASH = `0x${"00".repeat(32)}`;

/** An HS256 JWT for the engine API (the `iat` claim is all geth checks, within 60 s). */
export function engineToken(secret: Buffer, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ iat: nowSeconds })}`;
  return `${signed}.${createHmac("sha256", secret).update(signed).digest("base64url")}`;
}

/** A block geth built (engine_getPayloadV5), as every other node is handed it (engine_newPayloadV4). */
export interface BuiltPayload {
  executionPayload: {
    blockHash: string;
    blockNumber: string;
    parentHash: string;
    timestamp: string;
    transactions: string[];
  } & Record<string, unknown>;
  executionRequests: string[];
}

export interface PayloadAttributes {
  timestamp: number;
  prevRandao: string;
  feeRecipient: string;
}

const forkchoice = (hash: string) => ({
  headBlockHash: hash,
  safeBlockHash: hash,
  finalizedBlockHash: ZERO_HASH,
});

export class EngineClient {
  constructor(
    public url: string,
    private readonly secret: Buffer,
    private readonly timeoutMs = 10_000,
  ) {}

  async call<T>(method: string, params: unknown[]): Promise<T> {
    const response = await fetch(this.url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${engineToken(this.secret)}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const answer = (await response.json()) as { result?: T; error?: { message: string } };
    if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
    return answer.result as T;
  }

  /**
   * Has the node build a block on `parentHash` (made its head first) and returns it, asked for `waitMs` after the
   * build started (geth answers at once with the block it has so far: empty until its first full build is done).
   */
  async build(parentHash: string, attributes: PayloadAttributes, waitMs = 0): Promise<BuiltPayload> {
    const started = await this.call<{ payloadId: string | null; payloadStatus: { status: string } }>(
      "engine_forkchoiceUpdatedV3",
      [
        forkchoice(parentHash),
        {
          timestamp: `0x${attributes.timestamp.toString(16)}`,
          prevRandao: attributes.prevRandao,
          suggestedFeeRecipient: attributes.feeRecipient,
          withdrawals: [],
          parentBeaconBlockRoot: ZERO_HASH,
        },
      ],
    );
    if (!started.payloadId)
      throw new Error(`no block built on ${parentHash}: ${started.payloadStatus.status}`);
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    return this.call<BuiltPayload>("engine_getPayloadV5", [started.payloadId]);
  }

  /** Hands the node a block; it must be able to execute it (its parent known). */
  async newPayload(payload: BuiltPayload): Promise<void> {
    const status = await this.call<{ status: string; validationError?: string | null }>(
      "engine_newPayloadV4",
      [payload.executionPayload, [], ZERO_HASH, payload.executionRequests],
    );
    if (status.status !== "VALID") {
      throw new Error(
        `block ${Number(payload.executionPayload.blockNumber)} not taken: ${status.status}` +
          (status.validationError ? ` (${status.validationError})` : ""),
      );
    }
  }

  /**
   * Names `payload` the node's head, as a consensus client does each slot: the node answers VALID when it has the
   * parent, else SYNCING and fetches what it lacks from its peers over devp2p. Answers the forkchoice status.
   */
  async announce(payload: BuiltPayload): Promise<string> {
    const status = await this.call<{ status: string; validationError?: string | null }>(
      "engine_newPayloadV4",
      [payload.executionPayload, [], ZERO_HASH, payload.executionRequests],
    );
    if (status.status === "INVALID")
      throw new Error(
        `block ${Number(payload.executionPayload.blockNumber)} invalid: ${status.validationError}`,
      );
    const updated = await this.call<{ payloadStatus: { status: string } }>("engine_forkchoiceUpdatedV3", [
      forkchoice(payload.executionPayload.blockHash),
      null,
    ]);
    return updated.payloadStatus.status;
  }

  /** Makes a block the node already has its head. */
  async setHead(hash: string): Promise<void> {
    const updated = await this.call<{ payloadStatus: { status: string } }>("engine_forkchoiceUpdatedV3", [
      forkchoice(hash),
      null,
    ]);
    if (updated.payloadStatus.status !== "VALID")
      throw new Error(`head ${hash} not taken: ${updated.payloadStatus.status}`);
  }
}
