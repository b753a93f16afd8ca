/**
 * The multi-store simulator's end check of the stored branches (sim/finish-prunes.ts): rows an automatic prune left
 * when a close cut it short are removed by the store's next prune, and must be, even when another store of the
 * folder was never pruned (multi-store seed 1518313472 found the check skipping every store's prune then).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { finishPrunes } from "../sim/finish-prunes.js";
import { MultiTree } from "../src/index.js";
import { openWriter } from "../src/sqlite/connection.js";
import { markPruned } from "../src/sqlite/prune-rows.js";
import { tempDir } from "./backends.js";
import { branchRowsProblem } from "./helpers.js";

const STORES = ["bank", "acc"];
const key = (i: number): Uint8Array => new TextEncoder().encode(`k${String(i).padStart(3, "0")}`);

describe("the multi-store simulator's end check", () => {
  it("finishes a prune a close cut short in one store while another keeps version 1", async () => {
    const dir = tempDir();
    const mt = MultiTree.open(dir, { stores: STORES, checkpointInterval: 2 });
    for (let v = 1; v <= 12; v++) {
      for (const name of STORES) for (let i = 0; i < 40; i++) if ((i + v) % 3 === 0) mt.tree(name).set(key(i), new TextEncoder().encode(`${v}`));
      mt.commit();
    }
    mt.close();
    // What an automatic prune of bank leaves when a close stops it after its first step: versions gone, the base
    // recorded, the branches only the removed checkpoints held still stored.
    const bank = join(dir, "stores", "bank");
    const db = openWriter(join(bank, "iavl.sqlite"), "normal");
    markPruned(db, 10, undefined);
    db.close();
    expect(branchRowsProblem(bank)).toMatch(/that no kept tree holds are stored/);

    const again = MultiTree.open(dir, { stores: STORES, checkpointInterval: 2 });
    try {
      // acc was never pruned: the folder's oldest version is 1, and one prune of the folder to before it is no prune.
      expect(again.tree("acc").versions()[0]).toBe(1);
      await finishPrunes(again, STORES, undefined);
    } finally {
      again.close();
    }
    for (const name of STORES) expect(branchRowsProblem(join(dir, "stores", name))).toBeUndefined();
  });
});
