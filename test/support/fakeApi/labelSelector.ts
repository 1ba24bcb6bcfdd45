/**
 * Label selectors as the API server reads them (k8s.io/apimachinery labels.Parse): equality (`a=b`, `a==b`, `a!=b`),
 * set-based (`a in (x,y)`, `a notin (x)`), existence (`a`, `!a`) and `a>1`/`a<1`, comma-separated, with keys and values
 * checked as label keys and values. A selector it cannot read is a SelectorError (the server answers 400).
 */
export type Operator = "in" | "notin" | "exists" | "!" | "gt" | "lt";

export interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

export class SelectorError extends Error {}

const SPECIAL = new Set(["!", "=", "(", ")", ",", "<", ">"]);

type Token = { kind: "id"; text: string } | { kind: "op"; text: string } | { kind: "end" };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (SPECIAL.has(c)) {
      const two = input.slice(i, i + 2);
      const op = two === "!=" || two === "==" ? two : c;
      tokens.push({ kind: "op", text: op });
      i += op.length;
      continue;
    }
    let j = i;
    while (j < input.length && !SPECIAL.has(input[j]!) && !/\s/.test(input[j]!)) j++;
    tokens.push({ kind: "id", text: input.slice(i, j) });
    i = j;
  }
  tokens.push({ kind: "end" });
  return tokens;
}

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function checkKey(key: string): void {
  const parts = key.split("/");
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]!];
  const ok =
    parts.length <= 2 &&
    name !== undefined &&
    name.length <= 63 &&
    NAME.test(name) &&
    (prefix === undefined || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix)));
  if (!ok) throw new SelectorError(`invalid label key "${key}": a qualified name is [prefix/]name`);
}

function checkValue(value: string): void {
  if (value !== "" && (value.length > 63 || !NAME.test(value)))
    throw new SelectorError(`invalid label value: "${value}"`);
}

/** Parses a labelSelector query parameter; the empty selector selects everything. */
export function parseSelector(input: string): Requirement[] {
  const tokens = tokenize(input);
  let at = 0;
  const peek = () => tokens[at]!;
  const isOp = (t: Token, text: string) => t.kind === "op" && t.text === text;
  const next = () => tokens[at++]!;
  const describe = (t: Token) => (t.kind === "end" ? "end of string" : `'${t.text}'`);
  const identifier = (what: string): string => {
    const t = next();
    if (t.kind !== "id") throw new SelectorError(`found ${describe(t)}, expected: ${what}`);
    return t.text;
  };
  const requirements: Requirement[] = [];
  if (peek().kind === "end") return requirements;
  for (;;) {
    let requirement: Requirement;
    const first = peek();
    if (first.kind === "op" && first.text === "!") {
      next();
      requirement = { key: identifier("identifier after '!'"), operator: "!", values: [] };
    } else {
      const key = identifier("identifier");
      const op = peek();
      if (op.kind === "end" || (op.kind === "op" && op.text === ",")) {
        requirement = { key, operator: "exists", values: [] };
      } else {
        next();
        const word = op.text;
        if (word === "=" || word === "==" || word === "!=") {
          const value = peek().kind === "id" ? identifier("identifier") : "";
          requirement = { key, operator: word === "!=" ? "notin" : "in", values: [value] };
        } else if (word === ">" || word === "<") {
          const value = identifier("an integer");
          if (!/^-?\d+$/.test(value)) throw new SelectorError(`for '${word}', value must be an integer`);
          requirement = { key, operator: word === ">" ? "gt" : "lt", values: [value] };
        } else if (op.kind === "id" && (word === "in" || word === "notin")) {
          const open = next();
          if (open.kind !== "op" || open.text !== "(")
            throw new SelectorError(`found ${describe(open)}, expected: '('`);
          const values: string[] = [];
          if (!isOp(peek(), ")")) {
            for (;;) {
              values.push(peek().kind === "id" ? identifier("identifier") : "");
              const sep = next();
              if (sep.kind === "op" && sep.text === ")") break;
              if (sep.kind !== "op" || sep.text !== ",")
                throw new SelectorError(`found ${describe(sep)}, expected: ',' or ')'`);
            }
          } else next();
          if (values.length === 0)
            throw new SelectorError(`for 'in', 'notin' operators, values set can't be empty`);
          requirement = { key, operator: word, values };
        } else {
          throw new SelectorError(`found ${describe(op)}, expected: in, notin, =, ==, !=, gt, lt`);
        }
      }
    }
    checkKey(requirement.key);
    for (const value of requirement.values) checkValue(value);
    requirements.push(requirement);
    const sep = next();
    if (sep.kind === "end") return requirements;
    if (sep.kind !== "op" || sep.text !== ",")
      throw new SelectorError(`found ${describe(sep)}, expected: ',' or 'end of string'`);
  }
}

/** Whether labels satisfy every requirement (`!=` and `notin` hold for an object without the label). */
export function matchesRequirements(
  requirements: readonly Requirement[],
  labels: Readonly<Record<string, string>> = {},
): boolean {
  return requirements.every(({ key, operator, values }) => {
    const has = Object.hasOwn(labels, key);
    const value = labels[key];
    switch (operator) {
      case "in":
        return has && values.includes(value!);
      case "notin":
        return !has || !values.includes(value!);
      case "exists":
        return has;
      case "!":
        return !has;
      case "gt":
      case "lt": {
        if (!has || !/^-?\d+$/.test(value!)) return false;
        const diff = Number(value) - Number(values[0]);
        return operator === "gt" ? diff > 0 : diff < 0;
      }
    }
  });
}

/** A metav1.LabelSelector (a PodDisruptionBudget's) as requirements; the empty selector selects everything. */
export function selectorRequirements(selector: {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}): Requirement[] {
  const requirements: Requirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: "in",
    values: [value],
  }));
  for (const e of selector.matchExpressions ?? []) {
    const operator = ({ In: "in", NotIn: "notin", Exists: "exists", DoesNotExist: "!" } as const)[
      e.operator as "In"
    ];
    if (!operator) throw new SelectorError(`"${e.operator}" is not a valid label selector operator`);
    requirements.push({ key: e.key, operator, values: e.values ?? [] });
  }
  return requirements;
}
