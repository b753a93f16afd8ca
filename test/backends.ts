import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { Tree } from "../src/index.js";

/** A way to make a fresh tree; every core suite runs once per backend. */
export interface Backend {
  name: string;
  make(): Tree;
}

const dirs: string[] = [];

/** A new empty folder under the OS temp dir, removed after the test file. */
export function tempDir(prefix = "iavlite-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

export const backends: Backend[] = [
  { name: "memory", make: () => Tree.memory() },
  // A small checkpoint interval and memory budget so that checkpoints, eviction and reloads all happen in tests.
  { name: "sqlite", make: () => Tree.open(tempDir(), { checkpointInterval: 2, memoryBudgetMiB: 8 }) },
  { name: "sqlite-async", make: () => Tree.open(tempDir(), { checkpointInterval: 3, durability: "async", asyncQueue: 2 }) },
];
