import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";

function capture(format: "json" | "pretty") {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c.toString()));
  return { logger: createLogger({ level: "info", format }, stream), output: () => chunks.join("") };
}

describe("logger", () => {
  it("writes JSON lines and redacts secrets wherever they appear", () => {
    const { logger, output } = capture("json");
    logger.info(
      { password: "hunter2", user: { secretKey: "lfsk_abc", email: "a@b" }, token: "123456" },
      "login",
    );
    const line = JSON.parse(output().trim()) as Record<string, unknown>;
    expect(line.msg).toBe("login");
    expect(output()).not.toMatch(/hunter2|lfsk_abc|123456/);
    expect(line.password).toBe("[redacted]");
    expect((line.user as Record<string, unknown>).email).toBe("a@b");
  });

  it("writes readable lines when asked", () => {
    const { logger, output } = capture("pretty");
    logger.info({ node: "light-0" }, "node is Healthy");
    expect(output()).toContain("node is Healthy");
    expect(() => JSON.parse(output())).toThrow();
  });

  it("keeps each record on one line when asked (up's terminal view mixes it with one-line state changes)", () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c.toString()));
    const logger = createLogger({ level: "info", format: "pretty" }, stream, { singleLine: true });
    logger.warn({ node: "mainnet-full-0", err: "connect ECONNREFUSED" }, "devnet node out of reach");
    const lines = chunks.join("").trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("devnet node out of reach");
    expect(lines[0]).toContain("mainnet-full-0");
  });
});
