import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import GithubSlugger from "github-slugger";
import { describe, expect, it } from "vitest";

// Every relative link in the project's Markdown leads somewhere: the file exists and, where the link names a heading
// (`file.md#heading`, `#heading`), the file has that heading under the anchor GitHub gives it. Docs move and headings
// get renamed; a link that silently stops leading anywhere is what a reader finds instead.

const ROOT = join(import.meta.dirname, "../..");
const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  ...["charts/lightfleet/README.md", "manifests/README.md", "examples/README.md"].filter((f) =>
    existsSync(join(ROOT, f)),
  ),
];

/** The anchors GitHub gives a Markdown file's headings (repeated headings get -1, -2, ... as it numbers them). */
function anchorsOf(file: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    // A heading's anchor is made from its text as shown: link and code marks left out.
    if (heading)
      anchors.add(slugger.slug(heading[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/`/g, "")));
  }
  return anchors;
}

/** The relative links of a Markdown file, outside code blocks and code spans. */
function linksOf(file: string): string[] {
  const text = readFileSync(file, "utf8")
    .replace(/^```[\s\S]*?^```/gm, "")
    .replace(/`[^`\n]*`/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("links between the project's documents", () => {
  it.each(DOCS)("every relative link in %s leads to a file and heading that exist", (doc) => {
    const from = join(ROOT, doc);
    const broken: string[] = [];
    for (const link of linksOf(from)) {
      const [path, anchor] = link.split("#") as [string, string | undefined];
      const target = path === "" ? from : join(dirname(from), decodeURIComponent(path));
      if (!existsSync(target)) broken.push(`${link}: no ${relative(ROOT, target)}`);
      else if (anchor !== undefined && target.endsWith(".md") && !anchorsOf(target).has(anchor))
        broken.push(`${link}: ${relative(ROOT, target)} has no heading with the anchor #${anchor}`);
    }
    expect(broken).toEqual([]);
  });
});
