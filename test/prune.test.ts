import { statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { storeInfo } from "../src/cli/info-summary.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { node } from "./processes.js";
import { branchRows, branchRowsProblem, codeOf, leafRowsProblem } from "./helpers.js";
import { openWriter } from "../src/sqlite/connection.js";
import { markPruned } from "../src/sqlite/prune-rows.js";

/** Expected hash and a sample of contents per version, from a memory tree fed the same operations. */
function model(upTo: number): { hashes: string[]; tree: Tree } {
  const tree = Tree.memory();
  const hashes = [""];
  for (let v = 1; v <= upTo; v++) {
    applyVersion(tree, v, 200, 3000);
    hashes.push(toHex(tree.commit().hash));
  }
  return { hashes, tree };
}

describe("prune", () => {
  it("a view opened before a prune answers gets from the index alone until then, and VERSION_PRUNED once its version went", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { keepRecent: 1_000 });
    const key = (i: number): Uint8Array => new TextEncoder().encode(`k${i}`);
    for (let v = 1; v <= 30; v++) {
      for (let i = 0; i < 20; i++) t.set(key(i), Uint8Array.of(v, i));
      t.commit();
    }
    const view = t.at(5);
    const kept = t.at(25);
    expect(view.get(key(3))).toEqual(Uint8Array.of(5, 3));
    // An automatic prune asked meanwhile (keepRecent 1,000 asks none here), then an explicit one that removes 5.
    await t.prune(20);
    expect(codeOf(() => view.get(key(3)))).toBe("VERSION_PRUNED");
    expect(kept.get(key(3))).toEqual(Uint8Array.of(25, 3));
    // A view opened after the prune ended reads as before.
    expect(t.at(26).get(key(4))).toEqual(Uint8Array.of(26, 4));
    t.close();
  });

  it("prunes in a worker while commits go on; kept versions keep hashes, reads and proofs; pruned ones are refused", async () => {
    const dir = tempDir();
    const { hashes, tree: m } = model(160);
    const t = Tree.open(dir, { checkpointInterval: 7, shardSize: 10, memoryBudgetMiB: 8 });
    for (let v = 1; v <= 120; v++) {
      applyVersion(t, v, 200, 3000);
      t.commit();
    }
    const pruning = t.prune(100);
    // Commits continue while the worker prunes.
    for (let v = 121; v <= 160; v++) {
      applyVersion(t, v, 200, 3000);
      expect(toHex(t.commit().hash)).toBe(hashes[v]);
    }
    const r = await pruning;
    expect(r.pruned).toBe(100);
    expect(r.keptFrom).toBe(101);
    expect(r.droppedShards).toBeGreaterThan(0);
    expect(codeOf(() => t.at(100))).toBe("VERSION_PRUNED");
    expect(codeOf(() => t.at(1))).toBe("VERSION_PRUNED");
    expect(t.versions()[0]).toBe(101);
    const check = (tree: Tree): void => {
      for (const v of [101, 102, 105, 110, 130, 160]) {
        const view = tree.at(v);
        expect(toHex(view.hash)).toBe(hashes[v]);
        const got = [...view.iterate()].map(([k, x]) => toHex(k) + toHex(x));
        expect(got).toEqual([...m.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x)));
        const [k, x] = view.iterate({ reverse: true }).next().value as [Uint8Array, Uint8Array];
        expect(verifyMembership(view.proof(k), iavlSpec, view.hash, k, x)).toBe(true);
      }
    };
    check(t);
    t.close();
    const again = Tree.open(dir);
    expect(toHex(again.hash)).toBe(hashes[160]);
    check(again);
    // Pruning again, up to the latest, keeps only the latest.
    await again.prune(1000);
    expect(again.versions()).toEqual([160]);
    expect(toHex(again.at(160).hash)).toBe(hashes[160]);
    again.close();
  });

  it("levels off with keepRecent, reusing free pages, and an explicit prune returns them all", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 5, shardSize: 10, keepRecent: 20 });
    const file = join(dir, "iavl.sqlite");
    const sizes: number[] = [];
    for (let v = 1; v <= 300; v++) {
      applyVersion(t, v, 200, 2000);
      t.commit();
      // Blocks come at a pace the prunes keep up with (on a loaded machine the prune thread may get little of a
      // core): 20 kept, a step of 2, and what commits while a prune runs.
      while (t.versions().length > 30) await new Promise((r) => setTimeout(r, 5));
      if (v % 50 === 0) sizes.push(statSync(file).size);
    }
    // Steady state: the file does not keep growing with history, though the policy's prunes leave free pages.
    expect(sizes[sizes.length - 1]!).toBeLessThan(sizes[1]! * 1.5);
    await t.prune(t.version - 20); // waits for the policy's prunes, then returns every free page
    expect(t.versions().length).toBeLessThanOrEqual(21);
    const { pages } = storeInfo(dir);
    expect(pages.freelistCount).toBe(0);
    expect(statSync(file).size).toBeLessThanOrEqual(sizes[sizes.length - 1]!);
    t.close();
    // A safety net: the commits wait for the prunes, as slow as a busy machine makes them, not for a clock.
  }, 240_000);

  it("reports as reclaimed the bytes the database file lost, though the WAL still holds the prune's writes", async () => {
    const dir = tempDir();
    const file = join(dir, "iavl.sqlite");
    const t = Tree.open(dir, { checkpointInterval: 5, shardSize: 10 });
    for (let v = 1; v <= 40; v++) {
      applyVersion(t, v, 400, 5000);
      t.commit();
    }
    t.close();
    // Reopened, so that nothing of the commits is left to checkpoint into the file while it prunes.
    const again = Tree.open(dir);
    const before = statSync(file).size;
    const r = await again.prune(30);
    const after = statSync(file).size;
    expect(after).toBeLessThan(before * 0.8);
    expect(r.reclaimedBytes).toBe(before - after);
    // The WAL, which a close removes, grew by more than the file lost: counting it reported 0.
    expect(after + statSync(`${file}-wal`).size).toBeGreaterThan(before);
    again.close();
  });

  it("rollback deletes later versions and the store continues from there", () => {
    const dir = tempDir();
    const { hashes } = model(40);
    const t = Tree.open(dir, { checkpointInterval: 6, shardSize: 10 });
    for (let v = 1; v <= 40; v++) {
      applyVersion(t, v, 200, 3000);
      t.commit();
    }
    expect(codeOf(() => Tree.rollback(dir, 20))).toBe("LOCKED");
    t.close();
    expect(Tree.rollback(dir, 20)).toBe(20);
    const r = Tree.open(dir);
    expect(r.version).toBe(20);
    expect(toHex(r.hash)).toBe(hashes[20]);
    for (let v = 21; v <= 40; v++) {
      applyVersion(r, v, 200, 3000);
      expect(toHex(r.commit().hash)).toBe(hashes[v]);
    }
    r.close();
    const again = Tree.open(dir);
    expect(toHex(again.hash)).toBe(hashes[40]);
    again.close();
  });
});

