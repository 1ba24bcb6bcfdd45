import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ensureActionlint } from "../support/actionlint.js";
import { missingGo } from "../support/kube/controlPlaneBinaries.js";
import { releaseMetadata, tagProblem } from "../support/image/releaseMetadata.js";
import { ROOT } from "../support/runCli.js";

const run = promisify(execFile);
const WORKFLOW = join(ROOT, ".github/workflows/release.yml");
const TSX = join(ROOT, "node_modules/tsx/dist/cli.mjs");
const METADATA = "test/support/image/releaseMetadata.ts";

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
const workflow = parse(readFileSync(WORKFLOW, "utf8")) as {
  on: { push: { tags: string[] } };
  jobs: { image: { permissions: Record<string, string>; steps: Step[] } };
};
const steps = workflow.jobs.image.steps;

// actionlint is built with Go (once, into the cache): without Go this fails in CI and skips elsewhere.
const goMissing = await missingGo();
if (goMissing && process.env.CI) throw new Error(goMissing);
if (goMissing) console.warn(`skipping actionlint: ${goMissing}`);

/** The release workflow can only run on GitHub: what it would do is checked here, its local steps run for real. */
describe("the release workflow", () => {
  it("publishes the chart's default image under the chart's appVersion, from the Dockerfile's base", async () => {
    const chart = parse(readFileSync(join(ROOT, "charts/lightfleet/Chart.yaml"), "utf8")) as {
      appVersion: string;
    };
    const metadata = releaseMetadata();
    expect(metadata.version).toBe(chart.appVersion);
    expect(metadata.image).toBe(`ghcr.io/lightfleet/lightfleet:${chart.appVersion}`);
    expect(metadata.nodeImage).toMatch(/^node:\d+\.\d+\.\d+-[a-z]+-slim$/);

    // The workflow's own step, as it runs it (its output lines go to $GITHUB_OUTPUT).
    const { stdout } = await run(process.execPath, [TSX, METADATA, `v${chart.appVersion}`], { cwd: ROOT });
    expect(stdout).toContain(`image=${metadata.image}\n`);
    expect(stdout).toContain(`node_image=${metadata.nodeImage}`);
    const refused = await run(process.execPath, [TSX, METADATA, "v99.0.0"], { cwd: ROOT }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toContain(`does not match the chart's appVersion ${chart.appVersion}`);
    expect(tagProblem(`v${chart.appVersion}`, metadata)).toBeUndefined();

    const meta = steps.find((s) => s.id === "meta");
    expect(meta?.run).toContain(`npx tsx ${METADATA} "$GITHUB_REF_NAME"`);
    expect(workflow.on.push.tags).toEqual(["v*"]);
  });

  it("builds amd64 and arm64 with the base pinned by digest, pushes, signs keyless and attests an SBOM", () => {
    const build = steps.find((s) => s.uses?.startsWith("docker/build-push-action@"));
    expect(build?.with).toMatchObject({ platforms: "linux/amd64,linux/arm64", push: true });
    expect(build?.with?.tags).toBe("${{ steps.meta.outputs.image }}");
    expect(String(build?.with?.["build-args"])).toContain("NODE_IMAGE=${{ steps.base.outputs.node_image }}");
    expect(steps.find((s) => s.id === "base")?.run).toMatch(/imagetools inspect[\s\S]*@\$digest/);
    expect(workflow.jobs.image.permissions).toMatchObject({ "id-token": "write", packages: "write" });
    const runs = steps.map((s) => s.run ?? "").join("\n");
    expect(runs).toContain('cosign sign --yes "$IMAGE"');
    expect(runs).toContain("cosign attest --yes --type spdxjson --predicate sbom.spdx.json");
    expect(steps.some((s) => s.uses?.startsWith("anchore/sbom-action@"))).toBe(true);
    // Every action pinned to a release, never a branch.
    for (const step of steps.filter((s) => s.uses)) expect(step.uses, step.uses).toMatch(/@v\d+(\.\d+)*$/);
  });

  it.skipIf(goMissing !== undefined)("passes actionlint", { timeout: 600_000 }, async () => {
    const actionlint = await ensureActionlint();
    if (!actionlint.path) throw new Error(actionlint.missing);
    const lint = (file: string) =>
      run(actionlint.path!, ["-no-color", file], { cwd: ROOT }).then(
        ({ stdout }) => ({ code: 0, stdout }),
        (error: { code: number; stdout: string }) => error,
      );
    const result = await lint(WORKFLOW);
    expect(result.stdout).toBe("");
    expect(result.code).toBe(0);

    // The linter does read it: a reference to a step that does not exist is reported.
    const dir = mkdtempSync(join(tmpdir(), "lightfleet-actionlint-"));
    try {
      const broken = join(dir, "release.yml");
      writeFileSync(
        broken,
        readFileSync(WORKFLOW, "utf8").replace("steps.meta.outputs.image", "steps.nometa.outputs.image"),
      );
      const refused = await lint(broken);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toContain("nometa");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
