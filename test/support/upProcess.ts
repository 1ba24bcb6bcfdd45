import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";
import { jsonLogLines, type LogLine } from "./jsonLogLines.js";
import { descendants } from "./processTree.js";
import { ROOT } from "./runCli.js";

export interface UpProcess {
  child: ChildProcessWithoutNullStreams;
  /** Its JSON log lines so far. */
  lines: () => LogLine[];
  /** SIGKILL to up and everything under it, for a test that failed halfway (a no-op once up has exited). */
  kill: () => void;
}

/** `lightfleet up` as its own process (node --import tsx, so the pid is the supervisor itself). */
export function spawnUp(config: string, extraArgs: string[] = []): UpProcess {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(ROOT, "src/cli.ts"), "up", "--config", config, ...extraArgs],
    { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] },
  );
  child.stderr.on("data", () => undefined);
  const lines = jsonLogLines(child.stdout);
  const kill = () => {
    const tree = child.pid ? descendants(child.pid) : [];
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    for (const pid of tree) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
  };
  return { child, lines, kill };
}
