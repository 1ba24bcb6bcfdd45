import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/log/logger.js";
import { spawnChild } from "../../src/process/spawnChild.js";
import { findTool } from "../support/requireTool.js";
import { waitFor } from "../support/waitFor.js";
import { freePort } from "../../src/process/freePort.js";

export interface PrometheusServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * Debian's Prometheus on 127.0.0.1 (an ephemeral port), scraping `targets` (host:port) every `scrapeInterval`, with
 * its storage in a temporary directory that stop() removes. Throws when prometheus is not installed (findTool).
 */
export async function startPrometheus(options: {
  targets: string[];
  scrapeInterval?: string;
}): Promise<PrometheusServer> {
  const tool = findTool("prometheus", "prometheus");
  if (!tool.path) throw new Error(tool.missing);
  const dir = await mkdtemp(join(tmpdir(), "lightfleet-prometheus-"));
  const interval = options.scrapeInterval ?? "500ms";
  await writeFile(
    join(dir, "prometheus.yml"),
    JSON.stringify({
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: "1s" },
      scrape_configs: [{ job_name: "gateway", static_configs: [{ targets: options.targets }] }],
    }),
  );
  const port = await freePort();
  const lines: string[] = [];
  const child: ChildProcess = spawnChild({
    command: tool.path,
    args: [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--storage.tsdb.retention.time=1h",
    ],
    name: "prometheus",
    logger: createLogger({ level: "fatal" }),
    onLine: (line) => lines.push(line),
  });
  const exited = once(child, "exit");
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited: ${lines.slice(-5).join("\n")}`);
        return (await fetch(`${url}/-/ready`)).ok;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: "prometheus to be ready" },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}
