import { APP_CSS } from "./app.css.js";
import { APP_JS } from "./app.js.js";
import { INDEX_HTML } from "./index.html.js";

/**
 * The key API's web page: one document, one script and one style sheet, served by the key API itself (no build step,
 * no other origin, no inline code, so the Content-Security-Policy needs no 'unsafe-inline').
 */
export const PAGE_ASSETS: Record<string, { type: string; body: string }> = {
  "/index.html": { type: "html", body: INDEX_HTML },
  "/app.css": { type: "css", body: APP_CSS },
  "/app.js": { type: "js", body: APP_JS },
};
