import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { imageCacheDir, podman, podmanGlobalArgs, streaming } from "./podman.js";

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
  revision: 1,
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
 * debootstrap's minimal variant with the recipe's packages, trimmed as Debian's slim images are (no manuals, no
 * documentation but licences, no apt lists), imported into podman's store as TAG.
 */
export async function makeDebianBase(tag: string, progress: (line: string) => void): Promise<void> {
  const rootfs = join(imageCacheDir(), `rootfs-${process.pid}`);
  await rm(rootfs, { recursive: true, force: true });
  await mkdir(rootfs, { recursive: true });
  try {
    const mirror = debianMirror();
    progress(`debootstrap ${BASE_RECIPE.suite} from ${mirror} with ${BASE_RECIPE.packages.join(", ")}`);
    let retrieved = 0;
    await streaming(
      "debootstrap",
      ["--variant=minbase", `--include=${BASE_RECIPE.packages.join(",")}`, BASE_RECIPE.suite, rootfs, mirror],
      (line) => {
        // debootstrap names every package it fetches, unpacks and configures: report its stages and a count.
        if (/^I: Retrieving \S+ \d/.test(line)) {
          if (++retrieved % 50 === 0) progress(`${retrieved} packages retrieved`);
        } else if (
          /^I: (Retrieving Release|Resolving|Checking|Installing|Configuring the base|Base system)/.test(line)
        ) {
          progress(line.slice(3));
        } else if (/^[EW]: /.test(line)) progress(line);
      },
    );
    await trim(rootfs);
    progress(`importing the root filesystem as ${tag}`);
    await streaming(
      "sh",
      [
        "-c",
        `tar -C "$1" --numeric-owner -cf - . | podman "$@"`,
        "sh",
        rootfs,
        ...podmanGlobalArgs(),
        "import",
        "--change",
        'CMD ["node"]',
        "--message",
        `Debian ${BASE_RECIPE.suite} with ${BASE_RECIPE.packages.join(" ")} (debootstrap --variant=minbase)`,
        "-",
        tag,
      ],
      progress,
    );
  } finally {
    await rm(rootfs, { recursive: true, force: true });
  }
  await podman(["image", "exists", tag]);
}

/** What Debian's slim images leave out, and the layout the Dockerfile expects of a node image. */
async function trim(rootfs: string): Promise<void> {
  // Later `apt-get install`s in the Dockerfile skip documentation too.
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
  // The Dockerfile compiles better-sqlite3 with npm_config_nodedir=/usr/local, where the official node image keeps
  // its headers; Debian's are in /usr/include/node.
  await mkdir(join(rootfs, "usr/local/include"), { recursive: true });
  await symlink("../../include/node", join(rootfs, "usr/local/include/node"));
}
