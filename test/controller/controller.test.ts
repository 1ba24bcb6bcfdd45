import { afterEach, describe, expect, it } from "vitest";
import { Controller } from "../../src/controller/controller.js";
import type { AnvilNode } from "../../src/devnet/anvil.js";
import type { EngineOutput } from "../../src/health/types.js";
import { silentLogger } from "../../src/log/logger.js";
import { createControllerMetrics } from "../../src/metrics/controllerMetrics.js";
import { createRegistry } from "../../src/metrics/registry.js";
import { MemoryFleet, type RestartHandler } from "../support/memoryFleet.js";
import { MirroredChain } from "../support/mirroredChain.js";
import { waitFor } from "../support/waitFor.js";
import { testNetwork } from "./testNetwork.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

interface Setup {
  chain: MirroredChain;
  peers: AnvilNode[];
  lights: Map<string, AnvilNode>;
  /** Nodes the block ticker leaves out (they lag). */
  held: Set<string>;
  fleet: MemoryFleet;
}

/** Two full nodes and `lights` light nodes on one mirrored chain, a block every 300 ms, and a test fleet over them. */
async function setup(lightCount: number, restartHandler?: RestartHandler): Promise<Setup> {
  const chain = new MirroredChain();
  cleanup.push(() => chain.stopAll());
  const peers = await Promise.all([chain.node("full-0"), chain.node("full-1")]);
  const lights = new Map<string, AnvilNode>();
  for (let i = 0; i < lightCount; i++) lights.set(`light-${i}`, await chain.node(`light-${i}`));
  const held = new Set<string>();
  const fleet = new MemoryFleet(restartHandler);
  for (const [name, node] of lights) fleet.add("devnet", { name, httpUrl: node.httpUrl });
  let mining = false;
  const ticker = setInterval(() => {
    if (mining) return;
    mining = true;
    const targets = [...peers, ...[...lights].filter(([name]) => !held.has(name)).map(([, node]) => node)];
    // Nodes a test stopped on purpose refuse the block; the others still get it.
    void chain
      .mine(targets)
      .catch(() => undefined)
      .finally(() => (mining = false));
  }, 300);
  cleanup.push(() => clearInterval(ticker));
  return { chain, peers, lights, held, fleet };
}

function startController(
  s: Setup,
  health: Record<string, unknown> = {},
  extra: Partial<ConstructorParameters<typeof Controller>[0]> = {},
) {
  const registry = createRegistry({ defaultMetrics: false });
  const metrics = createControllerMetrics(registry);
  const outputs: EngineOutput[] = [];
  const controller = new Controller({
    networks: [testNetwork("devnet", s.peers, health)],
    fleet: s.fleet,
    logger: silentLogger(),
    metrics,
    onRound: (_network, output) => void outputs.push(output),
    ...extra,
  });
  cleanup.push(() => controller.stop());
  controller.start();
  const stateOf = (node: string) =>
    controller.lastOutput("devnet")?.nodes.find((n) => n.name === node)?.state;
  return { controller, registry, outputs, stateOf };
}

