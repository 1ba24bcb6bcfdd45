/**
 * A parser of the Prometheus text exposition format (version 0.0.4, and the sample lines of OpenMetrics text), as
 * prom-client and every Prometheus client write it: `name{label="value",...} value [timestamp]` lines, `#` comments,
 * label values with `\\`, `\"` and `\n` escapes. Only samples are returned; HELP and TYPE lines are skipped.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class ExpositionError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = "ExpositionError";
  }
}

const NAME = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
const LABEL_NAME = /[a-zA-Z_][a-zA-Z0-9_]*/y;

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, "");
    if (line.trim() === "" || line.startsWith("#")) continue;
    samples.push(parseSampleLine(line, i + 1));
  }
  return samples;
}

function parseSampleLine(line: string, lineNumber: number): Sample {
  const fail = (message: string): never => {
    throw new ExpositionError(lineNumber, message);
  };
  let pos = 0;
  const skipSpaces = () => {
    while (line[pos] === " " || line[pos] === "\t") pos++;
  };
  skipSpaces();
  NAME.lastIndex = pos;
  const name = NAME.exec(line)?.[0] ?? fail("expected a metric name");
  pos += name.length;
  const labels: Record<string, string> = {};
  skipSpaces();
  if (line[pos] === "{") {
    pos++;
    for (;;) {
      skipSpaces();
      if (line[pos] === "}") {
        pos++;
        break;
      }
      LABEL_NAME.lastIndex = pos;
      const label = LABEL_NAME.exec(line)?.[0] ?? fail(`expected a label name in ${name}`);
      pos += label.length;
      skipSpaces();
      if (line[pos] !== "=") fail(`expected '=' after label ${label}`);
      pos++;
      skipSpaces();
      if (line[pos] !== '"') fail(`expected a quoted value for label ${label}`);
      pos++;
      let value = "";
      for (;;) {
        const c = line[pos];
        if (c === undefined) fail(`unterminated value of label ${label}`);
        pos++;
        if (c === '"') break;
        if (c === "\\") {
          const escaped = line[pos++];
          if (escaped === "n") value += "\n";
          else if (escaped === "\\" || escaped === '"') value += escaped;
          else fail(`invalid escape \\${escaped ?? ""} in label ${label}`);
        } else value += c;
      }
      if (Object.hasOwn(labels, label)) fail(`label ${label} repeated in ${name}`);
      labels[label] = value;
      skipSpaces();
      if (line[pos] === ",") pos++;
      else if (line[pos] !== "}") fail(`expected ',' or '}' after label ${label}`);
    }
  }
  const rest = line
    .slice(pos)
    .trim()
    .split(/[ \t]+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === "") fail(`expected a value after ${name}`);
  const value = parseValue(rest[0]!) ?? fail(`invalid value ${JSON.stringify(rest[0])} of ${name}`);
  if (rest[1] !== undefined && !/^-?\d+(\.\d+)?$/.test(rest[1])) fail(`invalid timestamp of ${name}`);
  return { name, labels, value };
}

function parseValue(text: string): number | undefined {
  if (text === "NaN") return Number.NaN;
  if (text === "+Inf" || text === "Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}
