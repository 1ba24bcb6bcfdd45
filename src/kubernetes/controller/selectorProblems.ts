import type { LabelSelector } from "../api/crds.js";

/** A label name (the part after an optional `prefix/`) or a non-empty label value: 63 characters at most. */
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function keyProblem(key: string): string | undefined {
  const parts = key.split("/");
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]!];
  if (parts.length > 2 || name === undefined || name.length > 63 || !NAME.test(name))
    return `"${key}" is not a label key: [prefix/]name, the name up to 63 alphanumerics, '-', '_' or '.'`;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `"${key}" is not a label key: its prefix must be a DNS subdomain`;
  return undefined;
}

function valueProblem(value: string): string | undefined {
  if (value === "" || (value.length <= 63 && NAME.test(value))) return undefined;
  return `"${value}" is not a label value: up to 63 alphanumerics, '-', '_' or '.'`;
}

/**
 * What the API server would refuse in a pool's selector (every list and watch of its pods would answer 400), each
 * with its field: keys and values that are not label keys and values, In/NotIn without values, Exists/DoesNotExist
 * with some. The CRD schema cannot say all of this, so the controller checks it before it runs the pool.
 */
export function selectorProblems(selector: LabelSelector, path = "spec.selector"): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const problem = keyProblem(key) ?? valueProblem(value);
    if (problem) problems.push(`${path}.matchLabels.${key}: ${problem}`);
  }
  (selector.matchExpressions ?? []).forEach((e, i) => {
    const at = `${path}.matchExpressions[${i}]`;
    const key = keyProblem(e.key);
    if (key) problems.push(`${at}.key: ${key}`);
    const values = e.values ?? [];
    if ((e.operator === "In" || e.operator === "NotIn") && values.length === 0)
      problems.push(`${at}.values: ${e.operator} needs at least one value`);
    if ((e.operator === "Exists" || e.operator === "DoesNotExist") && values.length > 0)
      problems.push(`${at}.values: ${e.operator} takes no values`);
    values.forEach((v, j) => {
      const problem = valueProblem(v);
      if (problem) problems.push(`${at}.values[${j}]: ${problem}`);
    });
  });
  return problems;
}
