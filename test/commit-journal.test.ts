/**
 * The commit journal of durability "normal": a version whose commit() returned survives a SIGKILL of its process
 * before the writer thread landed it, the next writer lands it from the journal, and a torn or foreign tail is
 * ignored. Another process holds SQLite's write lock while the child commits, so that nothing lands before the kill.
 */
import { appendFileSync, cpSync, existsSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { inStoreFile } from "./helpers.js";
import { nodeOnDisk } from "./processes.js";

const child = fileURLToPath(new URL("./fixtures/journal-writer.ts", import.meta.url));
const JOURNAL = "commits.journal";

/** The hashes of versions 1–6 as the child commits them, from a tree in memory. */
function modelHashes(): string[] {
  const m = Tree.memory();
  const hashes = [""];
  for (let v = 1; v <= 6; v++) {
    applyVersion(m, v);
    hashes.push(toHex(m.commit().hash));
  }
  return hashes;
}

/** The latest version SQLite holds, read with a plain connection. */
function landedVersion(dir: string): number {
  return inStoreFile(dir, (db) => (db.prepare("SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0);
}

describe("the commit journal (durability normal)", () => {
  const hashes = modelHashes();
  /** The store the killed child left: version 1 landed, 2–6 only in its journal. */
  let killed: string;
  let childHashes: string[];
  /** A copy of the killed store, to change its journal and open it. */
  const copyOfKilled = (): string => {
    const dir = tempDir();
    cpSync(killed, dir, { recursive: true });
    return dir;
  };
  /** The version and root hash a writer opening `dir` finds (it lands the journal first). */
  const opened = (dir: string): [number, string] => {
    const t = Tree.open(dir);
    try {
      return [t.version, toHex(t.hash)];
    } finally {
      t.close();
    }
  };

  beforeAll(async () => {
    killed = tempDir();
    const p = nodeOnDisk([child, killed]);
    await p.line(/^ready$/);
    const lock = new Database(join(killed, "iavl.sqlite"));
    try {
      lock.exec("BEGIN IMMEDIATE");
      p.p.stdin!.write("go\n");
      await p.line(/^committed 6 /);
      p.p.kill("SIGKILL");
      expect((await p.exited).signal).toBe("SIGKILL");
      lock.exec("ROLLBACK");
    } finally {
      lock.close();
    }
    childHashes = p.lines.filter((l) => l.startsWith("committed ")).map((l) => l.split(" ")[2]!);
  }, 120_000);

  it("keeps every version whose commit() returned, landing them from the journal at the next open", () => {
    expect(childHashes).toEqual(hashes.slice(2));
    // Nothing but version 1 reached SQLite before the kill.
    expect(landedVersion(killed)).toBe(1);
    expect(statSync(join(killed, JOURNAL)).size).toBeGreaterThan(0);
    const dir = copyOfKilled();
    const t = Tree.open(dir);
    expect(t.version).toBe(6);
    for (let v = 1; v <= 6; v++) expect(toHex(t.at(v).hash)).toBe(hashes[v]);
    t.close();
    // A clean close leaves no journal, and a second open changes nothing.
    expect(existsSync(join(dir, JOURNAL))).toBe(false);
    expect(opened(dir)).toEqual([6, hashes[6]]);
  });

  it("ignores a record cut short (a write the kill tore) and lands those before it", () => {
    const dir = copyOfKilled();
    const journal = join(dir, JOURNAL);
    truncateSync(journal, statSync(journal).size - 5);
    expect(opened(dir)).toEqual([5, hashes[5]]);
  });

  it("ignores a tail that is not a record, and a record whose bytes changed, with what follows it", () => {
    const junk = copyOfKilled();
    appendFileSync(join(junk, JOURNAL), Buffer.alloc(64, 7));
    expect(opened(junk)).toEqual([6, hashes[6]]);

    // A byte changed in the first record's numbers fails its checksum: nothing after it lands either.
    const flipped = copyOfKilled();
    const journal = join(flipped, JOURNAL);
    const bytes = readFileSync(journal);
    bytes[20]! ^= 0xff;
    writeFileSync(journal, bytes);
    expect(opened(flipped)).toEqual([1, hashes[1]]);
  });

  it("lands nothing twice: versions SQLite holds are skipped, and a rollback lands the journal before it goes back", () => {
    const dir = copyOfKilled();
    opened(dir);
    // The journal as it was before the versions landed: a writer killed after landing them and before emptying it.
    cpSync(join(killed, JOURNAL), join(dir, JOURNAL));
    const again = Tree.open(dir);
    expect([again.version, toHex(again.hash)]).toEqual([6, hashes[6]]);
    expect(again.versions()).toEqual([1, 2, 3, 4, 5, 6]);
    again.close();

    const back = copyOfKilled();
    expect(Tree.rollback(back, 3)).toBe(3);
    expect(opened(back)).toEqual([3, hashes[3]]);
  });
});

describe("a version too large to queue (durability normal)", () => {
  it("is written inline once the writer thread has landed what it holds, and every version reads back exact", async () => {
    const dir = tempDir();
    const t = Tree.open(dir);
    const model = Tree.memory();
    const both = (key: string, value: Uint8Array): void => {
      t.set(Buffer.from(key), value);
      model.set(Buffer.from(key), value);
    };
    const commitBoth = (): void => expect(toHex(t.commit().hash)).toBe(toHex(model.commit().hash));
    for (let v = 1; v <= 3; v++) {
      for (let i = 0; i < 50; i++) both(`small-${v}-${i}`, Buffer.from(`value-${v}-${i}`));
      commitBoth();
    }
    // 17 values of 1 MiB: past the 16 MiB a queued version may carry.
    const big = (i: number): Uint8Array => Buffer.alloc(2 ** 20, i);
    for (let i = 0; i < 17; i++) both(`big-${i}`, big(i));
    commitBoth();
    // Inline: on disk when commit() returns, after the versions queued before it.
    expect(landedVersion(dir)).toBe(4);
    for (let i = 0; i < 50; i++) both(`small-5-${i}`, Buffer.from(`after-${i}`));
    commitBoth();
    await t.flush();
    t.close();

    const again = Tree.open(dir);
    try {
      expect([again.version, toHex(again.hash)]).toEqual([5, toHex(model.hash)]);
      for (let i = 0; i < 17; i++) expect(Buffer.from(again.get(Buffer.from(`big-${i}`))!).equals(big(i))).toBe(true);
      expect(again.at(3).get(Buffer.from("big-0"))).toBeUndefined();
      expect(Buffer.from(again.at(5).get(Buffer.from("small-5-7"))!).toString()).toBe("after-7");
    } finally {
      again.close();
    }
  }, 60_000);
});
