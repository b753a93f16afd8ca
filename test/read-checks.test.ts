/**
 * Reads the hashes vouch for: a leaves row whose bytes were damaged (on disk, or by an index entry that leads to
 * another row) is refused with CORRUPT by every read of a value, naming the file and the version, never returned as
 * the value. The other keys read as before. A page SQLite itself finds damaged is CORRUPT too, in the library, the
 * CLI and the service alike, never SQLite's own code.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, inject, it } from "vitest";
import { IavlError, MultiReader, Tree } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
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
  for (const [rows, against] of [
    ["written with a checksum", "checksum"],
    ["without one (written before migration 005)", "leaf hash"],
  ] as const) {
    it(`a value changed in its row ${rows} is CORRUPT at every read, naming the file, the version and the ${against}; other keys read`, () => {
      const dir = store();
      const db = new Database(join(dir, "iavl.sqlite"));
      if (against === "leaf hash") db.exec("UPDATE leaves SET sum = NULL");
      db.prepare("UPDATE leaves SET value = ? WHERE key = ? AND version = 3").run(b("MARKER-value-of-k7-at-4"), b("k7"));
      db.close();
      const reads = readsOfK7(dir);
      for (const [path, got] of Object.entries(reads)) {
        expect(got, path).toMatch(new RegExp(`^CORRUPT: .*iavl\\.sqlite: the leaves row of key 6b37 at version 3 does not match its ${against}`));
      }
      const t = Tree.open(dir);
      expect(t.get(b("k8"))).toEqual(b("v8@4"));
      expect(t.at(2).get(b("k7"))).toBeUndefined();
      t.close();
    });
  }

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
    expect(reads.get).toMatch(/^CORRUPT: .* at version 3 does not match its checksum/);
    expect(reads.readOnly).toMatch(/^CORRUPT: /);
  });

  it("a page SQLite finds malformed is CORRUPT naming the file, through the library, the CLI (exit 1, JSON) and HTTP", async () => {
    const dir = store();
    const file = join(dir, "iavl.sqlite");
    const bytes = readFileSync(file);
    // The header of the table page that holds the row: a page type SQLite does not know.
    const page = Math.floor(bytes.indexOf("MARKER-value-of-k7-at-3") / 4096) * 4096;
    expect(page).toBeGreaterThan(0);
    bytes.fill(0xff, page, page + 8);
    writeFileSync(file, bytes);
    const reads = readsOfK7(dir);
    for (const [path, got] of Object.entries(reads)) {
      expect(got, path).toMatch(/^CORRUPT: .*iavl\.sqlite: reading[^:]*: the file is damaged \(SQLITE_CORRUPT/);
    }

    const cli = (...args: string[]): { status: number | null; out: string; err: string } => {
      const r = spawnSync(process.execPath, [inject("cli"), ...args], { encoding: "utf8" });
      return { status: r.status, out: r.stdout, err: r.stderr };
    };
    const text = cli("get", dir, "k7");
    expect([text.status, text.err]).toEqual([1, expect.stringMatching(/^iavlite: CORRUPT: .*iavl\.sqlite: reading version 5: the file is damaged/)]);
    const json = cli("get", dir, "k7", "--json");
    expect(json.status).toBe(1);
    expect((JSON.parse(json.out) as { error: { code: string } }).error.code).toBe("CORRUPT");

    const app = await createServer(MultiReader.open(dir), { refreshMs: 0 });
    try {
      const r = await app.inject({ method: "GET", url: `/v1/query?key=${Buffer.from("k7").toString("hex")}` });
      expect(r.statusCode).toBe(500);
      expect(r.json<{ error: { code: string; message: string } }>().error).toMatchObject({ code: "CORRUPT", message: expect.stringMatching(/the file is damaged/) });
    } finally {
      await app.close();
    }
  });

  it("verify runs SQLite's structure check (a damaged pointer map), and --all --json reports every version with its state", () => {
    const dir = store();
    const file = join(dir, "iavl.sqlite");
    const bytes = readFileSync(file);
    // Page 2 of a file with incremental auto-vacuum is its first pointer-map page, which no version's rows live in.
    bytes.fill(0xff, 4096, 4096 + 100);
    writeFileSync(file, bytes);
    const r = spawnSync(process.execPath, [inject("cli"), "verify", dir, "--all", "--json"], { encoding: "utf8" });
    expect(r.status).toBe(1);
    const json = JSON.parse(r.stdout) as { ok: boolean; reports: Array<{ version: number; status: string }>; structure: { ok: boolean; problems: string[] } };
    expect(json.ok).toBe(false);
    expect(json.structure.ok).toBe(false);
    expect(json.structure.problems.join("\n")).toMatch(/ptrmap/i);
    expect(json.reports.map((x) => [x.version, x.status])).toEqual([1, 2, 3, 4, 5].map((v) => [v, "sound"]));
    const text = spawnSync(process.execPath, [inject("cli"), "verify", dir], { encoding: "utf8" });
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/SQLite structure check: \d+ problem\(s\)\n  - .*ptrmap/i);
  });
});
