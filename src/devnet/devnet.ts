import { settledWithin } from "./waits.js";
import { dnsLabel } from "../config/dnsLabel.js";
import type { Logger } from "../log/logger.js";
import { silentLogger } from "../log/logger.js";
import type { AnvilNode } from "./anvil.js";
import { startAnvil } from "./anvil.js";
import { BlockLog } from "./blockLog.js";
import type { DevTransactionRequest, SentDevTransaction } from "./devTransactions.js";
import { DEV_ACCOUNT, LOG_EMITTER_BYTECODE, signDevTransaction } from "./devTransactions.js";
import type { DrivenNodeStatus, NodeEndpoint, NodeHead, NodeProcessControl, NodeRole } from "./drivenNode.js";
import { DrivenNode } from "./drivenNode.js";
import { DevnetInputError } from "./errors.js";
import type { Fault } from "./faults.js";
import { fullNodeProduces, parseFault } from "./faults.js";
import { startLatencyFront } from "./latencyFront.js";
import { findNode, networkNamed, nodeNamed } from "./lookup.js";
import { genesisHashOf, ownedControl } from "./ownedAnvil.js";
import { checkReorgDepth } from "./reorgDepth.js";

export type { NodeEndpoint, NodeHead, DrivenNodeStatus };

export interface DevnetNetworkOptions {
  name: string;
  chainId: number;
  /** Default 1. */
  fullNodes?: number;
  /** Light nodes the devnet starts itself; default 0 (the fleet attaches its own). */
  lightNodes?: number;
}

export interface StartDevnetOptions {
  networks: DevnetNetworkOptions[];
  /** Interval between blocks; 0 = blocks only on mine(). */
  blockTimeMs: number;
  /** Seconds; default now. */
  genesisTimestamp?: number;
  /** Nodes listen on basePort, basePort+1, ... in order; 0 (default) = ephemeral ports. */
  basePort?: number;
  logger?: Logger;
  /** Wall clock for block timestamps (injectable for tests). */
  now?: () => number;
  /**
   * Puts a front before every light node (owned or attached), which clients reach it through: the `slow` fault
   * delays state reads there. Default off (a front costs a hop on every call).
   */
  latencyFronts?: boolean;
  /** The nodes' implementation: anvil (default), or geth kept on one chain through its engine API. */
  implementation?: "anvil" | "geth";
  /** The geth executable (implementation geth); default `geth` on PATH. */
  gethBinary?: string;
}

export interface AttachOptions {
  name: string;
  network: string;
  httpUrl: string;
  /** ws URL; default the HTTP URL with ws:// (anvil serves both on one port). */
  wsUrl?: string;
  /** Kills the node's process (fault "kill"); without it the node cannot be killed by the devnet. */
  kill?: () => void;
  /**
   * Asks whoever runs the node to start it again (heal of a killed node); the new process is attached anew. Without
   * it, heal clears the fault and a killed node stays down until its owner restarts it.
   */
  restart?: () => void;
}

export interface DevnetNetworkStatus {
  name: string;
  chainId: number;
  head: NodeHead;
  /** Every full node is stalled or killed: no blocks are produced. */
  halted: boolean;
  pendingTransactions: number;
}

export interface DevnetStatus {
  genesisTimestamp: number;
  blockTimeMs: number;
  networks: DevnetNetworkStatus[];
  nodes: DrivenNodeStatus[];
}

export interface Devnet {
  genesisTimestamp: number;
  nodes(network?: string): NodeEndpoint[];
  attach(node: AttachOptions): Promise<void>;
  detach(name: string): void;
  fault(name: string, fault: Fault): Promise<void>;
  mine(network?: string): Promise<void>;
  /**
   * Replaces the network's newest `depth` blocks on every node by new ones at the same heights (a chain
   * reorganisation); their transactions move into the first new block. Resolves with the new head once every
   * reachable node is on the new branch.
   */
  reorg(network: string, depth: number): Promise<NodeHead>;
  head(network: string): NodeHead;
  /** Signs and queues a transaction from the funded dev account; it is mined in the network's next block on every node. */
  sendTransaction(network: string, tx: DevTransactionRequest): Promise<SentDevTransaction>;
  /** Queues the creation of a contract that logs its call data (topic LOG_EMITTER_TOPIC) on every call. */
  deployLogEmitter(network: string): Promise<SentDevTransaction & { contractAddress: string }>;
  status(): DevnetStatus;
  stop(): Promise<void>;
  /**
   * Readies a fleet member before its process starts, and answers the placeholders its command needs (the geth
   * devnet initialises its data directory and gives it an engine port); absent where nothing is needed.
   */
  prepareMember?(member: { name: string; network: string; dataDir: string }): Promise<Record<string, string>>;
}

