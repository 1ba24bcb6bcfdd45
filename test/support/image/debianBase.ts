import { existsSync, readdirSync, readFileSync } from "node:fs";
import { copyFile, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ROOT } from "../runCli.js";
import { imageCacheDir, podman, podmanGlobalArgs, podmanStreaming, streaming, ULIMITS } from "./podman.js";

/**
 * The Node.js base the Dockerfile's NODE_IMAGE names, made where the official node image cannot be pulled (only
 * package registries are reached): the image's own recipe from the same parts. The Debian suite and the Node.js
 * release are read from the Dockerfile's default (`node:24.11.1-bookworm-slim`): `debootstrap --variant=minbase` of
 * that suite, and the Node.js release's own Linux build (binary and headers) from the npm registry's
 * `node-linux-<arch>` package in /usr/local, with npm beside it, as the official image lays them out.
 *
 * Not Debian's own `nodejs`: Debian 13's 20.19.2 build breaks node-fetch (the Kubernetes client's transport) with
 * "Premature close" on every chunked response, where the upstream 20.19.2 binary does not.
 */
export const BASE_RECIPE = {
  ...nodeImageDefault(readFileSync(join(ROOT, "Dockerfile"), "utf8")),
  // The npm release line Node.js 24 bundles; the build stages run `npm ci` with it.
  npm: "11.6.2",
  // Bump to rebuild the base when what `makeDebianBase` does changes.
  revision: 3,
};

/** The Node.js version and Debian suite of the Dockerfile's NODE_IMAGE default (`node:X.Y.Z-SUITE-slim`). */
export function nodeImageDefault(dockerfile: string): { node: string; suite: string } {
  const match = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-([a-z]+)-slim\b/m.exec(dockerfile);
  if (!match) throw new Error("the Dockerfile's NODE_IMAGE default is not node:X.Y.Z-SUITE-slim");
  return { node: match[1]!, suite: match[2]! };
}

/** The Debian mirror apt uses on this machine (the Dockerfile's apt-get runs against it too). */
export function debianMirror(): string {
  if (process.env.LIGHTFLEET_DEBIAN_MIRROR) return process.env.LIGHTFLEET_DEBIAN_MIRROR;
  const files = [
    "/etc/apt/sources.list",
    ...(existsSync("/etc/apt/sources.list.d")
      ? readdirSync("/etc/apt/sources.list.d")
          .filter((f) => f.endsWith(".sources") || f.endsWith(".list"))
          .map((f) => join("/etc/apt/sources.list.d", f))
      : []),
  ];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const mirror = mirrorIn(readFileSync(file, "utf8"));
    if (mirror) return mirror;
  }
  return "http://deb.debian.org/debian";
}

