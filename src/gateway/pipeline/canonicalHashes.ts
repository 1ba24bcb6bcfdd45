import { LRUCache } from "lru-cache";
import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { toQuantity } from "../../rpc/blocks.js";
import { readBlockHash } from "../rpc/blockParams.js";
import { resultValue } from "../rpc/serialize.js";

/** Final heights remembered: a hash (66 characters) each, so about 1.5 MB at most. */
const MAX_HEIGHTS = 10_000;

/**
 * The canonical block hashes of final heights, learned one eth_getBlockByNumber each, the first time a height is
 * needed: a final height's hash never changes, so each is asked once (again only after a failed answer). Lookups are
 * synchronous; `learn` asks in the background, at most once at a time per height.
 */
export class CanonicalHashes {
  private readonly hashes = new LRUCache<number, string>({ max: MAX_HEIGHTS });
  /** Heights asked for now, each with the asking (settled once the answer is in, whatever it was). */
  private readonly asking = new Map<number, Promise<void>>();

  constructor(private readonly send: (request: JsonRpcRequest) => Promise<{ response: JsonRpcResponse }>) {}

  /** The canonical hash at a final height, when known (lower case). */
  get(number: number): string | undefined {
    return this.hashes.get(number);
  }

  /**
   * Asks a node for the block at a final height, unless known or asked already; never throws. The promise settles
   * (never rejects) once the height's hash is known or the asking failed, for a caller that can wait for it.
   */
  learn(number: number): Promise<void> {
    if (this.hashes.has(number)) return Promise.resolve();
    const asking = this.asking.get(number);
    if (asking) return asking;
    if (this.asking.size >= MAX_HEIGHTS) return Promise.resolve();
    const request: JsonRpcRequest = {
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getBlockByNumber",
      params: [toQuantity(number), false],
    };
    const asked = this.send(request)
      .then(({ response }) => {
        if (!("result" in response)) return;
        const block = resultValue(response.result) as { hash?: unknown; number?: unknown } | null;
        const hash = readBlockHash(block?.hash);
        // Only an answer for the height asked counts.
        if (hash && block?.number === toQuantity(number)) this.hashes.set(number, hash);
      })
      .catch(() => undefined)
      .finally(() => this.asking.delete(number));
    this.asking.set(number, asked);
    return asked;
  }
}
