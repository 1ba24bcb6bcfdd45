import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import type { RequestHandler } from "express";
import type { Registry } from "prom-client";
import type { Logger } from "../log/logger.js";

/** A named check; `/healthz` runs the liveness checks, `/readyz` the readiness checks. */
export interface HealthCheck {
  name: string;
  check: () => { ok: boolean; message?: string };
}

export interface AdminServerOptions {
  host: string;
  port: number;
  /** What `/metrics` serves: a registry, or the sum over gateway workers. */
  registry: Pick<Registry, "metrics" | "contentType">;
  logger: Logger;
  liveness?: HealthCheck[];
  readiness?: HealthCheck[];
}

export interface AdminServer {
  url: string;
  server: Server;
  addLiveness(check: HealthCheck): void;
  addReadiness(check: HealthCheck): void;
  /** Drops the readiness checks of that name (a part that turned out not to run). */
  removeReadiness(name: string): void;
  /** Serves more routes (an express Router) on this port, e.g. the devnet's; built-in paths keep precedence. */
  addRoutes(routes: RequestHandler): void;
  close(): Promise<void>;
}

function runChecks(checks: HealthCheck[]): { ok: boolean; body: string } {
  const results = checks.map((c) => {
    try {
      return { name: c.name, ...c.check() };
    } catch (error) {
      return { name: c.name, ok: false, message: String(error) };
    }
  });
  const ok = results.every((r) => r.ok);
  const lines = results.map(
    (r) => `[${r.ok ? "+" : "-"}]${r.name}${r.ok ? " ok" : ` failed: ${r.message ?? ""}`}`,
  );
  return { ok, body: `${lines.join("\n")}${lines.length ? "\n" : ""}${ok ? "ok" : "failed"}\n` };
}

const BUILT_IN_PATHS = new Set(["/metrics", "/healthz", "/livez", "/readyz"]);

/** Serves `/metrics`, `/healthz` and `/readyz` (Kubernetes style: 200 "ok" or 503 with the failing checks). */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const liveness = [...(options.liveness ?? [])];
  const readiness = [...(options.readiness ?? [])];
  let extra: express.Express | undefined;
  const extraRoutes = express.Router();
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (extra && !BUILT_IN_PATHS.has(path ?? "")) {
      extra(req, res);
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/metrics") {
      options.registry
        .metrics()
        .then((text) => res.writeHead(200, { "content-type": options.registry.contentType }).end(text))
        .catch((error: unknown) => {
          options.logger.error({ err: error }, "metrics collection failed");
          res.writeHead(500, { "content-type": "text/plain" }).end("metrics collection failed\n");
        });
      return;
    }
    if (path === "/healthz" || path === "/livez" || path === "/readyz") {
      const { ok, body } = runChecks(path === "/readyz" ? [...liveness, ...readiness] : liveness);
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain; charset=utf-8" }).end(body);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${address.port}`,
    server,
    addLiveness: (check) => liveness.push(check),
    addReadiness: (check) => readiness.push(check),
    removeReadiness: (name) => {
      for (let i = readiness.length - 1; i >= 0; i--) if (readiness[i]!.name === name) readiness.splice(i, 1);
    },
    addRoutes: (routes) => {
      if (!extra) {
        extra = express();
        extra.disable("x-powered-by");
        extra.use(extraRoutes);
        extra.use((_req, res) => {
          res.status(404).type("text/plain").send("not found\n");
        });
      }
      extraRoutes.use(routes);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
