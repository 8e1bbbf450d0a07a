import { defineConfig } from 'vitest/config';

// The real-node suite (test/cluster/, npm run test:cluster): one cluster per run, started by the
// global setup (scripts/cluster/up.sh) unless one is already up, and stopped after the run if the
// setup started it. Files run one at a time: they share the node.
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    globalSetup: ['test/cluster/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // The global teardown is cluster:down (about a minute on a loaded machine).
    teardownTimeout: 300_000,
    reporters: ['default', 'json'],
    outputFile: { json: 'dist/test-report-cluster.json' },
    pool: 'forks',
    fileParallelism: false,
  },
});
