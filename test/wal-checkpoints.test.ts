/**
 * walCheckpoints "external": iavlite never checkpoints the WAL (Litestream does, and a checkpoint racing its own can
 * make it miss frames and start a new generation). In WAL mode only a checkpoint writes pages into the database
 * file, so the file staying at its size while the WAL grows shows that none ran.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { MultiTree, Tree, isIavlError } from "../src/index.js";
import { openWriter, WAL_SIZE_LIMIT_BYTES } from "../src/sqlite/connection.js";
import { paceWal } from "../src/sqlite/wal.js";
import { runningThreads } from "../src/base/thread-channel.js";
import { writeTransaction } from "../src/sqlite/write-errors.js";
import { tempDir } from "./backends.js";

const size = (f: string): number => statSync(f).size;

/** A read-only connection that has read the file once: in WAL mode it then holds a shared lock until it closes. */
function openBeside(file: string): Database.Database {
  const db = new Database(file, { readonly: true });
  db.prepare("SELECT count(*) FROM sqlite_master").get();
  return db;
}

/** Commits `n` versions of 200 fresh keys each to `t`. */
function commitSome(t: Tree, n: number): void {
  for (let v = 0; v < n; v++) {
    for (let i = 0; i < 200; i++) t.set(new TextEncoder().encode(`key-${t.version}-${i}`), new Uint8Array(64).fill(i));
    t.commit();
  }
}

describe("walCheckpoints", () => {
  it.each(["normal", "async"] as const)("external: no checkpoint of a store's WAL, in commits or on close beside a reader (durability %s)", async (durability) => {
    const dir = tempDir();
    const file = join(dir, "iavl.sqlite");
    const t = Tree.open(dir, { walCheckpoints: "external", durability, checkpointInterval: 5 });
    // A connection open beside, as Litestream's is: the last one to close would checkpoint.
    const beside = openBeside(file);
    const before = size(file);
    commitSome(t, 30);
    // Past the time the checkpointer thread of a store that owns its WAL takes to start and checkpoint (see below).
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      commitSome(t, 1);
    }
    await t.flush();
    // Nor does a prune's thread, which otherwise copies what it wrote: to bound the WAL (see below), and at its end.
    await t.prune(t.version - 5);
    // Past the 256 MiB bound a store that owns its WAL restarts it; this one never does, so only its growth is seen.
    expect(size(`${file}-wal`)).toBeGreaterThan(1 << 20);
    t.close();
    expect(size(file)).toBe(before);
    expect(size(`${file}-wal`)).toBeGreaterThan(1 << 20);
    beside.close();
  });

  it("own (the default): the checkpointer thread copies the WAL into the database file after commits", async () => {
    const dir = tempDir();
    const file = join(dir, "iavl.sqlite");
    const t = Tree.open(dir, { checkpointInterval: 5 });
    const before = size(file);
    commitSome(t, 30);
    // PASSIVE checkpoints run on their own thread after each commit (once it started, which takes a moment, and
    // longer on a busy machine: the test's timeout is the limit).
    while (size(file) === before) {
      await new Promise((r) => setTimeout(r, 50));
      commitSome(t, 1);
    }
    expect(size(file)).toBeGreaterThan(before);
    t.close();
  });

  it("own: a store opened only to be read starts no thread; its first commit starts the checkpointer and the writer", async () => {
    const dir = tempDir();
    const t0 = Tree.open(dir);
    commitSome(t0, 2);
    t0.close();
    // A closed thread is counted until it has exited, a moment after the close; so are earlier tests' threads.
    while (runningThreads() > 0) await new Promise((r) => setTimeout(r, 20));
    const t = Tree.open(dir);
    expect(t.get(new TextEncoder().encode("key-0-1"))?.[0]).toBe(1);
    expect(t.at(1).get(new TextEncoder().encode("key-0-2"))?.[0]).toBe(2);
    // A worker's start-up costs tens of milliseconds of CPU, which the first reads would share on a small machine.
    expect(runningThreads()).toBe(0);
    commitSome(t, 1);
    // The checkpointer, and the writer thread that lands what the commit journal holds.
    expect(runningThreads()).toBe(2);
    t.close();
  });

  it("a background writer's WAL past the size limit is copied before its next write, which starts it over", () => {
    const dir = tempDir();
    const grown = (name: string, pace: boolean): number => {
      const f = join(dir, name);
      const db = openWriter(f, "normal");
      db.exec("CREATE TABLE t (b BLOB)");
      const insert = db.prepare("INSERT INTO t VALUES (?)");
      writeTransaction(db, "filling", () => {
        for (let i = 0; i < 72; i++) insert.run(new Uint8Array(2 ** 20).fill(i));
      });
      expect(size(`${f}-wal`)).toBeGreaterThan(WAL_SIZE_LIMIT_BYTES);
      if (pace) paceWal(db, f);
      writeTransaction(db, "one more", () => insert.run(new Uint8Array(8)));
      const wal = size(`${f}-wal`);
      db.close();
      return wal;
    };
    // Without it the WAL is only ever appended to: nothing copied it, so nothing could start it over.
    expect(grown("left.sqlite", false)).toBeGreaterThan(WAL_SIZE_LIMIT_BYTES);
    expect(grown("paced.sqlite", true)).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES);
  });

  it("external on a multi-store: neither the stores nor the commit marker checkpoint", async () => {
    const dir = tempDir();
    const m = MultiTree.open(dir, { stores: ["a", "b"], walCheckpoints: "external" });
    const files = [join(dir, "commits.sqlite"), join(dir, "stores", "a", "iavl.sqlite"), join(dir, "stores", "b", "iavl.sqlite")];
    const beside = files.map(openBeside);
    const before = files.map(size);
    for (let v = 0; v < 30; v++) {
      for (const s of ["a", "b"]) for (let i = 0; i < 100; i++) m.tree(s).set(new TextEncoder().encode(`k${v}-${i}`), new Uint8Array(32).fill(v));
      m.commit();
      if (v >= 10) await new Promise((r) => setTimeout(r, 50));
    }
    m.close();
    expect(files.map(size)).toEqual(before);
    for (const b of beside) b.close();
  });

  it("refuses anything but own or external", () => {
    const dir = tempDir();
    let caught: unknown;
    try {
      Tree.open(dir, { walCheckpoints: "litestream" as "own" });
    } catch (e) {
      caught = e;
    }
    expect(isIavlError(caught, "INVALID_OPTIONS")).toBe(true);
  });

  it("opens a store whose file Litestream reached first: its own tables are not foreign ones", () => {
    const dir = tempDir();
    // Litestream creates these in every database it replicates, possibly before the store's first migration.
    const db = new Database(join(dir, "iavl.sqlite"));
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER); CREATE TABLE _litestream_lock (id INTEGER)");
    db.close();
    const t = Tree.open(dir, { walCheckpoints: "external" });
    commitSome(t, 2);
    t.close();
    const r = Tree.openReadOnly(dir);
    expect(r.version).toBe(2);
    r.close();
  });
});
