import { connect } from "node:net";
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Container,
  type V1Pod,
  type V1PodCondition,
  type V1Probe,
} from "@kubernetes/client-node";

/**
 * Runs a pod's containers for the stand-in. `ready` answers for every container at once (the stand-in applies the
 * pod's readiness probes itself where the runtime gives it an address to probe).
 */
export interface PodRuntime {
  start(pod: V1Pod, podIp: string): Promise<RunningPod>;
}

export interface RunningPod {
  /** Where the container's named or numbered ports are reached from the host (default: the pod IP and that port). */
  resolvePort?(port: number | string): { host: string; port: number } | undefined;
  /** Sends a signal to the containers' processes (SIGSTOP and SIGCONT pause and resume them). */
  signal(signal: NodeJS.Signals): void;
  /** Set when a container exited on its own (crashed, killed, or done). */
  exited(): boolean;
  /** The exit code once exited (128 + the signal's number when killed by one); undefined if the runtime cannot tell. */
  exitCode?(): number | undefined;
  /** Stops the containers within the grace period (SIGTERM, then SIGKILL). */
  stop(graceMs: number): Promise<void>;
}

export interface KubeletStandInOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  /** The node's address; pods that share the host network get it as their IP. */
  nodeIp: string;
  allocateIp(pod: V1Pod): Promise<string>;
  releaseIp(ip: string): Promise<void>;
  /** How to run a pod; undefined leaves it unscheduled (Pending), as a node that cannot run its image would. */
  runtimeFor(pod: V1Pod): PodRuntime | undefined;
  /** How often pods are listed and their status brought up to date. */
  syncIntervalMs?: number;
  log?: (line: string) => void;
}

interface PodRecord {
  uid: string;
  namespace: string;
  name: string;
  ip?: string;
  running?: RunningPod;
  startedAt: string;
  restarts: number;
  stopping?: Promise<void>;
  probeOk: Map<string, boolean>;
  lastStatus?: string;
  failure?: string;
  /** While the runtime starts the containers (a start may take seconds: the anvil replays the chain). */
  starting?: boolean;
  /** When a failed start is tried again (a kubelet retries it with a back-off: CrashLoopBackOff). */
  retryAt?: number;
  /** Set when the containers exited and the pod's restartPolicy leaves them so: the pod is done. */
  terminated?: { exitCode: number; finishedAt: string };
}

export interface KubeletStandIn {
  /** The running pod's record by namespace/name (its IP and port resolution), once started. */
  pod(namespace: string, name: string): { ip: string; running: RunningPod } | undefined;
  stop(): Promise<void>;
}

/**
 * Plays the kubelet (and the scheduler) of one Node: binds every schedulable pod to it, starts its containers through
 * a runtime, writes the pod status a kubelet writes (phase, IPs, container statuses, and the Ready condition computed
 * from the containers' readiness probes and every readiness gate), restarts containers that exit as the pod's
 * restartPolicy says (else the pod ends Succeeded or Failed by the exit code, as a `helm test` pod does), stops
 * deleted pods within their grace period and then removes them. Status is brought up to date by listing pods every
 * `syncIntervalMs` (a kubelet also resyncs periodically; here it is the only trigger, which keeps it simple).
 */
/** How long after a failed start the containers are started again (a kubelet's first CrashLoopBackOff step is 10 s). */
const RETRY_START_AFTER_MS = 1_000;

