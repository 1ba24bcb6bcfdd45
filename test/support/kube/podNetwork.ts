import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * A pod network on this machine: one network namespace joined to the host by a veth pair, with a /24 of its own
 * (10.213.N.0/24). Pod IPs are addresses added inside the namespace, so light nodes listen on real, non-loopback pod
 * IPs that EndpointSlices accept (the API refuses 127.0.0.0/8 there), and the controller, gateway and tests reach
 * them from the host over the veth. Nothing leaves the machine.
 */
export interface PodNetwork {
  /** The network namespace's name, for `ip netns exec`. */
  namespace: string;
  /** The host's address on the pod network (the node's InternalIP). */
  hostIp: string;
  /**
   * A range for Services' ClusterIPs (10.214.N.0/24), as distinct per network as the pod subnet, so fixtures running
   * side by side never serve the same ClusterIP on the host.
   */
  serviceCidr: string;
  /** A free pod IP, added to the namespace. */
  allocate(): Promise<string>;
  /**
   * A free pod IP on the host's side of the veth, for pods whose processes run in the host's network namespace: a
   * pod IP of its own to serve its container ports on, reachable from the host and from the pod network.
   */
  allocateOnHost(): Promise<string>;
  release(ip: string): Promise<void>;
  /** Adds an address outside the pod subnet on the host's side (a Service's ClusterIP), gone with the network. */
  addHostAddress(address: string): Promise<void>;
  /** The command prefix that runs a program inside the pod network. */
  exec(command: string, args: string[]): { command: string; args: string[] };
  destroy(): Promise<void>;
}

const ip = (args: string[]) => run("ip", args, { timeout: 10_000 });

/** Why a pod network cannot be made here (no `ip` command or no CAP_NET_ADMIN), or undefined. */
export async function podNetworkUnavailable(): Promise<string | undefined> {
  try {
    await ip(["netns", "list"]);
  } catch (error) {
    return `ip netns is not available (${(error as Error).message.split("\n")[0]}): the real Kubernetes tests need iproute2 and root (CAP_NET_ADMIN) for their pod network`;
  }
  return undefined;
}

export async function createPodNetwork(): Promise<PodNetwork> {
  // A subnet per fixture: test files run side by side, each with its own control plane and pod network.
  for (let attempt = 0; attempt < 50; attempt++) {
    const n = 1 + ((process.pid + attempt * 7) % 250);
    const namespace = `lightfleet-pods-${n}`;
    const hostLink = `lfh${n}`;
    const podLink = `lfp${n}`;
    try {
      await ip(["link", "add", hostLink, "type", "veth", "peer", "name", podLink]);
    } catch {
      continue; // taken by another fixture
    }
    try {
      await ip(["netns", "del", namespace]).catch(() => undefined); // left by a run that was killed
      await ip(["netns", "add", namespace]);
      await ip(["link", "set", podLink, "netns", namespace]);
      const hostIp = `10.213.${n}.1`;
      await ip(["addr", "add", `${hostIp}/24`, "dev", hostLink]);
      await ip(["link", "set", hostLink, "up"]);
      await ip(["netns", "exec", namespace, "ip", "link", "set", "lo", "up"]);
      await ip(["netns", "exec", namespace, "ip", "addr", "add", `10.213.${n}.2/24`, "dev", podLink]);
      await ip(["netns", "exec", namespace, "ip", "link", "set", podLink, "up"]);
      // Host part of each pod IP in use, and whether it sits on the host's side of the veth.
      const used = new Map<number, "pod" | "host">();
      const allocate = async (side: "pod" | "host") => {
        let host = 10;
        while (used.has(host)) host++;
        if (host > 250) throw new Error(`pod network ${namespace} is full`);
        used.set(host, side);
        const address = `10.213.${n}.${host}`;
        if (side === "pod")
          await ip(["netns", "exec", namespace, "ip", "addr", "add", `${address}/32`, "dev", podLink]);
        else await ip(["addr", "add", `${address}/32`, "dev", hostLink]);
        return address;
      };
      return {
        namespace,
        hostIp,
        serviceCidr: `10.214.${n}.0/24`,
        allocate: () => allocate("pod"),
        allocateOnHost: () => allocate("host"),
        async release(address) {
          const host = Number(address.split(".")[3]);
          const side = used.get(host);
          if (!side) return;
          used.delete(host);
          const del =
            side === "pod"
              ? ["netns", "exec", namespace, "ip", "addr", "del", `${address}/32`, "dev", podLink]
              : ["addr", "del", `${address}/32`, "dev", hostLink];
          await ip(del).catch(() => undefined);
        },
        async addHostAddress(address) {
          await ip(["addr", "add", `${address}/32`, "dev", hostLink]);
        },
        exec: (command, args) => ({ command: "ip", args: ["netns", "exec", namespace, command, ...args] }),
        async destroy() {
          await ip(["netns", "del", namespace]).catch(() => undefined);
          await ip(["link", "del", hostLink]).catch(() => undefined);
        },
      };
    } catch (error) {
      await ip(["netns", "del", namespace]).catch(() => undefined);
      await ip(["link", "del", hostLink]).catch(() => undefined);
      throw error;
    }
  }
  throw new Error("no free pod network subnet (10.213.1-250.0/24 all taken by veths named lfhN)");
}
