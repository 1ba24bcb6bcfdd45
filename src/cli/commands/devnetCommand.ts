import type { Command } from "commander";
import { EXIT_CONFIG } from "../fail.js";
import type { DevnetFlags } from "../../devnet/devnetOptions.js";
import { DEFAULT_ADMIN_URL } from "../../devnet/adminClient.js";

interface RunFlags extends DevnetFlags {
  config?: string;
  adminPort?: string;
  adminHost?: string;
  logFormat?: "auto" | "json" | "pretty";
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** `lightfleet devnet` (run a standalone devnet) and its fault commands against a running one. */
export function registerDevnetCommand(program: Command): void {
  const devnet = program
    .command("devnet")
    .description("local devnet (anvil or geth): run one, or inject faults into a running one");

  devnet
    .command("run", { isDefault: true })
    .description("start full (and light) nodes, make blocks, serve /devnet/* on the admin port; Ctrl-C stops")
    .option("-c, --config <file>", "YAML config (its devnet: section, else its networks)")
    .option("--network <name:chainId>", "a network to run (repeatable; default devnet:31337)", collect, [])
    .option("--full-nodes <n>", "full nodes per network (default 1)")
    .option("--light-nodes <n>", "devnet-owned light nodes per network (default 0)")
    .option("--block-time <duration>", "interval between blocks, 0 = only on POST /devnet/mine (default 2s)")
    .option("--genesis-timestamp <seconds>", "shared genesis timestamp (default now)")
    .option("--base-port <port>", "first node port, the next ones follow (default 0: free ports)")
    .option("--admin-port <port>", "admin port with /devnet/*, /metrics, /healthz (default 9464)")
    .option("--admin-host <host>", "admin listen address (default 127.0.0.1)")
    .option(
      "--latency-fronts",
      "put a front before every light node, so `devnet slow` can delay its state reads",
    )
    .option(
      "--implementation <name>",
      "anvil (default) or geth: real geth nodes kept on one chain through their engine API",
    )
    .option("--geth <path>", "the geth executable for --implementation geth (default geth on PATH)")
    .option("--log-format <format>", "auto | json | pretty")
    .action(async (flags: RunFlags) => {
      const { runDevnet } = await import("../../devnet/runDevnet.js");
      await reportDevnetErrors(() => runDevnet(flags));
    });

  const adminOption = [
    "--admin <url>",
    "admin endpoint of the running devnet or up",
    DEFAULT_ADMIN_URL,
  ] as const;
  devnet
    .command("lag")
    .description("keep NODE BLOCKS blocks behind the head")
    .argument("<node>")
    .argument("<blocks>")
    .option(...adminOption)
    .action((node: string, blocks: string, opts: { admin: string }) =>
      injectFault(opts.admin, node, { kind: "lag", blocks }),
    );
  devnet
    .command("slow")
    .description(
      "delay NODE's state reads (eth_call, eth_getBalance, ...) by a log-normal random time; PROFILE light " +
        "(default: p50 50 ms, p99 2 s), mild (10 ms, 200 ms) or severe (200 ms, 5 s); needs latency fronts",
    )
    .argument("<node>")
    .argument("[profile]")
    .option("--seed <n>", "seed of the random delays, for repeatable runs")
    .option(...adminOption)
    .action((node: string, profile: string | undefined, opts: { admin: string; seed?: string }) =>
      injectFault(opts.admin, node, {
        kind: "slow",
        ...(profile !== undefined ? { profile } : {}),
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
      }),
    );
  const simple: Array<[string, string]> = [
    ["stall", "stop giving NODE new blocks"],
    ["fork", "make NODE mine blocks of its own from the next block on"],
    ["kill", "SIGKILL NODE's process"],
    ["heal", "undo NODE's fault: catch up, return from a fork, respawn"],
  ];
  for (const [kind, description] of simple) {
    devnet
      .command(kind)
      .description(description)
      .argument("<node>")
      .option(...adminOption)
      .action((node: string, opts: { admin: string }) => injectFault(opts.admin, node, { kind }));
  }
  devnet
    .command("reorg")
    .description("replace NETWORK's newest DEPTH blocks on every node by new ones (a chain reorganisation)")
    .argument("<network>")
    .argument("<depth>")
    .option(...adminOption)
    .action(async (network: string, depth: string, opts: { admin: string }) => {
      const { requestReorg } = await import("../../devnet/adminClient.js");
      const { DevnetInputError } = await import("../../devnet/errors.js");
      await reportDevnetErrors(async () => {
        if (!/^\d+$/.test(depth)) throw new DevnetInputError(`depth must be a whole number (got ${depth})`);
        const result = await requestReorg(opts.admin, network, Number(depth));
        process.stdout.write(
          `${network}: reorganised ${depth} block(s), head ${result.head.number} ${result.head.hash}\n`,
        );
      });
    });
  devnet
    .command("mine")
    .description("mine one block now on NETWORK, or on every network")
    .argument("[network]")
    .option(...adminOption)
    .action(async (network: string | undefined, opts: { admin: string }) => {
      const { requestMine } = await import("../../devnet/adminClient.js");
      await reportDevnetErrors(async () => {
        const result = await requestMine(opts.admin, network);
        for (const n of result.networks)
          process.stdout.write(`${n.name}: head ${n.head.number} ${n.head.hash}\n`);
      });
    });
  devnet
    .command("status")
    .description("print the running devnet's networks, nodes, heads and faults")
    .option(...adminOption)
    .option("--json", "print the status as JSON")
    .action(async (opts: { admin: string; json?: boolean }) => {
      const { requestStatus } = await import("../../devnet/adminClient.js");
      const { formatStatus } = await import("../../devnet/formatStatus.js");
      await reportDevnetErrors(async () => {
        const status = await requestStatus(opts.admin);
        process.stdout.write(opts.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
      });
    });
}

async function injectFault(
  adminUrl: string,
  node: string,
  input: { kind: string; blocks?: string; profile?: string; seed?: string },
): Promise<void> {
  const { describeFault, parseFault } = await import("../../devnet/faults.js");
  const { requestFault } = await import("../../devnet/adminClient.js");
  await reportDevnetErrors(async () => {
    const fault = parseFault(input);
    const result = await requestFault(adminUrl, node, fault);
    const head = result.status?.head ? ` (head ${result.status.head.number})` : "";
    process.stdout.write(`${node}: ${fault.kind === "heal" ? "healed" : describeFault(fault)}${head}\n`);
  });
}

/** Bad input and 4xx answers exit 2 (like a bad config), an unreachable or failing devnet 1; one line each. */
async function reportDevnetErrors(task: () => Promise<void>): Promise<void> {
  const { DevnetAdminError } = await import("../../devnet/adminClient.js");
  const { DevnetInputError } = await import("../../devnet/errors.js");
  try {
    await task();
  } catch (error) {
    if (error instanceof DevnetInputError) {
      process.stderr.write(`lightfleet devnet: ${error.message}\n`);
      process.exitCode = EXIT_CONFIG;
    } else if (error instanceof DevnetAdminError) {
      process.stderr.write(`lightfleet devnet: ${error.message}\n`);
      process.exitCode = error.status >= 400 && error.status < 500 ? EXIT_CONFIG : 1;
    } else {
      throw error;
    }
  }
}
