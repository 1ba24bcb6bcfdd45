import { Transaction, Wallet, getCreateAddress } from "ethers";

/**
 * Transactions the devnet puts into blocks. They are signed here, once, so that every node mining the block gets the
 * exact same bytes (and the same block hash). The sender is anvil's first default dev account, funded on every
 * anvil started with the default mnemonic.
 */
export const DEV_ACCOUNT_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
export const DEV_ACCOUNT = new Wallet(DEV_ACCOUNT_KEY).address;

/** What a devnet transaction may set; everything else (nonce, fees, chain id) is filled in deterministically. */
export interface DevTransactionRequest {
  /** Omitted for a contract creation. */
  to?: string;
  data?: string;
  /** Wei. */
  value?: bigint;
  /** Default 1,000,000: generous for test contracts, far below the block gas limit. */
  gasLimit?: number;
}

export interface SentDevTransaction {
  hash: string;
  from: string;
  nonce: number;
  /** The address of the contract a creation deploys. */
  contractAddress?: string;
  raw: string;
}

/** Base fee starts at 1 gwei on anvil and only falls on empty blocks, so this cap always suffices. */
const MAX_FEE_PER_GAS = 10_000_000_000n;

export async function signDevTransaction(
  request: DevTransactionRequest,
  chainId: number,
  nonce: number,
  /** Wei; anvil takes 0, geth's pool wants at least 1. */
  tip = 0n,
): Promise<SentDevTransaction> {
  const wallet = new Wallet(DEV_ACCOUNT_KEY);
  const raw = await wallet.signTransaction({
    type: 2,
    chainId,
    nonce,
    to: request.to ?? null,
    data: request.data ?? "0x",
    value: request.value ?? 0n,
    gasLimit: request.gasLimit ?? 1_000_000,
    maxFeePerGas: MAX_FEE_PER_GAS,
    maxPriorityFeePerGas: tip,
  });
  return {
    hash: Transaction.from(raw).hash!,
    from: wallet.address,
    nonce,
    contractAddress: request.to ? undefined : getCreateAddress({ from: wallet.address, nonce }),
    raw,
  };
}

/** Topic of every log the log emitter writes: keccak256("DevnetLog(bytes)"). */
export const LOG_EMITTER_TOPIC = "0xd2ccd5129e0ddbeb2abe1dd985f787032ccd3e5fc8352a89e3d25fefc2715eb9";

/**
 * Creation code of a contract that, on any call, emits one log with topic LOG_EMITTER_TOPIC and the call data as the
 * log data. Runtime: CALLDATACOPY(0, 0, size); LOG1(0, size, topic); STOP.
 */
export const LOG_EMITTER_BYTECODE =
  "0x602c600c600039602c6000f3" + "3660006000377f" + LOG_EMITTER_TOPIC.slice(2) + "366000a100";
