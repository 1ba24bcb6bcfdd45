import { describe, expect, it } from "vitest";
import {
  availableCores,
  coresFromCpuMax,
  coresFromQuota,
  workerCount,
} from "../../../src/gateway/cluster/availableCores.js";
import { parseConfigText } from "../../../src/config/loadConfig.js";

/** cgroup files as a container would see them. */
const files = (contents: Record<string, string>) => ({ read: (path: string) => contents[path] });

describe("the cores the gateway may use", () => {
  it("reads cgroup v2's cpu.max, rounding a fraction of a core up", () => {
    expect(coresFromCpuMax("200000 100000\n")).toBe(2);
    expect(coresFromCpuMax("150000 100000")).toBe(2);
    expect(coresFromCpuMax("50000 100000")).toBe(1);
    expect(coresFromCpuMax("max 100000\n")).toBeUndefined();
    expect(coresFromCpuMax("garbage")).toBeUndefined();
  });

  it("reads cgroup v1's quota and period, -1 being no limit", () => {
    expect(coresFromQuota("400000", "100000")).toBe(4);
    expect(coresFromQuota("-1", "100000")).toBeUndefined();
  });

  it("takes the fewer of the CPUs it may run on and its cgroup's quota", () => {
    expect(availableCores(16, files({ "/sys/fs/cgroup/cpu.max": "200000 100000" }))).toBe(2);
    expect(availableCores(2, files({ "/sys/fs/cgroup/cpu.max": "800000 100000" }))).toBe(2);
    expect(availableCores(8, files({ "/sys/fs/cgroup/cpu.max": "max 100000" }))).toBe(8);
    expect(
      availableCores(
        16,
        files({
          "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "300000",
          "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
        }),
      ),
    ).toBe(3);
    expect(availableCores(4, files({}))).toBe(4);
  });

  it("resolves gateway.workers: auto to the cores, and keeps a count as it is", () => {
    expect(workerCount("auto", () => 6)).toBe(6);
    expect(workerCount(3, () => 6)).toBe(3);
  });

  it("takes workers: auto in the config, and refuses other words by path", () => {
    const base = "networks: [{name: dev, chainId: 1, reservedPeers: [{name: p, http: 'http://p:8545'}]}]\n";
    expect(parseConfigText(`gateway: {workers: auto}\n${base}`).gateway.workers).toBe("auto");
    expect(parseConfigText(base).gateway.workers).toBe(1);
    expect(() => parseConfigText(`gateway: {workers: many}\n${base}`)).toThrow(/gateway\.workers/);
  });
});
