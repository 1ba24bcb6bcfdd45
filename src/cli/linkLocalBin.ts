import { chmodSync, existsSync, lstatSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Links `lightfleet` into the checkout's node_modules/.bin after a build (`postbuild`), as an install of the package
 * would: npm never links a project's own bin, so after `npm ci && npm start` the hints' `npx lightfleet ...` would
 * otherwise find no command. Returns the link made, or undefined when there is no node_modules/.bin to link into.
 */
export function linkLocalBin(root: string): string | undefined {
  const cli = join(root, "dist", "cli.js");
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
  chmodSync(cli, 0o755);
  const binDir = join(root, "node_modules", ".bin");
  if (!existsSync(binDir)) return undefined;
  const link = join(binDir, "lightfleet");
  if (existsSync(link) || isDanglingLink(link)) rmSync(link, { force: true });
  symlinkSync(relative(binDir, cli), link);
  return link;
}

function isDanglingLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

// `node dist/cli/linkLocalBin.js` (postbuild) links this package's own checkout.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  linkLocalBin(resolve(dirname(fileURLToPath(import.meta.url)), "..", ".."));
}
