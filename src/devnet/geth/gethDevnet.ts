import { settledWithin } from "../waits.js";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak256 } from "ethers";
import type { Logger } from "../../log/logger.js";
import { silentLogger } from "../../log/logger.js";
import { freePort } from "../../process/freePort.js";
import type {
  AttachOptions,
  Devnet,
  DevnetNetworkOptions,
  DevnetStatus,
  NodeEndpoint,
  NodeHead,
  StartDevnetOptions,
} from "../devnet.js";
import type { DevTransactionRequest, SentDevTransaction } from "../devTransactions.js";
import { DEV_ACCOUNT, LOG_EMITTER_BYTECODE, signDevTransaction } from "../devTransactions.js";
import type { NodeRole } from "../drivenNode.js";
import { DevnetInputError } from "../errors.js";
import { findNode, networkNamed, nodeNamed } from "../lookup.js";
import { checkReorgDepth } from "../reorgDepth.js";
import type { Fault } from "../faults.js";
import { fullNodeProduces, parseFault } from "../faults.js";
import { startLatencyFront } from "../latencyFront.js";
import type { BuiltPayload } from "./engineApi.js";
import { EngineClient } from "./engineApi.js";
import type { MemberControl } from "./gethMember.js";
import { GethMember, REORG_FEE_RECIPIENT, feeRecipient } from "./gethMember.js";
import type { GethProcess } from "./gethProcess.js";
import { GETH_MIN_TIP, gethGenesis, initGethDataDir, startGethProcess } from "./gethProcess.js";

/** How often every node is checked even without new blocks, so a restarted node is caught up promptly. */
const RECONCILE_INTERVAL_MS = 500;
/** Pool transactions already forwarded to the builder, remembered per network (by hash). */
const KEPT_FORWARDED = 10_000;

/** One geth network: the canonical chain the driver built, and the nodes it hands it to. */
export interface GethNetwork {
  name: string;
  chainId: number;
  genesis: Record<string, unknown>;
  genesisPath: string;
  /** Canonical block hashes by number; [0] is the genesis. */
  hashes: string[];
  timestamps: number[];
  /** Canonical blocks by number, as built (block 0 has none). */
  payloads: BuiltPayload[];
  nodes: GethMember[];
  /** Raw transactions to put into the next block (the devnet's own, and those taken from node pools). */
  pending: string[];
  forwarded: Set<string>;
  nextNonce: number;
  sending: Promise<unknown>;
  /** Set while a reorg builds the new branch: no block is produced and no node synced meanwhile. */
  reorging: boolean;
  /** Blocks being produced, for a reorg to wait out. */
  producing: Set<Promise<void>>;
}

export interface StartGethDevnetOptions extends StartDevnetOptions {
  /** The geth executable. */
  gethBinary: string;
}

/** What a fleet member's command needs to run as a geth node of this devnet ({geth}, {enginePort}, {jwtSecret}). */
export type GethMemberPlaceholders = Record<"geth" | "enginePort" | "jwtSecret", string>;

/**
 * The devnet on geth: every node a real geth outside --dev on the network's post-merge genesis, kept on one chain by
 * this driver playing the consensus client through the engine API (a full node builds each block; every node is
 * handed it with engine_newPayload and engine_forkchoiceUpdated). Faults act on what each node is handed.
 */
