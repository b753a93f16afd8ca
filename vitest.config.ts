import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The CLI and the child scripts run from the package built once per run (node starts them in ~0.6 s, against ~2 s
    // through tsx).
    globalSetup: ["test/global-setup.ts"],
    setupFiles: ["test/setup-env.ts"],
    // No tsx here: the store's threads and the child processes run the package built for the run (thread-channel.ts,
    // sim/child-command.ts). --expose-gc lets a test see what the collector releases (walks dropped unfinished).
    execArgv: ["--expose-gc"],
    // Two files at a time on two cores (vitest's default leaves one core idle): many tests wait on child processes,
    // threads and disk, so the suite takes ~0.75× as long.
    maxWorkers: 2,
    // Only a net: tests wait on states, and beside busy loops (npm run test:busy) a CPU-bound test takes 3-5x its time.
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
