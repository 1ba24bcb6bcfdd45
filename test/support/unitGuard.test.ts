import { ChildProcess, execFileSync, spawn } from "node:child_process";
import { createSocket } from "node:dgram";
import { createServer } from "node:http";
import { connect, createServer as createNetServer } from "node:net";
import { describe, expect, it } from "vitest";

/** Runs in the unit tier: proves its files can neither start a process nor open a port or a connection. */
describe("the unit tier's guard", () => {
  it("refuses to start a process, by any of child_process's calls", () => {
    expect(() => spawn(process.execPath, ["-e", ""])).toThrow(/unit tier: child_process.spawn/);
    expect(() => execFileSync(process.execPath, ["-e", ""])).toThrow(/unit tier: child_process.execFileSync/);
    // What every asynchronous spawn ends in, whichever library makes it.
    const child = new ChildProcess() as ChildProcess & { spawn(options: object): void };
    expect(() => child.spawn({ file: process.execPath, args: [process.execPath] })).toThrow(
      /unit tier: starting a process/,
    );
  });

  it("refuses to listen on a port, over TCP, HTTP or UDP", () => {
    expect(() => createNetServer().listen(0, "127.0.0.1")).toThrow(/unit tier: listening on a port/);
    expect(() => createServer().listen(0, "127.0.0.1")).toThrow(/unit tier: listening on a port/);
    expect(() => createSocket("udp4").bind(0, "127.0.0.1")).toThrow(/unit tier: binding a UDP port/);
  });

  it("refuses to open a connection", () => {
    expect(() => connect(9, "127.0.0.1")).toThrow(/unit tier: opening a connection/);
  });
});
