import { describe, expect, it } from "vitest";
import { CHART_DIR, helm } from "../support/helm.js";

/** Values changes as an operator makes them: what the chart says and renders for each. */
const NETWORK = [
  "networks[0].name=mainnet",
  "networks[0].preset=mainnet",
  "networks[0].reservedPeers[0].name=full-0",
  "networks[0].reservedPeers[0].http=http://full-0:8545",
  "networks[0].workload.enabled=true",
  "networks[0].workload.image.repository=example.org/light",
];

/** NOTES.txt as `helm install` prints it (a client-side dry run: no cluster). */
async function notes(set: string[]): Promise<string> {
  const args = ["install", "lf", CHART_DIR, "--dry-run=client", "--namespace", "rpc"];
  for (const pair of [...NETWORK, ...set]) args.push("--set", pair);
  const result = await helm(args);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return result.stdout.slice(result.stdout.indexOf("NOTES:"));
}

describe("operating the chart", () => {
  it("warns that a network's workload.replicas is not used while an autoscaler owns the size", async () => {
    const warning =
      /WARNING: networks\[mainnet\]\.workload\.replicas is not used: autoscaling\.mode is controller/;
    expect(await notes(["networks[0].workload.replicas=3"])).toMatch(warning);
    expect(await notes([])).not.toMatch(/WARNING/);
    expect(await notes(["networks[0].workload.replicas=3", "autoscaling.mode=off"])).not.toMatch(/WARNING/);
  });
});
