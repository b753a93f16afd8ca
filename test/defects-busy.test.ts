/**
 * A moment when another connection holds the store's write lock does not disable the store: the background writer
 * and the automatic prune wait (up to the new `busyTimeoutMs` option) and try again later instead of failing for
 * good.
 */
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { IavlError, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, inStoreFile } from "./helpers.js";

function applyOps(t: Tree, v: number): void {
  for (let i = 0; i < 20; i++) t.set(b(`key-${(v * 3 + i) % 50}`), b(`value-${v}-${i}`));
}

/** A memory model beside `t`: `commitBoth` applies version v's operations to both and commits, keeping `t`'s hashes. */
function twin(t: Tree): { model: Tree; hashes: string[]; commitBoth: (v: number) => void } {
  const model = Tree.memory();
  const hashes = [""];
  const commitBoth = (v: number): void => {
    applyOps(t, v);
    applyOps(model, v);
    hashes.push(toHex(t.commit().hash));
    model.commit();
  };
  return { model, hashes, commitBoth };
}

/** Another connection on the store file that takes the write lock (waiting for a running transaction to end). */
function holdWriteLock(dir: string): Database.Database {
  const db = new Database(join(dir, "iavl.sqlite"), { timeout: 5000 });
  db.exec("BEGIN IMMEDIATE");
  return db;
}

function release(db: Database.Database): void {
  db.exec("ROLLBACK");
  db.close();
}

describe("a busy moment does not disable the store", () => {
  it("durability async: versions committed while another connection holds the write lock land once it is released", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { durability: "async", busyTimeoutMs: 100 });
    const { model, hashes, commitBoth } = twin(t);
    commitBoth(1);
    commitBoth(2);
    await t.flush();

    const blocker = holdWriteLock(dir);
    try {
      // commit() returns (the versions wait in the queue) although the writer thread cannot write for now.
      for (let v = 3; v <= 5; v++) commitBoth(v);
      // Hold the lock ten times the busy timeout: the writer thread's attempts time out meanwhile.
      await sleep(1000);
    } finally {
      release(blocker);
    }
    await t.flush();
    expect(t.versions()).toEqual([1, 2, 3, 4, 5]);
    commitBoth(6);
    await t.flush();
    t.close();

    const again = Tree.open(dir);
    expect(again.versions()).toEqual([1, 2, 3, 4, 5, 6]);
    for (let v = 1; v <= 6; v++) expect(toHex(again.at(v).hash), `version ${v}`).toBe(hashes[v]);
    expect(again.at(4).get(b("key-12"))).toEqual(model.at(4).get(b("key-12")));
    again.close();
  });

  it("durability async: versions queued behind the lock land together; one that fails among them is reported, and those before it land", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { durability: "async", busyTimeoutMs: 100 });
    const { model, hashes, commitBoth } = twin(t);
    commitBoth(1);
    await t.flush();
    const stored = (): number[] =>
      inStoreFile(dir, (db) => db.prepare("SELECT version FROM versions ORDER BY version").pluck().all() as number[]);

    // Versions 2-7 wait while another connection holds the lock (the writer thread retrying version 2 meanwhile), and
    // that connection's transaction makes version 5's row fail: once the lock is free, those behind version 2 land as
    // one group, which fails, and then one by one.
    const blocker = holdWriteLock(dir);
    blocker.exec("CREATE TRIGGER refuse_v5 BEFORE INSERT ON versions WHEN NEW.version = 5 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
    for (let v = 2; v <= 7; v++) commitBoth(v);
    blocker.exec("COMMIT");
    blocker.close();
    await expect(t.flush()).rejects.toThrow(/failed at version 5/);
    expect(stored()).toEqual([1, 2, 3, 4]);

    const fixer = new Database(join(dir, "iavl.sqlite"), { timeout: 5000 });
    fixer.exec("DROP TRIGGER refuse_v5");
    fixer.close();
    await t.flush();
    expect(stored()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    t.close();

    const again = Tree.open(dir);
    for (let v = 1; v <= 7; v++) expect(toHex(again.at(v).hash), `version ${v}`).toBe(hashes[v]);
    for (let k = 0; k < 50; k++) expect(again.at(6).get(b(`key-${k}`))).toEqual(model.at(6).get(b(`key-${k}`)));
    again.close();
  });

  it("automatic prunes: one that fails on the lock is reported to onBackgroundError, commits go on, and a later prune succeeds", async () => {
    const dir = tempDir();
    const keepRecent = 5;
    const errors: unknown[] = [];
    let reported = (): void => undefined;
    const firstError = new Promise<void>((r) => (reported = r));
    const onBackgroundError = (e: unknown): void => {
      errors.push(e);
      reported();
    };
    // Inline commits: the held lock must meet the prune thread, not a writer thread landing the version first.
    const t = Tree.open(dir, { keepRecent, busyTimeoutMs: 100, onBackgroundError, commitJournal: false });
    const model = Tree.memory();
    const commitBoth = (): number => {
      const v = model.version + 1;
      applyOps(t, v);
      applyOps(model, v);
      const c = t.commit();
      expect(toHex(c.hash)).toBe(toHex(model.commit().hash));
      return c.version;
    };
    for (let v = 1; v <= 5; v++) commitBoth();
    // Version 6 starts the first automatic prune (of version 1), and the prune thread with it: the lock taken right
    // after is held before the prune writes, unless the thread was quick enough to end it first (then once more).
    for (let blocked = false; !blocked; ) {
      const target = commitBoth() - keepRecent;
      const blocker = holdWriteLock(dir);
      try {
        // Held until the prune has given up (after its busy timeout and retries) and reported it, however long the
        // prune thread takes to start.
        if (t.versions()[0]! <= target) await firstError;
        blocked = errors.length > 0;
      } finally {
        release(blocker);
      }
    }
    expect(errors[0]).toBeInstanceOf(IavlError);

    // Commits go on without throwing, and the automatic prune the next commit asks for catches up.
    const latest = commitBoth();
    while (t.versions().length > keepRecent + 1) await sleep(20);
    const kept = t.versions();
    expect(kept.length, `kept ${kept.join(",")}`).toBeLessThanOrEqual(keepRecent + 1);
    expect(kept[kept.length - 1]).toBe(latest);
    expect(kept[0]).toBeGreaterThanOrEqual(latest - keepRecent);
    // The versions kept read like the model's.
    for (const v of kept) expect(toHex(t.at(v).hash)).toBe(toHex(model.at(v).hash));
    t.close();
  });
});