/** How often every node is checked even without new blocks, so a restarted node is replayed promptly. */
const RECONCILE_INTERVAL_MS = 500;
/** Canonical hashes kept per network (for status and the divergence self-check). */
const KEPT_HASHES = 1_024;

interface DevnetNetwork {
  name: string;
  chainId: number;
  log: BlockLog;
  nodes: DrivenNode[];
  genesisHash: string;
  hashes: Map<number, string>;
  nextNonce: number;
  sending: Promise<unknown>;
}

/** Starts anvil full (and light) nodes for every network and the block driver that keeps them in step. */
export async function startDevnet(options: StartDevnetOptions): Promise<Devnet> {
  validateOptions(options);
  if (options.implementation === "geth") {
    const { startGethDevnet } = await import("./geth/gethDevnet.js");
    return startGethDevnet({ ...options, gethBinary: options.gethBinary ?? "geth" });
  }
  const logger = options.logger ?? silentLogger();
  const now = options.now ?? Date.now;
  const genesisTimestamp = options.genesisTimestamp ?? Math.floor(now() / 1000);
  const launches: Promise<AnvilNode>[] = [];
  let nextPort = options.basePort ?? 0;
  const launch = (name: string, chainId: number) => {
    const port = nextPort === 0 ? 0 : nextPort++;
    const anvil = startAnvil({ name, chainId, timestamp: genesisTimestamp, port, noMining: true, logger });
    launches.push(anvil);
    return anvil;
  };

  const fronted: DrivenNode[] = [];
  const addFront = async (node: DrivenNode) => {
    fronted.push(node);
    node.front = await startLatencyFront({
      httpUrl: node.endpoint.httpUrl,
      wsUrl: node.endpoint.wsUrl,
      delayFor: (methods) => node.delayFor(methods),
    });
  };

  let networks: DevnetNetwork[];
  try {
    networks = await Promise.all(
      options.networks.map(async (spec) => {
        const full = Array.from({ length: spec.fullNodes ?? 1 }, (_, i) => `${spec.name}-full-${i}`);
        const light = Array.from({ length: spec.lightNodes ?? 0 }, (_, i) => `${spec.name}-light-${i}`);
        const anvils = await Promise.all([...full, ...light].map((name) => launch(name, spec.chainId)));
        const network: DevnetNetwork = {
          name: spec.name,
          chainId: spec.chainId,
          log: new BlockLog(genesisTimestamp),
          nodes: [],
          genesisHash: await genesisHashOf(anvils[0]!),
          hashes: new Map(),
          nextNonce: 0,
          sending: Promise.resolve(),
        };
        for (const [i, anvil] of anvils.entries()) {
          const role: NodeRole = i < full.length ? "full" : "light";
          const node = new DrivenNode(
            { name: anvil.name, network: spec.name, role, httpUrl: anvil.httpUrl, wsUrl: anvil.wsUrl },
            true,
            network.log,
            spec.chainId,
            network.genesisHash,
            ownedControl(anvil, { chainId: spec.chainId, timestamp: genesisTimestamp, logger }),
            logger,
          );
          if (role === "light" && options.latencyFronts) await addFront(node);
          network.nodes.push(node);
        }
        return network;
      }),
    );
  } catch (error) {
    // Let every launch settle, then stop whatever did start.
    await Promise.allSettled(fronted.map((node) => node.front?.stop()));
    const settled = await Promise.allSettled(launches);
    await Promise.allSettled(settled.map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)));
    throw error;
  }
  const driver = new DevnetDriver(
    networks,
    genesisTimestamp,
    options.blockTimeMs,
    now,
    logger,
    options.latencyFronts ? addFront : undefined,
  );
  try {
    await driver.start();
  } catch (error) {
    await driver.stop();
    throw error;
  }
  return driver;
}

