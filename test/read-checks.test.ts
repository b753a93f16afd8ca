/**
 * Reads the hashes vouch for: a leaves row whose bytes were damaged (on disk, or by an index entry that leads to
 * another row) is refused with CORRUPT by every read of a value, naming the file and the version, never returned as
 * the value. The other keys read as before.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { IavlError, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

/** A closed store of 200 keys over 5 versions; key k7 is set at version 3 to a value found by its marker bytes. */
function store(): string {
  const dir = tempDir();
  const t = Tree.open(dir);
  for (let v = 1; v <= 5; v++) {
    for (let i = v - 1; i < 200; i += 5) t.set(b(`k${i}`), b(`v${i}@${v}`));
    if (v === 3) t.set(b("k7"), b("MARKER-value-of-k7-at-3"));
    t.commit();
  }
  t.close();
  return dir;
}

/** What `fn` throws, as `code: message` (or "no error"). */
function failure(fn: () => unknown): string {
  try {
    fn();
    return "no error";
  } catch (e) {
    return e instanceof IavlError ? `${e.code}: ${e.message}` : `${(e as Error).name}: ${(e as Error).message}`;
  }
}

/** Every read of a value that meets key k7's row at version 3. */
function readsOfK7(dir: string): Record<string, string> {
  const t = Tree.open(dir);
  const ro = Tree.openReadOnly(dir);
  try {
    return {
      get: failure(() => t.get(b("k7"))),
      historic: failure(() => t.at(4).get(b("k7"))),
      iterate: failure(() => [...t.iterate()]),
      range: failure(() => [...t.at(5).iterate({ start: b("k6"), end: b("k8") })]),
      history: failure(() => t.history(b("k7"))),
      changes: failure(() => [...t.changes(3, 3)]),
      export: failure(() => [...t.at(3).export()]),
      readOnly: failure(() => ro.at(5).get(b("k7"))),
    };
  } finally {
    ro.close();
    t.close();
  }
}

describe("reads of a damaged leaves row", () => {
  it("a value changed in its row is CORRUPT at every read, naming the file and the version; other keys read", () => {
    const dir = store();
    const db = new Database(join(dir, "iavl.sqlite"));
    db.prepare("UPDATE leaves SET value = ? WHERE key = ? AND version = 3").run(b("MARKER-value-of-k7-at-4"), b("k7"));
    db.close();
    const reads = readsOfK7(dir);
    for (const [path, got] of Object.entries(reads)) {
      expect(got, path).toMatch(/^CORRUPT: .*iavl\.sqlite: the leaves row of key 6b37 at version 3 does not match its leaf hash/);
    }
    const t = Tree.open(dir);
    expect(t.get(b("k8"))).toEqual(b("v8@4"));
    expect(t.at(2).get(b("k7"))).toBeUndefined();
    t.close();
  });

  it("a row reached for another key (a damaged index) is CORRUPT, not that key's value", () => {
    const dir = store();
    const db = new Database(join(dir, "iavl.sqlite"));
    // The row of k7 at 3 now says it belongs to k70: the (key, version) index finds it for k70 at versions ≥ 3.
    db.prepare("DELETE FROM leaves WHERE key = ? AND version >= 3").run(b("k70"));
    db.prepare("UPDATE leaves SET key = ? WHERE key = ? AND version = 3").run(b("k70"), b("k7"));
    db.close();
    const t = Tree.open(dir);
    expect(failure(() => t.get(b("k70")))).toMatch(/^CORRUPT: .* key 6b3730 at version 3 /);
    t.close();
  });

  it("one byte flipped inside a value in the file is CORRUPT, not the value", () => {
    const dir = store();
    const file = join(dir, "iavl.sqlite");
    const bytes = readFileSync(file);
    // Every copy of the value in the file (a free page may hold an old one).
    let copies = 0;
    for (let at = bytes.indexOf("MARKER-value-of-k7-at-3"); at >= 0; at = bytes.indexOf("MARKER-value-of-k7-at-3", at + 1), copies++) bytes[at + 7] ^= 0x01;
    expect(copies).toBeGreaterThan(0);
    writeFileSync(file, bytes);
    const reads = readsOfK7(dir);
    expect(reads.get).toMatch(/^CORRUPT: .* at version 3 does not match its leaf hash/);
    expect(reads.readOnly).toMatch(/^CORRUPT: /);
  });
});
