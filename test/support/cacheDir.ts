import { homedir } from "node:os";
import { join } from "node:path";

/**
 * Where the tools the tests build (control plane, kubelet, geth, actionlint, the image's podman store) are kept:
 * outside the work tree, so a clean clone reuses what an earlier run built, and never committed.
 * `LIGHTFLEET_CACHE_DIR` moves it (a cold run points it at an empty directory), else `$XDG_CACHE_HOME/lightfleet`,
 * else `~/.cache/lightfleet`.
 */
export function lightfleetCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIGHTFLEET_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "lightfleet");
}
