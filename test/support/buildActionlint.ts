/**
 * Part of `npm run tools`: builds the pinned actionlint once into ~/.cache/lightfleet, or reuses it (the release
 * workflow's test lints with it). Without Go it fails in CI and only warns elsewhere (that test then skips).
 */
import { ensureActionlint } from "./actionlint.js";

const actionlint = await ensureActionlint((line) => console.log(`actionlint: ${line}`));
if (actionlint.missing) {
  console.error(`actionlint: ${actionlint.missing}`);
  process.exit(process.env.CI ? 1 : 0);
}
console.log(`actionlint: ready at ${actionlint.path}`);