describe("keepEvery snapshots", () => {
  it("keeps every Nth version, whole, through prunes that drop the versions around it", async () => {
    const dir = tempDir();
    const { hashes, tree: m } = model(130);
    const t = Tree.open(dir, { checkpointInterval: 7, shardSize: 10, keepRecent: 20, keepEvery: 25 });
    for (let v = 1; v <= 130; v++) {
      applyVersion(t, v, 200, 3000);
      t.commit();
    }
    const r = await t.prune(110, { keepEvery: 25 });
    expect(t.versions()).toEqual([25, 50, 75, 100, ...Array.from({ length: 20 }, (_, i) => 111 + i)]);
    // keptFrom is past the snapshots, in memory as on disk.
    expect(r.keptFrom).toBe(111);
    const mem = Tree.memory();
    for (let v = 1; v <= 130; v++) {
      applyVersion(mem, v, 200, 3000);
      mem.commit();
    }
    expect((await mem.prune(110, { keepEvery: 25 })).keptFrom).toBe(111);
    expect(mem.versions()).toEqual(t.versions());
    expect(codeOf(() => t.at(26))).toBe("VERSION_PRUNED");
    const check = (tree: Tree): void => {
      for (const v of [25, 50, 75, 100, 111, 130]) {
        const view = tree.at(v);
        expect(toHex(view.hash)).toBe(hashes[v]);
        expect([...view.iterate()].map(([k, x]) => toHex(k) + toHex(x))).toEqual([...m.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x)));
        const [k, x] = view.iterate().next().value as [Uint8Array, Uint8Array];
        expect(verifyMembership(view.proof(k), iavlSpec, view.hash, k, x)).toBe(true);
        expect(view.export().next().done).toBe(false);
      }
    };
    check(t);
    t.close();
    const again = Tree.open(dir);
    check(again);
    again.close();
  });
});

describe("a prune that drops snapshots, cut short after its first step", () => {
  it("is finished by the next prune, even one with no version left to remove: no branch or leaves row a kept tree does not read is left", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 2, shardSize: 5 });
    for (let v = 1; v <= 40; v++) {
      applyVersion(t, v, 100, 400);
      t.commit();
    }
    await t.prune(30, { keepEvery: 4 });
    expect(t.versions().slice(0, 3)).toEqual([4, 8, 12]);
    t.close();
    // The first step of a prune that keeps no snapshot, committed; then the prune stopped (a kill, a close).
    const db = openWriter(join(dir, "iavl.sqlite"), "normal", 1000);
    markPruned(db, 35, undefined);
    db.close();
    const again = Tree.open(dir, { checkpointInterval: 2 });
    expect(again.versions()[0]).toBe(36);
    expect((await again.prune(35)).pruned).toBe(0);
    again.close();
    expect(branchRowsProblem(dir)).toBeUndefined();
    expect(leafRowsProblem(dir)).toBeUndefined();
  });
});

