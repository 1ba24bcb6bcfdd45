import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * One of the page's files, read once as it is on disk (src/ under tsx, dist/ in a build, where the build copies it).
 * Each is named by a literal `new URL(...)` so that the image's test finds it among the files the product reads.
 */
const read = (url: URL) => readFileSync(fileURLToPath(url), "utf8");

/**
 * The key API's web page: one document, one script and one style sheet (src/keys/web/browser/, each served as it is),
 * served by the key API itself (no build step, no other origin, no inline code, so the Content-Security-Policy needs
 * no 'unsafe-inline').
 */
export const PAGE_ASSETS: Record<string, { type: string; body: string }> = {
  "/index.html": { type: "html", body: read(new URL("./browser/index.html", import.meta.url)) },
  "/app.css": { type: "css", body: read(new URL("./browser/keysPage.css", import.meta.url)) },
  "/app.js": { type: "js", body: read(new URL("./browser/keysPage.js", import.meta.url)) },
};
