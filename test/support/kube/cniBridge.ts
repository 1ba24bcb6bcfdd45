import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const ip = (args: string[]) => run("ip", args, { timeout: 10_000 });

/** Where Debian's containernetworking-plugins puts the plugins. */
export const CNI_BIN_DIR = "/usr/lib/cni";

/**
 * A pod network for a real kubelet: a Linux bridge this test creates (lfkN, 10.215.N.1/24 on the host) and a CNI
 * configuration with Debian's `bridge` and `host-local` plugins, so containerd gives each pod a veth on the bridge
 * and an address of 10.215.N.0/24. The host reaches pod IPs directly; nothing is masqueraded or forwarded off the
 * machine, so no iptables rule is written.
 */
export interface CniBridge {
  bridge: string;
  /** The host's address on the bridge: the node's InternalIP and the pods' gateway. */
  hostIp: string;
  subnet: string;
  /** A directory holding only this network's configuration (containerd's `conf_dir`). */
  confDir: string;
  destroy(): Promise<void>;
}

/** Why a CNI bridge network cannot be made here, or undefined. */
export function cniUnavailable(): string | undefined {
  for (const plugin of ["bridge", "host-local", "loopback"])
    if (!existsSync(join(CNI_BIN_DIR, plugin)))
      return `${join(CNI_BIN_DIR, plugin)} not found: apt-get install containernetworking-plugins (.ci/run installs it)`;
  return undefined;
}

export async function createCniBridge(dir: string): Promise<CniBridge> {
  // A subnet per run, as the stand-in's pod networks choose theirs: several runs may be on the machine at once.
  for (let attempt = 0; attempt < 50; attempt++) {
    const n = 1 + ((process.pid + attempt * 7) % 250);
    const bridge = `lfk${n}`;
    try {
      await ip(["link", "add", bridge, "type", "bridge"]);
    } catch {
      continue; // taken by another run
    }
    const hostIp = `10.215.${n}.1`;
    const subnet = `10.215.${n}.0/24`;
    const confDir = join(dir, "cni");
    const destroy = async () => {
      await ip(["link", "del", bridge]).catch(() => undefined);
      await rm(confDir, { recursive: true, force: true });
    };
    try {
      await ip(["addr", "add", `${hostIp}/24`, "dev", bridge]);
      await ip(["link", "set", bridge, "up"]);
      await mkdir(confDir, { recursive: true });
      await writeFile(
        join(confDir, "10-lightfleet-test.conflist"),
        JSON.stringify({
          cniVersion: "1.0.0",
          name: `lightfleet-test-${n}`,
          plugins: [
            {
              type: "bridge",
              bridge,
              isGateway: true,
              ipMasq: false,
              hairpinMode: true,
              ipam: {
                type: "host-local",
                ranges: [[{ subnet, gateway: hostIp }]],
                routes: [{ dst: "0.0.0.0/0" }],
                dataDir: join(dir, "cni-ipam"),
              },
            },
          ],
        }),
      );
      return { bridge, hostIp, subnet, confDir, destroy };
    } catch (error) {
      await destroy();
      throw error;
    }
  }
  throw new Error("no free CNI bridge subnet (10.215.1-250.0/24 all taken by bridges named lfkN)");
}