export async function startGethDevnet(options: StartGethDevnetOptions): Promise<Devnet> {
  const logger = options.logger ?? silentLogger();
  const now = options.now ?? Date.now;
  const genesisTimestamp = options.genesisTimestamp ?? Math.floor(now() / 1000);
  const dir = await mkdtemp(join(tmpdir(), "lightfleet-geth-devnet-"));
  const secret = randomBytes(32);
  const jwtPath = join(dir, "jwt.hex");
  await writeFile(jwtPath, secret.toString("hex"));
  const started: GethProcess[] = [];
  const fronts: Array<{ stop(): Promise<void> }> = [];
  let nextPort = options.basePort ?? 0;
  const driver = new GethDevnetDriver(
    options,
    genesisTimestamp,
    now,
    logger,
    dir,
    secret,
    jwtPath,
    async () => {
      await Promise.allSettled([...started.map((p) => p.stop()), ...fronts.map((f) => f.stop())]);
      await rm(dir, { recursive: true, force: true });
    },
  );
  try {
    for (const spec of options.networks) {
      const network = await driver.addNetwork(spec);
      const names = [
        ...Array.from({ length: spec.fullNodes ?? 1 }, (_, i) => [`${spec.name}-full-${i}`, "full"] as const),
        ...Array.from(
          { length: spec.lightNodes ?? 0 },
          (_, i) => [`${spec.name}-light-${i}`, "light"] as const,
        ),
      ];
      // Started together (a geth takes seconds to start on a loaded machine), listed in name order.
      const members = await Promise.allSettled(
        names.map(([name, role]) => startMember(name, role, nextPort === 0 ? 0 : nextPort++)),
      );
      const failed = members.find((m) => m.status === "rejected");
      if (failed) throw failed.reason;
      for (const m of members) if (m.status === "fulfilled") network.nodes.push(m.value);

      async function startMember(name: string, role: NodeRole, httpPort: number): Promise<GethMember> {
        const dataDir = join(dir, name);
        const spawn = async (http: number) => {
          await initGethDataDir(options.gethBinary, dataDir, network.genesis);
          const node = await startGethProcess({
            binary: options.gethBinary,
            name,
            dataDir,
            jwtSecret: jwtPath,
            httpPort: http,
            enginePort: 0,
            logger,
          });
          started.push(node);
          return node;
        };
        let current = await spawn(httpPort);
        const control: MemberControl = {
          pid: () => (current.alive() ? current.process.pid : undefined),
          kill: () => current.kill(),
          // The same HTTP port, so URLs stay valid; the engine port is new.
          respawn: async () => {
            await current.kill();
            current = await spawn(current.httpPort);
            return `http://127.0.0.1:${current.enginePort}`;
          },
          stop: () => current.stop(),
        };
        const member = new GethMember(
          endpointOf(name, spec.name, role, current.httpPort),
          true,
          network,
          new EngineClient(`http://127.0.0.1:${current.enginePort}`, secret),
          control,
          logger,
        );
        if (role === "light" && options.latencyFronts) {
          member.front = await startLatencyFront({
            httpUrl: member.endpoint.httpUrl,
            wsUrl: member.endpoint.wsUrl,
            delayFor: (methods) => member.delayFor(methods),
          });
          fronts.push(member.front);
        }
        return member;
      }
    }
    if (options.latencyFronts) driver.frontAttached = (front) => fronts.push(front);
    await driver.start();
  } catch (error) {
    await driver.stop();
    throw error;
  }
  return driver;
}

function endpointOf(name: string, network: string, role: NodeRole, port: number): NodeEndpoint {
  return {
    name,
    network,
    role,
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
  };
}

