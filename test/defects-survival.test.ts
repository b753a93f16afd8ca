/**
 * Defects found by trying the store as a new user would, with option and call sequences no other test used (issue
 * "A store that survives everything"); each test failed before its fix. The lifecycle simulator (sim/) finds more of
 * the kind; its seeds run in simulate.test.ts.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { IavlError, MultiTree, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, codeOf } from "./helpers.js";

function commitVersions(t: Tree, count: number, tag: string): void {
  for (let i = 0; i < count; i++) {
    const v = t.version + 1;
    for (let j = 0; j < 5; j++) t.set(b(`k${(v * 7 + j) % 23}`), b(`${tag}-${v}-${j}`));
    t.commit();
  }
}

describe("pruning with keepEvery", () => {
  it("never moves the replay base back onto operations an earlier prune deleted", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 7, keepEvery: 20, shardSize: 10 });
    // Checkpoints at 7, 14, 20 (a snapshot), 27, …, 60 (a snapshot), 67, 74, 80 (a snapshot), 87.
    commitVersions(t, 90, "a");
    const want = t.at(79).hash;
    // keepFrom 78: the base is checkpoint 74, whose row goes; operations up to 74 are deleted.
    await t.prune(77, { keepEvery: 20 });
    // keepFrom 79: the newest checkpoint row at or before it is now snapshot 60, older than the recorded base.
    await t.prune(78, { keepEvery: 20 });
    t.close();
    // A proof and an audit need the version's tree, replayed from the base.
    const again = Tree.open(dir, { checkpointInterval: 7, keepEvery: 20 });
    expect(again.at(79).audit().ok).toBe(true);
    expect(again.at(79).proof(b("k0")).exist).toBeDefined();
    expect(again.at(79).hash).toEqual(want);
    again.close();
  });
});

describe("rollback below what pruning compacted", () => {
  it("leaves a store that commits and reads every version after it", async () => {
    const dir = tempDir();
    let t = Tree.open(dir, { checkpointInterval: 18, keepEvery: 5, shardSize: 2 });
    commitVersions(t, 19, "a");
    // Drops the shards up to the base (checkpoint 18): the branches of versions up to 17 move to the compacted table.
    await t.prune(18, { keepEvery: 5 });
    t.close();
    expect(Tree.rollback(dir, 5)).toBeGreaterThan(0);
    t = Tree.open(dir, { checkpointInterval: 18, keepEvery: 5, shardSize: 2 });
    commitVersions(t, 15, "b");
    t.close();
    t = Tree.open(dir, { checkpointInterval: 18, keepEvery: 5, shardSize: 2 });
    commitVersions(t, 3, "c");
    for (const v of t.versions()) expect(t.at(v).audit().ok).toBe(true);
    expect(t.versions()).toContain(10);
    t.close();
  });
});

describe("a read-only change stream across a rollback", () => {
  it("throws VERSION_ROLLED_BACK instead of going on in the new history", () => {
    const dir = tempDir();
    let t = Tree.open(dir, { checkpointInterval: 4 });
    commitVersions(t, 20, "old");
    t.close();
    const reader = Tree.openReadOnly(dir);
    const it = reader.changes(1, 20);
    // Reads into version 3.
    for (let r = it.next(); !r.done && r.value.version < 3; r = it.next());
    Tree.rollback(dir, 5);
    t = Tree.open(dir, { checkpointInterval: 4 });
    commitVersions(t, 15, "new");
    t.close();
    expect(codeOf(() => [...{ [Symbol.iterator]: () => it }])).toBe("VERSION_ROLLED_BACK");
    reader.close();
  });
});

describe("values handed out by Tree.memory()", () => {
  it("are copies: writing into an export's or a proof's value changes nothing", () => {
    const t = Tree.memory();
    t.set(b("k"), b("value"));
    t.set(b("l"), b("other"));
    t.commit();
    for (const n of t.at(1).export()) n.value?.fill(0);
    t.proof(b("k")).exist!.value!.fill(0);
    expect(t.get(b("k"))).toEqual(b("value"));
    expect(t.at(1).get(b("l"))).toEqual(b("other"));
  });

  it("are copies from a store too (values still held in memory before they land)", () => {
    const t = Tree.open(tempDir(), { durability: "async" });
    t.set(b("k"), b("value"));
    t.commit();
    t.proof(b("k")).exist!.value!.fill(0);
    for (const n of t.at(1).export()) n.value?.fill(0);
    expect(t.at(1).get(b("k"))).toEqual(b("value"));
    t.close();
  });
});

describe("automatic prunes", () => {
  it("progress in a loop of commits that never yields to the event loop", () => {
    const dir = tempDir();
    const t = Tree.open(dir, { keepRecent: 20, checkpointInterval: 10 });
    const pause = new Int32Array(new SharedArrayBuffer(4));
    // At least 150 versions, and on until the prunes caught up: a prune worker's start may wait for a core another
    // process holds, but it must never wait for the event loop. (The loop never yields, so the test's timeout cannot
    // stop it: the deadline is the safety net, far past what a busy machine needs.)
    const deadline = performance.now() + 300_000;
    let kept = 0;
    for (let i = 0; i < 150 || (kept >= 60 && performance.now() < deadline); i++) {
      commitVersions(t, 1, "x");
      // Time passes as it does while a chain executes a block, but the event loop never turns.
      Atomics.wait(pause, 0, 0, 4);
      kept = t.versions().length;
    }
    t.close();
    // 20 kept, a step of 2 before the next prune starts, and the versions committed while the last one ran.
    expect(kept).toBeLessThan(60);
  });

  it("keep up with a writer that never yields, also once their thread has gone idle", () => {
    const keepRecent = 20;
    const t = Tree.open(tempDir(), { keepRecent, checkpointInterval: 10 });
    const pause = new Int32Array(new SharedArrayBuffer(4));
    // A target is asked every keepRecent / 10 = 2 versions, so the last one asked keeps at most keepRecent + 1.
    const bound = keepRecent + 1;
    // Waits without yielding until the prunes caught up (the loop cannot be stopped by the test's timeout: the
    // deadline is the safety net, far past what a busy machine needs).
    const caughtUp = (): number => {
      const deadline = performance.now() + 300_000;
      let kept = t.versions().length;
      for (; kept > bound && performance.now() < deadline; kept = t.versions().length) Atomics.wait(pause, 0, 0, 5);
      return kept;
    };
    // 200 versions in a tight loop, then nothing left to prune: the thread's task ends.
    commitVersions(t, 200, "x");
    expect(caughtUp()).toBeLessThanOrEqual(bound);
    // Each new target must start the thread again while the event loop still never turns.
    for (let round = 0; round < 30; round++) {
      commitVersions(t, 2, `y${round}`);
      expect(caughtUp()).toBeLessThanOrEqual(bound);
    }
    expect(t.versions()[0]).toBeGreaterThanOrEqual(t.version - keepRecent);
    t.close();
  });

  it("and an explicit prune beside them settle without taking the process down", async () => {
    const t = Tree.open(tempDir(), { checkpointInterval: 13, keepRecent: 18, keepEvery: 13 });
    for (let i = 0; i < 17; i++) {
      commitVersions(t, 1, "y");
      await new Promise((r) => setImmediate(r));
    }
    const pruning = [t.prune(5), t.prune(9, { keepEvery: 13 })];
    commitVersions(t, 30, "z");
    const results = await Promise.all(pruning);
    // Automatic prunes, asked as the versions land, may have gone past 9 first (they keep 18 of the 47).
    expect(results[1]!.keptFrom).toBeGreaterThanOrEqual(10);
    expect(results[1]!.keptFrom).toBeLessThanOrEqual(t.version - 18 + 1);
    expect(t.versions()).not.toContain(8);
    t.close();
  });

  it("cut short by close reject with CLOSED", async () => {
    const t = Tree.open(tempDir(), { checkpointInterval: 3 });
    commitVersions(t, 40, "w");
    const p = t.prune(39);
    t.close();
    await expect(p).rejects.toMatchObject({ code: "CLOSED" });
  });
});

describe("prunes found by the simulator", () => {
  it("keep the removal rows of kept versions when dropped snapshots make them sweep every key", async () => {
    const t = Tree.open(tempDir(), { checkpointInterval: 5 });
    t.set(b("x"), b("1"));
    t.set(b("y"), b("1"));
    t.commit();
    for (let v = 2; v <= 12; v++) {
      t.set(b("y"), b(String(v)));
      if (v === 10) t.remove(b("x"));
      t.commit();
    }
    await t.prune(9, { keepEvery: 5 }); // keeps snapshot 5; 10 is the base and the first kept
    await t.prune(9); // drops snapshot 5: a sweep of every key
    expect([...t.changes(10, 10)].map((c) => [Buffer.from(c.key).toString(), c.value && Buffer.from(c.value).toString()])).toEqual([
      ["x", null],
      ["y", "10"],
    ]);
    t.close();
  });

  it("a prune to an older point than an earlier one moves nothing back", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 5, keepEvery: 9 });
    commitVersions(t, 35, "a");
    await t.prune(30, { keepEvery: 9 });
    await t.prune(12, { keepEvery: 9 });
    commitVersions(t, 3, "b");
    t.close();
    const again = Tree.open(dir, { checkpointInterval: 5, keepEvery: 9 });
    expect(again.versions()).toEqual([9, 18, 27, 31, 32, 33, 34, 35, 36, 37, 38]);
    for (const v of again.versions()) expect(again.at(v).audit().ok).toBe(true);
    again.close();
  });

  it("a read-only change stream made before a rollback that took all its versions throws VERSION_ROLLED_BACK", () => {
    const dir = tempDir();
    let t = Tree.open(dir, { checkpointInterval: 4 });
    commitVersions(t, 10, "old");
    t.close();
    const reader = Tree.openReadOnly(dir);
    const it = reader.changes(8, 10);
    Tree.rollback(dir, 6);
    t = Tree.open(dir, { checkpointInterval: 4 });
    commitVersions(t, 1, "new");
    t.close();
    expect(codeOf(() => it.next())).toBe("VERSION_ROLLED_BACK");
    reader.close();
  });
});

describe("durability async, when the writer thread fails", () => {
  /**
   * A store at version 2 whose writer gives version 3 up: another connection holds the lock past the writer's patience
   * (60 busy timeouts), until `givenUp(t)` returns, which blocks until the writer has given up (a close lands what is
   * queued first; a commit waits for room in the queue of one).
   */
  async function failedWriter(dir: string, seen: IavlError[], givenUp: (t: Tree) => void): Promise<Tree> {
    const t = Tree.open(dir, { durability: "async", asyncQueue: 1, busyTimeoutMs: 10, onBackgroundError: (e) => seen.push(e) });
    commitVersions(t, 2, "a");
    await t.flush();
    const blocker = new Database(join(dir, "iavl.sqlite"));
    blocker.exec("BEGIN IMMEDIATE");
    try {
      commitVersions(t, 1, "b");
      givenUp(t);
    } finally {
      blocker.exec("ROLLBACK");
      blocker.close();
    }
    return t;
  }

  it("close() reports the failure no caller saw to onBackgroundError instead of throwing it", async () => {
    const dir = tempDir();
    const seen: IavlError[] = [];
    await failedWriter(dir, seen, (t) => t.close());
    expect(seen.map((e) => e.code)).toEqual(["LOCKED"]);
    const again = Tree.open(dir, { durability: "async" });
    expect(again.version).toBe(2);
    commitVersions(again, 2, "c");
    await again.flush();
    expect(again.versions()).toEqual([1, 2, 3, 4]);
    again.close();
  }, 60_000);

  it("the next commit throws it and changes nothing; close() then reports nothing more", async () => {
    const seen: IavlError[] = [];
    const t = await failedWriter(tempDir(), seen, (t) => {
      t.set(b("k1"), b("after"));
      expect(codeOf(() => t.commit())).toBe("LOCKED");
    });
    expect(t.version).toBe(3);
    expect(t.get(b("k1"))).toEqual(b("after"));
    t.close();
    expect(seen).toEqual([]);
  }, 60_000);
});