/** The main archive's URI in an apt sources file (one-line or deb822 format); security archives are skipped. */
export function mirrorIn(text: string): string | undefined {
  const uris = [
    ...[...text.matchAll(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/^URIs:\s*(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/)),
  ];
  return uris.find((uri) => /^https?:\/\//.test(uri) && !/security/.test(uri))?.replace(/\/$/, "");
}

/**
 * debootstrap's minimal variant of the suite, trimmed as Debian's slim images are (no manuals, no documentation but
 * licences), imported into podman's store; then Node.js and npm, fetched from the npm registry by the host's npm,
 * unpacked into /usr/local in a `podman build` (the packages mounted for that step only), tagged TAG.
 */
export async function makeDebianBase(tag: string, progress: (line: string) => void): Promise<void> {
  const work = join(imageCacheDir(), `base-${process.pid}`);
  const rootfs = join(work, "rootfs");
  const packages = join(work, "packages");
  const minbase = `${tag}-minbase`;
  await rm(work, { recursive: true, force: true });
  await mkdir(rootfs, { recursive: true });
  await mkdir(packages, { recursive: true });
  try {
    const mirror = debianMirror();
    progress(`debootstrap --variant=minbase ${BASE_RECIPE.suite} from ${mirror}`);
    let retrieved = 0;
    await streaming("debootstrap", ["--variant=minbase", BASE_RECIPE.suite, rootfs, mirror], (line) => {
      // debootstrap names every package it fetches, unpacks and configures: report its stages and a count.
      if (/^I: Retrieving \S+ \d/.test(line)) {
        if (++retrieved % 50 === 0) progress(`${retrieved} packages retrieved`);
      } else if (
        /^I: (Retrieving Release|Resolving|Checking|Installing|Configuring the base|Base system)/.test(line)
      ) {
        progress(line.slice(3));
      } else if (/^[EW]: /.test(line)) progress(line);
    }).catch(async (error: unknown) => {
      const log = join(imageCacheDir(), "debootstrap-failed.log");
      await copyFile(join(rootfs, "debootstrap/debootstrap.log"), log).catch(() => {});
      throw new Error(`${String(error)}\n(debootstrap's log: ${log})`);
    });
    await trim(rootfs);
    progress(`importing the root filesystem as ${minbase}`);
    await streaming(
      "sh",
      [
        "-c",
        `root="$1"; shift; tar -C "$root" --numeric-owner -cf - . | podman "$@"`,
        "sh",
        rootfs,
        ...podmanGlobalArgs(),
        "import",
        "--message",
        `Debian ${BASE_RECIPE.suite} (debootstrap --variant=minbase)`,
        "-",
        minbase,
      ],
      progress,
    );
    const nodePackage = `node-linux-${process.arch === "arm64" ? "arm64" : "x64"}@${BASE_RECIPE.node}`;
    progress(`npm pack ${nodePackage} npm@${BASE_RECIPE.npm}`);
    await streaming(
      "npm",
      ["pack", "--silent", "--pack-destination", packages, nodePackage, `npm@${BASE_RECIPE.npm}`],
      progress,
    );
    await writeFile(
      join(work, "Containerfile"),
      [
        `FROM ${minbase}`,
        // Laid out as the official image: /usr/local/bin/node, /usr/local/include/node (node-gyp's headers, which
        // the Dockerfile's npm_config_nodedir=/usr/local points at), npm in /usr/local/lib/node_modules.
        "RUN mkdir -p /tmp/node /usr/local/lib/node_modules/npm /usr/local/include \\",
        " && tar -xzf /packages/node-linux-*.tgz -C /tmp/node --strip-components=1 --no-same-owner \\",
        " && cp /tmp/node/bin/node /usr/local/bin/node && cp -r /tmp/node/include/node /usr/local/include/node \\",
        " && tar -xzf /packages/npm-*.tgz -C /usr/local/lib/node_modules/npm --strip-components=1 --no-same-owner \\",
        " && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\",
        " && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\",
        " && rm -rf /tmp/node && node --version && npm --version",
        'CMD ["node"]',
        "",
      ].join("\n"),
    );
    progress(`unpacking Node.js ${BASE_RECIPE.node} and npm ${BASE_RECIPE.npm} as ${tag}`);
    await podmanStreaming(
      [
        "build",
        "--network",
        "none",
        ...ULIMITS,
        "--volume",
        `${packages}:/packages:ro`,
        "--tag",
        tag,
        "--file",
        join(work, "Containerfile"),
        work,
      ],
      (line) => {
        if (/^(STEP|COMMIT|v\d+\.\d+|\d+\.\d+\.\d+$|Error)/.test(line)) progress(line);
      },
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  await podman(["image", "exists", tag]);
}

/** What Debian's slim images leave out; later `apt-get install`s (the base's, the Dockerfile's) skip it too. */
async function trim(rootfs: string): Promise<void> {
  await writeFile(
    join(rootfs, "etc/dpkg/dpkg.cfg.d/slim"),
    [
      "path-exclude /usr/share/doc/*",
      "path-include /usr/share/doc/*/copyright",
      "path-exclude /usr/share/man/*",
      "path-exclude /usr/share/info/*",
      "",
    ].join("\n"),
  );
  await streaming(
    "sh",
    [
      "-c",
      [
        `cd "$1"`,
        "find usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete",
        "find usr/share/doc -mindepth 1 -type d -empty -delete",
        "rm -rf usr/share/man/* usr/share/info/* var/lib/apt/lists/* var/cache/apt/*.bin var/cache/apt/archives/*.deb var/log/*.log var/log/apt/*",
      ].join(" && "),
      "sh",
      rootfs,
    ],
    () => {},
  );
}
