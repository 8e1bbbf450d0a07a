import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'plugins/**/*.test.ts', 'sandbox/**/*.test.ts', 'test/**/*.test.ts'],
    // The real-node cluster suite has its own config and run (vitest.cluster.config.ts).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Network tests bind ephemeral ports on 127.0.0.1; files run in parallel workers.
    pool: 'forks',
    // The JSON report lets .ci/run print a plain `N passed, N failed` closing line.
    reporters: ['default', 'json'],
    outputFile: { json: 'dist/test-report.json' },
  },
});