class DevnetDriver implements Devnet {
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;

  constructor(
    private readonly networks: DevnetNetwork[],
    readonly genesisTimestamp: number,
    private readonly blockTimeMs: number,
    private readonly now: () => number,
    private readonly logger: Logger,
    /** Puts a latency front before a light node (when the devnet runs them). */
    private readonly addFront: ((node: DrivenNode) => Promise<void>) | undefined,
  ) {}

  /** Marks each network's first block, syncs every node once, then starts the block and reconcile timers. */
  async start(): Promise<void> {
    for (const network of this.networks) {
      // Signed with the network's chain id, this transaction makes block 1 (and so every later block) differ between
      // networks that share the genesis timestamp, so a request answered by the wrong network cannot pass unnoticed.
      await this.sendTransaction(network.name, { to: DEV_ACCOUNT, gasLimit: 21_000 });
    }
    await Promise.all(this.networks.map((network) => this.syncNetwork(network)));
    for (const network of this.networks) {
      if (this.blockTimeMs > 0) {
        this.timers.push(setInterval(() => void this.produce(network), this.blockTimeMs));
      }
    }
    this.timers.push(
      setInterval(
        () => this.networks.forEach((network) => void this.syncNetwork(network)),
        RECONCILE_INTERVAL_MS,
      ),
    );
  }

  nodes(network?: string): NodeEndpoint[] {
    const selected = network === undefined ? this.networks : [this.network(network)];
    return selected.flatMap((n) => n.nodes.map((node) => ({ ...node.publicEndpoint() })));
  }

  async attach(options: AttachOptions): Promise<void> {
    const network = this.network(options.network);
    if (this.findNode(options.name))
      throw new DevnetInputError(`a node named ${options.name} already exists`);
    const control: NodeProcessControl | undefined = options.kill
      ? {
          pid: () => undefined,
          kill: async () => options.kill!(),
          ...(options.restart ? { respawn: async () => options.restart!() } : {}),
          stop: async () => undefined,
        }
      : undefined;
    const node = new DrivenNode(
      {
        name: options.name,
        network: network.name,
        role: "light",
        httpUrl: options.httpUrl,
        wsUrl: options.wsUrl ?? options.httpUrl.replace(/^http/, "ws"),
      },
      false,
      network.log,
      network.chainId,
      network.genesisHash,
      control,
      this.logger,
    );
    await node.verify();
    await this.addFront?.(node);
    network.nodes.push(node);
    await this.syncNode(network, node);
    if (!node.reachable) {
      this.detach(options.name);
      throw new Error(`cannot replay ${options.name} to the head: ${node.lastError ?? "unreachable"}`);
    }
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
    const { network, node } = this.node(name);
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
    await this.syncNode(network, node);
  }

  async mine(network?: string): Promise<void> {
    const selected = network === undefined ? this.networks : [this.network(network)];
    await Promise.all(selected.map((n) => this.produce(n)));
  }

  async reorg(network: string, depth: number): Promise<NodeHead> {
    const n = this.network(network);
    checkReorgDepth(depth, n.log.height);
    const forkPoint = n.log.reorganise(depth, this.now());
    for (const height of [...n.hashes.keys()]) if (height > forkPoint) n.hashes.delete(height);
    this.logger.info({ network, depth, forkPoint }, "devnet reorg");
    await this.syncNetwork(n);
    return this.head(network);
  }

  head(network: string): NodeHead {
    const n = this.network(network);
    return { number: n.log.height, hash: n.hashes.get(n.log.height) ?? "" };
  }

