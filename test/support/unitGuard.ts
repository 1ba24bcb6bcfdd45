import childProcess from "node:child_process";
import dgram from "node:dgram";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

/**
 * Setup file of the `unit` tier: a unit test is pure, so anything that would start a process, listen on a port or
 * open a connection throws here instead. A file that trips it belongs in the `integration` tier (see
 * vitest.config.ts), not in a quiet exception.
 */
function forbidden(what: string): () => never {
  return () => {
    throw new Error(
      `unit tier: ${what} is not allowed here; take this test file off the UNIT list in vitest.config.ts`,
    );
  };
}

const cp = childProcess as unknown as Record<string, unknown>;
for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
  cp[name] = forbidden(`child_process.${name}`);
}
// Every asynchronous spawn, whichever library calls it, ends in ChildProcess.prototype.spawn.
(childProcess.ChildProcess.prototype as unknown as Record<string, unknown>).spawn =
  forbidden("starting a process");
// Named ESM imports of the built-ins (import { spawn } from "node:child_process") follow the patched objects.
syncBuiltinESMExports();

net.Server.prototype.listen = forbidden("listening on a port (net.Server.listen)");
net.Socket.prototype.connect = forbidden("opening a connection (net.Socket.connect)");
dgram.Socket.prototype.bind = forbidden("binding a UDP port");
