import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Pinned: a newer actionlint may judge the same workflow differently. */
export const ACTIONLINT_VERSION = "v1.7.12";

function actionlintDir(): string {
  const base =
    process.env.LIGHTFLEET_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "lightfleet");
  return join(base, `actionlint-${ACTIONLINT_VERSION}`);
}

/**
 * The pinned actionlint, built once with the machine's Go into ~/.cache/lightfleet (never the work tree). Returns its
 * path, or why it cannot be had: without Go, the caller fails in CI and skips elsewhere.
 */
export async function ensureActionlint(): Promise<{ path?: string; missing?: string }> {
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
  await run("go", ["install", `github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}`], {
    env: { ...process.env, GOBIN: dir, CGO_ENABLED: "0", GOFLAGS: "-trimpath" },
    timeout: 600_000,
  });
  return { path };
}
