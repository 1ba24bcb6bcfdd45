import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "../../../src/log/logger.js";
import { spawnChild, stopChild } from "../../../src/process/spawnChild.js";
import { HttpRpcClient } from "../../../src/rpc/httpRpcClient.js";
import { ZERO_HASH, engineToken } from "../../../src/devnet/geth/engineApi.js";

const run = promisify(execFile);

/**
 * A post-merge genesis of our own for geth outside --dev: geth's dev genesis (its system contracts and precompiles
 * funded as they must be), up to Osaka (the fork after it needs engine API calls of its own), on `chainId`.
 */
export async function gethGenesis(binary: string, chainId: number): Promise<Record<string, unknown>> {
  const { stdout } = await run(binary, ["--dev", "dumpgenesis"], { maxBuffer: 16 * 1024 * 1024 });
  const genesis = JSON.parse(stdout) as { config: Record<string, unknown> };
  genesis.config.chainId = chainId;
  delete genesis.config.bogotaTime;
  return genesis;
}

export interface EngineGeth {
  httpUrl: string;
  engineUrl: string;
  enode: string;
  stop(): Promise<void>;
}

/**
 * geth outside --dev on the given genesis, every port ephemeral on loopback, following whoever drives its engine API
 * with `secret`; peers over devp2p only with the nodes added to it (no discovery).
 */
export async function startEngineGeth(
  binary: string,
  genesis: Record<string, unknown>,
  secret: Buffer,
): Promise<EngineGeth> {
  const dir = await mkdtemp(join(tmpdir(), "lightfleet-engine-geth-"));
  await writeFile(join(dir, "genesis.json"), JSON.stringify(genesis));
  await writeFile(join(dir, "jwt.hex"), secret.toString("hex"));
  await run(binary, ["init", "--datadir", join(dir, "data"), join(dir, "genesis.json")]);
  const seen = { http: "", engine: "", enode: "" };
  let ready: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (ready = resolve));
  const child = spawnChild({
    command: binary,
    args: [
      ...[
        "--datadir",
        join(dir, "data"),
        "--ipcdisable",
        "--nodiscover",
        "--port",
        "0",
        "--syncmode",
        "full",
      ],
      ...["--http", "--http.addr", "127.0.0.1", "--http.port", "0", "--http.api", "eth,net,web3,admin"],
      ...["--authrpc.addr", "127.0.0.1", "--authrpc.port", "0", "--authrpc.jwtsecret", join(dir, "jwt.hex")],
    ],
    name: "engine-geth",
    logger: silentLogger(),
    processGroup: true,
    onLine: (line) => {
      const endpoint = /HTTP server started\s+endpoint=(\S+)\s+auth=(true|false)/.exec(line);
      if (endpoint) seen[endpoint[2] === "true" ? "engine" : "http"] = `http://${endpoint[1]}`;
      const enode = /self="?(enode:\/\/[^"?\s]+)/.exec(line);
      if (enode) seen.enode = enode[1]!;
      if (seen.http && seen.engine && seen.enode) ready();
    },
  });
  const stop = async () => {
    await stopChild(child, 5_000);
    await rm(dir, { recursive: true, force: true });
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      started,
      new Promise<never>((_, reject) =>
        child.once("close", () => reject(new Error("geth exited before listening"))),
      ),
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error("geth did not start")), 30_000)),
      ),
    ]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return { httpUrl: seen.http, engineUrl: seen.engine, enode: seen.enode, stop };
}

async function engineCall(url: string, secret: Buffer, method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${engineToken(secret)}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

/**
 * Plays the consensus client for geth nodes kept on one chain: `produce` has `builder` build a block on its head
 * (engine_forkchoiceUpdatedV3 with payload attributes, engine_getPayloadV5), then hands it to every node
 * (engine_newPayloadV4) and makes it their head (engine_forkchoiceUpdatedV3). A node that lacks the parent answers
 * SYNCING and fetches the missing blocks from its peers over devp2p, as a real node does.
 */
export async function produceBlock(
  builder: EngineGeth,
  nodes: readonly EngineGeth[],
  secret: Buffer,
): Promise<string> {
  const head = (await new HttpRpcClient(builder.httpUrl, 10_000).call("eth_getBlockByNumber", [
    "latest",
    false,
  ])) as {
    hash: string;
    timestamp: string;
  };
  const attributes = {
    timestamp: `0x${(Number(head.timestamp) + 1).toString(16)}`,
    prevRandao: `0x${randomBytes(32).toString("hex")}`,
    suggestedFeeRecipient: `0x${"00".repeat(20)}`,
    withdrawals: [],
    parentBeaconBlockRoot: ZERO_HASH,
  };
  const started = (await engineCall(builder.engineUrl, secret, "engine_forkchoiceUpdatedV3", [
    state(head.hash),
    attributes,
  ])) as { payloadId: string };
  const built = (await engineCall(builder.engineUrl, secret, "engine_getPayloadV5", [started.payloadId])) as {
    executionPayload: { blockHash: string };
    executionRequests: string[];
  };
  const hash = built.executionPayload.blockHash;
  for (const node of nodes) {
    await engineCall(node.engineUrl, secret, "engine_newPayloadV4", [
      built.executionPayload,
      [],
      ZERO_HASH,
      built.executionRequests,
    ]);
    await announceHead(node, hash, secret);
  }
  return hash;
}

const state = (hash: string) => ({ headBlockHash: hash, safeBlockHash: hash, finalizedBlockHash: ZERO_HASH });

/**
 * Tells `node` again that `hash` is the head (engine_forkchoiceUpdatedV3, no attributes), as a consensus client does
 * every slot. A node that answered SYNCING may finish its sync short of that head, or hold the synced blocks without
 * making them canonical, until the next forkchoice update names the head again.
 */
export async function announceHead(node: EngineGeth, hash: string, secret: Buffer): Promise<string> {
  const answer = (await engineCall(node.engineUrl, secret, "engine_forkchoiceUpdatedV3", [
    state(hash),
    null,
  ])) as {
    payloadStatus: { status: string };
  };
  return answer.payloadStatus.status;
}