class GethDevnetDriver implements Devnet {
  private readonly networks: GethNetwork[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private readonly blockTimeMs: number;
  /** Engine ports handed to fleet members by name, for their attach. */
  private readonly memberEnginePorts = new Map<string, number>();
  frontAttached: ((front: { stop(): Promise<void> }) => void) | undefined;

  constructor(
    private readonly options: StartGethDevnetOptions,
    readonly genesisTimestamp: number,
    private readonly now: () => number,
    private readonly logger: Logger,
    private readonly dir: string,
    private readonly secret: Buffer,
    private readonly jwtPath: string,
    private readonly cleanUp: () => Promise<void>,
  ) {
    this.blockTimeMs = options.blockTimeMs;
  }

  async addNetwork(spec: DevnetNetworkOptions): Promise<GethNetwork> {
    const genesis = await gethGenesis(this.options.gethBinary, spec.chainId, this.genesisTimestamp);
    const genesisPath = join(this.dir, `${spec.name}-genesis.json`);
    await writeFile(genesisPath, JSON.stringify(genesis));
    const network: GethNetwork = {
      name: spec.name,
      chainId: spec.chainId,
      genesis,
      genesisPath,
      hashes: [],
      timestamps: [this.genesisTimestamp],
      payloads: [],
      nodes: [],
      pending: [],
      forwarded: new Set(),
      nextNonce: 0,
      sending: Promise.resolve(),
      reorging: false,
      producing: new Set(),
    };
    this.networks.push(network);
    return network;
  }

  /** Reads the genesis from the first node, builds block 1 (a transaction signed with the chain id makes it differ between networks), then starts the timers. */
  async start(): Promise<void> {
    for (const network of this.networks) {
      const genesis = await network.nodes[0]!.blockHashAt(0);
      if (!genesis) throw new Error(`${network.nodes[0]!.name}: no genesis block`);
      network.hashes = [genesis];
      await this.syncNetwork(network);
      await this.sendTransaction(network.name, { to: DEV_ACCOUNT, gasLimit: 21_000 });
      await this.produce(network);
    }
    for (const network of this.networks) {
      if (this.blockTimeMs > 0)
        this.timers.push(setInterval(() => void this.produce(network), this.blockTimeMs));
    }
    this.timers.push(
      setInterval(() => this.networks.forEach((n) => void this.syncNetwork(n)), RECONCILE_INTERVAL_MS),
    );
  }

  /**
   * Before a fleet member starts: its data directory is made a node of the network's genesis, and it is given an
   * engine port of its own.
   */
  async prepareMember(member: {
    name: string;
    network: string;
    dataDir: string;
  }): Promise<GethMemberPlaceholders> {
    const network = this.network(member.network);
    await initGethDataDir(this.options.gethBinary, member.dataDir, network.genesis);
    const enginePort = await freePort();
    this.memberEnginePorts.set(member.name, enginePort);
    return { geth: this.options.gethBinary, enginePort: String(enginePort), jwtSecret: this.jwtPath };
  }

  nodes(network?: string): NodeEndpoint[] {
    const selected = network === undefined ? this.networks : [this.network(network)];
    return selected.flatMap((n) => n.nodes.map((node) => node.publicEndpoint()));
  }

  async attach(options: AttachOptions): Promise<void> {
    const network = this.network(options.network);
    if (this.findNode(options.name))
      throw new DevnetInputError(`a node named ${options.name} already exists`);
    const enginePort = this.memberEnginePorts.get(options.name);
    if (enginePort === undefined) {
      throw new DevnetInputError(
        `${options.name} has no engine port from this devnet: a geth devnet attaches only the fleet's members, ` +
          "started with {geth}, {enginePort} and {jwtSecret} in their command",
      );
    }
    const member = new GethMember(
      {
        name: options.name,
        network: network.name,
        role: "light",
        httpUrl: options.httpUrl,
        wsUrl: options.wsUrl ?? options.httpUrl.replace(/^http/, "ws"),
      },
      false,
      network,
      new EngineClient(`http://127.0.0.1:${enginePort}`, this.secret),
      options.kill
        ? {
            pid: () => undefined,
            kill: async () => options.kill!(),
            ...(options.restart ? { respawn: async () => void options.restart!() } : {}),
            stop: async () => undefined,
          }
        : undefined,
      this.logger,
    );
    await member.verify();
    if (this.frontAttached) {
      member.front = await startLatencyFront({
        httpUrl: member.endpoint.httpUrl,
        wsUrl: member.endpoint.wsUrl,
        delayFor: (methods) => member.delayFor(methods),
      });
      this.frontAttached(member.front);
    }
    network.nodes.push(member);
    await member.sync();
    // On its chain already (verified): a first round that failed part way is taken up again by the next ones.
    if (!member.reachable)
      this.logger.warn(
        { node: options.name, err: member.lastError },
        "devnet: attached node not at the head yet",
      );
  }

  detach(name: string): void {
    const { network, node } = this.node(name);
    if (node.owned) throw new DevnetInputError(`${name} is started by the devnet and cannot be detached`);
    node.detached = true;
    network.nodes.splice(network.nodes.indexOf(node), 1);
    void node.front?.stop();
  }

  async fault(name: string, fault: Fault): Promise<void> {
    const checked = parseFault(fault);
    const { node } = this.node(name);
    if (checked.kind === "slow" && !node.front) {
      throw new DevnetInputError(
        `${name} has no latency front, so the devnet cannot slow it: start the devnet with latency fronts ` +
          "(devnet.latencyFronts: true, --latency-fronts)",
      );
    }
    if (checked.kind === "kill" && !node.control) {
      throw new DevnetInputError(
        `${name} was attached without a kill function, so the devnet cannot kill it`,
      );
    }
    this.logger.info({ node: name, fault: checked }, "devnet fault");
    await node.applyFault(checked);
    await node.sync();
  }

  async mine(network?: string): Promise<void> {
    const selected = network === undefined ? this.networks : [this.network(network)];
    await Promise.all(selected.map((n) => this.produce(n)));
  }

  /**
   * As on anvil: the newest `depth` blocks are replaced by new ones at the same heights, the first carrying their
   * transactions. A node at the head builds the branch from the fork point (with a prevRandao, timestamp and fee
   * recipient of its own); every node is then handed it and made to take its head, a reorg on each. A stalled node
   * goes back to the fork point and waits there.
   */
  async reorg(name: string, depth: number): Promise<NodeHead> {
    const network = this.network(name);
    checkReorgDepth(depth, network.hashes.length - 1);
    if (network.reorging) throw new DevnetInputError(`a reorg of ${name} is under way`);
    network.reorging = true;
    try {
      await Promise.allSettled([...network.producing]);
      const height = network.hashes.length - 1;
      checkReorgDepth(depth, height);
      const builder = this.builder(network);
      if (!builder) {
        throw new DevnetInputError(
          `no node of ${name} is at the head to build the new branch (heal a full node first)`,
        );
      }
      const forkPoint = { number: height - depth, hash: network.hashes[height - depth]! };
      const timestamps: number[] = [];
      for (let n = forkPoint.number + 1; n <= height; n++) {
        const previous = timestamps.at(-1) ?? network.timestamps[forkPoint.number]!;
        timestamps.push(Math.max(previous + 1, network.timestamps[n]!, Math.floor(this.now() / 1000)));
      }
      const moved = network.payloads
        .slice(forkPoint.number + 1)
        .flatMap((p) => p.executionPayload.transactions);
      this.logger.info(
        { network: name, depth, forkPoint: forkPoint.number, builder: builder.name },
        "devnet reorg",
      );
      const branch = await builder.buildBranch(forkPoint, timestamps, moved, REORG_FEE_RECIPIENT);
      const kept = forkPoint.number + 1;
      network.hashes.splice(kept, Infinity, ...branch.map((p) => p.executionPayload.blockHash));
      network.timestamps.splice(kept, Infinity, ...timestamps);
      network.payloads.splice(kept, Infinity, ...branch);
      const included = new Set(
        branch.flatMap((p) => p.executionPayload.transactions.map((raw) => keccak256(raw))),
      );
      network.pending = network.pending.filter((raw) => !included.has(keccak256(raw)));
      await Promise.all(
        network.nodes
          .filter(
            (node) =>
              node.fault?.kind === "stall" && node.reachable && (node.head?.number ?? 0) > forkPoint.number,
          )
          .map((node) =>
            node
              .rewind(forkPoint)
              .catch((error: unknown) =>
                this.logger.warn(
                  { node: node.name, err: (error as Error).message },
                  "devnet: stalled node not taken back",
                ),
              ),
          ),
      );
    } finally {
      network.reorging = false;
    }
    await this.syncNetwork(network);
    return this.head(name);
  }

  head(network: string): NodeHead {
    const n = this.network(network);
    const number = n.hashes.length - 1;
    return { number, hash: n.hashes[number] ?? "" };
  }

  sendTransaction(network: string, tx: DevTransactionRequest): Promise<SentDevTransaction> {
    const n = this.network(network);
    const sent = n.sending.then(async () => {
      const signed = await signDevTransaction(tx, n.chainId, n.nextNonce, GETH_MIN_TIP);
      n.nextNonce += 1;
      n.pending.push(signed.raw);
      return signed;
    });
    n.sending = sent.catch(() => undefined);
    return sent;
  }

  async deployLogEmitter(network: string): Promise<SentDevTransaction & { contractAddress: string }> {
    const sent = await this.sendTransaction(network, { data: LOG_EMITTER_BYTECODE, gasLimit: 200_000 });
    return { ...sent, contractAddress: sent.contractAddress! };
  }

  status(): DevnetStatus {
    return {
      genesisTimestamp: this.genesisTimestamp,
      blockTimeMs: this.blockTimeMs,
      networks: this.networks.map((n) => ({
        name: n.name,
        chainId: n.chainId,
        head: this.head(n.name),
        halted: this.halted(n),
        pendingTransactions: n.pending.length,
      })),
      nodes: this.networks.flatMap((n) => n.nodes.map((node) => node.status())),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    for (const node of this.networks.flatMap((n) => n.nodes)) node.detached = true;
    await Promise.allSettled(
      this.networks.flatMap((n) => n.nodes).map((node) => (node.owned ? node.control?.stop() : undefined)),
    );
    await Promise.allSettled(this.networks.flatMap((n) => n.nodes).map((node) => node.front?.stop()));
    await this.cleanUp();
  }

  /**
   * One block: a full node at the head builds it with what the pools hold (the devnet's transactions and those
   * clients sent to any node), then every node is handed it; a forked node builds one of its own instead.
   */
  private async produce(network: GethNetwork): Promise<void> {
    if (network.reorging) return;
    const run = this.produceBlock(network);
    network.producing.add(run);
    try {
      await run;
    } finally {
      network.producing.delete(run);
    }
  }

  /** A node that builds the network's next block: at the head, not forked or killed, a full node if one is. */
  private builder(network: GethNetwork): GethMember | undefined {
    const head = this.head(network.name);
    const atHead = (node: GethMember) =>
      node.reachable && node.head?.hash === head.hash && node.fault?.kind !== "fork" && !node.killed;
    return (
      network.nodes.find(
        (node) => node.endpoint.role === "full" && fullNodeProduces(node.fault) && atHead(node),
      ) ?? network.nodes.find((node) => fullNodeProduces(node.fault) && atHead(node))
    );
  }

  private async produceBlock(network: GethNetwork): Promise<void> {
    if (this.stopped || this.halted(network)) return;
    const head = this.head(network.name);
    const builder = this.builder(network);
    if (!builder) {
      this.logger.debug({ network: network.name }, "devnet: no node at the head to build the next block");
      return;
    }
    const collect = Promise.all(
      network.nodes
        .filter((node) => node !== builder && node.reachable && !node.killed)
        .map((node) => node.poolTransactions(network.forwarded).catch(() => [] as string[])),
    ).then((found) => {
      network.pending.push(...found.flat());
      if (network.forwarded.size > KEPT_FORWARDED) network.forwarded.clear();
    });
    await (this.blockTimeMs > 0 ? settledWithin(collect, this.blockTimeMs / 2) : collect);
    if (this.stopped) return;
    const timestamp = Math.max(network.timestamps[head.number]! + 1, Math.floor(this.now() / 1000));
    let built: BuiltPayload;
    try {
      built = await builder.build(head.hash, timestamp, network.pending, feeRecipient(false));
    } catch (error) {
      this.logger.warn(
        { network: network.name, node: builder.name, err: (error as Error).message },
        "devnet: block not built",
      );
      return;
    }
    if (this.head(network.name).hash !== head.hash || network.reorging) return;
    const number = head.number + 1;
    network.hashes[number] = built.executionPayload.blockHash;
    network.timestamps[number] = timestamp;
    network.payloads[number] = built;
    const included = new Set(built.executionPayload.transactions.map((raw) => keccak256(raw)));
    network.pending = network.pending.filter((raw) => !included.has(keccak256(raw)));
    await Promise.all(
      network.nodes
        .filter((node) => node.fault?.kind === "fork" && node.reachable)
        .map((node) => node.buildOwn(timestamp).catch(() => undefined)),
    );
    await this.syncNetwork(network);
  }

  private halted(network: GethNetwork): boolean {
    return !network.nodes.some((node) => node.endpoint.role === "full" && fullNodeProduces(node.fault));
  }

  private async syncNetwork(network: GethNetwork): Promise<void> {
    if (this.stopped) return;
    await Promise.all(network.nodes.map((node) => node.sync()));
  }

  private network(name: string): GethNetwork {
    return networkNamed(this.networks, name);
  }

  private findNode(name: string): { network: GethNetwork; node: GethMember } | undefined {
    return findNode(this.networks, name);
  }

  private node(name: string): { network: GethNetwork; node: GethMember } {
    return nodeNamed(this.networks, name);
  }
}
