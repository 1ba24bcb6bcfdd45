import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chartContainer, podmanRunFlags } from "../support/image/chartPod.js";
import { mirrorIn, nodeImageDefault } from "../support/image/debianBase.js";
import { buildContextFiles, copiedFromContext, imageTag } from "../support/image/lightfleetImage.js";
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

  it("changes with the Dockerfile or a file it copies, not with a file left out of the context or never copied", () => {
    const before = imageTag(root);
    writeFileSync(join(root, "test/a.test.ts"), "export const changed = 1;\n");
    expect(imageTag(root)).toBe(before);
    writeFileSync(join(root, "README.md"), "# in the context, copied by no COPY\n");
    expect(imageTag(root)).toBe(before);
    writeFileSync(join(root, "src/cli.ts"), "export const changed = 1;\n");
    const afterSource = imageTag(root);
    expect(afterSource).not.toBe(before);
    writeFileSync(join(root, "Dockerfile"), `${readFileSync(join(ROOT, "Dockerfile"), "utf8")}\n# changed\n`);
    expect(imageTag(root)).not.toBe(afterSource);
    expect(before).toMatch(/^localhost\/lightfleet:test-[0-9a-f]{16}$/);
  });
});

describe("the Dockerfile's COPY sources", () => {
  it("are the paths taken from the build context, not from other stages", () => {
    expect(copiedFromContext(readFileSync(join(ROOT, "Dockerfile"), "utf8"))).toEqual(
      expect.arrayContaining(["package.json", "package-lock.json", "tsconfig.build.json", "src", "examples"]),
    );
    expect(copiedFromContext("FROM x AS a\nCOPY a.txt ./\nFROM y\nCOPY --from=a /app/dist ./dist\n")).toEqual(
      ["a.txt"],
    );
    // A pattern or the whole context: every file counts.
    expect(copiedFromContext("FROM x\nCOPY *.json ./\n")).toBeUndefined();
    expect(copiedFromContext("FROM x\nCOPY . .\n")).toBeUndefined();
  });
});

describe("the base made in place of the official node image", () => {
  it("takes its Node.js release and Debian suite from the Dockerfile's NODE_IMAGE default", () => {
    expect(nodeImageDefault("ARG NODE_IMAGE=node:24.11.1-bookworm-slim\nFROM ${NODE_IMAGE}\n")).toEqual({
      node: "24.11.1",
      suite: "bookworm",
    });
    expect(() => nodeImageDefault("ARG NODE_IMAGE=registry.example.org/node@sha256:00\n")).toThrow(
      /node:X.Y.Z-SUITE-slim/,
    );
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
