/**
 * Builds the benchmark's Go-built peers (bench/peers/pins.ts) from the Go module proxy into the cache outside the
 * work tree: `go mod download` of the pinned commit, then `go build` of its main package inside a copy of it (a plain
 * `go install module@version` refuses modules whose go.mod has `replace` lines, as both have). Niced and one package
 * at a time (GOFLAGS=-p=1): the build shares a small machine. A peer that cannot be built gets build-error.txt with
 * the command and the go command's answer, which bench/gateway.ts prints in its place. Never part of `npm test`.
 *
 *   npm run bench:peers [-- proxyd|erpc ...]   (a newer Go if a module needs it: GOTOOLCHAIN=go1.27.3)
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PEERS, peerBinary, peerBuildError, peerDir } from "./pins.js";
import type { PeerPin } from "./pins.js";

const BUILD_TIMEOUT_MS = 30 * 60_000;
const wanted = process.argv.slice(2);
const env = { ...process.env, GOFLAGS: "-p=1 -mod=mod -buildvcs=false" };

function go(args: string[], cwd: string): { ok: boolean; stdout: string; output: string } {
  const result = spawnSync("nice", ["-n", "10", "go", ...args], {
    cwd,
    env,
    encoding: "utf8",
    timeout: BUILD_TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `$ go ${args.join(" ")}\n${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? String(result.error) : ""}`;
  return { ok: result.status === 0, stdout: result.stdout ?? "", output };
}

function build(peer: PeerPin): string | undefined {
  const scratch = mkdtempSync(join(tmpdir(), "bench-peer-"));
  try {
    const download = go(["mod", "download", "-json", `${peer.module}@${peer.version}`], scratch);
    const info = JSON.parse(download.stdout || "{}") as { Dir?: string; Error?: string };
    if (!download.ok || !info.Dir) return download.output;
    const src = join(peerDir(peer), "src");
    rmSync(src, { recursive: true, force: true });
    cpSync(info.Dir, src, { recursive: true });
    // The module cache is read-only; the build may add go.sum lines.
    spawnSync("chmod", ["-R", "u+w", src]);
    chmodSync(src, 0o755);
    const compiled = go(["build", "-o", peerBinary(peer), peer.mainPackage], src);
    return compiled.ok ? undefined : compiled.output;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

for (const peer of PEERS.filter((p) => wanted.length === 0 || wanted.includes(p.name))) {
  if (existsSync(peerBinary(peer))) {
    console.log(`${peer.name}: built (${peerBinary(peer)})`);
    continue;
  }
  mkdirSync(peerDir(peer), { recursive: true });
  rmSync(peerBuildError(peer), { force: true });
  console.log(`${peer.name}: building ${peer.module}@${peer.version} ...`);
  const error = build(peer);
  if (error === undefined) console.log(`${peer.name}: built (${peerBinary(peer)})`);
  else {
    writeFileSync(peerBuildError(peer), `${peer.module}@${peer.version}\n${error}`);
    console.log(`${peer.name}: not built (${peerBuildError(peer)}):\n${error}`);
  }
}
