import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findTool } from "./requireTool.js";
import { freePort } from "./redisServer.js";
import { waitFor } from "./waitFor.js";

/** Debian's nginx (package nginx-light), or why it is missing (an error in CI). */
export const nginxTool = findTool("nginx", "nginx-light");

export interface Balancer {
  /** http://127.0.0.1:port */
  url: string;
  stop(): Promise<void>;
}

/**
 * nginx in front of `upstreams` (host:port each) as a Service or an ingress spreads fresh connections: round robin,
 * a new connection to an upstream for every request (no upstream keep-alive), WebSocket upgrades passed through, the
 * next upstream tried when one refuses the connection. One process (no master), its own prefix, pid and temp files.
 */
export async function startNginx(upstreams: string[]): Promise<Balancer> {
  if (!nginxTool.path) throw new Error(nginxTool.missing);
  const dir = mkdtempSync(join(tmpdir(), `lightfleet-nginx-${process.pid}-`));
  mkdirSync(join(dir, "logs"));
  const port = await freePort();
  writeFileSync(
    join(dir, "nginx.conf"),
    [
      "daemon off;",
      "master_process off;",
      "worker_processes 1;",
      `pid ${join(dir, "nginx.pid")};`,
      `error_log ${join(dir, "logs/error.log")} warn;`,
      "events { worker_connections 1024; }",
      "http {",
      "  access_log off;",
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${join(dir, t)};`),
      "  map $http_upgrade $connection_upgrade { default upgrade; '' close; }",
      `  upstream gateways { ${upstreams.map((u) => `server ${u} max_fails=0;`).join(" ")} }`,
      "  server {",
      `    listen 127.0.0.1:${port};`,
      "    location / {",
      "      proxy_pass http://gateways;",
      "      proxy_http_version 1.1;",
      "      proxy_set_header Upgrade $http_upgrade;",
      "      proxy_set_header Connection $connection_upgrade;",
      // The client's own X-Forwarded-For passed as is: a test names the client address each call comes from.
      "      proxy_set_header X-Forwarded-For $http_x_forwarded_for;",
      "      proxy_next_upstream error timeout;",
      "      proxy_connect_timeout 2s;",
      "      proxy_read_timeout 60s;",
      "    }",
      "  }",
      "}",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(nginxTool.path, ["-p", dir, "-c", join(dir, "nginx.conf")], {
    detached: true,
    stdio: "ignore",
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, "SIGKILL");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited (code ${child.exitCode})`);
        return (await fetch(url, { method: "OPTIONS" }).catch(() => undefined)) !== undefined;
      },
      { what: `nginx on port ${port}`, timeoutMs: 10_000 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}
