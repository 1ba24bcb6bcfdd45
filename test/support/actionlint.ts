import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { lightfleetCacheDir } from "./cacheDir.js";

const run = promisify(execFile);

/** Pinned: a newer actionlint may judge the same workflow differently. */
export const ACTIONLINT_VERSION = "v1.7.12";

function actionlintDir(): string {
  return join(lightfleetCacheDir(), `actionlint-${ACTIONLINT_VERSION}`);
}

/**
 * The pinned actionlint, built once with the machine's Go into ~/.cache/lightfleet (never the work tree). Returns its
 * path, or why it cannot be had: without Go, the caller fails in CI and skips elsewhere.
 */
export async function ensureActionlint(
  log: (line: string) => void = () => undefined,
): Promise<{ path?: string; missing?: string }> {
  const dir = actionlintDir();
  const path = join(dir, "actionlint");
  if (existsSync(path)) return { path };
  try {
    await run("go", ["version"]);
  } catch {
    return {
      missing: `go not found: the release workflow is linted with actionlint ${ACTIONLINT_VERSION}, built with Go into ${dir}`,
    };
  }
  const started = Date.now();
  log(`building actionlint ${ACTIONLINT_VERSION} into ${dir} (cold: about 1 min) ...`);
  await run("go", ["install", `github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}`], {
    env: { ...process.env, GOBIN: dir, CGO_ENABLED: "0", GOFLAGS: "-trimpath" },
    timeout: 600_000,
  });
  log(`built actionlint in ${Math.round((Date.now() - started) / 1000)} s`);
  return { path };
}
