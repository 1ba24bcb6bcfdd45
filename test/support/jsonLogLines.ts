import type { Readable } from "node:stream";

export type LogLine = Record<string, unknown>;

/**
 * The JSON log lines a process writes to `stream`, parsed once each as they come (banners, tables and other text
 * are passed over). The returned function gives every line so far.
 */
export function jsonLogLines<T = LogLine>(stream: Readable): () => T[] {
  const lines: T[] = [];
  let partial = "";
  stream.on("data", (chunk: Buffer | string) => {
    const text = partial + chunk.toString();
    const complete = text.split("\n");
    partial = complete.pop() ?? "";
    for (const line of complete) if (line.startsWith("{")) lines.push(JSON.parse(line) as T);
  });
  return () => lines;
}

/** The JSON log lines in text a process has written. */
export function parseLogLines<T = LogLine>(text: string): T[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as T);
}
