import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { Churn, grown } from "../bench/scale-data.js";
import { applyToTree } from "../bench/subjects.js";
import { tempDir } from "./backends.js";

// Eviction takes the clean parts of pages being changed once whole clean pages are not enough (node-loader.ts,
// evictPages). Before Mutator.own loaded a node's children into the node itself and CheckpointSteps.retire kept the
// children of held nodes, a checkpoint's walk could read a page into a second set of nodes and renumber those, while
// the live tree kept the first set naming the old page; a prune deleted it, and a later change failed with CORRUPT
// "page … is missing" (about 70 churn versions in here).
describe("eviction inside pages being changed", () => {
  it("keeps every hash through a churn past the budget with automatic prunes, and no link outlives its page", async () => {
    const dir = tempDir();
    const m = Tree.memory();
    const both = (changes: ReturnType<typeof grown>): void => {
      applyToTree(m, changes);
      applyToTree(s, changes);
      expect(toHex(s.commit().hash)).toBe(toHex(m.commit().hash));
    };
    let s = Tree.open(dir, { memoryBudgetMiB: 16, checkpointInterval: 20 });
    for (let v = 1; v <= 10; v++) both(grown(v, 10_000));
    s.close();
    s = Tree.open(dir, { memoryBudgetMiB: 16, keepRecent: 10, checkpointInterval: 20 });
    const churn = new Churn(s.size);
    for (let j = 0; j < 100; j++) both(churn.version(s.version + 1));
    await s.flush();
    expect(s.versions()[0]).toBeGreaterThan(1); // the prunes ran
    expect(s.at(s.version).audit()).toMatchObject({ ok: true, faults: [] });
    s.close();
  }, 600_000);
});
