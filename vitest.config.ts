import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Worker threads and child processes load TypeScript sources through tsx; --expose-gc lets a test see what the
    // collector releases (walks dropped unfinished).
    execArgv: ["--import", "tsx", "--expose-gc"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
