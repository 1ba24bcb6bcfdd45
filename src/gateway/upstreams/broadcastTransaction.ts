import { Transaction, keccak256 } from "ethers";
import type { JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RpcTransportError } from "../../rpc/jsonRpc.js";

/** Where a raw transaction goes: a routed node or a reserved peer. */
export interface BroadcastTarget {
  name: string;
  /** Sends one call; resolves with the node's answer (errors included), rejects when there is none. */
  call(method: string, params: unknown[]): Promise<JsonRpcResponse>;
}

/** What the client gets: the hash once, or the best reason none of the nodes took the transaction. */
export type BroadcastResult =
  | { ok: true; hash: string; accepted: string[] }
  | { ok: false; response?: JsonRpcResponse; failure?: RpcTransportError };

/** The node already has it (geth "already known", anvil "transaction already imported", others "known transaction"). */
const ALREADY_KNOWN = /already known|already imported|known transaction|already in (the )?(tx)?pool/i;
/** The sender's nonce moved past it: either this very transaction was mined, or another one with its nonce. */
const NONCE_TOO_LOW = /nonce too low|nonce.*(is )?lower than|old nonce/i;

const RAW = /^0x(?:[0-9a-f]{2})+$/i;

/** The hash of a signed transaction (keccak256 of its bytes), or undefined when the parameter is not one. */
export function rawTransactionHash(params: unknown): string | undefined {
  if (!Array.isArray(params) || params.length !== 1 || typeof params[0] !== "string" || !RAW.test(params[0]))
    return undefined;
  return keccak256(params[0]);
}

/** The sending account of a signed transaction (lower-case), recovered from its signature; undefined if it has none. */
export function transactionSender(raw: string): string | undefined {
  try {
    return Transaction.from(raw).from?.toLowerCase() ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sends a signed transaction to every target at once, as the best public endpoints do: one node that mines alone would
 * fork, and a transaction some node never heard of is lost if that node is the one that dies. A node that already has
 * it ("already known") took it; "nonce too low" counts as taken when that node knows a transaction with this very hash
 * (a wallet sending again after it was mined). Resolves at the first node that took it; otherwise, once all have
 * answered, with the first node's refusal (its own error, passed on) or the transport failure.
 */
export function broadcastRawTransaction(
  raw: string,
  hash: string,
  targets: BroadcastTarget[],
): Promise<BroadcastResult> {
  return new Promise((resolve) => {
    const accepted: string[] = [];
    const refusals: Array<JsonRpcResponse | undefined> = Array.from({ length: targets.length });
    let failure: RpcTransportError | undefined;
    let pending = targets.length;
    let done = false;
    const settle = () => {
      if (done) return;
      if (accepted.length > 0) {
        done = true;
        resolve({ ok: true, hash, accepted });
      } else if (pending === 0) {
        done = true;
        const response = refusals.find((r) => r !== undefined);
        resolve(response ? { ok: false, response } : { ok: false, ...(failure ? { failure } : {}) });
      }
    };
    if (targets.length === 0) return settle();
    targets.forEach((target, i) => {
      void tookIt(target, raw, hash)
        .then(
          (verdict) => {
            if (verdict === true) accepted.push(target.name);
            else refusals[i] = verdict;
          },
          (error: unknown) => {
            failure ??=
              error instanceof RpcTransportError ? error : new RpcTransportError(String(error), "connection");
          },
        )
        .finally(() => {
          pending--;
          settle();
        });
    });
  });
}

/** True when the target took the transaction (or already had it); its refusal otherwise. */
async function tookIt(target: BroadcastTarget, raw: string, hash: string): Promise<true | JsonRpcResponse> {
  const answer = await target.call("eth_sendRawTransaction", [raw]);
  if ("result" in answer) return true;
  const message = answer.error.message ?? "";
  if (ALREADY_KNOWN.test(message)) return true;
  if (NONCE_TOO_LOW.test(message)) {
    const known = await target.call("eth_getTransactionByHash", [hash]).catch(() => undefined);
    if (known && "result" in known && known.result) return true;
  }
  return answer;
}
