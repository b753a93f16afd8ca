/**
 * The floors figures are measured against: plain SQLite key-value tables (both layouts measured on the same stream,
 * the faster one used) and the sha256 hashing alone, counted from the tree's own calls.
 * @module
 */
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import Database from "better-sqlite3";
import { fmt, type Floor } from "./report.js";
import { consume, timeNs } from "./timing.js";
import type { Change } from "./workload.js";

/** The two ways to build a plain key-value table; floors measure both on the same stream and use the faster. */
export type Layout = "rowid" | "without rowid";
/** Both layouts, in the order their figures are measured. */
export const LAYOUTS: readonly Layout[] = ["rowid", "without rowid"];
/** The table suffix of layout `l`. */
export const layoutSql = (l: Layout): string => (l === "rowid" ? "" : " WITHOUT ROWID");
/** A file in `dir` for a `name` table of layout `l`. */
export const layoutFile = (dir: string, name: string, l: Layout): string =>
  join(dir, `${name}-${l.replace(" ", "-")}.sqlite`);
/** A record of `f` for each layout (`i`: its place in {@link LAYOUTS}). */
export const perLayout = <T>(f: (l: Layout, i: number) => T): Record<Layout, T> =>
  ({ rowid: f("rowid", 0), "without rowid": f("without rowid", 1) });

/** A SQLite file with the store's settings (src/sqlite/connection.ts): WAL, synchronous NORMAL, 32 MiB of cache. */
export function plainDb(file: string, readonly = false): Database.Database {
  const db = new Database(file, { readonly });
  if (!readonly) db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("cache_size = -32768");
  db.pragma("temp_store = MEMORY");
  return db;
}

/**
 * A plain table `kv (key BLOB PRIMARY KEY, value BLOB)` (upserts, deletes), or `versioned`, `kv (key, version, value)`
 * keyed by (key, version), which keeps every version's value (NULL once deleted). One transaction per `put`.
 */
export class Plain {
  readonly db: Database.Database;
  readonly put: (changes: readonly Change[], version?: number) => void;
  private readonly getStmt: Database.Statement;

  constructor(file: string, readonly layout: Layout, versioned = false) {
    this.db = plainDb(file);
    const [table, key] = versioned
      ? ["key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version)", "key, version"]
      : ["key BLOB PRIMARY KEY, value BLOB", "key"];
    this.db.exec(`CREATE TABLE IF NOT EXISTS kv (${table})${layoutSql(layout)}`);
    const upsert = this.db.prepare(`INSERT INTO kv (${key}, value) VALUES (${versioned ? "?, ?, ?" : "?, ?"})
      ON CONFLICT (${key}) DO UPDATE SET value = excluded.value`);
    const del = this.db.prepare("DELETE FROM kv WHERE key = ?");
    this.getStmt = this.db.prepare("SELECT value FROM kv WHERE key = ?").pluck();
    const tx = this.db.transaction((changes: readonly Change[], version?: number) => {
      for (const c of changes) {
        if (versioned) upsert.run(c.key, version, c.delete ? null : c.value);
        else if (!c.delete) upsert.run(c.key, c.value);
        else if (del.run(c.key).changes !== 1) throw new Error("bench: a plain delete of a live key found nothing");
      }
    });
    this.put = (changes, version) => tx.immediate(changes, version);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return this.getStmt.get(key) as Uint8Array | undefined;
  }

  /** Rows a second of `SELECT key, value` over `rows` rows, from the start again as often as needed. */
  scan(rows: number): number {
    let n = 0;
    const scan = this.db.prepare("SELECT key, value FROM kv").raw();
    const ns = timeNs(() => {
      while (n < rows) for (const row of scan.iterate()) if ((consume(row), ++n >= rows)) break;
    });
    return rows / (ns / 1e9);
  }
}

/** The faster of the layouts' figures (`unit` tells whether higher is faster) as a floor, with both in its note. */
export function fasterPlain(figs: Record<Layout, number>, unit: string, what: string): Floor {
  const [a, b] = [figs.rowid, figs["without rowid"]];
  const best: Layout = (unit.endsWith("/s") ? a >= b : a <= b) ? "rowid" : "without rowid";
  const note = `plain floors: rowid ${fmt(a)}, without rowid ${fmt(b)} ${unit}`;
  return { floor: `plain SQLite kv (${best}), ${what}`, floorValue: figs[best], floorNote: note };
}

// The sha256 floor: the tree's own hashing, redone without the tree.
type HashFn = (algorithm: string, data: crypto.BinaryLike, encoding?: string) => string | Buffer;
/** node:crypto's `hash`, which the tree hashes with, captured before any wrapping. */
export const rawHash = crypto.hash as unknown as HashFn;
const HIST = 1 << 16;
const preimage = new Uint8Array(HIST).map((_, i) => (i * 131 + 7) & 0xff);

/**
 * Counts the tree's sha256 calls by preimage length and output encoding, wrapping node:crypto `hash`
 * (syncBuiltinESMExports updates the named export the tree imported). `floorNs` then hashes exactly as many
 * preimages of exactly those lengths, in the same encoding, from one hot buffer: the hashing alone, without the tree.
 */
export class HashCounter {
  calls = 0;
  private readonly hists = new Map<string, Uint32Array>();
  private readonly big: Array<[number, string]> = [];

  install(): void {
    let lastEnc = "";
    let hist: Uint32Array = new Uint32Array(0);
    const counting: HashFn = (algorithm, data, enc = "hex") => {
      this.calls++;
      if (enc !== lastEnc) this.hists.set((lastEnc = enc), (hist = this.hists.get(enc) ?? new Uint32Array(HIST)));
      const n = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
      if (n < HIST) hist[n]!++;
      else this.big.push([n, enc]);
      return rawHash(algorithm, data, enc);
    };
    (crypto as unknown as { hash: HashFn }).hash = counting;
    syncBuiltinESMExports();
  }

  uninstall(): void {
    (crypto as unknown as { hash: HashFn }).hash = rawHash;
    syncBuiltinESMExports();
  }

  /** Nanoseconds to hash the preimages counted since the last call, which resets the count. */
  floorNs(): number {
    let x = 0;
    const ns = timeNs(() => {
      for (const [enc, hist] of this.hists) {
        for (let len = 0; len < HIST; len++) {
          if (hist[len] === 0) continue;
          const data = preimage.subarray(0, len);
          for (let i = hist[len]!; i > 0; i--) x ^= rawHash("sha256", data, enc).length;
        }
      }
      for (const [len, enc] of this.big) x ^= rawHash("sha256", new Uint8Array(len), enc).length;
    });
    consume(x);
    this.hists.forEach((h) => h.fill(0));
    this.big.length = 0;
    this.calls = 0;
    return ns;
  }
}
