// Runs a process fleet of two anvil members and prints their pids; the test then kills this process outright.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProcessFleet } from "../../../src/fleet/process/processFleet.js";
import { silentLogger } from "../../../src/log/logger.js";

const fleet = new ProcessFleet({
  networks: [
    {
      name: "devnet",
      chainId: 31_337,
      nodes: {
        command: ["sh", "-c", "'{anvil}' --port {port} --chain-id {chainId} --no-mining; true"],
        replicas: 2,
        basePort: 0,
        startTimeout: 20_000,
      },
    },
  ],
  dataDir: mkdtempSync(join(tmpdir(), "lightfleet-supervisor-")),
  logger: silentLogger(),
});
await fleet.start();
process.stdout.write(`${JSON.stringify({ members: fleet.members("devnet").length })}\n`);
setInterval(() => undefined, 60_000);
