/**
 * `npm run image` (part of `npm test`): builds the lightfleet image from the project's Dockerfile on a Node.js base
 * made from Debian's packages, into podman's store under ~/.cache/lightfleet, or reuses it when the Dockerfile, the
 * build context and the base are unchanged. Without podman it fails in CI and only warns elsewhere (the image tests
 * then skip with the same message).
 */
import { builtImage, ensureImage, imageFacts } from "./lightfleetImage.js";
import { imageCacheDir, missingPodman, podmanGlobalArgs } from "./podman.js";

const podmanMissing = await missingPodman();
if (podmanMissing) {
  console.error(`image: ${podmanMissing}`);
  process.exit(process.env.CI ? 1 : 0);
}
const started = Date.now();
const reused = await builtImage();
const tag = reused ?? (await ensureImage((line) => console.log(`image: ${line}`)));
const facts = await imageFacts(tag);
const mb = (bytes: number) => `${Math.round(bytes / 1_000_000)} MB`;
console.log(
  `image: ${tag} ${reused ? "reused" : "ready"} in ${Math.round((Date.now() - started) / 1000)} s (${imageCacheDir()}): ` +
    `${mb(facts.sizeBytes)} in ${facts.layers} layers (base ${mb(facts.baseSizeBytes)}), user ${facts.user}`,
);
console.log(`image: its store: podman ${podmanGlobalArgs().join(" ")} images`);
