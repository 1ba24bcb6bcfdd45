/**
 * `npm run tools` (part of `npm test`): builds, or reuses, every tool the tests need from outside npm: the control
 * plane with the kubelet, geth, the image and actionlint. Each is its own script (`npm run controlplane`, ...); they
 * run at once, because on a cold machine much of each build is waiting on downloads (Go modules, Debian packages,
 * npm) that overlap well with another build's compiling. Each step's lines carry its name; the time each took and
 * the whole are printed at the end, and a line every two minutes says what is still building.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "./runCli.js";

const STEPS = [
  { name: "controlplane", script: "test/support/kube/buildControlPlane.ts" },
  { name: "geth", script: "test/support/geth/buildGeth.ts" },
  { name: "image", script: "test/support/image/buildImage.ts" },
  { name: "actionlint", script: "test/support/buildActionlint.ts" },
];

const seconds = (since: number) => Math.round((Date.now() - since) / 1000);
const started = Date.now();
const running = new Set(STEPS.map((s) => s.name));
const heartbeat = setInterval(
  () =>
    console.log(
      `tools: still building ${[...running].join(", ")} (${Math.round(seconds(started) / 60)} min so far)`,
    ),
  120_000,
);

const results = await Promise.all(
  STEPS.map(
    (step) =>
      new Promise<{ name: string; code: number; seconds: number }>((resolve) => {
        const child = spawn(join(ROOT, "node_modules/.bin/tsx"), [step.script], {
          cwd: ROOT,
          stdio: ["ignore", "inherit", "inherit"],
        });
        const done = (code: number) => {
          running.delete(step.name);
          resolve({ name: step.name, code, seconds: seconds(started) });
        };
        child.once("error", (error) => {
          console.error(`${step.name}: ${String(error)}`);
          done(1);
        });
        child.once("exit", (code, signal) => done(code ?? (signal ? 1 : 0)));
      }),
  ),
);
clearInterval(heartbeat);

console.log(
  `tools: done in ${seconds(started)} s (${results.map((r) => `${r.name} ${r.code === 0 ? "ok" : "FAILED"} at ${r.seconds} s`).join(", ")})`,
);
if (results.some((r) => r.code !== 0)) process.exit(1);
