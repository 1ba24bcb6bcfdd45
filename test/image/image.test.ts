import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import { startFakeApiServer } from "../support/fakeApiServer.js";
import { chartContainer, podmanRunFlags } from "../support/image/chartPod.js";
import { builtImage, imageFacts } from "../support/image/lightfleetImage.js";
import { missingPodman } from "../support/image/podman.js";
import { podVolumes, runImage, startChartPod, type ChartPod } from "../support/image/runContainer.js";
import { ROOT } from "../support/runCli.js";
import { SERVICE_NODE_FLAGS } from "../../src/process/serviceNodeFlags.js";
import { waitFor } from "../support/waitFor.js";
import { Client } from "../keys/support.js";
import { startUpstreamNode } from "../gateway/support.js";

/**
 * The image built from the project's Dockerfile (`npm run image`), run as the chart runs it: each component in a
 * container with the chart's user, read-only root, dropped capabilities, no privilege escalation, args, environment
 * and volumes, answering the chart's probes.
 */
async function imageUnavailable(): Promise<{ image?: string; why?: string }> {
  const missing = await missingPodman();
  const image = missing ? undefined : await builtImage();
  const why =
    missing ?? (image ? undefined : "the image for this work tree is not built: run `npm run image`");
  if (why && process.env.CI) throw new Error(why);
  return { image, why };
}
const { image, why } = await imageUnavailable();
if (why) console.warn(`skipping the image tests: ${why}`);
const IMAGE = image ?? "";
const CONFIG = "/etc/lightfleet/lightfleet.yaml";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** The chart's container flags for COMPONENT on fresh volumes (removed after the test). */
function chartFlags(component: string, configure?: (c: Record<string, unknown>) => Record<string, unknown>) {
  const container = chartContainer(component);
  const pod = podVolumes(container, configure);
  cleanup.push(() => pod.remove());
  return { container, volumes: pod.volumes, flags: podmanRunFlags(container, pod.volumes) };
}

/** Every listener of a component on 127.0.0.1, ephemeral ports: the containers share the host's network here. */
const onLoopback =
  (extra: Record<string, unknown> = {}) =>
  (config: Record<string, unknown>) => {
    const section = (name: string) => ({ ...(config[name] as object), host: "127.0.0.1", port: 0 });
    return {
      ...config,
      admin: section("admin"),
      gateway: section("gateway"),
      keys: section("keys"),
      ...extra,
    };
  };

function started(pod: ChartPod): ChartPod {
  cleanup.push(() => pod.remove());
  return pod;
}

