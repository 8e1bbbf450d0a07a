import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'plugins/**/*.test.ts', 'sandbox/**/*.test.ts', 'test/**/*.test.ts'],
    // The real-node cluster suite has its own config and run (vitest.cluster.config.ts).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Network tests bind ephemeral ports on 127.0.0.1 and name their network namespaces at
    // random; files run in parallel workers. At least two: vitest's default (CPUs − 1) ran the
    // files one at a time on a 2-core machine, where the suite waits on servers, processes and
    // the kernel about half the time (a core idle 46 % of the main suite in CI).
    pool: 'forks',
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The JSON report lets .ci/run print a plain `N passed, N failed` closing line.
    reporters: ['default', 'json'],
    outputFile: { json: 'dist/test-report.json' },
  },
});
