import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { APP_CSS } from "./app.css.js";
import { INDEX_HTML } from "./index.html.js";

/** The page's script, read once as it is on disk (src/ under tsx, dist/ in a build, where the build copies it). */
const APP_JS = readFileSync(fileURLToPath(new URL("./browser/keysPage.js", import.meta.url)), "utf8");

/**
 * The key API's web page: one document, one script and one style sheet, served by the key API itself (no build step,
 * no other origin, no inline code, so the Content-Security-Policy needs no 'unsafe-inline').
 */
export const PAGE_ASSETS: Record<string, { type: string; body: string }> = {
  "/index.html": { type: "html", body: INDEX_HTML },
  "/app.css": { type: "css", body: APP_CSS },
  "/app.js": { type: "js", body: APP_JS },
};
