import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { startUp } from "../../src/up/runUp.js";
import { ROOT } from "../support/runCli.js";

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** Port numbers differ between the README (the example's ports) and this run (free ports): compared as PORT. */
const normalise = (text: string) => text.replace(/(127\.0\.0\.1):\d+/g, "$1:PORT");

/** The README's `npm start` block, up to the banner's last line. */
function readmeBanner(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = /## What `npm start` runs[\s\S]*?```\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error("README.md has no code block under 'What `npm start` runs'");
  const end = block.indexOf("Ctrl-C stops everything.\n");
  if (end < 0) throw new Error("the README's banner does not end with 'Ctrl-C stops everything.'");
  return block.slice(0, end + "Ctrl-C stops everything.\n".length);
}

describe("the README", () => {
  it("shows the banner npm start prints", async () => {
    // examples/devnet.yaml as npm start runs it, on free ports and a data directory of its own.
    const dir = mkdtempSync(join(tmpdir(), "lightfleet-readme-"));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const doc = parseDocument(readFileSync(join(ROOT, "examples/devnet.yaml"), "utf8"));
    for (const path of [
      ["admin", "port"],
      ["gateway", "port"],
      ["keys", "port"],
      ["devnet", "basePort"],
    ])
      doc.setIn(path, 0);
    for (const i of [0, 1]) doc.setIn(["networks", i, "nodes", "basePort"], 0);
    doc.set("dataDir", join(dir, "data"));
    const config = join(dir, "devnet.yaml");
    writeFileSync(config, doc.toString());

    let screen = "";
    const terminal = Object.assign(
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          screen += chunk.toString();
          done();
        },
      }),
      { isTTY: true },
    );
    const up = await startUp({ config, stdout: terminal as unknown as NodeJS.WriteStream });
    cleanup.push(() => up.stop());
    const text = screen
      .replace(config, "examples/devnet.yaml")
      // On the default admin port (the README's) the fault hint needs no --admin.
      .replace(/ --admin http:\/\/127\.0\.0\.1:\d+\n/, "\n");
    const last = "Ctrl-C stops everything.\n";
    expect(text).toContain(last);
    const banner = text.slice(0, text.indexOf(last) + last.length);
    expect(normalise(readmeBanner())).toBe(normalise(banner));
  });
});
