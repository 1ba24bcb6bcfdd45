import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

/**
 * The cores a cgroup's CPU quota allows, rounded up: cgroup v2 `cpu.max` ("200000 100000", or "max 100000" for no
 * limit) or v1's `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1 for no limit). Undefined without a limit or for text it
 * cannot read.
 */
export function coresFromQuota(quota: string, period: string): number | undefined {
  const q = Number(quota.trim());
  const p = Number(period.trim());
  if (!Number.isFinite(q) || !Number.isFinite(p) || q <= 0 || p <= 0) return undefined;
  return Math.max(1, Math.ceil(q / p));
}

/** cgroup v2's `cpu.max` file as cores (see coresFromQuota). */
export function coresFromCpuMax(text: string): number | undefined {
  const [quota, period] = text.trim().split(/\s+/);
  return quota === undefined || period === undefined ? undefined : coresFromQuota(quota, period);
}

/** Where the process's cgroup's CPU limit is read: the files of the cgroup the process is in (as a container sees it). */
export interface CgroupFiles {
  read(path: string): string | undefined;
}

const fromDisk: CgroupFiles = {
  read(path) {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  },
};

/**
 * The cores this process may use: the CPUs it may run on (`os.availableParallelism()`, which follows the affinity
 * mask and cpusets), fewer when its cgroup's CPU quota (a Kubernetes CPU limit) allows fewer. At least 1.
 */
export function availableCores(
  parallelism: number = availableParallelism(),
  files: CgroupFiles = fromDisk,
): number {
  const v2 = files.read("/sys/fs/cgroup/cpu.max");
  const quota =
    v2 !== undefined
      ? coresFromCpuMax(v2)
      : coresFromQuota(
          files.read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") ?? "",
          files.read("/sys/fs/cgroup/cpu/cpu.cfs_period_us") ?? "",
        );
  return Math.max(1, Math.min(parallelism, quota ?? parallelism));
}

/** `gateway.workers` as a count: `auto` is the cores the process may use. */
export function workerCount(workers: number | "auto", cores: () => number = () => availableCores()): number {
  return workers === "auto" ? cores() : workers;
}
