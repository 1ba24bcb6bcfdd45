import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chartContainer, podmanRunFlags } from "../support/image/chartPod.js";
import { mirrorIn } from "../support/image/debianBase.js";
import { buildContextFiles, imageTag } from "../support/image/lightfleetImage.js";
import { ROOT } from "../support/runCli.js";

/** What decides when the image is rebuilt, and how the chart's pod spec becomes container flags: no podman needed. */
describe("the image build's cache key", () => {
  const root = mkdtempSync(join(tmpdir(), "lightfleet-image-key-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, "Dockerfile"), readFileSync(join(ROOT, "Dockerfile")));
  writeFileSync(join(root, ".dockerignore"), readFileSync(join(ROOT, ".dockerignore")));
  mkdirSync(join(root, "src"));
  mkdirSync(join(root, "test"));
  writeFileSync(join(root, "src/cli.ts"), "export {};\n");
  writeFileSync(join(root, "test/a.test.ts"), "export {};\n");
  writeFileSync(join(root, "package.json"), "{}\n");

  it("covers the build context as .dockerignore leaves it", () => {
    expect(buildContextFiles(root)).toEqual(["package.json", "src/cli.ts"]);
    const context = buildContextFiles();
    expect(context).toContain("package-lock.json");
    expect(context).toContain("examples/lightfleet.example.yaml");
    expect(context.some((f) => f.startsWith("test/") || f.startsWith("node_modules/"))).toBe(false);
  });

  it("changes with the Dockerfile or a file in the context, not with a file left out of it", () => {
    const before = imageTag(root);
    writeFileSync(join(root, "test/a.test.ts"), "export const changed = 1;\n");
    expect(imageTag(root)).toBe(before);
    writeFileSync(join(root, "src/cli.ts"), "export const changed = 1;\n");
    const afterSource = imageTag(root);
    expect(afterSource).not.toBe(before);
    writeFileSync(join(root, "Dockerfile"), `${readFileSync(join(ROOT, "Dockerfile"), "utf8")}\n# changed\n`);
    expect(imageTag(root)).not.toBe(afterSource);
    expect(before).toMatch(/^localhost\/lightfleet:test-[0-9a-f]{16}$/);
  });
});

describe("the Debian mirror of the base", () => {
  it("is read from one-line and deb822 apt sources, skipping the security archive", () => {
    expect(
      mirrorIn(
        "deb http://deb.debian.org/debian-security bookworm-security main\ndeb [arch=amd64] http://mirror.example/debian/ bookworm main\n",
      ),
    ).toBe("http://mirror.example/debian");
    expect(
      mirrorIn(
        "Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm\n\nURIs: http://deb.example/debian-security\n",
      ),
    ).toBe("http://deb.example/debian");
    expect(mirrorIn("# nothing\n")).toBeUndefined();
  });
});

describe("the chart's pod spec as container flags", () => {
  it("gives each component the chart's user, read-only root, dropped capabilities and volumes", () => {
    for (const component of ["controller", "gateway", "keys-api"]) {
      const container = chartContainer(component);
      const flags = podmanRunFlags(container, { config: "/h/config", data: "/h/data", tmp: "/h/tmp" });
      const joined = flags.join(" ");
      expect(joined).toContain("--user 10001:10001");
      expect(joined).toContain("--group-add 10001");
      expect(joined).toContain("--read-only --read-only-tmpfs=false");
      expect(joined).toContain("--cap-drop ALL");
      expect(joined).toContain("--security-opt no-new-privileges");
      expect(joined).toContain("--volume /h/config:/etc/lightfleet:ro");
      expect(joined).toContain("--volume /h/data:/data:rw");
      expect(joined).toContain("--volume /h/tmp:/tmp:rw");
      expect(joined).toContain("--env LIGHTFLEET_DATA_DIR=/data");
      expect(joined).toContain(`--env POD_NAMESPACE=${container.namespace}`);
      expect(container.args.slice(1)).toEqual(["--config", "/etc/lightfleet/lightfleet.yaml"]);
    }
  });

  it("leaves optional Secrets out unless given, and refuses a volume it has no directory for", () => {
    const keys = chartContainer("keys-api");
    const volumes = { config: "/c", data: "/d", tmp: "/t" };
    expect(podmanRunFlags(keys, volumes).join(" ")).not.toContain("LIGHTFLEET_KEYS_PEPPER");
    expect(podmanRunFlags(keys, volumes, { LIGHTFLEET_KEYS_PEPPER: "p" }).join(" ")).toContain(
      "--env LIGHTFLEET_KEYS_PEPPER=p",
    );
    expect(() => podmanRunFlags(keys, { config: "/c", tmp: "/t" })).toThrow(/volume data/);
  });
});