  sendTransaction(network: string, tx: DevTransactionRequest): Promise<SentDevTransaction> {
    const n = this.network(network);
    // Signed one after another so the log holds them in nonce order.
    const sent = n.sending.then(async () => {
      const signed = await signDevTransaction(tx, n.chainId, n.nextNonce);
      n.nextNonce += 1;
      n.log.addTransaction(signed.raw);
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
        pendingTransactions: n.log.pendingTransactions.length,
      })),
      nodes: this.networks.flatMap((n) => n.nodes.map((node) => node.status())),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    const owned = this.networks.flatMap((n) => n.nodes).filter((node) => node.owned);
    for (const node of this.networks.flatMap((n) => n.nodes)) node.detached = true;
    await Promise.allSettled([
      ...owned.map((node) => node.control!.stop()),
      ...this.networks.flatMap((n) => n.nodes).map((node) => node.front?.stop()),
    ]);
  }

  /**
   * Appends a block to the network's log (unless it is halted) and mines it on every node. Transactions clients sent
   * to any node (through a gateway, or to a node directly) are taken from the pools into it first, so every node
   * mines the same block.
   */
  private async produce(network: DevnetNetwork): Promise<void> {
    if (this.stopped || this.halted(network)) return;
    const pools = Promise.all(
      network.nodes.filter((node) => node.reachable).map((node) => node.collectPool().catch(() => undefined)),
    );
    // A hung node (it takes the connection and never answers) must not hold up the chain: what its pool holds goes
    // into a later block. Blocks mined on demand (no block time) wait for every pool.
    await (this.blockTimeMs > 0 ? settledWithin(pools, this.blockTimeMs / 2) : pools);
    if (this.stopped) return;
    network.log.append(this.now());
    await this.syncNetwork(network);
  }

  private halted(network: DevnetNetwork): boolean {
    return !network.nodes.some((node) => node.endpoint.role === "full" && fullNodeProduces(node.fault));
  }

  private async syncNetwork(network: DevnetNetwork): Promise<void> {
    if (this.stopped) return;
    await Promise.all(network.nodes.map((node) => this.syncNode(network, node)));
  }

  /** Syncs one node and records the hash it reached, checking it against the other nodes' when on the common chain. */
  private async syncNode(network: DevnetNetwork, node: DrivenNode): Promise<void> {
    await node.sync();
    const head = node.head;
    if (!head || !node.reachable || !node.onCommonChain()) return;
    const known = network.hashes.get(head.number);
    if (known === undefined) {
      network.hashes.set(head.number, head.hash);
      network.hashes.delete(head.number - KEPT_HASHES);
    } else if (known !== head.hash) {
      this.logger.warn(
        { node: node.name, number: head.number, hash: head.hash, expected: known },
        "devnet node mined a different block from the same log: was it started with another genesis?",
      );
    }
  }

  private network(name: string): DevnetNetwork {
    return networkNamed(this.networks, name);
  }

  private findNode(name: string): { network: DevnetNetwork; node: DrivenNode } | undefined {
    return findNode(this.networks, name);
  }

  private node(name: string): { network: DevnetNetwork; node: DrivenNode } {
    return nodeNamed(this.networks, name);
  }
}

function validateOptions(options: StartDevnetOptions): void {
  const problems: string[] = [];
  if (options.networks.length === 0) problems.push("at least one network is needed");
  const names = new Set<string>();
  for (const network of options.networks) {
    if (!dnsLabel.safeParse(network.name).success) {
      problems.push(
        `network name ${JSON.stringify(network.name)} must be lower-case letters, digits and '-'`,
      );
    }
    if (names.has(network.name)) problems.push(`duplicate network name ${network.name}`);
    names.add(network.name);
    if (!Number.isInteger(network.chainId) || network.chainId <= 0) {
      problems.push(`${network.name}: chainId must be a positive integer`);
    }
    if ((network.fullNodes ?? 1) < 1 || !Number.isInteger(network.fullNodes ?? 1)) {
      problems.push(`${network.name}: fullNodes must be a whole number of at least 1`);
    }
    if ((network.lightNodes ?? 0) < 0 || !Number.isInteger(network.lightNodes ?? 0)) {
      problems.push(`${network.name}: lightNodes must be a whole number of at least 0`);
    }
  }
  if (options.implementation !== undefined && !["anvil", "geth"].includes(options.implementation)) {
    problems.push(`implementation must be anvil or geth (got ${JSON.stringify(options.implementation)})`);
  }
  if (!Number.isFinite(options.blockTimeMs) || options.blockTimeMs < 0) {
    problems.push("blockTimeMs must be 0 (mine on demand) or a positive number of milliseconds");
  }
  if (problems.length > 0) throw new DevnetInputError(`invalid devnet options: ${problems.join("; ")}`);
}
