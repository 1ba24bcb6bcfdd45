import { spawn } from "node:child_process";

/**
 * Runs `go ARGS` in CWD with ENV added to this process's environment; resolves on exit 0, else rejects with the
 * command and the last 4,000 characters of its output (a Go build's error is at its end).
 */
export function runGo(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("go", args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`go ${args.join(" ")} failed (exit ${code}):\n${output.slice(-4000)}`)),
    );
  });
}
