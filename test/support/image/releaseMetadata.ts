/**
 * `tsx test/support/image/releaseMetadata.ts [TAG]`: what the release workflow builds and pushes, from the files that
 * decide it, as GitHub Actions step outputs (key=value lines): the chart's appVersion as the image tag, the chart's
 * default image repository, and the Dockerfile's NODE_IMAGE (the workflow pins it by digest). With TAG (the pushed
 * git tag), it refuses to release when TAG is not `v<appVersion>`: the chart would name an image nobody pushed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { ROOT } from "../runCli.js";

export interface ReleaseMetadata {
  version: string;
  repository: string;
  image: string;
  nodeImage: string;
}

export function releaseMetadata(root = ROOT): ReleaseMetadata {
  const chart = parse(readFileSync(join(root, "charts/lightfleet/Chart.yaml"), "utf8")) as {
    appVersion: string;
  };
  const values = parse(readFileSync(join(root, "charts/lightfleet/values.yaml"), "utf8")) as {
    image: { repository: string };
  };
  const nodeImage = /^ARG NODE_IMAGE=(\S+)$/m.exec(readFileSync(join(root, "Dockerfile"), "utf8"))?.[1];
  if (!nodeImage) throw new Error("the Dockerfile declares no ARG NODE_IMAGE default");
  const version = String(chart.appVersion);
  return {
    version,
    repository: values.image.repository,
    image: `${values.image.repository}:${version}`,
    nodeImage,
  };
}

/** Why TAG cannot release this tree, or undefined. */
export function tagProblem(tag: string, metadata: ReleaseMetadata): string | undefined {
  return tag === `v${metadata.version}`
    ? undefined
    : `tag ${tag} does not match the chart's appVersion ${metadata.version}: bump charts/lightfleet/Chart.yaml or tag v${metadata.version}`;
}

if (process.argv[1] === import.meta.filename) {
  const metadata = releaseMetadata();
  const tag = process.argv[2];
  const problem = tag === undefined ? undefined : tagProblem(tag, metadata);
  if (problem) {
    console.error(problem);
    process.exit(1);
  }
  console.log(
    [
      `version=${metadata.version}`,
      `repository=${metadata.repository}`,
      `image=${metadata.image}`,
      `node_image=${metadata.nodeImage}`,
    ].join("\n"),
  );
}
