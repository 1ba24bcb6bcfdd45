import { createHash } from "node:crypto";
import { copyFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { anvilBinary } from "../../../src/process/anvilBinary.js";
import { runGo } from "../goCommand.js";
import { baseTag } from "../image/lightfleetImage.js";
import { imageCacheDir, podman } from "../image/podman.js";
import type { Containerd } from "./containerd.js";

/** The Go program of the sandbox image (test/kube/pause). */
const PAUSE_SOURCE = join(import.meta.dirname, "../../kube/pause");

export interface LocalImages {
  /** The sandbox image containerd's CRI starts each pod with. */
  pause: string;
  /** anvil, the light node the tests run, as an image. */
  anvil: string;
  /** The image `npm run image` built from the Dockerfile. */
  lightfleet: string;
}

const shortHash = (data: string | Buffer) => createHash("sha256").update(data).digest("hex").slice(0, 12);

/**
 * The images the real kubelet's pods need, built locally into the image store `npm run image` uses (no registry is
 * reachable): the pause image (a static Go program on scratch) and an anvil image (the npm package's anvil binary on
 * the lightfleet image's Debian base, which has the C library it links). Each is tagged by a hash of what goes in,
 * so a second run reuses it.
 */
export async function buildLocalImages(lightfleet: string, workDir: string): Promise<LocalImages> {
  const pauseSource = await readFile(join(PAUSE_SOURCE, "pause.go"));
  const pauseBinary = join(imageCacheDir(), `pause-${shortHash(pauseSource)}`, "pause");
  await mkdir(dirname(pauseBinary), { recursive: true });
  const pauseContext = join(workDir, "pause-image");
  await mkdir(pauseContext, { recursive: true });
  const partial = `${pauseBinary}.${process.pid}.partial`;
  await runGo(["build", "-trimpath", "-ldflags", "-s -w", "-o", partial, "."], PAUSE_SOURCE, {
    CGO_ENABLED: "0",
  });
  await rename(partial, pauseBinary);
  await copyFile(pauseBinary, join(pauseContext, "pause"));
  await writeFile(
    join(pauseContext, "Containerfile"),
    'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n',
  );
  const pause = `localhost/lightfleet-test-pause:${shortHash(pauseSource)}`;
  await podman(["build", "--quiet", "--tag", pause, pauseContext]);

  const base = baseTag();
  const anvilContext = join(workDir, "anvil-image");
  await mkdir(anvilContext, { recursive: true });
  const anvilFile = await readFile(anvilBinary());
  await writeFile(join(anvilContext, "anvil"), anvilFile, { mode: 0o755 });
  await writeFile(
    join(anvilContext, "Containerfile"),
    `FROM ${base}\nCOPY anvil /usr/local/bin/anvil\nUSER 10001:10001\nENTRYPOINT ["/usr/local/bin/anvil"]\n`,
  );
  const anvil = `localhost/lightfleet-test-anvil:${shortHash(`${base}\n${shortHash(anvilFile)}`)}`;
  await podman(["build", "--quiet", "--tag", anvil, anvilContext], { timeoutMs: 300_000 });
  return { pause, anvil, lightfleet };
}

/**
 * Moves IMAGES from podman's store into CONTAINERD's k8s.io namespace (`podman save` of all in one archive, then
 * `ctr images import`), and tags each image of ALIASES there under its alias (the reference a pod spec names).
 */
export async function importImages(
  containerd: Containerd,
  images: string[],
  workDir: string,
  aliases: Record<string, string> = {},
): Promise<void> {
  const archive = join(workDir, "images.tar");
  await podman(
    ["save", "--multi-image-archive", "--format", "docker-archive", "--output", archive, ...images],
    {
      timeoutMs: 300_000,
    },
  );
  await containerd.ctr(["images", "import", archive], 300_000);
  for (const [image, alias] of Object.entries(aliases))
    await containerd.ctr(["images", "tag", "--force", image, alias]);
}
