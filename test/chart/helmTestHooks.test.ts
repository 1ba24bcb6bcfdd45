import { createServer } from "node:http";
import type { Server } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAdminServer } from "../../src/admin/adminServer.js";
import type { AdminServer } from "../../src/admin/adminServer.js";
import { startAnvil } from "../../src/devnet/anvil.js";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { silentLogger } from "../../src/log/logger.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { freePort } from "../../src/process/freePort.js";
import { renderChart } from "../support/helm.js";
import { runNodeScript } from "../support/runCli.js";

interface HookPod {
  metadata: { name: string; annotations: Record<string, string> };
  spec: { containers: { command: string[]; env: { name: string; value: string }[] }[] };
}

/** Runs a `helm test` pod's command here with node (the image's runtime), with the pod's env and ENV over it. */
function runHook(
  pod: HookPod,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const [command, ...args] = pod.spec.containers[0]!.command;
  expect(command).toBe("node");
  return runNodeScript(args, {
    env: {
      ...process.env,
      ...Object.fromEntries(pod.spec.containers[0]!.env.map((e) => [e.name, e.value])),
      ...env,
    },
  });
}

describe("helm test hooks", () => {
  let hooks: HookPod[];
  let anvil: AnvilNode | undefined;
  let admin: AdminServer | undefined;
  let broken: Server | undefined;
  let silent: NetServer | undefined;

  beforeAll(async () => {
    const { objects } = await renderChart({ values: ["charts/lightfleet/ci/full-values.yaml"] });
    hooks = objects.filter(
      (o) => o.metadata.annotations?.["helm.sh/hook"] === "test",
    ) as unknown as HookPod[];
    anvil = await startAnvil({ name: "hook-test", chainId: 1 });
  });
  afterAll(async () => {
    await anvil?.stop();
    await admin?.close();
    await new Promise((resolve) => (broken ? broken.close(resolve) : resolve(undefined)));
    silent?.close();
  });

  function hook(name: string): HookPod {
    const found = hooks.find((h) => h.metadata.name === name);
    if (!found) throw new Error(`no test hook ${name}`);
    return found;
  }

  it("asks the gateway Service for eth_blockNumber on the first network", () => {
    const env = hook("lightfleet-test-gateway").spec.containers[0]!.env;
    expect(env).toContainEqual({ name: "RPC_URL", value: "http://lightfleet-gateway:8545/mainnet" });
  });

  it("the gateway hook passes against a real node and fails on a JSON-RPC error", async () => {
    const pod = hook("lightfleet-test-gateway");
    const ok = await runHook(pod, { RPC_URL: anvil!.httpUrl });
    expect(ok.output).toContain("eth_blockNumber via");
    expect(ok.code).toBe(0);

    broken = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: "no healthy node" } }));
    });
    await new Promise<void>((resolve) => broken!.listen(0, "127.0.0.1", resolve));
    const port = (broken.address() as AddressInfo).port;
    const failed = await runHook(pod, { RPC_URL: `http://127.0.0.1:${port}/`, TIMEOUT_SECONDS: "2" });
    expect(failed.code).toBe(1);
    expect(failed.output).toContain("no healthy node");
  });

  it("fails in one line, without a stack, when nothing answers: refused, or silent past its deadline", async () => {
    for (const name of ["lightfleet-test-gateway", "lightfleet-test-keys"]) {
      const pod = hook(name);
      expect(pod.spec.containers[0]!.env).toContainEqual({ name: "TIMEOUT_SECONDS", value: "10" });
      const url = name.endsWith("gateway") ? "RPC_URL" : "HEALTH_URL";

      const refused = await runHook(pod, {
        [url]: `http://127.0.0.1:${await freePort()}/`,
        TIMEOUT_SECONDS: "2",
      });
      expect(refused.code, refused.output).toBe(1);
      expect(refused.output).toMatch(/: fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)\n$/);
      expect(refused.output).not.toMatch(/^\s+at /m);

      silent ??= createNetServer(() => undefined); // accepts, never answers
      if (!silent.listening) await new Promise<void>((resolve) => silent!.listen(0, "127.0.0.1", resolve));
      const started = Date.now();
      const unanswered = await runHook(pod, {
        [url]: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`,
        TIMEOUT_SECONDS: "1",
      });
      expect(unanswered.code, unanswered.output).toBe(1);
      expect(unanswered.output).toMatch(/: no answer within 1 s\n$/);
      expect(unanswered.output).not.toMatch(/^\s+at /m);
      expect(Date.now() - started).toBeLessThan(8_000);
    }
  });

  it("the key API hook passes on a healthy /healthz and fails on a failing one", async () => {
    const pod = hook("lightfleet-test-keys");
    expect(pod.spec.containers[0]!.env).toContainEqual({
      name: "HEALTH_URL",
      value: "http://lightfleet-keys:9464/healthz",
    });
    let healthy = true;
    admin = await startAdminServer({
      host: "127.0.0.1",
      port: 0,
      registry: createRegistry({ defaultMetrics: false }),
      logger: silentLogger(),
      liveness: [{ name: "store", check: () => ({ ok: healthy, message: "database unreachable" }) }],
    });
    const ok = await runHook(pod, { HEALTH_URL: `${admin.url}/healthz` });
    expect(ok.code).toBe(0);
    healthy = false;
    const failed = await runHook(pod, { HEALTH_URL: `${admin.url}/healthz`, TIMEOUT_SECONDS: "2" });
    expect(failed.code).toBe(1);
    expect(failed.output).toContain("HTTP 503");
  });

  it("asks again until its deadline: a Service that reaches its pods a moment after install passes", async () => {
    // `helm test` right after `helm install --wait`: the pod is Ready, but its Service's endpoints reach the proxies
    // a moment later, so the first calls are refused. Here the node starts answering only after a few refusals.
    for (const name of ["lightfleet-test-gateway", "lightfleet-test-keys"]) {
      const port = await freePort();
      const late = createServer((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0x10", status: "ok" }));
      });
      const opening = setTimeout(() => late.listen(port, "127.0.0.1"), 2_500);
      try {
        const url = name.endsWith("gateway") ? "RPC_URL" : "HEALTH_URL";
        const answered = await runHook(hook(name), { [url]: `http://127.0.0.1:${port}/` });
        expect(answered.code, answered.output).toBe(0);
      } finally {
        clearTimeout(opening);
        await new Promise((resolve) => (late.listening ? late.close(resolve) : resolve(undefined)));
      }
    }
  });
});
