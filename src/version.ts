import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * lightfleet's version, from the nearest package.json named lightfleet above this module: the project root whether
 * this runs from `src/` (tsx), `dist/` (the image) or a compiled copy further down (the benches' build).
 */
export const VERSION: string = (() => {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "lightfleet" && pkg.version) return pkg.version;
    } catch {
      // no package.json here, or not one that can be read
    }
    if (dirname(dir) === dir) return "unknown";
  }
})();