export async function startKubeletStandIn(options: KubeletStandInOptions): Promise<KubeletStandIn> {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const log = options.log ?? (() => undefined);
  await core.createNode({
    body: {
      metadata: { name: options.nodeName, labels: { "kubernetes.io/hostname": options.nodeName } },
    },
  });
  await core.patchNodeStatus(
    {
      name: options.nodeName,
      body: {
        status: {
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "KubeletReady",
              message: "stand-in kubelet is posting ready status",
              lastHeartbeatTime: new Date(),
              lastTransitionTime: new Date(),
            },
          ],
          addresses: [{ type: "InternalIP", address: options.nodeIp }],
          capacity: { cpu: "64", memory: "256Gi", pods: "250" },
          allocatable: { cpu: "64", memory: "256Gi", pods: "250" },
        },
      },
    },
    setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
  );

  const records = new Map<string, PodRecord>();
  let stopped = false;
  let syncing: Promise<void> = Promise.resolve();

  const sync = async () => {
    const pods = (await core.listPodForAllNamespaces()).items;
    const seen = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata!.uid!;
      seen.add(uid);
      try {
        await syncPod(pod);
      } catch (error) {
        log(`pod ${pod.metadata!.namespace}/${pod.metadata!.name}: ${(error as Error).message}`);
      }
    }
    for (const [uid, record] of records) if (!seen.has(uid)) void terminate(record, 0, false);
  };

  const syncPod = async (pod: V1Pod) => {
    const meta = pod.metadata!;
    const key = meta.uid!;
    if (!pod.spec!.nodeName) {
      if (meta.deletionTimestamp || !options.runtimeFor(pod)) return;
      await core.createNamespacedPodBinding({
        name: meta.name!,
        namespace: meta.namespace!,
        body: {
          metadata: { name: meta.name!, namespace: meta.namespace! },
          target: { apiVersion: "v1", kind: "Node", name: options.nodeName },
        },
      });
      return;
    }
    if (pod.spec!.nodeName !== options.nodeName) return;
    let record = records.get(key);
    if (meta.deletionTimestamp) {
      const graceMs =
        (meta.deletionGracePeriodSeconds ?? pod.spec!.terminationGracePeriodSeconds ?? 30) * 1000;
      if (record) void terminate(record, graceMs, true);
      else await forceDelete(meta.namespace!, meta.name!, key);
      return;
    }
    if (!record) {
      record = {
        uid: key,
        namespace: meta.namespace!,
        name: meta.name!,
        startedAt: new Date().toISOString(),
        restarts: 0,
        probeOk: new Map(),
      };
      records.set(key, record);
      void startContainers(pod, record);
    } else if (record.running?.exited() && !record.stopping && !record.terminated) {
      const exitCode = record.running.exitCode?.() ?? 1;
      const policy = pod.spec!.restartPolicy ?? "Always";
      if (policy === "Never" || (policy === "OnFailure" && exitCode === 0)) {
        record.terminated = { exitCode, finishedAt: new Date().toISOString() };
        log(
          `pod ${record.namespace}/${record.name}: container exited with ${exitCode}, not restarted (${policy})`,
        );
        await writeStatus(pod, record);
        return;
      }
      // The container died: the kubelet restarts it, counting the restart.
      record.restarts++;
      const dead = record.running;
      record.running = undefined;
      record.probeOk.clear();
      record.starting = true;
      log(`pod ${record.namespace}/${record.name}: container exited, restarting`);
      void dead.stop(0).then(() => startContainers(pod, record!));
    } else if (!record.running && !record.starting && record.failure && Date.now() >= (record.retryAt ?? 0)) {
      // The containers never started (the runtime failed): the kubelet tries again, counting the restart.
      record.restarts++;
      log(`pod ${record.namespace}/${record.name}: start failed before, trying again`);
      void startContainers(pod, record);
    }
    if (record.running && !record.terminated) await runProbes(pod, record);
    await writeStatus(pod, record);
  };

  const startContainers = async (pod: V1Pod, record: PodRecord) => {
    const runtime = options.runtimeFor(pod);
    if (!runtime) return;
    record.starting = true;
    try {
      record.ip ??= await options.allocateIp(pod);
      const running = await runtime.start(pod, record.ip);
      if (record.stopping || stopped) {
        await running.stop(0);
        return;
      }
      record.running = running;
      record.failure = undefined;
      log(`pod ${record.namespace}/${record.name}: running at ${record.ip}`);
    } catch (error) {
      record.failure = (error as Error).message;
      record.retryAt = Date.now() + RETRY_START_AFTER_MS;
      log(`pod ${record.namespace}/${record.name}: start failed: ${record.failure}`);
    } finally {
      record.starting = false;
    }
  };

  const runProbes = async (pod: V1Pod, record: PodRecord) => {
    for (const container of pod.spec!.containers) {
      const probe = container.readinessProbe;
      const ok = probe ? await runProbe(probe, container, record) : !record.running!.exited();
      record.probeOk.set(container.name, ok && !record.running!.exited());
    }
  };

  const runProbe = async (probe: V1Probe, container: V1Container, record: PodRecord): Promise<boolean> => {
    const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
    if (port === undefined) return !record.running!.exited(); // exec probes: running counts as ready here
    const numeric =
      typeof port === "number" ? port : container.ports?.find((p) => p.name === port)?.containerPort;
    const target =
      record.running!.resolvePort?.(port) ??
      (numeric === undefined ? undefined : { host: record.ip!, port: numeric });
    if (!target) return false;
    if (probe.tcpSocket) return tcpProbe(target.host, target.port);
    const scheme = (probe.httpGet!.scheme ?? "HTTP").toLowerCase();
    try {
      const res = await fetch(`${scheme}://${target.host}:${target.port}${probe.httpGet!.path ?? "/"}`, {
        signal: AbortSignal.timeout((probe.timeoutSeconds ?? 1) * 1000),
      });
      await res.arrayBuffer();
      return res.status >= 200 && res.status < 400;
    } catch {
      return false;
    }
  };

  const writeStatus = async (pod: V1Pod, record: PodRecord) => {
    const containers = pod.spec!.containers;
    const { terminated } = record;
    const started = record.running !== undefined && !terminated;
    const containersReady = started && containers.every((c) => record.probeOk.get(c.name) === true);
    const gates = pod.spec!.readinessGates ?? [];
    const existing = pod.status?.conditions ?? [];
    const gatesTrue = gates.every(
      (gate) => existing.find((c) => c.type === gate.conditionType)?.status === "True",
    );
    const ready = containersReady && gatesTrue;
    const notReadyReason = terminated
      ? { reason: "PodCompleted", message: "" }
      : !containersReady
        ? {
            reason: "ContainersNotReady",
            message: `containers with unready status: [${containers.map((c) => c.name).join(" ")}]`,
          }
        : {
            reason: "ReadinessGatesNotReady",
            message: "corresponding condition of pod readiness gate is not True",
          };
    const condition = (
      type: string,
      status: boolean,
      why?: { reason: string; message: string },
    ): V1PodCondition => {
      const previous = existing.find((c) => c.type === type);
      const value = status ? "True" : "False";
      return {
        type,
        status: value,
        lastProbeTime: null as unknown as undefined,
        lastTransitionTime:
          previous?.status === value && previous.lastTransitionTime
            ? previous.lastTransitionTime
            : new Date(),
        ...(status ? {} : why),
      };
    };
    const conditions = [
      condition("PodReadyToStartContainers", record.ip !== undefined),
      condition("Initialized", true),
      condition("ContainersReady", containersReady, notReadyReason),
      condition("Ready", ready, notReadyReason),
      condition("PodScheduled", true),
    ];
    const podIp = record.ip;
    const phase = terminated
      ? terminated.exitCode === 0
        ? "Succeeded"
        : "Failed"
      : started || record.restarts > 0
        ? "Running"
        : "Pending";
    const status = {
      phase,
      hostIP: options.nodeIp,
      hostIPs: [{ ip: options.nodeIp }],
      ...(podIp ? { podIP: podIp, podIPs: [{ ip: podIp }] } : {}),
      startTime: record.startedAt,
      conditions,
      containerStatuses: containers.map((c) => ({
        name: c.name,
        image: c.image ?? "",
        imageID: `stand-in://${c.image ?? ""}`,
        containerID:
          started || terminated ? `stand-in://${record.uid}/${c.name}/${record.restarts}` : undefined,
        ready: started && record.probeOk.get(c.name) === true,
        started,
        restartCount: record.restarts,
        state: terminated
          ? {
              terminated: {
                exitCode: terminated.exitCode,
                reason: terminated.exitCode === 0 ? "Completed" : "Error",
                startedAt: record.startedAt,
                finishedAt: terminated.finishedAt,
              },
            }
          : started
            ? { running: { startedAt: record.startedAt } }
            : {
                waiting: {
                  reason: record.failure ? "CrashLoopBackOff" : "ContainerCreating",
                  message: record.failure,
                },
              },
      })),
    };
    // Only what changed is written; transition times come from the pod, so an unchanged status compares equal.
    const fingerprint = JSON.stringify({ ...status, conditions: conditions.map((c) => [c.type, c.status]) });
    if (fingerprint === record.lastStatus) return;
    await core.patchNamespacedPodStatus(
      { name: record.name, namespace: record.namespace, body: { status } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    record.lastStatus = fingerprint;
  };

  const terminate = (record: PodRecord, graceMs: number, remove: boolean): Promise<void> => {
    record.stopping ??= (async () => {
      await record.running?.stop(graceMs);
      if (record.ip) await options.releaseIp(record.ip);
      records.delete(record.uid);
      if (remove) await forceDelete(record.namespace, record.name, record.uid);
      log(`pod ${record.namespace}/${record.name}: stopped`);
    })().catch((error: Error) =>
      log(`pod ${record.namespace}/${record.name}: stop failed: ${error.message}`),
    );
    return record.stopping;
  };

  // After the containers stop, the kubelet deletes the pod for good (grace 0), for this pod's UID only.
  const forceDelete = async (namespace: string, name: string, uid: string) => {
    await core
      .deleteNamespacedPod({
        name,
        namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      })
      .catch(() => undefined);
  };

  const interval = options.syncIntervalMs ?? 200;
  const loop = (async () => {
    while (!stopped) {
      syncing = sync().catch((error: Error) => log(`sync failed: ${error.message}`));
      await syncing;
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  })();

  return {
    pod(namespace, name) {
      for (const record of records.values()) {
        if (record.namespace === namespace && record.name === name && record.running && record.ip)
          return { ip: record.ip, running: record.running };
      }
      return undefined;
    },
    async stop() {
      stopped = true;
      await loop;
      await Promise.allSettled([...records.values()].map((r) => terminate(r, 0, false)));
    },
  };
}

function tcpProbe(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1_000 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
  });
}
