import type { Command } from "commander";
import { EXIT_CONFIG } from "../fail.js";
import { DEFAULT_ADMIN_URL } from "../../devnet/adminClient.js";

interface RestartFlags {
  admin: string;
  cluster?: boolean;
  namespace?: string;
}

/** `lightfleet node restart NODE`: the operator's restart of one light node, the way out of CrashLoop. */
export function registerNodeCommand(program: Command): void {
  const node = program.command("node").description("act on one light node of a running fleet");
  node
    .command("restart")
    .description(
      "restart NODE now, outside the restart budget (reason manual): the way out of CrashLoop. In `up` through the " +
        "admin port; with --cluster by annotating its pod (lightfleet.io/restart), which the controller honours",
    )
    .argument("<node>", "the light node (in Kubernetes, its pod)")
    .option("--admin <url>", "admin endpoint of the running `lightfleet up`", DEFAULT_ADMIN_URL)
    .option("--cluster", "the node is a pod in Kubernetes (the current kubeconfig context)")
    .option("-n, --namespace <namespace>", "the pod's namespace (with --cluster; default the context's)")
    .action(async (name: string, flags: RestartFlags) => {
      // Each way loads only its own client: the Kubernetes one takes a second or two to load.
      const { NodeRestartError } = await import("../../node/nodeRestartError.js");
      try {
        if (flags.cluster || flags.namespace !== undefined) {
          const { requestRestartInCluster } = await import("../../node/restartInCluster.js");
          const namespace = await requestRestartInCluster(name, flags.namespace);
          process.stdout.write(
            `${name}: restart requested (pod ${namespace}/${name} annotated; the controller evicts it next round)\n`,
          );
        } else {
          const { requestRestartInUp } = await import("../../node/restartInUp.js");
          const network = await requestRestartInUp(flags.admin, name);
          process.stdout.write(
            `${name}: restart requested (${network}; the controller restarts it at once)\n`,
          );
        }
      } catch (error) {
        if (!(error instanceof NodeRestartError)) throw error;
        process.stderr.write(`lightfleet node restart: ${error.message}\n`);
        process.exitCode = error.usage ? EXIT_CONFIG : 1;
      }
    });
}
