import { existsSync, readdirSync, readFileSync } from "node:fs";
import { copyFile, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { imageCacheDir, podman, podmanGlobalArgs, podmanStreaming, streaming, ULIMITS } from "./podman.js";

/**
 * The Node.js base the Dockerfile's NODE_IMAGE names, made from Debian's packages (the official node image cannot be
 * pulled where only package registries are reached). Debian 13's `nodejs` is of the 20.19 line, which `engines`
 * accepts; its `npm` runs the Dockerfile's `npm ci`, and `libnode-dev` carries the headers better-sqlite3 compiles
 * against.
 */
export const BASE_RECIPE = {
  suite: "trixie",
  packages: ["nodejs", "npm", "libnode-dev", "ca-certificates"],
  // Bump to rebuild the base when what `makeDebianBase` does changes.
  revision: 2,
} as const;

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
 * licences), imported into podman's store; then the recipe's packages installed on it by apt in a `podman build`
 * (apt resolves their dependencies fully, which debootstrap's --include does not: npm's failed to configure), tagged
 * TAG.
 */
export async function makeDebianBase(tag: string, progress: (line: string) => void): Promise<void> {
  const work = join(imageCacheDir(), `base-${process.pid}`);
  const rootfs = join(work, "rootfs");
  const minbase = `${tag}-minbase`;
  await rm(work, { recursive: true, force: true });
  await mkdir(rootfs, { recursive: true });
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
    await writeFile(
      join(work, "Containerfile"),
      [
        `FROM ${minbase}`,
        "RUN apt-get update \\",
        ` && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${BASE_RECIPE.packages.join(" ")} \\`,
        " && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log \\",
        // The Dockerfile compiles better-sqlite3 with npm_config_nodedir=/usr/local, where the official node image
        // keeps its headers; Debian's are in /usr/include/node.
        " && mkdir -p /usr/local/include && ln -s ../../include/node /usr/local/include/node \\",
        " && node --version && npm --version",
        'CMD ["node"]',
        "",
      ].join("\n"),
    );
    progress(`installing ${BASE_RECIPE.packages.join(", ")} with apt as ${tag}`);
    await podmanStreaming(
      ["build", "--network", "host", ...ULIMITS, "--tag", tag, "--file", join(work, "Containerfile"), work],
      (line) => {
        if (/^(STEP|COMMIT|Setting up (nodejs|npm|libnode)|v\d+\.\d+|\d+\.\d+\.\d+$|E: )/.test(line))
          progress(line);
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
