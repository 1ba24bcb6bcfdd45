import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

// Here rather than in devnet/: a process fleet's `{anvil}` placeholder needs it too, and the fleet sits below the devnet.
/** Path of the anvil binary shipped by the `@foundry-rs/anvil` npm package for this platform. */
export function anvilBinary(): string {
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  try {
    return join(dirname(require.resolve(`${platformPackage}/package.json`)), "bin", "anvil");
  } catch {
    throw new Error(
      `anvil is not installed for ${process.platform}/${process.arch} (package ${platformPackage}, a dev ` +
        "dependency: run npm ci in a checkout; the production image and npm ci --omit=dev leave it out)",
    );
  }
}
