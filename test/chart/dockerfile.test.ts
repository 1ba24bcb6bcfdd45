import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type * as DockerignoreModule from "@balena/dockerignore";
import { join } from "node:path";
import { DockerfileParser } from "dockerfile-ast";
import type { Instruction } from "dockerfile-ast";
import { describe, expect, it } from "vitest";
import { SERVICE_NODE_FLAGS } from "../../src/process/serviceNodeFlags.js";
import { ROOT } from "../support/runCli.js";

// A CommonJS module (module.exports = factory) whose types declare an ES default export.
type Dockerignore = (typeof DockerignoreModule)["default"]["default"];
const dockerignore = createRequire(import.meta.url)("@balena/dockerignore") as Dockerignore;

/** What can be checked without a Docker engine: the Dockerfile's structure and its build context. */
async function load() {
  const dockerfile = DockerfileParser.parse(await readFile(join(ROOT, "Dockerfile"), "utf8"));
  const froms = dockerfile.getFROMs();
  const instructions = dockerfile.getInstructions();
  const stageStart = froms.map((f) => f.getRange().start.line);
  /** The instructions of stage i (from its FROM up to the next one). */
  const stage = (i: number): Instruction[] =>
    instructions.filter(
      (ins) =>
        ins.getRange().start.line > stageStart[i]! &&
        ins.getRange().start.line < (stageStart[i + 1] ?? Infinity),
    );
  // Global ARGs with their defaults (a stage re-declares one without a value to bring it into scope).
  const args = new Map(
    dockerfile
      .getARGs()
      .filter((a) => a.getProperty()?.getValue())
      .map((a) => [a.getProperty()?.getName() ?? "", a.getProperty()?.getValue() ?? ""]),
  );
  return { dockerfile, froms, stage, args };
}

const text = (ins: Instruction) =>
  ins
    .getArguments()
    .map((a) => a.getValue())
    .join(" ");

