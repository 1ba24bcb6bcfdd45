import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Integration tests start real processes (anvil, PostgreSQL); forks keep them isolated.
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: run files two at a time at most so process-heavy suites do not starve each other.
    maxWorkers: 2,
    // The JSON report lets CI print a plain "N passed, N failed" line (see .ci/run).
    reporters: ["default", ["json", { outputFile: "test-artifacts/vitest.json" }]],
  },
});
