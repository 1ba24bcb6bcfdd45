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
  /** A free pod IP, added to the namespace. */
  allocate(): Promise<string>;
  release(ip: string): Promise<void>;
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
      const used = new Set<number>();
      return {
        namespace,
        hostIp,
        async allocate() {
          let host = 10;
          while (used.has(host)) host++;
          if (host > 250) throw new Error(`pod network ${namespace} is full`);
          used.add(host);
          await ip([
            "netns",
            "exec",
            namespace,
            "ip",
            "addr",
            "add",
            `10.213.${n}.${host}/32`,
            "dev",
            podLink,
          ]);
          return `10.213.${n}.${host}`;
        },
        async release(address) {
          const host = Number(address.split(".")[3]);
          if (!used.delete(host)) return;
          await ip(["netns", "exec", namespace, "ip", "addr", "del", `${address}/32`, "dev", podLink]).catch(
            () => undefined,
          );
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
