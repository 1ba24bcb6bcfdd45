import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import type * as DockerignoreModule from "@balena/dockerignore";
import { DockerfileParser } from "dockerfile-ast";
import { ROOT } from "../runCli.js";
import { BASE_RECIPE, debianMirror, makeDebianBase } from "./debianBase.js";
import { imageCacheDir, podman, podmanStreaming, ULIMITS } from "./podman.js";

// A CommonJS module (module.exports = factory) whose types declare an ES default export.
type Dockerignore = (typeof DockerignoreModule)["default"]["default"];
const dockerignore = createRequire(import.meta.url)("@balena/dockerignore") as Dockerignore;

export const BASE_REPOSITORY = "localhost/lightfleet-node-base";
export const IMAGE_REPOSITORY = "localhost/lightfleet";
/** For the progress log: an estimate of each part (the whole measured at about 7 min cold on 2 loaded cores). */
const COLD_MINUTES = { base: 3, image: 4 };

const sha256 = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

/** The base's tag: a hash of its recipe, this module's code that makes it, and the mirror it comes from. */
export function baseTag(): string {
  const code = readFileSync(join(import.meta.dirname, "debianBase.ts"), "utf8");
  const key = sha256(JSON.stringify({ BASE_RECIPE, mirror: debianMirror(), code }));
  return `${BASE_REPOSITORY}:${BASE_RECIPE.suite}-${key.slice(0, 16)}`;
}

/** The files `podman build` sends as context: the work tree less what .dockerignore excludes. */
export function buildContextFiles(root = ROOT): string[] {
  const ignore = dockerignore().add(readFileSync(join(root, ".dockerignore"), "utf8"));
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const rel = relative(root, path);
      if (ignore.ignores(entry.isDirectory() ? `${rel}/` : rel)) continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.push(rel);
    }
  };
  walk(root);
  return files.sort();
}

/**
 * The paths the Dockerfile's COPY instructions take from the build context (not from another stage), or undefined
 * when one is a pattern (then every file of the context counts).
 */
