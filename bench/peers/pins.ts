import { homedir } from "node:os";
import { join } from "node:path";

/** A Go-built gateway the benchmark compares with: built by bench/peers/buildPeers.ts, never by `npm test`. */
export interface PeerPin {
  name: "proxyd" | "erpc";
  /** The Go module, as the module proxy serves it. */
  module: string;
  /**
   * Pinned to a commit: neither project tags versions the go command accepts (proxyd's `proxyd/vX.Y.Z` tags need a
   * `/vX` module path it does not have; eRPC's tags have no `v`), so only a pseudo-version of a commit names one.
   */
  version: string;
  /** The main package inside the module. */
  mainPackage: string;
}

export const PEERS: readonly PeerPin[] = [
  {
    name: "proxyd",
    module: "github.com/ethereum-optimism/infra/proxyd",
    version: "3af0a1151f87f940df86308b527d9c85be8c62c3",
    mainPackage: "./cmd/proxyd",
  },
  {
    name: "erpc",
    module: "github.com/erpc/erpc",
    version: "79d8b64759dfe9459f572955476a6bc225baaa00",
    mainPackage: "./cmd/erpc",
  },
];

/** Outside the work tree, so nothing built is ever committed: $XDG_CACHE_HOME or ~/.cache. */
export function peerDir(peer: PeerPin): string {
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache");
  return join(cache, "lightfleet", "bench-peers", `${peer.name}-${peer.version.slice(0, 12)}`);
}

export const peerBinary = (peer: PeerPin) => join(peerDir(peer), "bin", peer.name);
/** Written instead of the binary when the build failed: the commands and what the go command said. */
export const peerBuildError = (peer: PeerPin) => join(peerDir(peer), "build-error.txt");
