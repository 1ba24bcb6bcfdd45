import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * A Go-built gateway the benchmark compares with. Neither is built by this repository: their modules are not served by
 * the Go module proxy, so a binary built by hand from the project's public source is handed to the bench, by the
 * environment variable or at the cache path below. Nothing here builds one.
 */
export interface Peer {
  name: "proxyd" | "erpc";
  /** The environment variable that names the binary, ahead of the cache path. */
  variable: string;
  /** Where its public source is (for the message saying how to get one). */
  source: string;
}

export const PEERS: readonly Peer[] = [
  {
    name: "proxyd",
    variable: "LIGHTFLEET_BENCH_PROXYD",
    source: "github.com/ethereum-optimism/infra, proxyd/",
  },
  { name: "erpc", variable: "LIGHTFLEET_BENCH_ERPC", source: "github.com/erpc/erpc, cmd/erpc" },
];

/** `~/.cache/lightfleet/bench-peers` ($XDG_CACHE_HOME if set): outside the work tree, so no binary is ever committed. */
export function peersDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "lightfleet", "bench-peers");
}

/** The binary the bench runs: $LIGHTFLEET_BENCH_<NAME>, else `<peersDir>/<name>`. */
export function peerBinary(peer: Peer, env: NodeJS.ProcessEnv = process.env): string {
  return env[peer.variable] || join(peersDir(env), peer.name);
}

/** Why a peer is not in the run, with how to get it in; undefined when its binary is there. */
export function notBuiltReason(peer: Peer, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const binary = peerBinary(peer, env);
  if (existsSync(binary)) return undefined;
  const named = env[peer.variable]
    ? `${peer.variable} names ${binary}, which does not exist`
    : `no binary at ${binary}`;
  return `not built: ${named}; build ${peer.name} from its public source (${peer.source}) and put the binary there or name it in ${peer.variable} (docs/performance.md, "The peers")`;
}
