import { existsSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../../src");

/**
 * The project's modules a module loads when it is loaded: its value imports and re-exports, followed through every
 * module they load. Type-only imports (erased) and dynamic `import()` (loaded when run) are not followed.
 */
function loadedWith(file: string): Set<string> {
  const loaded = new Set<string>();
  const pending = [resolve(SRC, file)];
  while (pending.length > 0) {
    const path = pending.pop()!;
    if (loaded.has(path)) continue;
    loaded.add(path);
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest);
    for (const statement of source.statements) {
      const specifier =
        ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly
          ? statement.moduleSpecifier
          : ts.isExportDeclaration(statement) && !statement.isTypeOnly
            ? statement.moduleSpecifier
            : undefined;
      if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith(".")) continue;
      const target = resolve(dirname(path), specifier.text.replace(/\.js$/, ".ts"));
      if (existsSync(target)) pending.push(target);
    }
  }
  return new Set([...loaded].map((path) => relative(SRC, path)));
}

describe("a gateway cluster's primary", () => {
  // The primary only forks, relays and serves the admin port. Loading the call path made its heap about 35 MB where
  // 15 MB do (and its resident memory about 25 MB more), every byte of it walked again by its idle collections.
  it("does not load the call path, which only its workers run", () => {
    for (const entry of ["gateway/runGateway.ts", "gateway/cluster/gatewayCluster.ts"]) {
      const loaded = loadedWith(entry);
      expect(
        [...loaded].filter((f) => /^gateway\/(gateway|networkRuntime)\.ts$|\/pipeline\//.test(f)),
      ).toEqual([]);
    }
  });

  it("is seen to load a module its entry imports (the walk follows imports)", () => {
    expect(loadedWith("gateway/cluster/gatewayCluster.ts")).toContain("gateway/cluster/messages.ts");
  });
});