describe("the prune thread's start", () => {
  it("a store closed while its prune thread still loads does not abort the process (Node 20 does, terminated inside require)", async () => {
    const churn = node([fileURLToPath(new URL("./fixtures/prune-pool-churn.ts", import.meta.url)), join(tempDir(), "store"), "30"]);
    expect(await churn.exited, churn.stderr).toEqual({ code: 0, signal: null });
    expect(churn.lines).toContain("closed 30");
  });
});

describe("branch rows", () => {
  it("are deleted once no kept tree holds them, snapshots' kept until the snapshot goes", async () => {
    const dir = tempDir();
    // ~26,000 keys after the first version: past what the smallest budget (8 MiB) holds, so commits evict and
    // reload, and replace branches they loaded back from their rows.
    const apply = (tree: Tree, v: number): void => applyVersion(tree, v, v === 1 ? 40_000 : 300, 60_000);
    const m = Tree.memory();
    const hashes = [""];
    for (let v = 1; v <= 150; v++) {
      apply(m, v);
      hashes.push(toHex(m.commit().hash));
    }
    const t = Tree.open(dir, { checkpointInterval: 5, shardSize: 10, memoryBudgetMiB: 8, keepEvery: 25 });
    for (let v = 1; v <= 150; v++) {
      apply(t, v);
      expect(toHex(t.commit().hash)).toBe(hashes[v]);
      if (v === 60) await t.prune(52, { keepEvery: 25 });
      if (v === 120) await t.prune(110, { keepEvery: 50 });
    }
    t.close();
    // Before the last prune, the stored rows are those of the kept checkpoints (25 was dropped by the second prune).
    let rows = branchRows(dir);
    expect(rows.stored).toEqual(rows.reached);
    const before = rows.stored.size;
    const again = Tree.open(dir);
    expect(again.versions().slice(0, 2)).toEqual([50, 100]);
    await again.prune(140);
    again.close();
    rows = branchRows(dir);
    expect(rows.stored).toEqual(rows.reached);
    expect(rows.stored.size).toBeLessThan(before / 2);
    const reopened = Tree.open(dir);
    expect(reopened.versions()).toEqual(Array.from({ length: 10 }, (_, i) => 141 + i));
    for (const v of [141, 145, 150]) {
      const view = reopened.at(v);
      expect(toHex(view.hash)).toBe(hashes[v]);
      expect([...view.iterate()].map(([k, x]) => toHex(k) + toHex(x))).toEqual([...m.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x)));
    }
    for (const v of [141, 150]) expect(reopened.at(v).audit()).toMatchObject({ ok: true, faults: [] });
    reopened.close();
    // CPU-bound (150 versions past the smallest budget): the net leaves room for a machine shared with other work.
  }, 240_000);
});

describe("leaves rows", () => {
  it("a removal kept because its version was the first kept goes once a later prune passes that version", async () => {
    const dir = tempDir();
    const key = (i: number): Uint8Array => new TextEncoder().encode(`k${i}`);
    const m = Tree.memory();
    const both = (fn: (t: Tree) => void, t: Tree): string => {
      fn(t);
      fn(m);
      const hash = toHex(t.commit().hash);
      expect(hash).toBe(toHex(m.commit().hash));
      return hash;
    };
    let t = Tree.open(dir, { checkpointInterval: 5 });
    for (let v = 1; v <= 20; v++) both((x) => x.set(key(v), new TextEncoder().encode(`v${v}`)), t);
    // Version 21 removes ten keys, and a close makes it a checkpoint (out of the every-5 rhythm).
    both((x) => [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].forEach((i) => x.remove(key(i))), t);
    t.close();
    t = Tree.open(dir, { checkpointInterval: 5 });
    for (let v = 22; v <= 30; v++) both((x) => x.set(key(100 + v), new TextEncoder().encode(`v${v}`)), t);
    // Version 21 is the first kept and the version replays start from: its removal rows stay (its changes are read
    // from them).
    await t.prune(20);
    expect(t.versions()[0]).toBe(21);
    expect([...t.changes(21, 21)].filter((c) => c.value === null)).toHaveLength(10);
    // Once 21 is pruned too, the rows under its removals are long gone: they hide nothing, and go.
    await t.prune(27);
    t.close();
    expect(leafRowsProblem(dir)).toBeUndefined();
    const again = Tree.open(dir);
    expect(again.versions()[0]).toBe(28);
    for (const v of [28, 30]) expect([...again.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x))).toEqual([...m.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x)));
    again.close();
  });
});
