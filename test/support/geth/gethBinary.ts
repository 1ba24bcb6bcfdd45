import { runGo } from "../goCommand.js";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { acquireLock, missingGo as missingGoForKube } from "../kube/controlPlaneBinaries.js";
import { lightfleetCacheDir } from "../cacheDir.js";

/**
 * The geth the tests run beside anvil: a real execution client, built from the Go module proxy at this version (a
 * version bump builds anew; `go list -m -versions github.com/ethereum/go-ethereum` lists the ones served).
 */
export const GETH_VERSION = "v1.17.10";
const GETH_PACKAGE = "github.com/ethereum/go-ethereum/cmd/geth";
/** For the progress log: the build measured on its own, cold, on 2 loaded cores, module downloads included. */
const GETH_COLD_MINUTES = 11;

/** Outside the work tree (~/.cache/lightfleet/geth-<version>), so a clean clone reuses what an earlier run built. */
export function gethCacheDir(): string {
  return join(lightfleetCacheDir(), `geth-${GETH_VERSION}`);
}

/** The geth binary when built, or undefined. */
export function builtGeth(): string | undefined {
  const path = join(gethCacheDir(), "geth");
  return existsSync(path) ? path : undefined;
}

/** Why geth cannot be built here, or undefined when Go is on PATH. */
export async function missingGo(): Promise<string | undefined> {
  return (await missingGoForKube()) === undefined
    ? undefined
    : `go not found: the conformance tests build geth ${GETH_VERSION} with Go 1.24 or later (npm run geth builds it once into ${gethCacheDir()})`;
}

/**
 * Builds geth once per pinned version into the cache (about 11 minutes cold on the shared 2-core machine, downloads
 * included; nothing after). A lock file keeps concurrent callers from building twice.
 */
export async function ensureGeth(log: (line: string) => void = () => undefined): Promise<string> {
  const ready = builtGeth();
  if (ready) return ready;
  const goMissing = await missingGo();
  if (goMissing) throw new Error(goMissing);
  const dir = gethCacheDir();
  await mkdir(dir, { recursive: true });
  const lock = await acquireLock(join(dir, ".lock"));
  try {
    const target = join(dir, "geth");
    if (existsSync(target)) return target;
    const started = Date.now();
    log(
      `building geth ${GETH_VERSION} (${GETH_PACKAGE}) into ${dir} (cold: about ${GETH_COLD_MINUTES} min) ...`,
    );
    // go install writes into GOBIN: a directory of its own, so a build cut short never leaves a half binary as geth.
    const partial = join(dir, `.partial-${process.pid}`);
    await rm(partial, { recursive: true, force: true });
    await goInstall(partial, dir);
    await rename(join(partial, "geth"), target);
    await rm(partial, { recursive: true, force: true });
    log(`built geth in ${Math.round((Date.now() - started) / 1000)} s`);
    return target;
  } finally {
    await lock.release();
  }
}

function goInstall(gobin: string, cwd: string): Promise<void> {
  const args = ["install", "-trimpath", "-ldflags", "-s -w", `${GETH_PACKAGE}@${GETH_VERSION}`];
  // Outside any module or workspace: `pkg@version` builds with the go.mod of that version, as a user's install.
  return runGo(args, cwd, { GOBIN: gobin, CGO_ENABLED: "0", GOWORK: "off" });
}

/**
 * The geth a test runs: built already (by `npm run geth`, part of `npm test`), else built now. In CI a missing Go is
 * an error; elsewhere the caller skips with the returned message, which says how to get geth.
 */
export async function gethForTests(): Promise<{ path?: string; missing: string }> {
  const missing = `geth ${GETH_VERSION} is not built and Go is missing: install Go 1.24+, then npm run geth (builds it into ${gethCacheDir()})`;
  const ready = builtGeth();
  if (ready) return { path: ready, missing };
  if (await missingGo()) {
    if (process.env.CI) throw new Error(missing);
    return { missing };
  }
  return { path: await ensureGeth(), missing };
}

/**
 * The geth binary for a test, built first if need be; where it cannot be (no Go), the test is skipped with how to get
 * it, and in CI fails (see gethForTests).
 */
export async function gethOrSkip(skip: () => void): Promise<string> {
  const geth = await gethForTests();
  if (geth.path) return geth.path;
  console.warn(`skipped: ${geth.missing}`);
  skip();
  // skip() ends the test by throwing; this is for a skip that returns.
  throw new Error(geth.missing);
}