describe("a read-only change stream of a closed handle", () => {
  it("throws CLOSED at its next step, not better-sqlite3's TypeError", () => {
    const dir = tempDir();
    const t = Tree.open(dir);
    commitVersions(t, 3, "a");
    t.close();
    const reader = Tree.openReadOnly(dir);
    const it = reader.changes(1, 3);
    reader.close();
    expect(codeOf(() => it.next())).toBe("CLOSED");
  });
});

describe("a read-only multi-store handle (found by the simulator's multi-store lives)", () => {
  function commitMulti(m: MultiTree, count: number, tag: string): void {
    for (let i = 0; i < count; i++) {
      for (const name of m.names) m.tree(name).set(b(`k${i % 3}`), b(`${tag}-${m.version + 1}-${name}`));
      m.commit();
    }
  }

  it("answers VERSION_ROLLED_BACK for a version a rollback replaced since its refresh, not the new history", () => {
    const dir = tempDir();
    let m = MultiTree.open(dir, { stores: ["a", "b"] });
    commitMulti(m, 5, "old");
    m.close();
    const reader = MultiTree.openReadOnly(dir);
    expect(reader.latest).toBe(5);
    MultiTree.rollback(dir, 3);
    m = MultiTree.open(dir, { stores: ["a", "b"] });
    commitMulti(m, 2, "new");
    m.close();
    expect(codeOf(() => reader.at("a", 5).get(b("k0")))).toBe("VERSION_ROLLED_BACK");
    expect(codeOf(() => reader.appHashAt(4))).toBe("VERSION_ROLLED_BACK");
    expect(reader.at("a", 3).get(b("k2"))).toEqual(b("old-3-a"));
    reader.refresh();
    expect(reader.at("a", 5).get(b("k1"))).toEqual(b("new-5-a"));
    reader.close();
  });

  it("proves a store under the app hash of a version committed before another store joined the folder", () => {
    const dir = tempDir();
    let m = MultiTree.open(dir, { stores: ["a"] });
    commitMulti(m, 2, "x");
    m.close();
    m = MultiTree.open(dir, { stores: ["a", "b"], addStores: ["b"] });
    commitMulti(m, 2, "y");
    const appHash1 = m.appHashAt(1);
    m.close();
    const reader = MultiTree.openReadOnly(dir);
    const proof = reader.appProof(1, "a");
    expect(proof.exist?.value).toEqual(reader.at("a", 1).hash);
    expect(reader.appHashAt(1)).toEqual(appHash1);
    reader.close();
  });
});

describe("a read-only multi-store handle opened before a store joined the folder", () => {
  it("takes the new store in on refresh: app proofs of later versions verify, earlier ones still do", () => {
    const dir = tempDir();
    let m = MultiTree.open(dir, { stores: ["a"] });
    m.tree("a").set(b("k"), b("1"));
    m.commit();
    m.close();
    const reader = MultiTree.openReadOnly(dir);
    m = MultiTree.open(dir, { stores: ["a", "b"], addStores: ["b"] });
    expect(reader.refresh()).toBe(1);
    m.tree("a").set(b("k"), b("2"));
    m.tree("b").set(b("k"), b("3"));
    m.commit();
    const app2 = m.appHashAt(2);
    m.close();
    expect(reader.refresh()).toBe(2);
    expect(reader.names).toEqual(["a", "b"]);
    expect(reader.appHashAt(2)).toEqual(app2);
    expect(reader.appProof(2, "a").exist?.value).toEqual(reader.at("a", 2).hash);
    expect(reader.appProof(1, "a").exist?.value).toEqual(reader.at("a", 1).hash);
    reader.close();
  });
});
