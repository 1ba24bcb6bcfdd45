import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");
/** The CLI as shipped (`npm run build`): what the benchmarks run, so their numbers are the product's. */
export const BUILT_CLI = join(ROOT, "dist/cli.js");

/** The newest modification time of any file under `dir` (0 for none). */
function newestChange(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  return newest;
}

let checked = false;

/**
 * Builds dist/ when it is missing or older than any file under src/, saying so: a benchmark of a stale build would
 * measure code that is no longer there. Checked once per benchmark process.
 */
export function ensureBuilt(): string {
  if (checked) return BUILT_CLI;
  const built = (() => {
    try {
      return statSync(BUILT_CLI).mtimeMs;
    } catch {
      return undefined;
    }
  })();
  const reason =
    built === undefined
      ? "dist/cli.js does not exist"
      : newestChange(join(ROOT, "src")) > built
        ? "src/ changed since dist/ was built"
        : undefined;
  if (reason) {
    console.log(`bench: ${reason}; building the gateway with \`npm run build\` (the bench runs dist/cli.js)`);
    execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  }
  checked = true;
  return BUILT_CLI;
}