describe("Controller", () => {
  it("routes nodes in sync, exports metrics and turns ready after the first round", async () => {
    const s = await setup(3);
    const { controller, registry, outputs } = startController(s);
    await waitFor(() => controller.ready(), { what: "first round" });
    expect(controller.readinessCheck().check().ok).toBe(true);
    await waitFor(() => s.fleet.routed("devnet").length === 3, { what: "all three routed" });
    // Nodes at genesis with the peers are in sync too: routed maybe before the first block.
    await waitFor(() => (outputs.at(-1)?.reference?.number ?? 0) > 0, { what: "a first block" });
    const last = outputs.at(-1)!;
    expect(last.reference?.peers.sort()).toEqual(["full-0", "full-1"]);
    expect(last.nodes.map((n) => n.state)).toEqual(["Healthy", "Healthy", "Healthy"]);
    const text = await registry.metrics();
    expect(text).toContain('lightfleet_node_state{network="devnet",node="light-0",state="Healthy"} 1');
    expect(text).toContain('lightfleet_pool_healthy_nodes{network="devnet"} 3');
    expect(text).toMatch(/lightfleet_reference_head_block\{network="devnet"\} [1-9]/);
  });

  it("is not ready before a round ran, and says which network it waits for", () => {
    const controller = new Controller({
      networks: [
        testNetwork("devnet", [{ httpUrl: "http://127.0.0.1:1", wsUrl: "ws://127.0.0.1:1" } as AnvilNode]),
      ],
      fleet: new MemoryFleet(),
      logger: silentLogger(),
    });
    expect(controller.ready()).toBe(false);
    expect(controller.readinessCheck().check()).toEqual({
      ok: false,
      message: "no round completed yet for devnet",
    });
  });

  it("takes a lagging node out of routing and puts it back once it caught up", async () => {
    const s = await setup(3);
    const { stateOf } = startController(s, { restartLagBlocks: 1_000, stallAfter: "1m" });
    await waitFor(() => s.fleet.routed("devnet").length === 3, { what: "all routed" });
    s.held.add("light-1");
    await waitFor(() => !s.fleet.routed("devnet").includes("light-1"), { what: "light-1 unrouted" });
    expect(stateOf("light-1")).toBe("Lagging");
    expect(s.fleet.routed("devnet").sort()).toEqual(["light-0", "light-2"]);
    s.held.delete("light-1");
    await s.chain.catchUp(s.lights.get("light-1")!);
    await waitFor(() => s.fleet.routed("devnet").includes("light-1"), { what: "light-1 routed again" });
    expect(stateOf("light-1")).toBe("Healthy");
    expect(s.fleet.restartCalls).toEqual([]);
  });

  it("restarts a dead node once restartAfter passed, and the new incarnation becomes Healthy", async () => {
    // The replacement is a fresh node that replays the chain, as a restarted light node syncs from its peers.
    const s: Setup = await setup(3, async (_network, member) => {
      const replacement = await s.chain.node(member.name);
      await s.chain.catchUp(replacement);
      s.lights.set(member.name, replacement);
      return { httpUrl: replacement.httpUrl };
    });
    const { stateOf } = startController(s);
    await waitFor(() => s.fleet.routed("devnet").length === 3, { what: "all routed" });
    const killedAt = Date.now();
    s.held.add("light-2");
    await s.lights.get("light-2")!.stop();
    await waitFor(() => stateOf("light-2") === "Unresponsive", { what: "Unresponsive" });
    expect(s.fleet.routed("devnet")).not.toContain("light-2");
    await waitFor(() => s.fleet.restartCalls.length > 0, { what: "a restart", timeoutMs: 10_000 });
    expect(s.fleet.restartCalls[0]).toMatchObject({ member: "light-2", reason: "unresponsive" });
    expect(s.fleet.restartCalls[0]!.at - killedAt).toBeGreaterThanOrEqual(1_000);
    s.held.delete("light-2");
    await waitFor(() => stateOf("light-2") === "Healthy" && s.fleet.routed("devnet").includes("light-2"), {
      what: "light-2 Healthy after the restart",
    });
    expect(s.fleet.restartCalls).toHaveLength(1);
  });

  it("restarts a node an operator asks for at once, once, outside the engine's rules", async () => {
    const s: Setup = await setup(2, async (_network, member) => ({
      httpUrl: s.lights.get(member.name)!.httpUrl,
    }));
    const { controller, outputs } = startController(s, { restartAfter: "10m" });
    await waitFor(() => s.fleet.routed("devnet").length === 2, { what: "all routed" });
    // A Healthy node: the engine would never restart it.
    s.fleet.requestRestart("devnet", "light-1");
    await waitFor(() => s.fleet.restartCalls.length > 0, { what: "the requested restart", timeoutMs: 5_000 });
    expect(s.fleet.restartCalls[0]).toMatchObject({ member: "light-1", reason: "manual" });
    // The round's listeners (up's view: a line for it) hear of it as a restart of reason manual.
    await waitFor(
      () => outputs.some((o) => o.decisions.some((d) => d.kind === "restart" && d.reason === "manual")),
      { what: "the manual restart in a round's output", timeoutMs: 5_000 },
    );
    // Later rounds do not repeat it: the request went with the restart.
    await controller.runRound();
    await controller.runRound();
    expect(s.fleet.restartCalls).toHaveLength(1);
  });

  it("asks again for a restart the fleet deferred", async () => {
    const s = await setup(3);
    startController(s);
    await waitFor(() => s.fleet.routed("devnet").length === 3, { what: "all routed" });
    s.held.add("light-0");
    await s.lights.get("light-0")!.stop();
    // The test fleet without a restart handler defers every restart, as a PodDisruptionBudget would.
    await waitFor(() => s.fleet.restartCalls.length >= 2, {
      what: "a second restart request",
      timeoutMs: 15_000,
    });
    const [first, second] = s.fleet.restartCalls;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(900);
  });

  it("holds restarts and keeps routing while the full nodes are down, and reports the systemic cause", async () => {
    const s = await setup(3);
    const { registry, controller, outputs } = startController(s);
    await waitFor(() => s.fleet.routed("devnet").length === 3, { what: "all routed" });
    await Promise.all(s.peers.map((p) => p.stop()));
    await waitFor(() => controller.lastOutput("devnet")?.systemic?.cause === "no-peer-reachable", {
      what: "systemic cause",
    });
    // Ten more rounds (1.5 s) lasts beyond restartAfter (1 s): a restart would have been asked for by then.
    const rounds = outputs.length;
    await waitFor(() => outputs.length >= rounds + 10, { what: "ten more rounds" });
    expect(controller.lastOutput("devnet")?.systemic?.cause).toBe("no-peer-reachable");
    expect(s.fleet.restartCalls).toEqual([]);
    expect(s.fleet.routed("devnet")).toHaveLength(3);
    expect(await registry.metrics()).toContain(
      'lightfleet_pool_systemic_failure{network="devnet",cause="no-peer-reachable"} 1',
    );
  });

  it("runs a round at once on every new reference head, not only on the probe interval", async () => {
    const s = await setup(2);
    const { outputs } = startController(s, { probeInterval: "1m" });
    // healthyAfter is 2 good rounds: with a one-minute interval only head-triggered rounds can get there.
    await waitFor(() => s.fleet.routed("devnet").length === 2, { what: "routed on head-triggered rounds" });
    const heads = new Set(outputs.map((o) => o.reference?.number));
    expect(heads.size).toBeGreaterThanOrEqual(2);
    // Two peers announce every block, but a height gets one round: probes are not double counted. (The first round,
    // at start, may see a height that a head event then announces.)
    expect(outputs.length).toBeLessThanOrEqual(heads.size + 1);
  });

  it("takes networks added, changed and removed, keeping a changed network's engine state", async () => {
    const s = await setup(2);
    const { controller, registry, outputs } = startController(s);
    await waitFor(() => s.fleet.routed("devnet").length === 2, { what: "devnet routed" });
    const other = new MirroredChain(31_338);
    cleanup.push(() => other.stopAll());
    const otherPeer = await other.node("other-full-0", 31_338);
    const otherLight = await other.node("other-light-0", 31_338);
    s.fleet.add("other", { name: "other-light-0", httpUrl: otherLight.httpUrl });
    const otherNetwork = testNetwork("other", [otherPeer], { peerQuorum: 1 }, { chainId: 31_338 });
    const from = outputs.length;
    await controller.setNetworks([testNetwork("devnet", s.peers, { maxLagBlocks: 5 }), otherNetwork]);
    expect(controller.networks().sort()).toEqual(["devnet", "other"]);
    await waitFor(() => controller.lastOutput("other") !== undefined, { what: "a round of the new network" });
    await waitFor(() => outputs.length > from + 5, { what: "more rounds" });
    // The changed network went on from its state: no node went back to Starting, routing stayed.
    const devnetTransitions = outputs
      .slice(from)
      .flatMap((o) => o.decisions)
      .filter((d) => d.kind === "transition" && d.node.startsWith("light-"));
    expect(devnetTransitions).toEqual([]);
    expect(s.fleet.routed("devnet")).toHaveLength(2);

    await controller.setNetworks([otherNetwork]);
    expect(controller.networks()).toEqual(["other"]);
    const text = await registry.metrics();
    expect(text).not.toContain('network="devnet"');
    expect(text).toContain('lightfleet_pool_nodes{network="other"} 1');
  });

  it("neither evaluates nor acts while it does not lead, and starts cold from the fleet's routing when it does", async () => {
    const s = await setup(2);
    let leader = false;
    const { controller, outputs } = startController(s, {}, { isLeader: () => leader });
    await waitFor(() => controller.ready(), { what: "a (skipped) round" });
    await controller.runRound();
    expect(outputs).toEqual([]);
    expect(s.fleet.routingCalls).toEqual([]);
    leader = true;
    await waitFor(() => s.fleet.routed("devnet").length === 2, { what: "routed once leading" });
  });

  it("exports no view of the pool once it stops leading (only the leader's is current), keeping its counters", async () => {
    const s = await setup(2);
    let leader = true;
    const { controller, registry } = startController(s, {}, { isLeader: () => leader });
    await waitFor(() => s.fleet.routed("devnet").length === 2, { what: "routed while leading" });
    expect(await registry.metrics()).toContain(
      'lightfleet_node_state{network="devnet",node="light-0",state="Healthy"} 1',
    );
    leader = false;
    await controller.runRound();
    const text = await registry.metrics();
    expect(text).not.toMatch(/^lightfleet_node_state\{/m);
    expect(text).not.toMatch(/^lightfleet_node_head_block\{/m);
    expect(text).not.toMatch(/^lightfleet_reference_head_block\{/m);
    expect(text).not.toMatch(/^lightfleet_pool_healthy_nodes\{/m);
    expect(text).toMatch(/^lightfleet_engine_decisions_total\{network="devnet",kind="route"\} [1-9]/m);
  });
});