describe("Dockerfile", () => {
  it("builds in stages from a pinned Node.js LTS slim base", async () => {
    const { froms, args } = await load();
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms) {
      // ${NAME} is resolved from the ARG default.
      const image = (from.getImage() ?? "").replace(
        /^\$\{?(\w+)\}?$/,
        (_, name: string) => args.get(name) ?? "",
      );
      expect(image, "base image").toMatch(
        /^node:(\d+)\.\d+\.\d+-[a-z]+-slim(@sha256:[a-f0-9]{64})?$|@sha256:[a-f0-9]{64}$/,
      );
      const major = Number(/^node:(\d+)\./.exec(image)?.[1]);
      expect(major % 2, "an LTS (even) major").toBe(0);
      expect(major).toBeGreaterThanOrEqual(20);
    }
  });

  it("builds native modules and the TypeScript in builder stages, ships production dependencies only", async () => {
    const { froms, stage } = await load();
    const final = froms.length - 1;
    const finalRuns = stage(final)
      .filter((i) => i.getKeyword() === "RUN")
      .map(text)
      .join("\n");
    expect(finalRuns).not.toMatch(/npm (ci|install|rebuild)|apt-get install|g\+\+/);
    const copies = stage(final).filter((i) => i.getKeyword() === "COPY");
    const fromStage = (target: string) =>
      copies.find((c) => c.getArguments().some((a) => a.getValue() === target)) as
        (Instruction & { getFromFlag(): { getValue(): string } | null }) | undefined;
    const modules = fromStage("./node_modules");
    const depsIndex = froms.findIndex((f) => f.getBuildStage() === modules?.getFromFlag()?.getValue());
    expect(depsIndex, "node_modules comes from a builder stage").toBeGreaterThanOrEqual(0);
    const depsRuns = stage(depsIndex)
      .filter((i) => i.getKeyword() === "RUN")
      .map(text)
      .join("\n");
    expect(depsRuns).toContain("--omit=dev");
    expect(depsRuns).toContain("npm rebuild better-sqlite3");
    const dist = fromStage("./dist");
    const buildIndex = froms.findIndex((f) => f.getBuildStage() === dist?.getFromFlag()?.getValue());
    expect(buildIndex, "dist comes from a builder stage").toBeGreaterThanOrEqual(0);
    expect(stage(buildIndex).map(text).join("\n")).toContain("npm run build");
  });

  it("runs as a non-root numeric user, node with the services' flags and dist/cli.js, with /data as the only writable place", async () => {
    const { dockerfile, froms, stage } = await load();
    const final = stage(froms.length - 1);
    const user = final.filter((i) => i.getKeyword() === "USER").at(-1);
    expect(user && text(user)).toMatch(/^[1-9]\d*(:\d+)?$/);
    const entrypoint = dockerfile.getENTRYPOINTs().at(-1) as unknown as {
      getJSONStrings(): { getJSONValue(): string }[];
    };
    expect(entrypoint.getJSONStrings().map((s) => s.getJSONValue())).toEqual([
      "node",
      ...SERVICE_NODE_FLAGS,
      "dist/cli.js",
    ]);
    const env = final
      .filter((i) => i.getKeyword() === "ENV")
      .map(text)
      .join(" ");
    expect(env).toContain("LIGHTFLEET_DATA_DIR=/data");
    expect(final.map(text).join("\n")).toMatch(/chown 10001:10001 \/data/);
    // The entrypoint is what the package builds and publishes as its bin.
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin.lightfleet).toBe("dist/cli.js");
    expect(existsSync(join(ROOT, "src/cli.ts"))).toBe(true);
  });

  it("has a .dockerignore that keeps local state out and what the build copies in", async () => {
    const ignore = dockerignore().add((await readFile(join(ROOT, ".dockerignore"), "utf8")).split("\n"));
    for (const path of ["node_modules/x", ".git/HEAD", "dist/cli.js", "data/keys.sqlite", "test/a.test.ts"]) {
      expect(ignore.ignores(path), path).toBe(true);
    }
    const { dockerfile } = await load();
    const sources = dockerfile
      .getCOPYs()
      .filter((c) => !(c as unknown as { getFromFlag(): unknown }).getFromFlag())
      .flatMap((c) =>
        c
          .getArguments()
          .slice(0, -1)
          .map((a) => a.getValue()),
      );
    expect(sources.length).toBeGreaterThan(3);
    for (const source of sources) {
      expect(existsSync(join(ROOT, source)), `${source} exists`).toBe(true);
      expect(ignore.ignores(source), `${source} is in the build context`).toBe(false);
    }
  });

  it("ships no test tooling: anvil (the devnet's node) is a dev dependency, left out by npm ci --omit=dev", async () => {
    const lock = JSON.parse(await readFile(join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    const anvil = Object.entries(lock.packages).filter(([path]) =>
      path.includes("node_modules/@foundry-rs/"),
    );
    expect(anvil.length).toBeGreaterThan(0);
    // npm ci --omit=dev drops exactly the packages the lock marks dev (an optional one stays).
    for (const [path, entry] of anvil) expect(entry.dev, path).toBe(true);
  });

  it("labels the image with the OCI annotations and leaves the base digest to the release pipeline", async () => {
    const { froms, stage, args } = await load();
    const labels = new Map(
      stage(froms.length - 1)
        .filter((i) => i.getKeyword() === "LABEL")
        .flatMap((i) =>
          (i as unknown as { getProperties(): { getName(): string; getValue(): string }[] })
            .getProperties()
            .map((p) => [p.getName(), p.getValue()] as const),
        ),
    );
    for (const key of [
      "title",
      "description",
      "source",
      "licenses",
      "version",
      "revision",
      "created",
      "base.name",
    ])
      expect(labels.get(`org.opencontainers.image.${key}`), key).toBeDefined();
    expect(labels.get("org.opencontainers.image.licenses")).toBe("Apache-2.0");
    expect(labels.get("org.opencontainers.image.base.name")).toBe("${NODE_IMAGE}");
    // The pipeline passes the digest it resolved (NODE_IMAGE=node:X@sha256:...); the default is an exact release.
    expect(args.get("NODE_IMAGE")).toMatch(/^node:\d+\.\d+\.\d+-bookworm-slim$/);
    expect(await readFile(join(ROOT, "Dockerfile"), "utf8")).toMatch(
      /NODE_IMAGE=node:[^\s]+@sha256:<digest>/,
    );
  });
});
