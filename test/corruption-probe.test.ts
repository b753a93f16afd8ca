/**
 * Damaged copies of a store (bench/corruption-probe.ts; `npx tsx bench/corruption-probe.ts --copies 100` for the
 * full probe): every read path answers right or refuses with an IavlError, never a wrong value and never SQLite's own
 * error, and verify flags every copy that a read or SQLite's integrity_check finds damaged. Also the WAL check on its
 * own: a frame damaged in the middle of the log is refused at open, a log cut short is not.
 */
import { existsSync, readFileSync, statSync, truncateSync, writeFileSync, cpSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { IavlError, Tree } from "../src/index.js";
import { probe } from "../bench/corruption-probe.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

describe("damaged copies of a store", () => {
  it("give no wrong answer and no raw SQLite error through any read path, and verify flags what anything finds", async () => {
    const s = await probe({ copies: 16, seed: 7, keys: 600, versions: 10 });
    expect(s.copies).toHaveLength(16);
    const bad = s.copies.flatMap((c) => Object.entries(c.paths).flatMap(([name, p]) => (p.outcome === "wrong" || p.outcome === "raw" ? [`${c.damage}: ${name} ${p.note}`] : [])));
    expect(bad).toEqual([]);
    expect(s.verifyMissed).toBe(0);
    // The damage was real: some copies were refused or flagged.
    expect(s.copies.filter((c) => c.verifyFlags).length).toBeGreaterThan(0);
  });
});

describe("a damaged versions table", () => {
  it("makes a read-only handle's version reads refuse with CORRUPT, not SQLite's own error", () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 50 });
    for (let v = 1; v <= 400; v++) {
      t.set(b(`k${v % 20}`), b(`v${v}`));
      t.commit();
    }
    t.close();
    const file = join(dir, "iavl.sqlite");
    const raw = new Database(file);
    const pageSize = raw.pragma("page_size", { simple: true }) as number;
    // The leaf of the oldest versions: the handle's open reads only the newest, so none of its cache holds this one.
    const leaf = raw.prepare("SELECT pageno FROM dbstat WHERE name = 'versions' AND pagetype = 'leaf' ORDER BY path LIMIT 1").pluck().get() as number;
    raw.close();
    const ro = Tree.openReadOnly(dir);
    const bytes = readFileSync(file);
    for (let i = 0; i < pageSize; i++) bytes[(leaf - 1) * pageSize + i] = (i * 131 + 7) & 0xff;
    writeFileSync(file, bytes);
    const codes = [() => ro.at(3), () => ro.versions(), () => ro.earliest()].map((read) => {
      try {
        read();
        return "answered";
      } catch (e) {
        return e instanceof IavlError ? e.code : `raw ${(e as Error).message}`;
      }
    });
    ro.close();
    expect(codes).toEqual(["CORRUPT", "CORRUPT", "CORRUPT"]);
  });
});

describe("the WAL check at open", () => {
  /**
   * A store whose versions are all in its WAL: copied while its writer is open. No checkpoint of the WAL runs
   * ("external"): one that the checkpointer thread finished would let the next commit start the log over, leaving
   * frames of the older log past its end, where damage changes nothing (a busy machine made the middle byte one).
   */
  async function storeWithWal(): Promise<string> {
    const live = tempDir();
    const t = Tree.open(live, { checkpointInterval: 100, walCheckpoints: "external" });
    for (let v = 1; v <= 30; v++) {
      for (let i = 0; i < 40; i++) t.set(b(`k${v}-${i}`), b(`value ${v} ${i}`.repeat(20)));
      t.commit();
    }
    await t.flush();
    const copy = tempDir();
    for (const f of ["iavl.sqlite", "iavl.sqlite-wal"]) cpSync(join(live, f), join(copy, f));
    t.close();
    expect(statSync(join(copy, "iavl.sqlite-wal")).size).toBeGreaterThan(100_000);
    return copy;
  }

  it("refuses a WAL damaged in the middle, naming it and what would be lost; the read-only open too", async () => {
    const dir = await storeWithWal();
    const wal = join(dir, "iavl.sqlite-wal");
    const bytes = readFileSync(wal);
    bytes[Math.floor(bytes.length / 2)] ^= 0x40;
    writeFileSync(wal, bytes);
    for (const open of [() => Tree.open(dir), () => Tree.openReadOnly(dir)]) {
      let error: unknown;
      try {
        open().close();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(IavlError);
      expect((error as IavlError).code).toBe("CORRUPT");
      expect((error as IavlError).message).toMatch(/iavl\.sqlite-wal is damaged at frame \d+ of \d+ .*silently drop the versions committed after that/);
    }
    // Nothing was changed: the WAL is still there for whoever restores it.
    expect(existsSync(wal)).toBe(true);
  });

  it("opens a store whose WAL was cut short (a torn last write) at its last whole version", async () => {
    const dir = await storeWithWal();
    const wal = join(dir, "iavl.sqlite-wal");
    truncateSync(wal, statSync(wal).size - 3000);
    const t = Tree.open(dir);
    expect(t.version).toBeGreaterThan(0);
    expect(t.version).toBeLessThan(30);
    expect(t.get(b("k1-0"))).toEqual(b("value 1 0".repeat(20)));
    t.close();
  });
});
