import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CHART_DIR } from "../support/helm.js";
import { ROOT } from "../support/runCli.js";

const METRICS_DIR = join(ROOT, "src/metrics");

/** Every metric the code defines: each src/metrics/*Metrics.ts create*Metrics(registry) on one registry. */
async function definedMetrics(): Promise<Map<string, string>> {
  const registry = new Registry();
  const files = (await readdir(METRICS_DIR)).filter((f) => /Metrics\.ts$/.test(f));
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    const module = (await import(pathToFileURL(join(METRICS_DIR, file)).href)) as Record<string, unknown>;
    const factories = Object.entries(module).filter(
      ([name, value]) => /^create\w*Metrics$/.test(name) && typeof value === "function",
    );
    expect(factories.length, `${file} exports a create*Metrics(registry) function`).toBeGreaterThan(0);
    for (const [, factory] of factories) (factory as (r: Registry) => unknown)(registry);
  }
  const metrics = await registry.getMetricsAsJSON();
  return new Map(metrics.map((m) => [m.name, String(m.type)]));
}

/** The series names an exposition of these metrics has: histograms and summaries add _bucket, _sum, _count. */
function seriesNames(metrics: Map<string, string>): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of metrics) {
    names.add(name);
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(name + s);
    if (type === "summary") for (const s of ["_sum", "_count"]) names.add(name + s);
  }
  return names;
}

function namesIn(text: string): string[] {
  return [...new Set(text.match(/\blightfleet_[a-z0-9_]+/g) ?? [])].sort();
}

async function dashboardExpressions(): Promise<string> {
  const dashboard = JSON.parse(await readFile(join(CHART_DIR, "files/dashboard.json"), "utf8")) as {
    panels: { targets?: { expr: string }[] }[];
    templating: { list: { definition?: string }[] };
  };
  return [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...dashboard.templating.list.map((v) => v.definition ?? ""),
  ].join("\n");
}

async function alertExpressions(): Promise<string> {
  const rules = parse(await readFile(join(CHART_DIR, "files/alerts.rules.yaml"), "utf8")) as {
    groups: { rules: { expr: string }[] }[];
  };
  return rules.groups.flatMap((g) => g.rules.map((r) => r.expr)).join("\n");
}

describe("metric names in the dashboard and the alerts", () => {
  it("all exist in the code's metric definitions", async () => {
    const known = seriesNames(await definedMetrics());
    const used = namesIn(`${await dashboardExpressions()}\n${await alertExpressions()}`);
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !known.has(name))).toEqual([]);
  });

  it("cover DESIGN.md's metric contract on the dashboard", async () => {
    const onDashboard = new Set(namesIn(await dashboardExpressions()).map((n) => n.replace(/_bucket$/, "")));
    for (const name of [
      "lightfleet_node_state",
      "lightfleet_node_head_block",
      "lightfleet_node_lag_blocks",
      "lightfleet_reference_head_block",
      "lightfleet_node_restarts_total",
      "lightfleet_pool_healthy_nodes",
      "lightfleet_pool_request_rate",
      "lightfleet_pool_desired_replicas",
      "lightfleet_gateway_requests_total",
      "lightfleet_gateway_request_duration_seconds",
      "lightfleet_gateway_ws_subscriptions",
      "lightfleet_keys_requests_total",
    ]) {
      expect(onDashboard, name).toContain(name);
    }
  });
});

describe("the Grafana dashboard", () => {
  type Target = { expr: string; refId?: string };
  type Panel = {
    type: string;
    title: string;
    targets?: Target[];
    fieldConfig?: {
      defaults?: { unit?: string };
      overrides?: {
        matcher: { id: string; options: string };
        properties: { id: string; value: unknown }[];
      }[];
    };
  };
  const load = async () =>
    JSON.parse(await readFile(join(CHART_DIR, "files/dashboard.json"), "utf8")) as {
      panels: Panel[];
      templating: { list: { name: string; definition?: string }[] };
    };

  it("filters every query by cluster, namespace and job", async () => {
    const dashboard = await load();
    const variables = dashboard.templating.list.map((v) => v.name);
    for (const name of ["datasource", "cluster", "namespace", "job", "network"])
      expect(variables).toContain(name);
    const selectors = dashboard.panels
      .flatMap((p) => p.targets ?? [])
      .flatMap((t) => t.expr.match(/\b(lightfleet_[a-z0-9_]+|up)(\{[^}]*\})?/g) ?? []);
    expect(selectors.length).toBeGreaterThan(20);
    for (const selector of selectors)
      for (const label of ["cluster", "namespace", "job"])
        expect(selector, label).toContain(`${label}=~"$${label}"`);
  });

  it("gives rates a per-second unit and keeps a rate off an axis of counts", async () => {
    for (const panel of (await load()).panels) {
      const targets = panel.targets ?? [];
      const isRate = (t: Target) => /^\s*sum[^(]*\(\s*rate\(/.test(t.expr) || /_request_rate\b/.test(t.expr);
      const rates = targets.filter(isRate);
      if (rates.length === 0) continue;
      const overridden = (t: Target) =>
        (panel.fieldConfig?.overrides ?? []).some(
          (o) =>
            o.matcher.options === t.refId &&
            o.properties.some((p) => p.id === "unit" && p.value === "reqps") &&
            o.properties.some((p) => p.id === "custom.axisPlacement" && p.value === "right"),
        );
      if (rates.length === targets.length)
        expect(panel.fieldConfig?.defaults?.unit, panel.title).toBe("reqps");
      else for (const t of rates) expect(overridden(t), `${panel.title}: ${t.expr}`).toBe(true);
    }
  });
});
