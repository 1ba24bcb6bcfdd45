import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CHART_DIR, renderChart } from "../support/helm.js";
import { findTool } from "../support/requireTool.js";
import { ROOT } from "../support/runCli.js";

const run = promisify(execFile);
const RULES = join(CHART_DIR, "files/alerts.rules.yaml");
const RULE_TESTS = join(ROOT, "test/chart/alerts.promtool-test.yaml");

interface Rule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}
interface RuleTests {
  tests: { alert_rule_test: { alertname: string; exp_alerts?: unknown[] }[] }[];
}

async function rules(): Promise<{ groups: { name: string; rules: Rule[] }[] }> {
  return parse(await readFile(RULES, "utf8"));
}

async function promtool(args: string[]): Promise<{ code: number; output: string }> {
  const tool = findTool("promtool", "prometheus");
  if (!tool.path) throw new Error(tool.missing);
  try {
    const { stdout, stderr } = await run(tool.path, args, { cwd: ROOT, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

describe("alert rules", () => {
  const tool = findTool("promtool", "prometheus");

  it("pass promtool check rules and promtool test rules", async () => {
    if (!tool.path) {
      console.warn(`skipping promtool checks: ${tool.missing}`);
      return;
    }
    const alertCount = (await rules()).groups.flatMap((g) => g.rules).length;
    const check = await promtool(["check", "rules", RULES]);
    expect(check.output).toContain(`SUCCESS: ${alertCount} rules found`);
    expect(check.code).toBe(0);
    const test = await promtool(["test", "rules", RULE_TESTS]);
    expect(test.output).toContain("SUCCESS");
    expect(test.code).toBe(0);
  });

  it("promtool test rules fails when an alert's expectation is wrong (the unit tests bite)", async () => {
    if (!tool.path) {
      console.warn(`skipping promtool checks: ${tool.missing}`);
      return;
    }
    const dir = await mkdtemp(join(tmpdir(), "lf-rules-"));
    try {
      // The same tests against rules whose no-healthy-node threshold is broken.
      const broken = (await readFile(RULES, "utf8")).replace(
        "max by (namespace, pool_namespace, network) (lightfleet_pool_healthy_nodes) == 0",
        "max by (namespace, pool_namespace, network) (lightfleet_pool_healthy_nodes) == 1",
      );
      await writeFile(join(dir, "alerts.rules.yaml"), broken);
      const tests = (await readFile(RULE_TESTS, "utf8")).replace(
        "../../charts/lightfleet/files/alerts.rules.yaml",
        "alerts.rules.yaml",
      );
      await writeFile(join(dir, "tests.yaml"), tests);
      const result = await promtool(["test", "rules", join(dir, "tests.yaml")]);
      expect(result.code).not.toBe(0);
      expect(result.output).toContain("LightfleetPoolNoHealthyNode");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("have a firing and a non-firing unit test for every alert", async () => {
    const names = (await rules()).groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(names).toHaveLength(15);
    const cases = (parse(await readFile(RULE_TESTS, "utf8")) as RuleTests).tests.flatMap(
      (t) => t.alert_rule_test,
    );
    for (const name of names) {
      const mine = cases.filter((c) => c.alertname === name);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${name} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${name} stays quiet in a test`,
      ).toBe(true);
    }
  });

  it("each have a runbook entry (meaning, what to check, what to do) that their runbook_url points at", async () => {
    const runbook = await readFile(join(ROOT, "docs/runbook.md"), "utf8");
    for (const rule of (await rules()).groups.flatMap((g) => g.rules)) {
      const anchor = rule.alert.toLowerCase();
      expect(rule.annotations.runbook_url).toBe(
        `https://github.com/lightfleet/lightfleet/blob/main/docs/runbook.md#${anchor}`,
      );
      const start = runbook.indexOf(`\n## ${rule.alert}\n`);
      expect(start, `docs/runbook.md has "## ${rule.alert}"`).toBeGreaterThan(-1);
      const next = runbook.indexOf("\n## ", start + 1);
      const entry = runbook.slice(start, next === -1 ? undefined : next);
      for (const part of ["**Meaning**", "**Check**", "**Act**"])
        expect(entry, `${rule.alert} ${part}`).toContain(part);
    }
  });

  it("are each listed in docs/helm.md's alert table with their severity, and the table lists no other", async () => {
    const docs = await readFile(join(ROOT, "docs/helm.md"), "utf8");
    const listed = [...docs.matchAll(/^\| \[`(\w+)`\]\(runbook\.md#\w+\) \| (\w+) \|/gm)].map(
      ([, alert, severity]) => `${alert} ${severity}`,
    );
    const all = (await rules()).groups.flatMap((g) => g.rules) as Array<
      Rule & { labels: { severity: string } }
    >;
    expect(listed.sort()).toEqual(all.map((r) => `${r.alert} ${r.labels.severity}`).sort());
  });

  it("are rendered unchanged into the chart's PrometheusRule", async () => {
    const { objects } = await renderChart({ set: ["monitoring.prometheusRule.enabled=true"] });
    const rule = objects.find((o) => o.kind === "PrometheusRule");
    expect((rule?.spec as { groups: unknown }).groups).toEqual((await rules()).groups);
  });

  it("render only for the components that are enabled, for every combination of them", async () => {
    /** The components whose metrics an alert reads; it means something only when one of them runs. */
    const componentsOf = (expr: string): string[] => {
      const found = new Set<string>();
      if (/component="keys-api"|lightfleet_keys_/.test(expr)) found.add("keys");
      if (/lightfleet_gateway_|component="gateway"/.test(expr)) found.add("gateway");
      if (/lightfleet_(pool|node|probe|controller)_|component="controller"/.test(expr))
        found.add("controller");
      // The Kubernetes cache metrics come from the controller and from the gateway.
      if (/lightfleet_kube_cache_/.test(expr)) ["controller", "gateway"].forEach((c) => found.add(c));
      return [...found];
    };
    const all = (await rules()).groups.flatMap((g) => g.rules);
    for (const rule of all) expect(componentsOf(rule.expr), rule.alert).not.toEqual([]);
    let combinations = 0;
    for (const controller of [true, false])
      for (const gateway of [true, false])
        for (const keys of [true, false]) {
          const enabled = new Set(
            Object.entries({ controller, gateway, keys })
              .filter(([, on]) => on)
              .map(([c]) => c),
          );
          const { objects } = await renderChart({
            set: [
              "monitoring.prometheusRule.enabled=true",
              `controller.enabled=${controller}`,
              `gateway.enabled=${gateway}`,
              `keys.enabled=${keys}`,
            ],
          });
          const rule = objects.find((o) => o.kind === "PrometheusRule");
          const rendered = ((rule?.spec as { groups: { rules: Rule[] }[] } | undefined)?.groups ?? [])
            .flatMap((g) => g.rules)
            .map((r) => r.alert);
          const expected = all
            .filter((r) => componentsOf(r.expr).some((c) => enabled.has(c)))
            .map((r) => r.alert);
          expect(rendered, [...enabled].join(",") || "none").toEqual(expected);
          combinations++;
        }
    expect(combinations).toBe(8);
  });
});
