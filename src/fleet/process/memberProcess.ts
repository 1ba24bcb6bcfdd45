import type { ChildProcess } from "node:child_process";
import type { Logger } from "../../log/logger.js";
import { signalChild, spawnChild, stopChild } from "../../process/spawnChild.js";
import { HttpRpcClient } from "../../rpc/httpRpcClient.js";

export interface StartMemberProcessOptions {
  name: string;
  command: string[];
  httpUrl: string;
  logger: Logger;
  startTimeoutMs: number;
  /** Called when the process exits, whether asked to or not. */
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void;
}

/** One incarnation of a member: a supervised child process in its own process group. */
export interface MemberProcess {
  child: ChildProcess;
  exited: boolean;
  stop(): Promise<void>;
  /** SIGKILL, for fault injection: the member dies as a crashed node would. */
  kill(): void;
}

/**
 * Spawns a member's command and resolves once it answers JSON-RPC at its URL. Rejects (with the process stopped) when
 * it exits first or does not answer within the start timeout.
 */
export async function startMemberProcess(options: StartMemberProcessOptions): Promise<MemberProcess> {
  const [command, ...args] = options.command;
  const child = spawnChild({
    command: command!,
    args,
    name: options.name,
    logger: options.logger,
    processGroup: true,
  });
  const member: MemberProcess = {
    child,
    exited: false,
    stop: () => stopChild(child),
    kill: () => signalChild(child, "SIGKILL"),
  };
  let spawnError: Error | undefined;
  child.once("error", (error) => (spawnError = error));
  child.once("exit", (code, signal) => {
    member.exited = true;
    options.onExit(code, signal);
  });
  const client = new HttpRpcClient(options.httpUrl, 1_000);
  const deadline = Date.now() + options.startTimeoutMs;
  for (;;) {
    if (spawnError) throw new Error(`${options.name}: cannot run ${command}: ${spawnError.message}`);
    if (member.exited) {
      throw new Error(
        `${options.name}: exited before answering at ${options.httpUrl} (code ${child.exitCode}, signal ${child.signalCode})`,
      );
    }
    try {
      await client.call("eth_chainId");
      return member;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await member.stop();
      throw new Error(
        `${options.name}: did not answer at ${options.httpUrl} within ${options.startTimeoutMs} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
