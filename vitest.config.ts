import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Worker threads and child processes load TypeScript sources through tsx.
    execArgv: ["--import", "tsx"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