export function copiedFromContext(dockerfile: string): string[] | undefined {
  const sources = DockerfileParser.parse(dockerfile)
    .getCOPYs()
    .filter((copy) => !copy.getFromFlag())
    .flatMap((copy) =>
      copy
        .getArguments()
        .slice(0, -1)
        .map((a) => a.getValue().replace(/^\.\/|\/$/g, "")),
    );
  return sources.some((s) => /[*?[]/.test(s) || s === "." || s === "") ? undefined : sources;
}

/**
 * The image's tag: a hash of the base, the Dockerfile and every file the Dockerfile copies from the build context
 * (path, mode, content; what .dockerignore leaves out does not count), so a change to what goes into the image builds
 * it anew and an unchanged tree, or a change elsewhere (docs, tests), reuses it.
 */
export function imageTag(root = ROOT): string {
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
  const copied = copiedFromContext(dockerfile);
  const inputs = buildContextFiles(root).filter(
    (file) => !copied || copied.some((source) => file === source || file.startsWith(`${source}/`)),
  );
  const hash = createHash("sha256");
  hash.update(`${baseTag()}\n${dockerfile}`);
  for (const file of inputs) {
    const path = join(root, file);
    hash.update(`\n${file} ${statSync(path).mode & 0o111 ? "x" : "-"} ${sha256(readFileSync(path))}`);
  }
  return `${IMAGE_REPOSITORY}:test-${hash.digest("hex").slice(0, 16)}`;
}

async function exists(tag: string): Promise<boolean> {
  try {
    await podman(["image", "exists", tag]);
    return true;
  } catch {
    return false;
  }
}

/** The image built from the current work tree, or undefined when it is not built yet. */
export async function builtImage(): Promise<string | undefined> {
  const tag = imageTag();
  return (await exists(tag)) ? tag : undefined;
}

/** What docs/helm.md states about the image: measured, not estimated. */
export interface ImageFacts {
  tag: string;
  sizeBytes: number;
  layers: number;
  user: string;
  entrypoint: string[];
  baseSizeBytes: number;
}

export async function imageFacts(tag: string): Promise<ImageFacts> {
  const inspect = async (ref: string) =>
    (
      JSON.parse(await podman(["image", "inspect", ref])) as Array<{
        Size: number;
        RootFS: { Layers: string[] };
        Config: { User?: string; Entrypoint?: string[] };
      }>
    )[0]!;
  const image = await inspect(tag);
  const base = await inspect(baseTag());
  return {
    tag,
    sizeBytes: image.Size,
    layers: image.RootFS.Layers.length,
    user: image.Config.User ?? "",
    entrypoint: image.Config.Entrypoint ?? [],
    baseSizeBytes: base.Size,
  };
}

/**
 * Builds the base (when its tag is missing) and then the project's Dockerfile on it, unchanged but for NODE_IMAGE;
 * returns the image's tag. Build steps reach Debian's mirror and the npm registry through the host's network.
 */
export async function ensureImage(progress: (line: string) => void): Promise<string> {
  const tag = imageTag();
  if (await exists(tag)) {
    progress(`${tag} is built already (same Dockerfile, build context and base)`);
    return tag;
  }
  const base = baseTag();
  if (await exists(base)) progress(`base ${base} is built already`);
  else {
    const started = Date.now();
    progress(`making base ${base} (cold: about ${COLD_MINUTES.base} min)`);
    await makeDebianBase(base, progress);
    progress(`made base ${base} in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  const started = Date.now();
  progress(`building ${tag} from Dockerfile with NODE_IMAGE=${base} (cold: about ${COLD_MINUTES.image} min)`);
  const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string })
    .version;
  await podmanStreaming(
    [
      "build",
      "--network",
      "host",
      ...ULIMITS,
      "--layers",
      ...hostCertificates(),
      "--build-arg",
      `NODE_IMAGE=${base}`,
      "--build-arg",
      `VERSION=${version}`,
      "--build-arg",
      `REVISION=${tag.split(":")[1]}`,
      "--tag",
      tag,
      "--file",
      join(ROOT, "Dockerfile"),
      ROOT,
    ],
    (line) => {
      // Steps, not every line a step prints (npm and the compiler are verbose); a multi-stage build prefixes its
      // steps with the stage ("[1/3] STEP 2/6: ...").
      if (/^(\[\d+\/\d+\] )?(STEP \d+\/\d+|COMMIT|Successfully|Error|error|npm ERR!)/.test(line))
        progress(line);
    },
  );
  progress(`built ${tag} in ${Math.round((Date.now() - started) / 1000)} s`);
  // Images first: an older base goes only once nothing built on it is left.
  await removeOlder(IMAGE_REPOSITORY, (t) => t !== tag && t.startsWith(`${IMAGE_REPOSITORY}:test-`));
  await removeOlder(BASE_REPOSITORY, (t) => !t.startsWith(base)).catch((error: unknown) =>
    progress(`older bases kept: ${String(error).split("\n")[0]}`),
  );
  return tag;
}

/**
 * The build steps trust what the host trusts: where the npm registry is reached through a TLS-inspecting proxy, the
 * host's CA bundle names its CA. The bundle and a global npmrc pointing npm at it (npm on the official Node.js build
 * uses its bundled CAs otherwise) are mounted for the RUN steps only: neither becomes part of a layer.
 */
export function hostCertificates(bundle = "/etc/ssl/certs/ca-certificates.crt"): string[] {
  if (!existsSync(bundle)) return [];
  const npmrc = join(imageCacheDir(), "build-npmrc");
  mkdirSync(imageCacheDir(), { recursive: true });
  writeFileSync(npmrc, "cafile=/etc/ssl/certs/ca-certificates.crt\n");
  return [
    "--volume",
    `${bundle}:/etc/ssl/certs/ca-certificates.crt:ro`,
    "--volume",
    `${npmrc}:/usr/local/etc/npmrc:ro`,
  ];
}

/** Earlier builds are dropped once a new one is built; the layers they share with it stay. */
async function removeOlder(repository: string, drop: (tag: string) => boolean): Promise<void> {
  const tags = (await podman(["images", "--format", "{{.Repository}}:{{.Tag}}", repository]))
    .split("\n")
    .filter((t) => t.startsWith(`${repository}:`) && drop(t));
  if (tags.length > 0) await podman(["rmi", ...tags]);
}
