/**
 * `npm run geth` (part of `npm test`): builds the pinned geth once into ~/.cache/lightfleet/geth-<version>, or reuses
 * it. Without Go it fails in CI and only warns elsewhere (the geth conformance tests then skip with the same message).
 */
import { GETH_VERSION, ensureGeth, gethCacheDir, missingGo } from "./gethBinary.js";

const goMissing = await missingGo();
if (goMissing) {
  console.error(`geth: ${goMissing}`);
  process.exit(process.env.CI ? 1 : 0);
}
const started = Date.now();
await ensureGeth((line) => console.log(`geth: ${line}`));
console.log(
  `geth: ${GETH_VERSION} ready in ${gethCacheDir()} (${Math.round((Date.now() - started) / 1000)} s)`,
);
