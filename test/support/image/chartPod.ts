import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { ROOT } from "../runCli.js";

/** The parts of a pod template that decide how its container runs. */
interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type: string };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
  };
}
interface Volume {
  name: string;
  configMap?: { name: string };
  emptyDir?: object;
  persistentVolumeClaim?: { claimName: string };
}

/** One lightfleet container as the chart's Deployment runs it, with what its pod gives it. */
export interface ChartContainer {
  name: string;
  namespace: string;
  args: string[];
  env: EnvVar[];
  securityContext: SecurityContext;
  podSecurityContext: SecurityContext;
  volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
  volumes: Volume[];
  /** The files of each ConfigMap volume, by volume name. */
  configMaps: Record<string, Record<string, string>>;
}

interface KubeDoc {
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: {
    template?: {
      spec: {
        securityContext?: SecurityContext;
        containers: Array<{
          name: string;
          args?: string[];
          env?: EnvVar[];
          securityContext?: SecurityContext;
          volumeMounts?: ChartContainer["volumeMounts"];
        }>;
        volumes?: Volume[];
      };
    };
  };
}

/** The chart rendered with its default values (kept in step with the chart by test/chart). */
export const RENDERED_CHART = join(ROOT, "manifests/lightfleet.yaml");

let parsed: { text: string; docs: KubeDoc[] } | undefined;
/** The rendered chart's objects; the last text parsed is kept (the tests ask for one container after another). */
function parsedChart(text: string): KubeDoc[] {
  if (parsed?.text !== text)
    parsed = {
      text,
      docs: parseAllDocuments(text)
        .map((d) => d.toJS() as KubeDoc | null)
        .filter((d): d is KubeDoc => d !== null),
    };
  return parsed.docs;
}

/** The container named NAME (controller, gateway, keys-api) of the rendered chart's workloads. */
export function chartContainer(
  name: string,
  rendered = readFileSync(RENDERED_CHART, "utf8"),
): ChartContainer {
  const docs = parsedChart(rendered);
  for (const doc of docs) {
    const pod = doc.spec?.template?.spec;
    const container = pod?.containers.find((c) => c.name === name);
    if (!pod || !container) continue;
    const volumes = pod.volumes ?? [];
    const configMaps = Object.fromEntries(
      volumes
        .filter((v) => v.configMap)
        .map((v) => {
          const map = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name === v.configMap!.name);
          if (!map) throw new Error(`ConfigMap ${v.configMap!.name} of volume ${v.name} is not in the chart`);
          return [v.name, map.data ?? {}];
        }),
    );
    return {
      name,
      namespace: doc.metadata.namespace ?? "default",
      args: container.args ?? [],
      env: container.env ?? [],
      securityContext: container.securityContext ?? {},
      podSecurityContext: pod.securityContext ?? {},
      volumeMounts: container.volumeMounts ?? [],
      volumes,
      configMaps,
    };
  }
  throw new Error(`no workload in the rendered chart has a container named ${name}`);
}

/** The ConfigMap's lightfleet.yaml of the container's config volume, parsed. */
export function chartConfig(container: ChartContainer): Record<string, unknown> {
  const files = Object.values(container.configMaps)[0] ?? {};
  const text = files["lightfleet.yaml"];
  if (!text) throw new Error(`the ${container.name} container mounts no lightfleet.yaml`);
  return parse(text) as Record<string, unknown>;
}

/**
 * `podman run` flags that give the container what its pod spec gives it under a kubelet: user and group, fsGroup as a
 * supplementary group, a read-only root (and no tmpfs the pod spec does not ask for), dropped capabilities,
 * no-new-privileges, each volume at its mount path (from HOSTPATHS, by volume name) and the environment, with
 * fieldRefs resolved as the downward API does and optional Secrets left out unless SECRETS has them.
 */
export function podmanRunFlags(
  container: ChartContainer,
  hostPaths: Record<string, string>,
  secrets: Record<string, string> = {},
): string[] {
  const sc = { ...container.podSecurityContext, ...container.securityContext };
  const flags: string[] = [];
  if (sc.runAsUser !== undefined) flags.push("--user", `${sc.runAsUser}:${sc.runAsGroup ?? sc.runAsUser}`);
  if (container.podSecurityContext.fsGroup !== undefined)
    flags.push("--group-add", String(container.podSecurityContext.fsGroup));
  if (sc.readOnlyRootFilesystem) flags.push("--read-only", "--read-only-tmpfs=false");
  for (const cap of sc.capabilities?.drop ?? []) flags.push("--cap-drop", cap);
  for (const cap of sc.capabilities?.add ?? []) flags.push("--cap-add", cap);
  if (sc.allowPrivilegeEscalation === false) flags.push("--security-opt", "no-new-privileges");
  // RuntimeDefault is podman's default seccomp profile; anything else is not what these tests run.
  if (sc.seccompProfile && sc.seccompProfile.type !== "RuntimeDefault")
    throw new Error(`seccomp profile ${sc.seccompProfile.type} is not supported here`);
  for (const mount of container.volumeMounts) {
    const host = hostPaths[mount.name];
    if (!host) throw new Error(`no host directory for volume ${mount.name} (${mount.mountPath})`);
    flags.push("--volume", `${host}:${mount.mountPath}:${mount.readOnly ? "ro" : "rw"}`);
  }
  for (const env of container.env) {
    const value =
      env.value ??
      (env.valueFrom?.fieldRef?.fieldPath === "metadata.name"
        ? `${container.name}-0`
        : env.valueFrom?.fieldRef?.fieldPath === "metadata.namespace"
          ? container.namespace
          : env.valueFrom?.secretKeyRef
            ? secrets[env.valueFrom.secretKeyRef.key]
            : undefined);
    if (value === undefined) {
      if (env.valueFrom?.secretKeyRef?.optional) continue;
      throw new Error(`cannot resolve the environment variable ${env.name} of ${container.name}`);
    }
    flags.push("--env", `${env.name}=${value}`);
  }
  return flags;
}