/** The first log line with message MSG, once written (or the pod's output when it exits first). */
function logLine(pod: ChartPod, msg: string): Promise<Record<string, unknown>> {
  return waitFor(
    () => {
      const line = pod.logLines().find((l) => l.msg === msg);
      if (!line && pod.exitCode() !== undefined)
        throw new Error(`${pod.name} exited ${pod.exitCode()} before "${msg}":\n${pod.output()}`);
      return line;
    },
    { what: `"${msg}" from ${pod.name}`, timeoutMs: 60_000, intervalMs: 100 },
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}\n${pod.output()}`);
  });
}

async function expectProbesPass(admin: string): Promise<void> {
  await waitFor(async () => (await fetch(`${admin}/readyz`)).status === 200, {
    what: `${admin}/readyz`,
    timeoutMs: 30_000,
  });
  expect((await fetch(`${admin}/healthz`)).status).toBe(200);
}

// Containers start slower on a loaded machine than processes do: each test has three minutes.
describe.skipIf(why !== undefined)("the lightfleet image", { timeout: 180_000 }, () => {
  it("runs as the chart's user from the entrypoint the chart's args follow", async () => {
    const facts = await imageFacts(IMAGE);
    const sc = chartContainer("gateway").securityContext;
    expect(facts.user).toBe(`${sc.runAsUser}:${sc.runAsGroup}`);
    expect(facts.entrypoint).toEqual(["node", ...SERVICE_NODE_FLAGS, "dist/cli.js"]);
  });

  it("prints `lightfleet --help` and checks configs: the chart's ConfigMap and the example file", async () => {
    const { flags } = chartFlags("gateway");
    const help = await runImage(IMAGE, ["--help"], { flags });
    expect(help.code).toBe(0);
    for (const command of ["controller", "gateway", "keys-api", "config"])
      expect(help.stdout).toContain(command);

    const version = await runImage(IMAGE, ["--version"], { flags });
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(version.stdout.trim()).toBe(pkg.version);

    const chartConfig = await runImage(IMAGE, ["config", "check", CONFIG], { flags });
    expect(chartConfig.stderr + chartConfig.stdout).not.toMatch(/\n\s+at /);
    expect(chartConfig.code, chartConfig.stderr).toBe(0);
    const example = await runImage(IMAGE, ["config", "check", "examples/lightfleet.example.yaml"], { flags });
    expect(example.code, example.stderr).toBe(0);

    const bad = chartFlags("gateway", (c) => ({ ...c, gateway: { maxBatchLength: 0 } }));
    const refused = await runImage(IMAGE, ["config", "check", CONFIG], { flags: bad.flags });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("gateway.maxBatchLength");
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });

  it("has a read-only root, no capabilities and writes only to its volumes, as the chart's security context says", async () => {
    const { flags, volumes } = chartFlags("keys-api");
    const probe = [
      "const fs = require('fs');",
      "const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); return 'ok'; } catch (e) { return e.code; } };",
      "const status = fs.readFileSync('/proc/self/status', 'utf8');",
      "console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), groups: process.getgroups(),",
      "  capEff: /CapEff:\\s*(\\w+)/.exec(status)[1], capBnd: /CapBnd:\\s*(\\w+)/.exec(status)[1], noNewPrivs: /NoNewPrivs:\\s*(\\d)/.exec(status)[1],",
      "  app: tryWrite('/app/x'), root: tryWrite('/x'), data: tryWrite('/data/x'), tmp: tryWrite('/tmp/x'),",
      "  config: tryWrite('/etc/lightfleet/x') }));",
    ].join("\n");
    const result = await runImage(IMAGE, ["-e", probe], { flags: ["--entrypoint", "node", ...flags] });
    expect(result.code, result.stderr).toBe(0);
    const seen = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(seen).toMatchObject({
      uid: 10001,
      gid: 10001,
      capEff: "0000000000000000",
      // The bounding set too: a non-root user has no effective capabilities anyway, only --cap-drop ALL empties it.
      capBnd: "0000000000000000",
      noNewPrivs: "1",
      app: "EROFS",
      root: "EROFS",
      data: "ok",
      tmp: "ok",
      config: "EROFS",
    });
    expect(seen.groups).toContain(10001);
    expect(statSync(join(volumes.data!, "x")).uid).toBe(10001);
  });

  it("holds every file the product reads at run time, and the check finds one hidden", async () => {
    const needed = runtimeFiles();
    expect(needed).toContain("examples/devnet.yaml");
    const dependencies = Object.keys(
      (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: object }).dependencies,
    );
    // Run from /app as the entrypoint is: every file present, every production dependency loads on the image's
    // Node.js, and better-sqlite3's native binding opens a database.
    const check = [
      "const fs = require('fs');",
      `const files = ${JSON.stringify(needed)};`,
      `const dependencies = ${JSON.stringify(dependencies)};`,
      "(async () => {",
      "  const missing = files.filter((f) => !fs.existsSync(f));",
      "  const unloadable = [];",
      "  for (const d of dependencies) { try { await import(d); } catch (e) { unloadable.push(`${d}: ${e.message}`); } }",
      "  let sqlite = 'ok';",
      "  try { new (require('better-sqlite3'))(':memory:').prepare('select 1').get(); } catch (e) { sqlite = e.message; }",
      "  console.log(JSON.stringify({ missing, unloadable, sqlite }));",
      "})();",
    ].join("\n");
    const { flags } = chartFlags("gateway");
    const run = (extra: string[]) =>
      runImage(IMAGE, ["-e", check], {
        flags: ["--entrypoint", "node", ...flags, ...extra],
        timeoutMs: 90_000,
      });

    const whole = await run([]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(JSON.parse(whole.stdout)).toEqual({ missing: [], unloadable: [], sqlite: "ok" });

    // The same check on the image with examples/ hidden (an empty directory over it) names the file it lacks.
    const empty = mkdtempSync(join(tmpdir(), "lightfleet-empty-"));
    cleanup.push(() => rmSync(empty, { recursive: true, force: true }));
    chmodSync(empty, 0o755);
    const hidden = await run(["--volume", `${empty}:/app/examples:ro`]);
    expect(JSON.parse(hidden.stdout)).toMatchObject({ missing: ["examples/devnet.yaml"] });
  });

  it("runs the gateway in front of an anvil, answering JSON-RPC and its probes, and drains on stop", async () => {
    const node: AnvilNode = await startUpstreamNode();
    cleanup.push(() => node.stop());
    const container = chartContainer("gateway");
    const pod = podVolumes(
      container,
      onLoopback({
        networks: [
          {
            name: "devnet",
            chainId: 31_337,
            reservedPeers: [{ name: "peer", http: node.httpUrl }],
            gateway: { default: true, upstreams: [{ name: "upstream", http: node.httpUrl, ws: node.wsUrl }] },
          },
        ],
      }),
    );
    cleanup.push(() => pod.remove());
    const gateway = started(startChartPod(IMAGE, container, pod.volumes));
    const serving = await logLine(gateway, "gateway serving");
    await expectProbesPass(serving.admin as string);

    const answer = await fetch(`${serving.url as string}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    expect(await answer.json()).toEqual({ jsonrpc: "2.0", id: 1, result: "0x3" });
    expect(await gateway.stop()).toBe(0);
  });

  it("runs the controller against a Kubernetes API: takes the Lease, answers its probes, gives the Lease back", async () => {
    const api = await startFakeApiServer();
    cleanup.push(() => api.close());
    const container = chartContainer("controller");
    const pod = podVolumes(container, onLoopback());
    cleanup.push(() => pod.remove());
    // Not a service account's token (that needs TLS): a kubeconfig on a read-only mount, as outside a cluster.
    const kube = podVolumes({ ...container, volumes: [{ name: "kube", emptyDir: {} }] });
    cleanup.push(() => kube.remove());
    api.writeKubeconfig(join(kube.volumes.kube!, "kubeconfig"));
    const controller = started(
      startChartPod(IMAGE, container, pod.volumes, {
        extraMounts: [{ host: kube.volumes.kube!, path: "/var/run/lightfleet-kube" }],
        env: { KUBECONFIG: "/var/run/lightfleet-kube/kubeconfig" },
      }),
    );
    const running = await logLine(controller, "controller running");
    const lease = () =>
      (
        api.get("apis/coordination.k8s.io/v1/leases", container.namespace, "lightfleet-controller")?.spec as
          { holderIdentity?: string } | undefined
      )?.holderIdentity;
    await waitFor(() => lease() === "controller-0", { what: "the Lease taken", timeoutMs: 30_000 }).catch(
      (error: unknown) => {
        throw new Error(`${String(error)}\n${controller.output()}`);
      },
    );
    await expectProbesPass(running.admin as string);
    expect(await controller.stop()).toBe(0);
    expect(lease()).toBe("");
  });

  it("runs the key API on SQLite on its volume: an account added by the CLI logs in through the served API", async () => {
    const container = chartContainer("keys-api");
    const pod = podVolumes(container, onLoopback());
    cleanup.push(() => pod.remove());
    const flags = podmanRunFlags(container, pod.volumes);
    const added = await runImage(
      IMAGE,
      ["keys-api", "user", "add", "--email", "dana@example.org", "--config", CONFIG],
      {
        flags,
        input: "a long enough password\n",
      },
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toContain("key store: sqlite:/data/keys.sqlite");
    // The database and the secrets generated beside it (no Secret given) are on the volume, the service user's.
    const data = readdirSync(pod.volumes.data!);
    expect(data).toContain("keys.sqlite");
    expect(statSync(join(pod.volumes.data!, "keys.sqlite")).uid).toBe(10001);

    const keys = started(startChartPod(IMAGE, container, pod.volumes));
    const serving = await logLine(keys, "key API admin serving");
    await expectProbesPass(serving.admin as string);
    const client = new Client(serving.url as string);
    const login = await client.request("POST", "/v1/user/login", {
      email: "dana@example.org",
      password: "a long enough password",
    });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    expect((await client.request("GET", "/v1/user/me")).body).toMatchObject({ email: "dana@example.org" });
    expect(await keys.stop()).toBe(0);
  });
});

/**
 * Files the compiled product opens by path at run time, found in the source: `new URL("...", import.meta.url)` beside
 * a module (as dist/ lays it out, relative to /app), and the package.json whose version `--version` prints.
 */
function runtimeFiles(): string[] {
  const files = new Set(["package.json", "dist/cli.js"]);
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) {
        const source = readFileSync(path, "utf8");
        for (const m of source.matchAll(/new URL\(\s*"([^"]+)",\s*import\.meta\.url\s*\)/g)) {
          const compiled = posix.join("dist", relative(join(ROOT, "src"), dir).split("\\").join("/"));
          files.add(posix.normalize(posix.join(compiled, m[1]!)));
        }
      }
    }
  };
  walk(join(ROOT, "src"));
  return [...files].sort();
}
