import { execFileSync } from "node:child_process";

/**
 * Locates a command-line tool a test drives for real. In CI (process.env.CI set) a missing tool is an error, so a
 * machine without it can never pass by skipping; locally the caller may skip with the returned message, which names
 * the Debian package to install.
 */
export function findTool(command: string, debianPackage: string): { path?: string; missing: string } {
  const missing = `${command} not found: apt-get install ${debianPackage} (.ci/run installs it in CI)`;
  try {
    const path = execFileSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim();
    if (path) return { path, missing };
  } catch {
    // not on PATH
  }
  if (process.env.CI) throw new Error(missing);
  return { missing };
}
