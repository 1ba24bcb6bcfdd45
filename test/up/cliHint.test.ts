import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cliHint, formatBanner } from "../../src/up/banner.js";
import { ROOT } from "../support/runCli.js";

const cleanup: Array<() => unknown> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

function project(pkg: Record<string, unknown> | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), "lightfleet-hint-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  if (pkg) writeFileSync(join(dir, "package.json"), JSON.stringify(pkg));
  return dir;
}

describe("how hints spell the command", () => {
  it("names the linked command in lightfleet's own checkout, where npx would read the whole tree first", () => {
    expect(cliHint(ROOT)).toBe("node_modules/.bin/lightfleet");
    expect(cliHint(project({ name: "lightfleet", bin: "dist/cli.js" }))).toBe("node_modules/.bin/lightfleet");
  });

  it("says npx wherever lightfleet is installed (npx finds the bin at once there)", () => {
    expect(cliHint(project({ name: "my-dapp", dependencies: { lightfleet: "^0.1.0" } }))).toBe(
      "npx lightfleet",
    );
    expect(cliHint(project(undefined))).toBe("npx lightfleet");
    const broken = project(undefined);
    writeFileSync(join(broken, "package.json"), "{ not json");
    expect(cliHint(broken)).toBe("npx lightfleet");
  });

  it("the banner's fault hint uses it", () => {
    const banner = formatBanner({
      networks: [{ name: "mainnet", chainId: 1 }],
      adminUrl: "http://127.0.0.1:9464",
      endpoints: [],
      exampleNode: "mainnet-light-1",
      devnet: true,
      cli: "node_modules/.bin/lightfleet",
    });
    expect(banner).toContain("Inject a fault: node_modules/.bin/lightfleet devnet lag mainnet-light-1 5");
  });
});
