import { Counter } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { AdminServer } from "../../src/admin/adminServer.js";
import { startAdminServer } from "../../src/admin/adminServer.js";
import { silentLogger } from "../../src/log/logger.js";
import { createRegistry } from "../../src/metrics/registry.js";

let admin: AdminServer | undefined;
afterEach(() => admin?.close());

describe("admin server", () => {
  it("serves metrics and Kubernetes-style health checks", async () => {
    const registry = createRegistry();
    new Counter({ name: "lightfleet_test_total", help: "t", registers: [registry] }).inc(3);
    let ready = false;
    admin = await startAdminServer({
      host: "127.0.0.1",
      port: 0,
      registry,
      logger: silentLogger(),
      liveness: [{ name: "loop", check: () => ({ ok: true }) }],
      readiness: [{ name: "fleet", check: () => ({ ok: ready, message: "no round yet" }) }],
    });
    const metrics = await fetch(`${admin.url}/metrics`);
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    const text = await metrics.text();
    expect(text).toContain("lightfleet_test_total 3");
    expect(text).toContain("lightfleet_process_cpu_seconds_total");

    expect((await fetch(`${admin.url}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${admin.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain("[-]fleet failed: no round yet");
    ready = true;
    expect((await fetch(`${admin.url}/readyz`)).status).toBe(200);

    admin.addLiveness({ name: "watch", check: () => ({ ok: false, message: "cache stale" }) });
    const unhealthy = await fetch(`${admin.url}/healthz`);
    expect(unhealthy.status).toBe(503);
    expect(await unhealthy.text()).toContain("[-]watch failed: cache stale");
  });

  it("answers unknown paths and methods without crashing", async () => {
    admin = await startAdminServer({
      host: "127.0.0.1",
      port: 0,
      registry: createRegistry(),
      logger: silentLogger(),
    });
    expect((await fetch(`${admin.url}/nope`)).status).toBe(404);
    expect((await fetch(`${admin.url}/metrics`, { method: "POST" })).status).toBe(405);
    admin.addReadiness({
      name: "throws",
      check: () => {
        throw new Error("boom");
      },
    });
    const res = await fetch(`${admin.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("[-]throws failed: Error: boom");
  });

  it("drops the readiness checks of a part that does not run", async () => {
    admin = await startAdminServer({
      host: "127.0.0.1",
      port: 0,
      registry: createRegistry(),
      logger: silentLogger(),
    });
    admin.addReadiness({ name: "gateway", check: () => ({ ok: true }) });
    admin.addReadiness({ name: "devnet", check: () => ({ ok: false, message: "not started yet" }) });
    expect((await fetch(`${admin.url}/readyz`)).status).toBe(503);
    admin.removeReadiness("devnet");
    const res = await fetch(`${admin.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("[+]gateway ok\nok\n");
  });
});
